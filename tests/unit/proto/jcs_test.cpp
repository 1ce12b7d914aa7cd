// SPDX-License-Identifier: Apache-2.0
// RFC 8785 JCS: the RFC's own examples (§3.2.2, §3.2.3, Appendix B) and our
// limits (duplicate keys, depth, big integers).
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <string>

#include "nps/proto/jcs.hpp"

using nps::proto::jcs_canonicalize;
using nps::proto::jcs_format_number;

namespace {

std::string canon(std::string_view text)
{
    auto result = jcs_canonicalize(text);
    REQUIRE_MESSAGE(result.has_value(), (result ? "" : result.error().message));
    return *result;
}

std::string reject_code(std::string_view text)
{
    auto result = jcs_canonicalize(text);
    REQUIRE_FALSE(result.has_value());
    return result.error().code;
}

std::string nesting(std::size_t depth)
{
    return std::string(depth, '[') + std::string(depth, ']');
}

}  // namespace

TEST_CASE("JCS: RFC 8785 §3.2.2 example (numbers, string escapes, literals)")
{
    const char* input = R"({
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
})";
    CHECK(canon(input) ==
          "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
          "\"string\":\"\u20ac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
}

TEST_CASE("JCS: RFC 8785 §3.2.3 key order is by UTF-16 code units")
{
    const char* input = R"({
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
})";
    CHECK(canon(input) ==
          "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\","
          "\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\","
          "\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}");
}

TEST_CASE("JCS: a supplementary-plane key sorts before U+E000 (UTF-16, not UTF-8 byte order)")
{
    CHECK(canon("{\"\ue000\":1,\"\U00010000\":2}") == "{\"\U00010000\":2,\"\ue000\":1}");
    CHECK(canon(R"({"b":1,"a":2,"aa":3,"A":4,"":5})") == R"({"":5,"A":4,"a":2,"aa":3,"b":1})");
}

TEST_CASE("JCS: string escaping")
{
    CHECK(canon(R"(["\b\t\n\f\r", "\u0000\u001f\u007f", "\u2028\u2029", "\/", "é"])") ==
          "[\"\\b\\t\\n\\f\\r\",\"\\u0000\\u001f\x7f\",\"\u2028\u2029\",\"/\",\"\u00e9\"]");
    CHECK(canon(R"("\u00E9\uD83D\uDE00")") == "\"\u00e9\U0001F600\"");
}

