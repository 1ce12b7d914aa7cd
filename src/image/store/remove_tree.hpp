// SPDX-License-Identifier: Apache-2.0
// Removing a directory tree the unpacker or the rootfs made.
#pragma once

#include <string>

#include "nps/base/result.hpp"

namespace nps::image::detail {

// Removes `path` and everything beneath it, never following a symlink
// (a symlink inside is removed, not its target). A missing path is success.
Result<void> remove_tree(const std::string& path);

}  // namespace nps::image::detail
