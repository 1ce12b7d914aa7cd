// SPDX-License-Identifier: Apache-2.0
// LayerCache: every layer unpacked once, in <layers_dir>/<hex of diff_id>/,
// shared read-only by all workers (as overlay lowers) and all runner
// processes on the same state directory.
//
// Publication: a layer is unpacked into <layers_dir>/.tmp-<hex>-<random>/,
// synced, and renamed to <hex>; a layer directory that exists is complete.
// Unpacking is serialised per layer by an flock() on <layers_dir>/.lock-<hex>
// (removed by its holder), so concurrent callers, threads or processes,
// unpack a layer once and the others wait for it. Names starting with '.'
// are the cache's own and never layers. Leftover .tmp-<hex>-* directories
// of a crashed unpack are removed the next time that layer is unpacked.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/image/layer_unpack.hpp"

namespace nps::image {

// One layer as the image store knows it.
struct LayerSource {
    std::string blob_path;   // the verified blob; empty: the layer is in the cache (else ensure() fails)
    std::string media_type;
    std::string diff_id;     // "sha256:<hex>"
};

struct LayerCacheOptions {
    std::string layers_dir;  // <state_dir>/images/layers; made (0700, with parents) when missing
    UnpackLimits limits;
    DeviceNodes device_nodes = DeviceNodes::skip;
    Durability durability = Durability::sync;
};

class LayerCache {
public:
    static Result<LayerCache> open(LayerCacheOptions options);

    // The directory of the layer, unpacked (and its diff_id verified) first
    // when it is not in the cache yet. Blocks while another caller unpacks
    // the same layer.
    Result<std::string> ensure(const LayerSource& layer);

    // ensure() for every layer of an image, given bottom layer first (as
    // image configs and manifests list them); returns the layer directories
    // TOP layer first, as OverlayOptions::lower_dirs wants them.
    Result<std::vector<std::string>> ensure_chain(const std::vector<LayerSource>& bottom_first);

    // Where the layer is or would be; an error for a malformed diff_id.
    Result<std::string> path_of(std::string_view diff_id) const;
    // Whether the layer is unpacked (false for a malformed diff_id).
    bool contains(std::string_view diff_id) const;

    // Removes the layer's directory (under its lock; absent is success).
    // The caller makes sure no rootfs mounts it any more.
    Result<void> remove(std::string_view diff_id);

    const std::string& layers_dir() const { return options_.layers_dir; }

private:
    LayerCache(LayerCacheOptions options, UniqueFd dir) : options_(std::move(options)), dir_(std::move(dir)) {}

    LayerCacheOptions options_;
    UniqueFd dir_;
};

}  // namespace nps::image
