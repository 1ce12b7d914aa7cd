// SPDX-License-Identifier: Apache-2.0
#include <algorithm>

#include "nps/ui/assets.hpp"

namespace nps::ui {

const Asset* find_asset(std::string_view path)
{
    const auto all = assets();
    const auto it = std::find_if(all.begin(), all.end(), [path](const Asset& a) { return a.path == path; });
    return it == all.end() ? nullptr : &*it;
}

}  // namespace nps::ui
