// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include "nps/spawn/quantity.hpp"

using nps::spawn::parse_cpu_millicores;
using nps::spawn::parse_memory_bytes;

TEST_CASE("CPU quantities become millicores")
{
    CHECK(parse_cpu_millicores("500m").value() == 500);
    CHECK(parse_cpu_millicores("1").value() == 1000);
    CHECK(parse_cpu_millicores("0.5").value() == 500);
    CHECK(parse_cpu_millicores("2").value() == 2000);
    CHECK(parse_cpu_millicores("0.001").value() == 1);
    CHECK(parse_cpu_millicores("1500000u").value() == 1500);
    CHECK(parse_cpu_millicores("1e-3").value() == 1);
    CHECK(parse_cpu_millicores("0").value() == 0);
}

TEST_CASE("memory quantities become bytes")
{
    CHECK(parse_memory_bytes("512Mi").value() == 512LL * 1024 * 1024);
    CHECK(parse_memory_bytes("1G").value() == 1'000'000'000LL);
    CHECK(parse_memory_bytes("1e3").value() == 1000);
    CHECK(parse_memory_bytes("1E3").value() == 1000);
    CHECK(parse_memory_bytes("128974848").value() == 128974848);
    CHECK(parse_memory_bytes("129M").value() == 129'000'000);
    CHECK(parse_memory_bytes("123Mi").value() == 123LL << 20);
    CHECK(parse_memory_bytes("0.5Ki").value() == 512);
    CHECK(parse_memory_bytes("1k").value() == 1000);
    CHECK(parse_memory_bytes("7Ei").value() == 7LL << 60);
    CHECK(parse_memory_bytes("9223372036854775807").value() == INT64_MAX);
    // Mantissas past 64 bits that scale back into range (the accumulator's
    // upper half, also on 32-bit targets).
    CHECK(parse_memory_bytes("1.000000000000000000000000000000").value() == 1);
    CHECK(parse_memory_bytes("9223372036854775807000m").value() == INT64_MAX);
    CHECK(parse_memory_bytes("4611686018427387904.000000000000000").value() == 1LL << 62);
    CHECK_FALSE(parse_memory_bytes("9223372036854775808000m"));
    CHECK_FALSE(parse_memory_bytes("1.000000000000000000000000000001"));
}

TEST_CASE("malformed and out-of-range quantities are refused, naming the text")
{
    for (const char* bad : {"", "-1", "+1", " 1", "1 ", ".5", "5.", "1.2.3", "1KI", "1ki",
                            "1K", "1Mb", "1e", "1e+", "1e1000", "abc", "1Ki1", "0x10"}) {
        CAPTURE(bad);
        auto r = parse_memory_bytes(bad);
        REQUIRE_FALSE(r);
        CHECK(r.error().message.find(std::string("'") + bad + "'") != std::string::npos);
    }
    CHECK_FALSE(parse_memory_bytes("8Ei"));
    CHECK_FALSE(parse_memory_bytes("9223372036854775808"));
    CHECK_FALSE(parse_memory_bytes("99999999999999999999999999999999999"));
    CHECK_FALSE(parse_memory_bytes("1.5"));
    CHECK_FALSE(parse_memory_bytes("1m"));
    CHECK(parse_memory_bytes("1.5").error().message ==
          "Invalid memory quantity '1.5': not a whole number of bytes");
    CHECK_FALSE(parse_cpu_millicores("0.0005"));
    CHECK_FALSE(parse_cpu_millicores("1n"));
    CHECK_FALSE(parse_cpu_millicores("10E"));
    CHECK_FALSE(parse_cpu_millicores(std::string(65, '1')));
}
