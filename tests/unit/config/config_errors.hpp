// SPDX-License-Identifier: Apache-2.0
// error_of(toml): the message a configuration text is refused with; the test
// fails if the text is accepted.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "nps/config/config.hpp"

namespace nps::config::test {

inline std::string error_of(const std::string& toml)
{
    auto c = parse_config(toml, "test.toml");
    REQUIRE_FALSE(c);
    return c.error().message;
}

}  // namespace nps::config::test
