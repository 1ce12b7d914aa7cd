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

TEST_CASE("HTTP dates: the IMF-fixdate and both obsolete forms, in 64 bits; anything else is refused")
{
    // RFC 9110 §5.6.7's example, in its three spellings.
    CHECK(nps::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777);
    CHECK(nps::parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT") == 784111777);
    CHECK(nps::parse_http_date("Sun Nov  6 08:49:37 1994") == 784111777);
    // Past January 2038 (a 32-bit time_t would wrap) and the leap day of 2400.
    CHECK(nps::parse_http_date("Tue, 19 Jan 2038 03:14:08 GMT") == 2147483648LL);
    CHECK(nps::parse_http_date("Wed, 01 Mar 2400 00:00:00 GMT") == 13574649600LL);
    for (const char* bad : {"", "soon", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 GMT trailing",
                            "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT", "120",
                            "Sun, 06 Nov 1994 08:49:37 GMT                                                  x"}) {
        CAPTURE(bad);
        CHECK_FALSE(nps::parse_http_date(bad).has_value());
    }
}
