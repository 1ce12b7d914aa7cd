// SPDX-License-Identifier: Apache-2.0
// MsgPack → JSON: the mapping, and refusals the vectors do not cover (deep
// nesting, huge declared sizes, bin/ext, bad keys, bad UTF-8, trailing bytes).
#include <doctest/doctest.h>

#include <string>

#include "byte_string.hpp"
#include "nps/proto/msgpack_json.hpp"

using nps::proto::json_to_msgpack;
using nps::proto::msgpack_to_json;
using nps::proto::MsgpackLimits;

namespace {

using nps::test::bytes;

std::string json_of(const std::string& mp, const MsgpackLimits& limits = {})
{
    auto r = msgpack_to_json(mp, limits);
    REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message));
    return *r;
}

std::string refusal(const std::string& mp, const MsgpackLimits& limits = {})
{
    auto r = msgpack_to_json(mp, limits);
    REQUIRE_FALSE(r.has_value());
    return r.error().code;
}

}  // namespace

TEST_CASE("MsgPack → JSON: scalars and containers")
{
    CHECK(json_of(bytes({0xC0})) == "null");
    CHECK(json_of(bytes({0xC3})) == "true");
    CHECK(json_of(bytes({0x7F})) == "127");
    CHECK(json_of(bytes({0xFF})) == "-1");
    CHECK(json_of(bytes({0xCF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})) == "18446744073709551615");
    CHECK(json_of(bytes({0xD3, 0x80, 0, 0, 0, 0, 0, 0, 0})) == "-9223372036854775808");
    CHECK(json_of(bytes({0xCB, 0x3F, 0xF8, 0, 0, 0, 0, 0, 0})) == "1.5");
    CHECK(json_of(bytes({0xCA, 0x3F, 0xC0, 0, 0})) == "1.5");  // float32
    CHECK(json_of(bytes({0xA3, 'a', '"', '\n'})) == "\"a\\\"\\n\"");
    CHECK(json_of(bytes({0x82, 0xA1, 'a', 0x90, 0xA1, 'b', 0x80})) == R"({"a":[],"b":{}})");
}

TEST_CASE("MsgPack → JSON: values without a JSON form are refused")
{
    CHECK(refusal(bytes({0xC4, 0x01, 0x00})) == "NWP-HTTP-FRAME-BODY-MALFORMED");        // bin
    CHECK(refusal(bytes({0xD4, 0x01, 0x00})) == "NWP-HTTP-FRAME-BODY-MALFORMED");        // fixext 1
    CHECK(refusal(bytes({0xD6, 0xFF, 0, 0, 0, 0})) == "NWP-HTTP-FRAME-BODY-MALFORMED");  // timestamp ext
    CHECK(refusal(bytes({0x81, 0x01, 0xC0})) == "NWP-HTTP-FRAME-BODY-MALFORMED");        // integer key
    CHECK(refusal(bytes({0x81, 0x90, 0xC0})) == "NWP-HTTP-FRAME-BODY-MALFORMED");        // array key
    CHECK(refusal(bytes({0x82, 0xA1, 'a', 0xC0, 0xA1, 'a', 0xC0})) == "NWP-HTTP-FRAME-BODY-MALFORMED");  // duplicate
    CHECK(refusal(bytes({0xA1, 0xFF})) == "NWP-HTTP-FRAME-BODY-MALFORMED");              // not UTF-8
    CHECK(refusal(bytes({0xCB, 0x7F, 0xF8, 0, 0, 0, 0, 0, 0})) == "NWP-HTTP-FRAME-BODY-MALFORMED");  // NaN
    CHECK(refusal(bytes({0xC1})) == "NWP-HTTP-FRAME-BODY-MALFORMED");                    // never used
    CHECK(refusal("") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(refusal(bytes({0xC0, 0xC0})) == "NWP-HTTP-FRAME-BODY-MALFORMED");              // trailing
    CHECK(refusal(bytes({0x92, 0x01})) == "NWP-HTTP-FRAME-BODY-MALFORMED");              // truncated
}

TEST_CASE("MsgPack → JSON: limits")
{
    // 100 nested arrays: refused at the depth limit, no recursion.
    CHECK(refusal(std::string(100, '\x91') + '\xC0') == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(json_of(std::string(31, '\x91') + '\xC0') == std::string(31, '[') + "null" + std::string(31, ']'));
    // A five-byte header declaring 4 billion entries allocates nothing.
    CHECK(refusal(bytes({0xDD, 0xFF, 0xFF, 0xFF, 0xFF})) == "NCP-FRAME-PAYLOAD-TOO-LARGE");
    CHECK(refusal(bytes({0xDF, 0xFF, 0xFF, 0xFF, 0xFF})) == "NCP-FRAME-PAYLOAD-TOO-LARGE");
    // A str declaring 4 GiB without its bytes is truncated; nothing is allocated.
    CHECK(refusal(bytes({0xDB, 0xFF, 0xFF, 0xFF, 0xFF})) == "NWP-HTTP-FRAME-BODY-MALFORMED");
    MsgpackLimits small{.max_depth = 2, .max_string_bytes = 2, .max_container_entries = 2, .max_json_bytes = 8};
    CHECK(refusal(bytes({0x91, 0x91, 0x90}), small) == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(refusal(bytes({0xA3, 'a', 'b', 'c'}), small) == "NCP-FRAME-PAYLOAD-TOO-LARGE");
    CHECK(refusal(bytes({0x93, 1, 2, 3}), small) == "NCP-FRAME-PAYLOAD-TOO-LARGE");
    CHECK(refusal(bytes({0x92, 0xCE, 0x7F, 0xFF, 0xFF, 0xFF, 0xCE, 0x7F, 0xFF, 0xFF, 0xFF}), small) ==
          "NCP-FRAME-PAYLOAD-TOO-LARGE");
}

TEST_CASE("JSON → MsgPack → JSON keeps the value")
{
    // -9802077313163067000 is a float64 printed without exponent: 19 digits below INT64_MIN
    // (found by msgpack_json_fuzz; simdjson refuses it as an integer).
    for (const char* json : {R"({"a":1,"b":[true,false,null],"c":"x\u0001y","d":-2,"e":0.25})", "[]", "\"s\"",
                             "18446744073709551615", "-9223372036854775808", "-9802077313163067000"}) {
        CAPTURE(json);
        auto mp = json_to_msgpack(json);
        REQUIRE(mp.has_value());
        CHECK(json_of(*mp) == json);
    }
    auto bad = json_to_msgpack("[1,");
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().code == "NWP-HTTP-FRAME-BODY-MALFORMED");
    auto deep = json_to_msgpack(std::string(40, '[') + std::string(40, ']'));
    REQUIRE_FALSE(deep.has_value());
}

TEST_CASE("JSON → MsgPack: a scalar at the depth limit packs, as MsgPack → JSON accepted it")
{
    // 32 nested arrays (the limit of both directions) around one integer:
    // a fuzz finding, where packing counted the scalar as a level.
    std::string mp(1, static_cast<char>(0x94));
    mp += std::string(31, static_cast<char>(0x91));
    mp += bytes({0x74, 0x04, 0x80, 0x00});
    const std::string json = json_of(mp);
    auto packed = json_to_msgpack(json);
    REQUIRE_MESSAGE(packed.has_value(), (packed ? "" : packed.error().message));
    CHECK(json_of(*packed) == json);
    // One container more is refused both ways.
    CHECK_FALSE(msgpack_to_json(std::string(1, static_cast<char>(0x91)) + mp).has_value());
    CHECK_FALSE(json_to_msgpack("[" + json + "]").has_value());
}
