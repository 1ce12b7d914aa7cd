// SPDX-License-Identifier: Apache-2.0
#include "nps/base/ascii.hpp"

namespace nps {

std::string ascii_lower(std::string_view text)
{
    std::string out(text);
    for (char& c : out)
        c = ascii_lower(c);
    return out;
}

std::string ascii_upper(std::string_view text)
{
    std::string out(text);
    for (char& c : out)
        c = ascii_upper(c);
    return out;
}

}  // namespace nps
