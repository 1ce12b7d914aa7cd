// SPDX-License-Identifier: Apache-2.0
// Internal to image/: what an import will copy and record, worked out from
// the source's metadata before any layer is read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "import_source.hpp"
#include "nps/image/blob_store.hpp"
#include "nps/image/image_config.hpp"
#include "nps/image/image_store.hpp"
#include "nps/image/manifest.hpp"

namespace nps::image::detail {

struct PlannedLayer {
    std::string source_path;                     // canonical path in the source
    std::optional<std::string> expected_digest;  // verified while copying
    std::optional<std::uint64_t> expected_size;
    std::string diff_id;
    // Known up front for OCI; for docker-archive layers decided while copying:
    // the compression from the magic bytes, and an uncompressed layer must
    // hash to its diff_id.
    bool sniff = false;
    std::string digest;
    std::string media_type;
    std::int64_t size = 0;
};

struct PlannedImage {
    std::vector<std::string> names;  // validated, "repository:tag"
    Platform platform;               // from the config
    std::string manifest_bytes;      // OCI: as in the source; docker-archive: built after copying
    std::string manifest_media_type;
    bool synthesize_manifest = false;
    std::string config_bytes;
    std::string config_digest;
    std::string config_media_type;
    ParsedImageConfig config;
    std::vector<PlannedLayer> layers;  // bottom first
};

// OCI image layout (directory or oci-archive).
Result<std::vector<PlannedImage>> plan_oci(ImportSource& source, const ImportRequest& request, const Platform& wanted);
// docker-archive (`docker save`, skopeo's docker-archive:).
Result<std::vector<PlannedImage>> plan_docker(ImportSource& source, const ImportRequest& request,
                                              const Platform& wanted);

// --- shared by the planners -------------------------------------------------------
// Reads a small blob the descriptor names and checks its size and digest.
Result<std::string> read_described_blob(ImportSource& source, const std::string& path, const std::string& digest,
                                        std::optional<std::int64_t> size, std::size_t max_bytes);
// Parses the config, checks it is for a platform that runs on `wanted` and
// has one diff_id per layer.
Result<void> attach_config(PlannedImage& image, std::string bytes, std::string digest, std::string media_type,
                           std::size_t layer_count, const Platform& wanted, const std::string& what);
// The name `text` as a validated "repository:tag".
Result<std::string> checked_name(const std::string& text, const std::string& origin);

// --- shared by import and pull (import_commit.cpp) ---------------------------------
class ImageDb;

// The size of `digest` when the store holds an intact copy (hashed, not
// trusted; progress sees checking_existing and already_present); nullopt
// when it is absent or damaged — the caller then writes it again.
Result<std::optional<std::int64_t>> verified_blob_size(const BlobStore& blobs, const std::string& digest,
                                                       const ProgressFn& progress);

// The end of every import and pull, once all layer blobs are stored (the
// caller holds the shared store lock): stores each image's config and
// manifest blobs and records manifests and names in one transaction.
// `origin` names the source in errors.
Result<std::vector<ImportedImage>> commit_images(const BlobStore& blobs, ImageDb& db,
                                                 const std::vector<PlannedImage>& images, const std::string& origin);

}  // namespace nps::image::detail
