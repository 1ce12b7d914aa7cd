// SPDX-License-Identifier: Apache-2.0
// The shared destination rules with an operator allowlist (the callback rules,
// without one, are in callback_test.cpp).
#include <doctest/doctest.h>

#include "nps/proto/destination_policy.hpp"

using namespace nps::proto;

namespace {

DestinationRules rules_with(std::initializer_list<const char*> entries)
{
    DestinationRules rules{.error_code = "NOP-SPAWN-SPEC-INVALID"};
    for (const char* text : entries) {
        auto entry = parse_destination_allow_entry(text);
        REQUIRE_MESSAGE(entry, entry.error().message);
        rules.allow.push_back(*entry);
    }
    return rules;
}

std::vector<IpAddress> ips(std::initializer_list<const char*> texts)
{
    std::vector<IpAddress> out;
    for (const char* t : texts)
        out.push_back(*parse_ip_literal(t));
    return out;
}

}  // namespace

TEST_CASE("destination allowlist: entry syntax")
{
    auto v4 = parse_destination_allow_entry("10.20.0.0/16");
    REQUIRE(v4);
    CHECK(v4->kind == DestinationAllowEntry::Kind::network);
    CHECK(v4->prefix_bits == 16);
    CHECK(parse_destination_allow_entry("127.0.0.1")->prefix_bits == 32);
    CHECK(parse_destination_allow_entry("::1")->prefix_bits == 128);
    CHECK(parse_destination_allow_entry("[::1]")->prefix_bits == 128);
    CHECK(parse_destination_allow_entry("fd00::/8")->prefix_bits == 8);
    CHECK(parse_destination_allow_entry("0.0.0.0/0")->prefix_bits == 0);
    auto name = parse_destination_allow_entry("Specs.LAN.");
    REQUIRE(name);
    CHECK(name->kind == DestinationAllowEntry::Kind::host_name);
    CHECK(name->host_name == "specs.lan");

    auto error = [](const char* text) {
        auto r = parse_destination_allow_entry(text);
        REQUIRE_FALSE(r);
        return r.error().message;
    };
    CHECK(error("") == "Invalid destination '': empty");
    CHECK(error("10.0.0.1/8").find("host bits are set after the /8 prefix (did you mean 10.0.0.0/8?)") !=
          std::string::npos);
    CHECK(error("10.0.0.0/33").find("prefix length 33 exceeds 32") != std::string::npos);
    CHECK(error("10.0.0.0/").find("not a number") != std::string::npos);
    CHECK(error("specs.lan/24").find("needs an IP address") != std::string::npos);
    CHECK(error("127.1").find("non-standard numeric") != std::string::npos);
    CHECK(error("exa_mple.lan").find("neither an IP address") != std::string::npos);
    CHECK_FALSE(parse_destination_allow_entry("https://specs.lan"));
    CHECK_FALSE(parse_destination_allow_entry("specs.lan:443"));
}

TEST_CASE("destination rules: without an allowlist only public destinations pass")
{
    const DestinationRules rules{.error_code = "NOP-SPAWN-SPEC-INVALID"};
    auto d = check_destination_url("https://specs.example.com:8443/a.json", rules, "spawn_spec_ref");
    REQUIRE(d);
    CHECK(d->host == "specs.example.com");
    CHECK(d->port == 8443);
    CHECK_FALSE(d->literal);
    CHECK(check_destination_url("https://specs.example.com/a", rules, "x")->port == 443);
    CHECK(check_destination_addresses(*d, ips({"8.8.8.8", "2606:4700::1"}), rules, "x"));
    auto mixed = check_destination_addresses(*d, ips({"8.8.8.8", "10.0.0.1"}), rules, "spawn_spec_ref");
    REQUIRE_FALSE(mixed);
    CHECK(mixed.error().code == "NOP-SPAWN-SPEC-INVALID");
    CHECK(mixed.error().message == "spawn_spec_ref: the host resolves to non-public address '10.0.0.1'");
    CHECK_FALSE(check_destination_addresses(*d, {}, rules, "x"));
    CHECK_FALSE(check_destination_url("https://127.0.0.1/", rules, "x"));
    CHECK_FALSE(check_destination_url("https://localhost/", rules, "x"));
}

TEST_CASE("destination rules: networks admit literals and answers inside them")
{
    const auto rules = rules_with({"127.0.0.1", "10.20.0.0/16", "fd00::/8"});
    CHECK(check_destination_url("https://127.0.0.1:8443/s", rules, "x"));
    CHECK(check_destination_url("https://10.20.3.4/s", rules, "x"));
    CHECK(check_destination_url("https://[fd12::1]/s", rules, "x"));
    CHECK(check_destination_url("https://[::ffff:127.0.0.1]/s", rules, "x"));  // mapped form matches IPv4
    CHECK_FALSE(check_destination_url("https://127.0.0.2/s", rules, "x"));
    CHECK_FALSE(check_destination_url("https://10.21.0.1/s", rules, "x"));
    CHECK_FALSE(check_destination_url("https://[::1]/s", rules, "x"));
    CHECK_FALSE(check_destination_url("http://127.0.0.1/s", rules, "x"));      // still https only
    CHECK_FALSE(check_destination_url("https://u@127.0.0.1/s", rules, "x"));   // still no user-info
    CHECK_FALSE(check_destination_url("https://localhost/s", rules, "x"));      // a name is not a network

    auto name = check_destination_url("https://specs.example.com/s", rules, "x");
    REQUIRE(name);
    CHECK_FALSE(name->host_allowlisted);
    CHECK(check_destination_addresses(*name, ips({"10.20.0.5", "8.8.8.8"}), rules, "x"));
    CHECK_FALSE(check_destination_addresses(*name, ips({"10.20.0.5", "10.30.0.1"}), rules, "x"));
}

TEST_CASE("destination rules: a named host is trusted with every address it resolves to")
{
    const auto rules = rules_with({"specs.lan", "localhost"});
    auto lan = check_destination_url("https://SPECS.lan./s", rules, "x");
    REQUIRE(lan);
    CHECK(lan->host_allowlisted);
    CHECK(check_destination_addresses(*lan, ips({"192.168.1.5", "::1"}), rules, "x"));
    auto local = check_destination_url("https://localhost:9443/s", rules, "x");
    REQUIRE(local);
    CHECK(check_destination_addresses(*local, ips({"127.0.0.1"}), rules, "x"));
    CHECK_FALSE(check_destination_url("https://api.localhost/s", rules, "x"));  // exact names only
    auto other = check_destination_url("https://other.lan/s", rules, "x");
    REQUIRE(other);
    CHECK_FALSE(check_destination_addresses(*other, ips({"192.168.1.5"}), rules, "x"));
    CHECK_FALSE(check_destination_url("https://127.0.0.1/s", rules, "x"));  // a name entry admits no literal
}

TEST_CASE("destination rules: format_ip")
{
    CHECK(format_ip(*parse_ip_literal("10.0.0.1")) == "10.0.0.1");
    CHECK(format_ip(*parse_ip_literal("2001:DB8:0:0:0:0:0:1")) == "2001:db8::1");
    CHECK(format_ip(*parse_ip_literal("::ffff:127.0.0.1")) == "::ffff:127.0.0.1");
}
