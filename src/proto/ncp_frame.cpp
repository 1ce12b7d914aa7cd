// SPDX-License-Identifier: Apache-2.0
// NCP frame header, encoding policy and whole frames (see nps/proto/ncp_frame.hpp).
#include "nps/proto/ncp_frame.hpp"

#include <cstdio>

#include "nps/proto/error_codes.hpp"
#include "nps/proto/json_reader.hpp"
#include "nps/proto/msgpack_json.hpp"

namespace nps::proto::ncp {

namespace {

constexpr std::uint8_t kExtBit = 0x80;
constexpr std::uint8_t kReservedBits = 0x70;
constexpr std::uint8_t kEncBit = 0x08;
constexpr std::uint8_t kFinalBit = 0x04;
constexpr std::uint8_t kTierBits = 0x03;

Error malformed(std::string message)
{
    return protocol_error(code::kNwpHttpFrameBodyMalformed, "NCP frame: " + std::move(message));
}

Error too_large(std::size_t len, std::size_t limit, std::string_view what)
{
    return protocol_error(code::kNcpFramePayloadTooLarge, "NCP frame: payload of " + std::to_string(len) +
                                                              " bytes exceeds " + std::string(what) + " of " +
                                                              std::to_string(limit));
}

}  // namespace

std::string frame_byte_text(std::uint8_t byte)
{
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02X", byte);
    return buf;
}

bool is_known_frame_type(std::uint8_t type)
{
    return (type >= 0x01 && type <= 0x07) || (type >= 0x10 && type <= 0x12) || (type >= 0x20 && type <= 0x22) ||
           (type >= 0x30 && type <= 0x32) || (type >= 0x40 && type <= 0x43) || type == kErrorFrame;
}

std::string_view tier_name(Tier tier)
{
    switch (tier) {
    case Tier::json: return "json";
    case Tier::msgpack: return "msgpack";
    case Tier::binary_vector_v1: return "binary_vector.v1";
    }
    return "reserved";
}

std::optional<Tier> tier_from_name(std::string_view name)
{
    for (Tier t : {Tier::json, Tier::msgpack, Tier::binary_vector_v1})
        if (tier_name(t) == name)
            return t;
    return std::nullopt;
}

std::uint8_t encode_flags(const FrameFlags& flags)
{
    std::uint8_t b = static_cast<std::uint8_t>(flags.tier) & kTierBits;
    if (flags.ext)
        b |= kExtBit;
    if (flags.enc)
        b |= kEncBit;
    if (flags.final)
        b |= kFinalBit;
    return b;
}

Result<FrameFlags> decode_flags(std::uint8_t byte)
{
    if ((byte & kTierBits) == kTierBits)
        return protocol_error(code::kNcpFrameFlagsInvalid,
                              "NCP frame: flags " + frame_byte_text(byte) + " select the reserved tier 0b11");
    if ((byte & kReservedBits) != 0)
        return protocol_error(code::kNcpFrameFlagsInvalid,
                              "NCP frame: flags " + frame_byte_text(byte) + " set reserved bits (0x70)");
    return FrameFlags{
        .ext = (byte & kExtBit) != 0,
        .enc = (byte & kEncBit) != 0,
        .final = (byte & kFinalBit) != 0,
        .tier = static_cast<Tier>(byte & kTierBits),
    };
}

Result<std::string> encode_frame_header(const FrameHeader& header)
{
    if (!header.flags.ext && header.payload_len > limits::kNcpMaxDefaultPayloadBytes)
        return too_large(header.payload_len, limits::kNcpMaxDefaultPayloadBytes,
                         "the 4-byte header's maximum (set EXT)");
    std::string out;
    out += static_cast<char>(header.frame_type);
    out += static_cast<char>(encode_flags(header.flags));
    const std::uint32_t len = header.payload_len;
    if (header.flags.ext) {
        out += static_cast<char>((len >> 24) & 0xFF);
        out += static_cast<char>((len >> 16) & 0xFF);
    }
    out += static_cast<char>((len >> 8) & 0xFF);
    out += static_cast<char>(len & 0xFF);
    if (header.flags.ext)
        out.append(2, '\0');
    return out;
}

Result<FrameHeader> decode_frame_header(std::string_view bytes)
{
    if (bytes.size() < kHeaderBytes)
        return malformed("header needs 4 bytes, got " + std::to_string(bytes.size()));
    const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(bytes[i]); };
    FrameHeader header;
    header.frame_type = byte(0);
    header.flags = NPS_TRY(decode_flags(byte(1)));
    if (!is_known_frame_type(header.frame_type))
        return protocol_error(code::kNcpFrameUnknownType,
                              "NCP frame: type " + frame_byte_text(header.frame_type) + " is not a known frame type");
    if (header.flags.ext) {
        if (bytes.size() < kExtendedHeaderBytes)
            return malformed("extended header (EXT=1) needs 8 bytes, got " + std::to_string(bytes.size()));
        header.payload_len = (std::uint32_t{byte(2)} << 24) | (std::uint32_t{byte(3)} << 16) |
                             (std::uint32_t{byte(4)} << 8) | std::uint32_t{byte(5)};
    } else {
        header.payload_len = (std::uint32_t{byte(2)} << 8) | std::uint32_t{byte(3)};
    }
    return header;
}

