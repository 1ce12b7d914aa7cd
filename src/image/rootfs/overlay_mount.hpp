// SPDX-License-Identifier: Apache-2.0
// Mounting an overlay of many lower directories (see rootfs.hpp for the
// strategy across kernel versions).
#pragma once

#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/image/rootfs.hpp"

namespace nps::image::detail {

// mount(2) copies at most one page of options.
inline constexpr std::size_t kLegacyOverlayOptionBytes = 4095;

struct OverlayMount {
    const std::vector<std::string>& lower_dirs;  // top first
    const std::string& upper_dir;
    const std::string& work_dir;
    const std::string& target;
    OverlayMountApi api;
};

// Mounts the overlay (nodev) on target.
Result<void> mount_overlay(const OverlayMount& mount);

// Mounts the overlay (nodev) on target from `lower_fds` (one per entry of
// mount.lower_dirs, which name them in messages; detached mounts welcome),
// by "lowerdir+" descriptor. false, with nothing mounted, when the kernel
// cannot take layers that way (before 6.13) or mount.api rules it out: the
// caller then needs the layers at paths.
Result<bool> mount_overlay_from_fds(const OverlayMount& mount, const std::vector<int>& lower_fds);

}  // namespace nps::image::detail
