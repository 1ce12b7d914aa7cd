// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include "nps/proto/ip_policy.hpp"

using namespace nps::proto;

TEST_CASE("ip policy: public addresses")
{
    for (const char* ip : {"8.8.8.8", "1.1.1.1", "8.8.4.4", "100.63.255.255", "100.128.0.0", "172.15.255.255",
                           "172.32.0.0", "192.0.1.1", "192.169.0.1", "198.17.255.255", "198.20.0.0", "223.255.255.255",
                           "11.0.0.1", "2001:4860:4860::8888", "2606:4700:4700::1111", "2a00:1450::1",
                           "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"}) {
        CAPTURE(ip);
        CHECK(is_public_ip(ip));
    }
}

TEST_CASE("ip policy: non-public IPv4 ranges from the digest")
{
    for (const char* ip :
         {"0.0.0.0", "0.255.255.255", "10.0.0.8", "10.255.255.255", "127.0.0.1", "127.255.0.1", "100.64.0.0",
          "100.127.255.255", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.1", "192.0.2.55",
          "192.168.1.20", "198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9", "224.0.0.1",
          "239.255.255.255", "240.0.0.1", "255.255.255.255"}) {
        CAPTURE(ip);
        CHECK_FALSE(is_public_ip(ip));
    }
}

TEST_CASE("ip policy: non-public IPv6, embedded IPv4 unwrapped")
{
    for (const char* ip :
         {"::", "::1", "fe80::1", "febf::1", "fec0::1", "fc00::1", "fd12:3456::1", "ff02::1", "ff0e::1",
          "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1", "64:ff9b::a00:1",
          "2002:a00:1::1", "2001:db8::1", "2001::1", "2001:1ff::1", "3fff::1", "100::1", "4000::1", "1000::1"}) {
        CAPTURE(ip);
        CHECK_FALSE(is_public_ip(ip));
    }
}

TEST_CASE("ip policy: literal parsing is strict")
{
    for (const char* text : {"", "localhost", "127.1", "0x7f.0.0.1", "2130706433", "010.0.0.1", "1.2.3.4.5",
                             "[::1]", "fe80::1%eth0", " 8.8.8.8", "8.8.8.8 "}) {
        CAPTURE(text);
        CHECK_FALSE(parse_ip_literal(text).has_value());
        CHECK_FALSE(is_public_ip(text));
    }
    const auto v4 = parse_ip_literal("192.0.2.1");
    REQUIRE(v4);
    CHECK_FALSE(v4->is_v6);
    CHECK(v4->bytes[0] == 192);
    CHECK(v4->bytes[3] == 1);
    const auto v6 = parse_ip_literal("::ffff:1.2.3.4");
    REQUIRE(v6);
    CHECK(v6->is_v6);
    CHECK(v6->bytes[10] == 0xff);
}

TEST_CASE("ip policy: ambiguous numeric hosts")
{
    for (const char* host : {"127.1", "0x7f000001", "2130706433", "017700000001", "10.1", "example.123", "a.0x10"})
        CHECK_MESSAGE(is_ambiguous_numeric_host(host), host);
    for (const char* host : {"8.8.8.8", "example.com", "123.example.com", "1a.example", "::1", "localhost"})
        CHECK_FALSE_MESSAGE(is_ambiguous_numeric_host(host), host);
}
