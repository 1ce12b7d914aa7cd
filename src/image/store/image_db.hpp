// SPDX-License-Identifier: Apache-2.0
// Internal to image/: the image tables of runner.db (schema migration 2 in
// store/schema.cpp) behind plain functions. Its own SQLite connection;
// every operation is one transaction and SQLiteCpp exceptions stop here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "nps/base/clock.hpp"
#include "nps/base/result.hpp"
#include "nps/image/image.hpp"

namespace SQLite {
class Database;
}

namespace nps::image::detail {

// A manifest as the store records it.
struct ManifestRecord {
    std::string digest;
    std::string media_type;
    std::int64_t size = 0;  // of the manifest blob
    std::string platform;   // "linux/amd64"
    std::string config_digest;
    std::string config_media_type;
    std::int64_t config_size = 0;
    std::vector<LayerRef> layers;  // bottom first
    std::int64_t imported_at_ms = 0;
    std::int64_t last_used_at_ms = 0;
};

struct RefRow {
    std::string name;
    std::string manifest_digest;
    std::int64_t created_at_ms = 0;
    std::int64_t updated_at_ms = 0;
};

struct NamedManifest {
    ManifestRecord manifest;
    std::vector<std::string> names;
};

struct BlobRow {
    std::string digest;
    std::string kind;  // "manifest", "config", "layer"
    std::int64_t size = 0;
    std::int64_t refs = 0;                // names whose manifest uses the blob
    std::set<std::string> manifests;      // manifests using it
    std::optional<std::string> diff_id;  // layers
};

// What remains after a collection: everything still recorded.
struct Collection {
    std::vector<std::string> removed_manifests;
    std::set<std::string> live_blobs;     // manifests, configs and layers of the remaining manifests
    std::set<std::string> live_diff_ids;  // their layers' diff_ids
};

class ImageDb {
public:
    // Opens runner.db at `path`, first through store::Store::open so the
    // schema is migrated (and refused when newer or foreign) exactly as the
    // daemon would.
    static Result<std::unique_ptr<ImageDb>> open(const std::string& path, const Clock& clock);
    ~ImageDb();

    // One transaction: records each manifest (an existing row is kept) and
    // points each of its names at it. Returns, per name in order, the
    // manifest it pointed at before (nullopt: new name or unchanged).
    Result<std::vector<std::optional<std::string>>> record(const std::vector<NamedManifest>& images);

    Result<std::optional<std::string>> ref(const std::string& name);
    Result<std::vector<RefRow>> refs();
    Result<std::optional<ManifestRecord>> manifest(const std::string& digest);
    Result<std::vector<ManifestRecord>> manifests();
    // Manifests whose hex digest starts with `hex_prefix`.
    Result<std::vector<std::string>> manifests_with_prefix(const std::string& hex_prefix);
    // Bumps last_used_at (pins) to now, unless it is less than
    // kUseTimeResolutionMs old (the LRU order of eviction needs no more).
    static constexpr std::int64_t kUseTimeResolutionMs = 60'000;
    Result<void> touch(const std::string& digest);

    // Deletes the names; returns the manifests they pointed at.
    Result<std::set<std::string>> remove_refs(const std::vector<std::string>& names);

    // Deletes the manifests that no ref names and no pin holds — all of them,
    // or only those in `candidates` — and reports what stays recorded.
    Result<Collection> collect(const std::optional<std::set<std::string>>& candidates,
                               const std::set<std::string>& pinned);

    // Every recorded blob with its reference count.
    Result<std::vector<BlobRow>> blobs();

private:
    ImageDb(std::unique_ptr<SQLite::Database> db, std::string path, const Clock& clock);

    std::unique_ptr<SQLite::Database> db_;
    std::string path_;
    const Clock& clock_;
};

}  // namespace nps::image::detail