TEST_CASE("JCS: RFC 8785 Appendix B number serialization")
{
    const std::pair<std::uint64_t, const char*> cases[] = {
        {0x0000000000000000, "0"},
        {0x8000000000000000, "0"},
        {0x0000000000000001, "5e-324"},
        {0x8000000000000001, "-5e-324"},
        {0x7fefffffffffffff, "1.7976931348623157e+308"},
        {0xffefffffffffffff, "-1.7976931348623157e+308"},
        {0x4340000000000000, "9007199254740992"},
        {0xc340000000000000, "-9007199254740992"},
        {0x4430000000000000, "295147905179352830000"},
        {0x44b52d02c7e14af5, "9.999999999999997e+22"},
        {0x44b52d02c7e14af6, "1e+23"},
        {0x44b52d02c7e14af7, "1.0000000000000001e+23"},
        {0x444b1ae4d6e2ef4e, "999999999999999700000"},
        {0x444b1ae4d6e2ef4f, "999999999999999900000"},
        {0x444b1ae4d6e2ef50, "1e+21"},
        {0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
        {0x3eb0c6f7a0b5ed8d, "0.000001"},
        {0x41b3de4355555553, "333333333.3333332"},
        {0x41b3de4355555554, "333333333.33333325"},
        {0x41b3de4355555555, "333333333.3333333"},
        {0x41b3de4355555556, "333333333.3333334"},
        {0x41b3de4355555557, "333333333.33333343"},
        {0xbecbf647612f3696, "-0.0000033333333333333333"},
        {0x43143ff3c1cb0959, "1424953923781206.2"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.first);
        CHECK(jcs_format_number(std::bit_cast<double>(c.first)) == c.second);
    }
}

TEST_CASE("JCS: numbers in documents")
{
    CHECK(canon("[1e21, 1e-7, 0.000001, -0, -0.0, 333333333.3333333, 1e20, 1.0, 100, -5, 0.1]") ==
          "[1e+21,1e-7,0.000001,0,0,333333333.3333333,100000000000000000000,1,100,-5,0.1]");
    CHECK(canon("[9007199254740993, 18446744073709551615, -9223372036854775808]") ==
          "[9007199254740992,18446744073709552000,-9223372036854776000]");
    // Integers beyond 64 bits are valid JSON numbers (read as doubles).
    CHECK(canon("[18446744073709551616, 295147905179352830000, -123456789012345678901234567890]") ==
          "[18446744073709552000,295147905179352830000,-1.2345678901234568e+29]");
    CHECK(canon("[123456789012345678901e5, 12345678901234567890.5]") ==
          "[1.2345678901234568e+25,12345678901234567000]");
}

TEST_CASE("JCS: the canonical form is a fixed point")
{
    const char* inputs[] = {
        R"({"z":[1e21,295147905179352830000,{"b":null,"a":"\u0001"}],"a":true})",
        R"([0.1, 5e-324, 1.7976931348623157e308, "\ud83d\ude00"])",
    };
    for (const char* input : inputs) {
        const std::string once = canon(input);
        CHECK(canon(once) == once);
    }
}

TEST_CASE("JCS: rejections carry NWP-HTTP-FRAME-BODY-MALFORMED")
{
    CHECK(reject_code("") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(reject_code("{") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(reject_code("[1,]") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(reject_code("[1] [2]") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(reject_code("NaN") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(reject_code("1e400") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(reject_code("1E400000000000000000000") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(reject_code("01") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(reject_code("000000000000000000001") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(reject_code(R"("\ud800")") == "NWP-HTTP-FRAME-BODY-MALFORMED");     // lone surrogate
    CHECK(reject_code(R"("\udc00\ud800")") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(reject_code("\"\xff\"") == "NWP-HTTP-FRAME-BODY-MALFORMED");        // invalid UTF-8
    CHECK(reject_code("\"a\x01\"") == "NWP-HTTP-FRAME-BODY-MALFORMED");       // raw control character
}

TEST_CASE("JCS: duplicate keys are rejected, naming the key and where")
{
    auto result = jcs_canonicalize(R"({"a":{"x":1,"y":[{"k":1,"k":2}]}})");
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(result.error().message == "a.y[0]: duplicate object key 'k'");
    // Keys equal after unescaping are duplicates too.
    CHECK(reject_code(R"({"a":1,"\u0061":2})") == "NWP-HTTP-FRAME-BODY-MALFORMED");
}

TEST_CASE("JCS: nesting depth limit")
{
    CHECK(canon(nesting(32)) == nesting(32));
    auto result = jcs_canonicalize(nesting(33));
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(result.error().message.find("nesting deeper than 32") != std::string::npos);
    CHECK(reject_code(nesting(5000)) == "NWP-HTTP-FRAME-BODY-MALFORMED");
}

TEST_CASE("JCS: scalars and whitespace")
{
    CHECK(canon(" \t\n\r null ") == "null");
    CHECK(canon("true") == "true");
    CHECK(canon("\"x\"") == "\"x\"");
    CHECK(canon("{ }") == "{}");
    CHECK(canon("[ ]") == "[]");
    CHECK(canon("{\"a\" : [ 1 , { } ] }") == "{\"a\":[1,{}]}");
}

TEST_CASE("JCS: 19-digit negative integers below INT64_MIN are read as doubles")
{
    // simdjson refuses them as integers; JCS prints such doubles without exponent.
    CHECK(canon("-9802077313163067000") == "-9802077313163067000");
    CHECK(canon("[-9223372036854775808]") == "[-9223372036854776000]");
    CHECK(canon("[-9223372036854775809]") == "[-9223372036854776000]");
}
