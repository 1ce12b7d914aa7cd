// SPDX-License-Identifier: Apache-2.0
// The image store: import, list, resolve, pin, remove and garbage-collect
// images kept under the state directory (store_layout.hpp) with their refs
// in runner.db. docs/images.md describes the model.
//
// Contract:
//  - Safe for several processes at once (runner daemons, CLI verbs): blobs
//    are written atomically and verified (blob_store.hpp); records change in
//    SQLite transactions; deletions take the exclusive store lock, imports
//    and pins the shared one (store_lock.hpp). One ImageStore object is used
//    by one thread at a time.
//  - Nothing is removed while a pin names it (pins.hpp), whatever the refs say.
//  - Errors name the operation and the object; an import that fails leaves
//    the refs as they were (blobs it wrote become garbage for gc).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/clock.hpp"
#include "nps/base/result.hpp"
#include "nps/image/blob_store.hpp"
#include "nps/image/image.hpp"
#include "nps/image/pins.hpp"
#include "nps/image/platform.hpp"
#include "nps/image/registry.hpp"
#include "nps/image/store_layout.hpp"

namespace nps::image {

namespace detail {
class ImageDb;
}

struct ImportRequest {
    std::string path;                   // OCI layout dir, oci-archive or docker-archive tar
    std::optional<std::string> name;    // --name: the name to record (replaces the source's names)
    std::optional<Platform> platform;   // default host_platform()
};

// Progress of one blob being copied into the store.
struct ImportProgress {
    enum class Phase { copying, checking_existing, stored, already_present };
    Phase phase = Phase::copying;
    std::string blob;               // digest when known, else the source path
    std::uint64_t done_bytes = 0;
    std::uint64_t total_bytes = 0;  // 0 when unknown
};
using ProgressFn = std::function<void(const ImportProgress&)>;

struct ImportedImage {
    std::string name;
    std::string manifest_digest;
    std::optional<std::string> replaced;  // the manifest the name pointed at before, if another
    Platform platform;
    std::uint64_t size = 0;               // manifest + config + layers, bytes as stored
};

struct ImageSummary {
    std::string name;
    std::string manifest_digest;
    std::string platform;
    std::uint64_t size = 0;
    std::size_t layers = 0;
    std::int64_t imported_at_ms = 0;
    std::int64_t last_used_at_ms = 0;
    std::size_t pins = 0;  // live pins on its manifest
};

// A blob with its reference count: how many names reach it (through their
// manifests), and how many live pins.
struct BlobUsage {
    std::string digest;
    std::string kind;  // "manifest", "config", "layer"
    std::uint64_t size = 0;
    std::size_t refs = 0;
    std::size_t pins = 0;
    bool present = false;  // the file exists (not verified)
};

struct PinnedImage {
    ResolvedImage image;
    ImagePin pin;
};

// What gc may do beyond removing unreferenced content: when the store is
// above a threshold, evict unpacked layer directories of images not in use
// (least recently used first) until it is below. 0 / 100 disable.
struct GcPolicy {
    std::uint64_t max_bytes = 0;          // images/ (blobs + unpacked layers) in bytes
    unsigned max_disk_percent = 100;      // fullness of the filesystem holding images/
};

struct CollectReport {
    std::vector<std::string> untagged;          // names removed (rm)
    std::vector<std::string> removed_manifests;
    std::vector<std::string> removed_blobs;
    std::vector<std::string> removed_layers;    // unpacked layer dirs (diff_ids) of removed images
    std::vector<std::string> evicted_layers;    // unpacked layer dirs evicted by the threshold (blobs kept)
    std::vector<std::string> kept_pinned;       // unreferenced manifests kept because pinned
    std::size_t stale_pins = 0;
    std::size_t temp_files = 0;
    std::uint64_t freed_bytes = 0;
    std::uint64_t usage_bytes = 0;              // images/ after the sweep
    bool over_threshold = false;                // still above the policy after evicting all it may
};

struct OpenImageStore {
    std::string state_dir;
    const Clock* clock = nullptr;  // default SystemClock
};

class ImageStore {
public:
    static Result<std::unique_ptr<ImageStore>> open(const OpenImageStore& options);
    ~ImageStore();

    const StoreLayout& layout() const { return layout_; }

    // Imports every image the request selects (docs/images.md: naming and
    // platform rules); progress, when given, is called as blobs stream.
    Result<std::vector<ImportedImage>> import(const ImportRequest& request, const ProgressFn& progress = {});

    // Pulls one image from a registry (registry.hpp, docs/images.md "Pull"):
    // the manifest for the wanted platform, its config, and the layers the
    // store lacks, each verified while it streams; then records the name
    // exactly as import does.
    Result<ImportedImage> pull(const PullRequest& request, const ProgressFn& progress = {});

    Result<std::vector<ImageSummary>> list();
    Result<std::vector<BlobUsage>> blobs();

    // A name ("busybox", "busybox:1.36"), a manifest digest ("sha256:<hex>")
    // or a unique prefix of at least 12 hex digits. Verifies and parses the
    // config blob.
    Result<ResolvedImage> resolve(const std::string& ref);
    // resolve() and a pin, atomically with respect to gc and rm. `holder`
    // describes the user for operators ("worker w-17").
    Result<PinnedImage> pin(const std::string& ref, const std::string& holder);

    // A stored blob, verified against its digest: what the unpack step must
    // use (the descriptor it hashed, or its path — blobs are never changed
    // in place). The error names the digest when the content does not match.
    Result<VerifiedBlob> open_blob(const std::string& digest);

    // Removes names (or every name of a digest) and then the content no
    // other name and no pin uses.
    Result<CollectReport> remove(const std::vector<std::string>& refs);
    // Removes all unreferenced, unpinned content (manifests, blobs, unpacked
    // layers, temp files of dead writers, stale pins), then applies the policy.
    Result<CollectReport> gc(const GcPolicy& policy);

private:
    ImageStore(StoreLayout layout, std::unique_ptr<detail::ImageDb> db, const Clock& clock);
    Result<std::string> find_manifest(const std::string& ref, std::string* name);
    Result<ResolvedImage> load(const std::string& manifest_digest, const std::string& name);

    StoreLayout layout_;
    std::unique_ptr<detail::ImageDb> db_;
    const Clock& clock_;
};

}  // namespace nps::image
