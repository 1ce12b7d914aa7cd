// SPDX-License-Identifier: Apache-2.0
#include "nps/image/worker_rootfs.hpp"

#include "nps/image/layer_cache.hpp"

namespace nps::image {

Result<WorkerRootfs> prepare_worker_rootfs(ImageStore& store, const WorkerRootfsRequest& request)
{
    PinnedImage pinned = NPS_TRY(store.pin(request.ref, request.holder));
    LayerCache cache = NPS_TRY(LayerCache::open({.layers_dir = store.layout().layers_dir()}));
    std::vector<LayerSource> layers;
    for (const LayerRef& layer : pinned.image.layers) {
        // An unpacked layer (its diff_id verified when it was unpacked, and
        // kept by the pin) needs nothing of its blob: hashing the blob again
        // at every start cost more than the rest of the rootfs. A layer to
        // unpack is verified against its digest first.
        std::string blob_path;
        if (!cache.contains(layer.diff_id))
            blob_path = NPS_TRY(store.open_blob(layer.digest)).path;
        layers.push_back({.blob_path = std::move(blob_path), .media_type = layer.media_type, .diff_id = layer.diff_id});
    }
    std::vector<std::string> lower_dirs = NPS_TRY(cache.ensure_chain(layers));
    OverlayRootfs overlay = NPS_TRY(OverlayRootfs::mount(
        {.lower_dirs = lower_dirs,
         .worker_dir = request.worker_dir,
         .disk_bytes = request.disk_bytes,
         .space_owner_uid = request.userns_root_uid,
         .space_owner_gid = request.userns_root_gid,
         .idmap_userns_fd = request.userns_fd}));
    return WorkerRootfs{.pinned = std::move(pinned), .overlay = std::move(overlay)};
}

}  // namespace nps::image
