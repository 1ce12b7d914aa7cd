// SPDX-License-Identifier: Apache-2.0
// Image layers seen through a user namespace's id mapping, for the overlay of
// a worker that runs in one (docs/sandbox.md "users").
//
// An overlay mount itself cannot be idmapped on the kernels we support, but
// its layers can (overlayfs accepts idmapped layers from Linux 5.19): each
// unpacked layer is cloned (open_tree OPEN_TREE_CLONE) and the clone idmapped
// (mount_setattr MOUNT_ATTR_IDMAP). From Linux 6.13 overlayfs takes such a
// detached clone directly ("lowerdir+" by file descriptor); older kernels
// need it attached at a path first (attach(): <dir>/<i>). Overlayfs keeps
// private clones of its layers, so ours may go as soon as the overlay is
// mounted; OverlayRootfs keeps detached ones until its release() (their
// drop waits for an RCU grace period) and detaches attached ones at once.
// The shared layer cache is never changed; its files owned by 0 show as
// the namespace's 0.
#pragma once

#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::image::detail {

class IdmappedLayers {
public:
    // A detached idmapped clone of every directory in `lower_dirs`, in order.
    static Result<IdmappedLayers> clone(const std::vector<std::string>& lower_dirs, int userns_fd);

    IdmappedLayers(IdmappedLayers&& other) noexcept;
    IdmappedLayers& operator=(IdmappedLayers&&) = delete;
    IdmappedLayers(const IdmappedLayers&) = delete;
    IdmappedLayers& operator=(const IdmappedLayers&) = delete;
    // Detaches every attached clone (MNT_DETACH), removes `dir` and closes
    // the clones (which dissolves the detached ones).
    ~IdmappedLayers();

    // The detached clones, in the order of lower_dirs (until attach()).
    std::vector<int> fds() const;

    // Attaches the clones under `dir` (made 0700; must not exist), for
    // kernels that take layers only by path. Once.
    Result<void> attach(const std::string& dir);
    // The attached clones, in the order of lower_dirs; empty before attach().
    const std::vector<std::string>& paths() const { return paths_; }

private:
    IdmappedLayers() = default;
    std::vector<std::string> sources_;
    std::vector<UniqueFd> trees_;
    std::string dir_;
    std::vector<std::string> paths_;
};

}  // namespace nps::image::detail
