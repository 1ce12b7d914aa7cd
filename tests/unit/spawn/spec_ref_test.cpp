// SPDX-License-Identifier: Apache-2.0
// spawn_spec_ref classification and the exact spawnspec: data URI syntax.
#include <doctest/doctest.h>

#include "nps/base/digest.hpp"
#include "nps/base/limits.hpp"
#include "nps/spawn/spec_ref.hpp"

using namespace nps::spawn;

namespace {

constexpr std::size_t kMax = nps::limits::kDefaultSpawnSpecBytes;

}  // namespace

TEST_CASE("spec ref: classification by scheme")
{
    CHECK(*classify_spawn_spec_ref("spawnspec:e30") == RefKind::inline_data);
    CHECK(*classify_spawn_spec_ref("SpawnSpec:e30") == RefKind::inline_data);
    CHECK(*classify_spawn_spec_ref("https://specs.example.com/a.json") == RefKind::https);
    CHECK(*classify_spawn_spec_ref("HTTPS://specs.example.com/a.json") == RefKind::https);
    CHECK(*classify_spawn_spec_ref("nwp://specs.example.com/agents/a") == RefKind::nwp);
    for (const char* bad : {"", "http://specs.example.com/a.json", "data:application/json;base64,e30", "file:///etc/x",
                            "spawnspec", "specs.example.com/a.json", "ftp://x/y"}) {
        CAPTURE(bad);
        auto r = classify_spawn_spec_ref(bad);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == "NOP-SPAWN-SPEC-INVALID");
    }
    CHECK_FALSE(classify_spawn_spec_ref("spawnspec:" + std::string(nps::limits::kMaxSpawnSpecRefChars, 'A')));
}

TEST_CASE("spec ref: base64url padded or not, nothing else")
{
    const std::string json = R"({"image":"busybox"})";  // 19 bytes: 26 characters, padded with "=="
    const std::string unpadded = nps::base64url_encode(json);
    REQUIRE(unpadded.size() == 26);
    CHECK(*decode_spawnspec_uri("spawnspec:" + unpadded, kMax) == json);
    CHECK(*decode_spawnspec_uri("spawnspec:" + unpadded + "==", kMax) == json);
    CHECK_FALSE(decode_spawnspec_uri("spawnspec:" + unpadded + "=", kMax));
    CHECK(encode_spawnspec_uri(json) == "spawnspec:" + unpadded);

    CHECK(*decode_base64url_strict("e30") == "{}");
    CHECK(*decode_base64url_strict("e30=") == "{}");
    CHECK(*decode_base64url_strict("eyJhIjoxfQ") == R"({"a":1})");
    CHECK(*decode_base64url_strict("eyJhIjoxfQ==") == R"({"a":1})");
    CHECK(*decode_base64url_strict("_-8") == "\xff\xef");
    for (const char* bad : {"", "e", "e30==", "e30===", "eyJhIjoxfQ=", "e3=0", "=e30", "e30 ", " e30", "e3\n0",
                            "e3+0", "e3/0", "e3%30", "e31", "eyJhIjoxfR", "e30.", "e30=="}) {
        CAPTURE(bad);
        CHECK_FALSE(decode_base64url_strict(bad));
    }
}

TEST_CASE("spec ref: data URI failures are NOP-SPAWN-SPEC-INVALID with a reason")
{
    auto empty = decode_spawnspec_uri("spawnspec:", kMax);
    REQUIRE_FALSE(empty);
    CHECK(empty.error().code == "NOP-SPAWN-SPEC-INVALID");
    CHECK(empty.error().message == "spawn_spec_ref: the spawnspec: data URI has no payload");
    auto standard = decode_spawnspec_uri("spawnspec:" + nps::base64_encode("{\"a\":\"\xfb\xff\"}"), kMax);
    REQUIRE_FALSE(standard);
    CHECK(standard.error().message.find("not canonical base64url") != std::string::npos);
    CHECK_FALSE(decode_spawnspec_uri("spawnspec:;base64,e30", kMax));
    CHECK_FALSE(decode_spawnspec_uri("https://x/e30", kMax));

    const std::string big = std::string(2000, ' ') + "{}";
    auto over = decode_spawnspec_uri(encode_spawnspec_uri(big), 1024);
    REQUIRE_FALSE(over);
    CHECK(over.error().message.find("larger than 1024 bytes") != std::string::npos);
    auto just = decode_spawnspec_uri(encode_spawnspec_uri(std::string(1024, ' ')), 1024);
    CHECK(just);
    auto one_more = decode_spawnspec_uri(encode_spawnspec_uri(std::string(1025, ' ')), 1024);
    REQUIRE_FALSE(one_more);
    CHECK(one_more.error().message == "spawn_spec_ref: the inline SpawnSpec is 1025 bytes, more than 1024");
}

TEST_CASE("spec ref: the syntax an announce is checked for")
{
    for (const char* ok : {"spawnspec:e30", "https://specs.example.com/a.json", "https://10.0.0.1/a.json",
                           "nwp://specs.example.com/agents/demo", "nwp://specs.example.com:9000/agents/demo"}) {
        CAPTURE(ok);
        CHECK(check_spawn_spec_ref_syntax(ok));
    }
    for (const char* bad : {"spawnspec:e", "spawnspec:", "https://", "https://user:pw@example.com/a",
                            "https:example.com", "nwp://example.com", "nwp://example.com/a?b=c", "nwp://u@h/a",
                            "mailto:x@y"}) {
        CAPTURE(bad);
        auto r = check_spawn_spec_ref_syntax(bad);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == "NOP-SPAWN-SPEC-INVALID");
    }
}
