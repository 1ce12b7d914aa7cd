// SPDX-License-Identifier: Apache-2.0
// NCP frames beyond the vectors: truncated and over-long bodies, length
// limits, reserved bits, ENC, unknown types, encode/decode round trips in
// both tiers.
#include <doctest/doctest.h>

#include <string>

#include "byte_string.hpp"
#include "nps/proto/ncp_frame.hpp"

using namespace nps::proto::ncp;

namespace {

using nps::test::bytes;

std::string code_of_header(const std::string& b)
{
    auto r = decode_frame_header(b);
    REQUIRE_FALSE(r.has_value());
    return r.error().code;
}

std::string code_of_frame(const std::string& b, const FrameDecodeOptions& o = {})
{
    auto r = decode_frame(b, o);
    REQUIRE_FALSE(r.has_value());
    return r.error().code;
}

}  // namespace

TEST_CASE("NCP header: truncated headers are malformed, not read past the end")
{
    CHECK(code_of_header("") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(code_of_header(bytes({0x40, 0x04, 0x00})) == "NWP-HTTP-FRAME-BODY-MALFORMED");
    // EXT=1 needs 8 bytes.
    CHECK(code_of_header(bytes({0x40, 0x84, 0x00, 0x00, 0x00, 0x10, 0x00})) == "NWP-HTTP-FRAME-BODY-MALFORMED");
    auto ok = decode_frame_header(bytes({0x40, 0x84, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00}));
    REQUIRE(ok.has_value());
    CHECK(ok->payload_len == 65536);
    CHECK(ok->header_len() == 8);
}

TEST_CASE("NCP header: flags and types")
{
    for (int rsv : {0x10, 0x20, 0x40})
        CHECK(code_of_header(bytes({0x40, 0x04 | rsv, 0x00, 0x00})) == "NCP-FRAME-FLAGS-INVALID");
    CHECK(code_of_header(bytes({0x40, 0x07, 0x00, 0x00})) == "NCP-FRAME-FLAGS-INVALID");
    for (int type : {0x00, 0x08, 0x4E, 0xF0, 0xFD, 0xFF})
        CHECK(code_of_header(bytes({type, 0x04, 0x00, 0x00})) == "NCP-FRAME-UNKNOWN-TYPE");
    CHECK(decode_frame_header(bytes({0xFE, 0x04, 0x00, 0x00})).has_value());
    // Reserved bytes 6-7 of the extended header are ignored (NCP §3.1).
    CHECK(decode_frame_header(bytes({0x40, 0x84, 0x00, 0x00, 0x00, 0x01, 0xAB, 0xCD})).has_value());
}

TEST_CASE("NCP header: the 4-byte form cannot carry more than 65,535 bytes")
{
    FrameHeader h{.frame_type = kTaskFrame, .flags = {}, .payload_len = 65'536};
    auto r = encode_frame_header(h);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "NCP-FRAME-PAYLOAD-TOO-LARGE");
    h.flags.ext = true;
    h.payload_len = 0xFFFFFFFFu;
    auto ext = encode_frame_header(h);
    REQUIRE(ext.has_value());
    CHECK(*ext == bytes({0x40, 0x84, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00}));
}

TEST_CASE("NCP frame: body length must match the header exactly")
{
    const std::string header = bytes({0x40, 0x04, 0x00, 0x02});
    CHECK(code_of_frame(header + "{") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    CHECK(code_of_frame(header + "{}}") == "NWP-HTTP-FRAME-BODY-MALFORMED");
    const std::string body = header + "{}";  // the payload is a view into it
    auto ok = decode_frame(body);
    REQUIRE(ok.has_value());
    CHECK(ok->payload == "{}");
}

TEST_CASE("NCP frame: the receiver's limit is checked before the body is read")
{
    // Declares 4 GiB - 1 with only the header present: refused as too large, not truncated.
    CHECK(code_of_frame(bytes({0x40, 0x84, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00})) == "NCP-FRAME-PAYLOAD-TOO-LARGE");
    FrameDecodeOptions small{.policy = {}, .max_payload_bytes = 1};
    CHECK(code_of_frame(bytes({0x40, 0x04, 0x00, 0x02}) + "{}", small) == "NCP-FRAME-PAYLOAD-TOO-LARGE");
}

TEST_CASE("NCP frame: ENC=1 and disabled tiers are refused before the payload")
{
    CHECK(code_of_frame(bytes({0x40, 0x0C, 0x00, 0x00})) == "NCP-ENC-NOT-NEGOTIATED");
    CHECK(code_of_frame(bytes({0x10, 0x06, 0x00, 0x00})) == "NCP-ENCODING-UNSUPPORTED");
    FrameDecodeOptions json_only{.policy = {.default_encoding = Tier::json, .json = true, .msgpack = false}};
    CHECK(code_of_frame(bytes({0x40, 0x05, 0x00, 0x00}), json_only) == "NCP-ENCODING-UNSUPPORTED");
    // Even when Tier-3 is enabled, this runner decodes no BinaryVector payload.
    FrameDecodeOptions bv{.policy = {.binary_vector_v1 = true}};
    auto r = decode_frame_to_json(bytes({0x10, 0x06, 0x00, 0x00}), bv);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "NCP-ENCODING-UNSUPPORTED");
}

TEST_CASE("NCP frame: encode and decode round trip in both tiers")
{
    const std::string json = R"({"task_id":"t-1","dag":{"nodes":[{"id":"a","n":-3,"x":1.5,"ok":true,"z":null}]}})";
    for (Tier tier : {Tier::json, Tier::msgpack}) {
        CAPTURE(tier_name(tier));
        auto frame = encode_frame(kTaskFrame, tier, json);
        REQUIRE(frame.has_value());
        CHECK(static_cast<unsigned char>((*frame)[0]) == kTaskFrame);
        CHECK(static_cast<unsigned char>((*frame)[1]) == (0x04 | static_cast<int>(tier)));
        auto back = decode_frame_to_json(*frame);
        REQUIRE(back.has_value());
        CHECK(back->header.flags.tier == tier);
        CHECK(back->json == json);
    }
    // A JSON text of 70,000 bytes takes the extended header.
    const std::string big = "{\"s\":\"" + std::string(70'000, 'a') + "\"}";
    auto frame = encode_frame(kCapsFrame, Tier::json, big);
    REQUIRE(frame.has_value());
    CHECK(static_cast<unsigned char>((*frame)[1]) == 0x84);
    CHECK(frame->size() == big.size() + 8);
    auto bad = encode_frame(kCapsFrame, Tier::json, "{not json");
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().code == "NWP-HTTP-FRAME-BODY-MALFORMED");
}
