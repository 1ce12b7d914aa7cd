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

}  // namespace nps::image::detail
