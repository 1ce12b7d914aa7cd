// SPDX-License-Identifier: Apache-2.0
// Image layers seen through a user namespace's id mapping, for the overlay of
// a worker that runs in one (docs/sandbox.md "users").
//
// An overlay mount itself cannot be idmapped on the kernels we support, but
// its layers can (overlayfs accepts idmapped layers from Linux 5.19): each
// unpacked layer is cloned (open_tree OPEN_TREE_CLONE), the clone idmapped
// (mount_setattr MOUNT_ATTR_IDMAP) and attached at <dir>/<i>, and the
// overlay is mounted from those. Overlayfs keeps private clones of its
// layers, so the attached mounts are detached as soon as the overlay is
// mounted: nothing stays behind but the overlay itself. The shared layer
// cache is never changed; its files owned by 0 show as the namespace's 0.
#pragma once

#include <string>
#include <vector>

#include "nps/base/result.hpp"

namespace nps::image::detail {

class IdmappedLayers {
public:
    // Attaches an idmapped clone of every directory in `lower_dirs` under
    // `dir` (made 0700; must not exist), in the same order.
    static Result<IdmappedLayers> attach(const std::vector<std::string>& lower_dirs, const std::string& dir,
                                         int userns_fd);

    IdmappedLayers(IdmappedLayers&& other) noexcept;
    IdmappedLayers& operator=(IdmappedLayers&&) = delete;
    IdmappedLayers(const IdmappedLayers&) = delete;
    IdmappedLayers& operator=(const IdmappedLayers&) = delete;
    // Detaches every attached clone (MNT_DETACH) and removes `dir`.
    ~IdmappedLayers();

    // The attached clones, in the order of lower_dirs.
    const std::vector<std::string>& paths() const { return paths_; }

private:
    explicit IdmappedLayers(std::string dir) : dir_(std::move(dir)) {}
    std::string dir_;
    std::vector<std::string> paths_;
};

}  // namespace nps::image::detail
