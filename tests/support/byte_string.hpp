// SPDX-License-Identifier: Apache-2.0
// Binary test inputs written as byte values: bytes({0x82, 0xa1, 'a', 0x01}).
#pragma once

#include <initializer_list>
#include <string>

namespace nps::test {

inline std::string bytes(std::initializer_list<int> values)
{
    std::string out;
    for (int b : values)
        out += static_cast<char>(b);
    return out;
}

}  // namespace nps::test