bool EncodingPolicy::enabled(Tier tier) const
{
    switch (tier) {
    case Tier::json: return json;
    case Tier::msgpack: return msgpack;
    case Tier::binary_vector_v1: return binary_vector_v1;
    }
    return false;
}

bool has_binary_vector_binding(std::uint8_t frame_type) { return frame_type == kQueryFrame; }

Result<void> check_encoding(const EncodingPolicy& policy, std::uint8_t frame_type, Tier tier)
{
    if (!policy.enabled(tier))
        return protocol_error(code::kNcpEncodingUnsupported, "NCP frame: encoding " + std::string(tier_name(tier)) +
                                                                 " is not enabled for this session");
    if (tier == Tier::binary_vector_v1 && !has_binary_vector_binding(frame_type))
        return protocol_error(code::kNcpEncodingUnsupported,
                              "NCP frame: type " + frame_byte_text(frame_type) + " has no binary_vector.v1 binding");
    return {};
}

Result<FrameView> decode_frame(std::string_view bytes, const FrameDecodeOptions& options)
{
    const FrameHeader header = NPS_TRY(decode_frame_header(bytes));
    if (header.flags.enc)
        return protocol_error(code::kNcpEncNotNegotiated,
                              "NCP frame: ENC=1 but no end-to-end encryption was negotiated");
    NPS_TRY_VOID(check_encoding(options.policy, header.frame_type, header.flags.tier));
    if (header.payload_len > options.max_payload_bytes)
        return too_large(header.payload_len, options.max_payload_bytes, "this receiver's limit");
    const std::size_t have = bytes.size() - header.header_len();
    if (have < header.payload_len)
        return malformed("header declares " + std::to_string(header.payload_len) + " payload bytes, body has " +
                         std::to_string(have));
    if (have > header.payload_len)
        return malformed(std::to_string(have - header.payload_len) + " bytes after the " +
                         std::to_string(header.payload_len) + "-byte payload (one frame per body)");
    return FrameView{.header = header, .payload = bytes.substr(header.header_len())};
}

Result<JsonFrame> decode_frame_to_json(std::string_view bytes, const FrameDecodeOptions& options)
{
    const FrameView frame = NPS_TRY(decode_frame(bytes, options));
    switch (frame.header.flags.tier) {
    case Tier::json:
        return JsonFrame{.header = frame.header, .json = std::string(frame.payload)};
    case Tier::msgpack: {
        std::string json = NPS_TRY(msgpack_to_json(frame.payload));
        return JsonFrame{.header = frame.header, .json = std::move(json)};
    }
    case Tier::binary_vector_v1:
        break;
    }
    return protocol_error(code::kNcpEncodingUnsupported, "NCP frame: this runner decodes no binary_vector.v1 payload");
}

Result<std::string> encode_frame(std::uint8_t frame_type, Tier tier, std::string_view json_text,
                                 std::size_t max_payload_bytes)
{
    std::string payload;
    switch (tier) {
    case Tier::json: {
        // Validate, so that we never frame a text the peer cannot parse.
        simdjson::dom::parser parser;
        NPS_TRY(json::parse_document(parser, json_text, "json payload"));
        payload = std::string(json_text);
        break;
    }
    case Tier::msgpack:
        payload = NPS_TRY(json_to_msgpack(json_text));
        break;
    case Tier::binary_vector_v1:
        return protocol_error(code::kNcpEncodingUnsupported,
                              "NCP frame: this runner encodes no binary_vector.v1 payload");
    }
    if (payload.size() > max_payload_bytes || payload.size() > 0xFFFFFFFFu)
        return too_large(payload.size(), max_payload_bytes, "the limit");
    const FrameHeader header{
        .frame_type = frame_type,
        .flags = {.ext = payload.size() > limits::kNcpMaxDefaultPayloadBytes, .enc = false, .final = true,
                  .tier = tier},
        .payload_len = static_cast<std::uint32_t>(payload.size()),
    };
    std::string out = NPS_TRY(encode_frame_header(header));
    out += payload;
    return out;
}

}  // namespace nps::proto::ncp
