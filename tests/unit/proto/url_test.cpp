// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include "nps/base/limits.hpp"
#include "nps/proto/nwp_url.hpp"
#include "nps/proto/url.hpp"

using namespace nps::proto;

TEST_CASE("split_url: parts")
{
    auto parts = split_url("HTTPS://user:pw@Example.com:8443/a/b?q=1#f");
    REQUIRE(parts);
    CHECK(parts->scheme == "HTTPS");
    CHECK(parts->has_userinfo);
    CHECK(parts->userinfo == "user:pw");
    CHECK(parts->host == "Example.com");
    CHECK(parts->port == 8443);
    CHECK(parts->rest == "/a/b?q=1#f");

    auto v6 = split_url("https://[2001:db8::1]:443");
    REQUIRE(v6);
    CHECK(v6->host == "2001:db8::1");
    CHECK(v6->host_is_bracketed);
    CHECK(v6->port == 443);
    CHECK(v6->rest.empty());

    auto query_only = split_url("https://example.com?x=@y");
    REQUIRE(query_only);
    CHECK(query_only->host == "example.com");
    CHECK_FALSE(query_only->has_userinfo);
    CHECK(query_only->rest == "?x=@y");
}

TEST_CASE("split_url: rejections")
{
    for (const char* url : {"", "example.com", "://x", "1http://x", "https://x:", "https://x:abc", "https://x:0",
                            "https://x:65536", "https://[::1", "https://[::1]x", "https://a b", "https://a\\b",
                            "https://a\tb", "https://a/\x7f"}) {
        CAPTURE(url);
        CHECK_FALSE(split_url(url).has_value());
    }
}

TEST_CASE("nwp urls")
{
    auto url = parse_nwp_url("nwp://api.example.com/products/query");
    REQUIRE(url);
    CHECK(url->host == "api.example.com");
    CHECK(url->port == kDefaultNwpPort);
    CHECK(url->path == "/products/query");

    auto with_port = parse_nwp_url("NWP://[2001:db8::1]:17434/orders/.schema");
    REQUIRE(with_port);
    CHECK(with_port->port == 17434);
    CHECK(with_port->path == "/orders/.schema");

    for (const char* ok : {"nwp://x/y", "nwp://ml/i", "nwp://h/a_b-c/.nwm"})
        CHECK_MESSAGE(is_valid_nwp_url(ok), ok);
    for (const char* bad : {"https://x/y", "nwp://x", "nwp://x/", "nwp://x//y", "nwp://x/y/", "nwp://x/y?q=1",
                            "nwp://x/y#f", "nwp://u@x/y", "nwp://x/../y", "nwp://x/./y", "nwp://x_y/z",
                            "nwp://x/a b", "nwp://[::1/x", "nwp://[host]/x"})
        CHECK_FALSE_MESSAGE(is_valid_nwp_url(bad), bad);
    CHECK_FALSE(is_valid_nwp_url("nwp://x/" + std::string(nps::limits::kMaxUrlChars, 'a')));
}

TEST_CASE("iequals")
{
    CHECK(iequals("HTTPS", "https"));
    CHECK_FALSE(iequals("http", "https"));
}
