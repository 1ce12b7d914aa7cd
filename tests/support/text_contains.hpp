// SPDX-License-Identifier: Apache-2.0
// contains(text, part): whether an output or error message mentions `part`.
#pragma once

#include <string>

namespace nps::test {

inline bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

}  // namespace nps::test
