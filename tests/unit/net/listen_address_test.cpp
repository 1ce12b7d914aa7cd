// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <string>

#include "nps/net/http_client.hpp"
#include "nps/net/http_server.hpp"

using nps::net::is_loopback_host;
using nps::net::parse_listen_address;
using nps::net::url_encode;

TEST_CASE("parse_listen_address accepts host:port and [v6]:port")
{
    auto a = parse_listen_address("127.0.0.1:17437");
    REQUIRE(a);
    CHECK(a->first == "127.0.0.1");
    CHECK(a->second == 17437);

    auto b = parse_listen_address("[::1]:0");
    REQUIRE(b);
    CHECK(b->first == "::1");
    CHECK(b->second == 0);

    auto c = parse_listen_address("localhost:65535");
    REQUIRE(c);
    CHECK(c->first == "localhost");
    CHECK(c->second == 65535);

    auto d = parse_listen_address("0.0.0.0:80");
    REQUIRE(d);
    CHECK(d->first == "0.0.0.0");

    auto e = parse_listen_address("[::]:17437");
    REQUIRE(e);
    CHECK(e->first == "::");

    auto f = parse_listen_address("runner-1.example.com:00080");
    REQUIRE(f);
    CHECK(f->second == 80);
}

TEST_CASE("parse_listen_address rejects malformed text and names it")
{
    for (const char* text : {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:12a",
                             "127.0.0.1:999999", "::1:80", "[::1]80", "[::1]", "[::1", "[nothex]:80", "[]:80", ":80",
                             "bad host:80", "127.0.0.1: 80", "127.0.0.1:+80"}) {
        CAPTURE(text);
        auto r = parse_listen_address(text);
        REQUIRE_FALSE(r);
        CHECK(r.error().message.find("'" + std::string(text) + "'") != std::string::npos);
    }
}

TEST_CASE("is_loopback_host")
{
    for (const char* host : {"127.0.0.1", "127.1.2.3", "127.255.255.255", "::1", "[::1]", "localhost", "LocalHost",
                             "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1"}) {
        CAPTURE(host);
        CHECK(is_loopback_host(host));
    }
    for (const char* host : {"0.0.0.0", "10.0.0.1", "128.0.0.1", "::", "::2", "::ffff:10.0.0.1", "example.com",
                             "localhost.example.com", "", "127.0.0.1.nip.io"}) {
        CAPTURE(host);
        CHECK_FALSE(is_loopback_host(host));
    }
}

TEST_CASE("url_encode keeps RFC 3986 unreserved characters only")
{
    CHECK(url_encode("") == "");
    CHECK(url_encode("AZaz09-._~") == "AZaz09-._~");
    CHECK(url_encode("a b/c?d=e&f") == "a%20b%2Fc%3Fd%3De%26f");
    CHECK(url_encode("urn:nps:agent:x") == "urn%3Anps%3Aagent%3Ax");
    CHECK(url_encode(std::string("\x00\xff+%", 4)) == "%00%FF%2B%25");
    CHECK(url_encode("é") == "%C3%A9");
}
