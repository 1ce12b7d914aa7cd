// SPDX-License-Identifier: Apache-2.0
#include "remove_tree.hpp"

#include <filesystem>
#include <system_error>

namespace nps::image::detail {

Result<void> remove_tree(const std::string& path)
{
    // std::filesystem::remove_all removes symlinks without following them.
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec)
        return system_error("Failed to remove '" + path + "'", ec.value());
    return {};
}

}  // namespace nps::image::detail
