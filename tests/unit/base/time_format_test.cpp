// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include "nps/base/time_format.hpp"

TEST_CASE("RFC 3339 formatting and parsing")
{
    CHECK(nps::format_rfc3339_ms(0) == "1970-01-01T00:00:00.000Z");
    CHECK(nps::format_rfc3339_ms(1'700'000'000'123) == "2023-11-14T22:13:20.123Z");
    CHECK(nps::parse_rfc3339_ms("2023-11-14T22:13:20.123Z").value() == 1'700'000'000'123);
    CHECK(nps::parse_rfc3339_ms("2023-11-14T23:13:20+01:00").value() == 1'700'000'000'000);
    CHECK_FALSE(nps::parse_rfc3339_ms("2023-11-14 22:13:20Z"));
    CHECK_FALSE(nps::parse_rfc3339_ms("2023-13-14T22:13:20Z"));
    CHECK_FALSE(nps::parse_rfc3339_ms("2023-11-14T22:13:20"));
}
