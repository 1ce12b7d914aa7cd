// SPDX-License-Identifier: Apache-2.0
// The [spawn] section.
#include <doctest/doctest.h>

#include "config_errors.hpp"
#include "nps/config/config.hpp"
#include "nps/spawn/resolver.hpp"

using nps::config::parse_config;
using nps::config::test::error_of;

TEST_CASE("[spawn] defaults: public destinations only, the reference runner's limits")
{
    auto c = parse_config("", "test.toml");
    REQUIRE(c);
    CHECK(c->spawn.allow_destinations.empty());
    CHECK_FALSE(c->spawn.ca_file);
    CHECK_FALSE(c->spawn.registry_url);
    CHECK_FALSE(c->spawn.nwp_resolver_url);
    CHECK(c->spawn.fetch.timeout_ms == 30'000);
    CHECK(c->spawn.fetch.max_body_bytes == 65536);
    CHECK(c->spawn.fetch.max_redirects == 5);
    CHECK(c->spawn.cache_max_age_seconds == 3600);
    CHECK(c->spawn.cache_entries == 256);
    const auto& options = c->spawn;
    CHECK(options.allow_destinations.empty());
    CHECK(options.fetch.timeout_ms == 30000);
    CHECK(options.fetch.max_body_bytes == 65536);
}

TEST_CASE("[spawn] every key is read")
{
    auto c = parse_config(R"(
[spawn]
allow_destinations = ["127.0.0.1", "10.0.0.0/8", "specs.lan", "fd00::/8"]
ca_file = "/etc/nps-runner/specs-ca.pem"
registry_url = "http://127.0.0.1:17437"
nwp_resolver_url = "https://registry.lan:17436/base/"
fetch_timeout_seconds = 5
max_spec_bytes = 4096
max_redirects = 0
cache_max_age_seconds = 60
cache_entries = 0
)", "test.toml");
    REQUIRE_MESSAGE(c, c.error().message);
    CHECK(c->spawn.allow_destinations.size() == 4);
    CHECK(c->spawn.ca_file == "/etc/nps-runner/specs-ca.pem");
    CHECK(c->spawn.registry_url == "http://127.0.0.1:17437");
    CHECK(c->spawn.nwp_resolver_url == "https://registry.lan:17436/base/");
    CHECK(c->spawn.fetch.timeout_ms == 5000);
    CHECK(c->spawn.fetch.max_body_bytes == 4096);
    CHECK(c->spawn.fetch.max_redirects == 0);
    CHECK(c->spawn.cache_max_age_seconds == 60);
    CHECK(c->spawn.cache_entries == 0);
    const auto& options = c->spawn;
    CHECK(options.allow_destinations.size() == 4);
    CHECK(options.fetch.timeout_ms == 5000);
    CHECK(options.fetch.max_redirects == 0);
}

TEST_CASE("[spawn] wrong keys and values name the key")
{
    CHECK(error_of("[spawn]\nallow_destination = []\n").find("spawn.allow_destination: unknown key") !=
          std::string::npos);
    CHECK(error_of("[spawn]\nallow_destinations = [\"10.0.0.1/8\"]\n").find("spawn.allow_destinations: Invalid "
                                                                           "destination '10.0.0.1/8'") !=
          std::string::npos);
    CHECK(error_of("[spawn]\nallow_destinations = \"127.0.0.1\"\n").find("expected an array of strings") !=
          std::string::npos);
    CHECK(error_of("[spawn]\nca_file = \"ca.pem\"\n").find("spawn.ca_file: must be an absolute path") !=
          std::string::npos);
    CHECK(error_of("[spawn]\nregistry_url = \"ftp://x\"\n").find("spawn.registry_url:") != std::string::npos);
    CHECK(error_of("[spawn]\nregistry_url = \"http://u:p@x\"\n").find("spawn.registry_url:") != std::string::npos);
    CHECK(error_of("[spawn]\nnwp_resolver_url = \"http://x/?a=b\"\n").find("spawn.nwp_resolver_url:") !=
          std::string::npos);
    CHECK(error_of("[spawn]\nfetch_timeout_seconds = 0\n").find("must be between 1 and 300") != std::string::npos);
    CHECK(error_of("[spawn]\nmax_spec_bytes = 2000000\n").find("spawn.max_spec_bytes") != std::string::npos);
    CHECK(error_of("[spawn]\nmax_redirects = 11\n").find("spawn.max_redirects") != std::string::npos);
    CHECK(error_of("[spawn]\ncache_max_age_seconds = -1\n").find("spawn.cache_max_age_seconds") != std::string::npos);
    CHECK(error_of("[spawn]\ncache_entries = \"10\"\n").find("expected an integer") != std::string::npos);
}
