// SPDX-License-Identifier: Apache-2.0
// NCP frames (NPS-1 §3, §8): the 4-byte default and 8-byte extended header,
// the encoding-tier policy of a receiver, and whole frames whose payload is
// handed on as JSON text (Tier-1 as it is, Tier-2 MsgPack converted, see
// msgpack_json.hpp). docs/ncp-frames.md has the layout and the refusals.
//
// Header: type(1) | flags(1) | length(2, BE)            (EXT = 0)
//         type(1) | flags(1) | length(4, BE) | 0x0000   (EXT = 1)
// Flags, MSB → LSB: EXT | RSV | RSV | RSV | ENC | FINAL | T1 | T0.
//
// Every refusal is a protocol error whose code is in proto/error_codes:
//   tier bits 11, or a reserved flag bit set     → NCP-FRAME-FLAGS-INVALID
//   a type byte outside frame-registry v0.14     → NCP-FRAME-UNKNOWN-TYPE
//   a tier the policy does not enable            → NCP-ENCODING-UNSUPPORTED
//   ENC = 1 (we negotiate no E2E algorithm)       → NCP-ENC-NOT-NEGOTIATED
//   a length over 65,535 without EXT (encoding), or over the receiver's
//   limit (decoding)                             → NCP-FRAME-PAYLOAD-TOO-LARGE
//   a short header, a body shorter or longer than its header says
//                                                → NWP-HTTP-FRAME-BODY-MALFORMED
// Pure functions: no I/O, no logging, never throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nps/base/limits.hpp"
#include "nps/base/result.hpp"

namespace nps::proto::ncp {

inline constexpr std::size_t kHeaderBytes = 4;
inline constexpr std::size_t kExtendedHeaderBytes = 8;

// Frame type codes this runner handles or forwards (frame-registry v0.14).
inline constexpr std::uint8_t kAnchorFrame = 0x01;
inline constexpr std::uint8_t kCapsFrame = 0x04;
inline constexpr std::uint8_t kQueryFrame = 0x10;
inline constexpr std::uint8_t kActionFrame = 0x11;
inline constexpr std::uint8_t kIdentFrame = 0x20;
inline constexpr std::uint8_t kAnnounceFrame = 0x30;
inline constexpr std::uint8_t kTaskFrame = 0x40;
inline constexpr std::uint8_t kDelegateFrame = 0x41;
inline constexpr std::uint8_t kErrorFrame = 0xFE;

// True for the codes frame-registry v0.14 assigns (0x01–0x07, 0x10–0x12,
// 0x20–0x22, 0x30–0x32, 0x40–0x43, 0xFE); reserved and unassigned bytes
// (0x4E, 0xF0–0xFD, 0xFF, …) are not frames.
bool is_known_frame_type(std::uint8_t type);
// "0x40": a type or flags byte as messages print it.
std::string frame_byte_text(std::uint8_t byte);

// T1T0. The numeric values are the wire bits.
enum class Tier : std::uint8_t {
    json = 0,              // Tier-1
    msgpack = 1,           // Tier-2
    binary_vector_v1 = 2,  // Tier-3 (negotiated only; we decode none)
};

// "json", "msgpack", "binary_vector.v1" (the vectors' and negotiation names).
std::string_view tier_name(Tier tier);
std::optional<Tier> tier_from_name(std::string_view name);

struct FrameFlags {
    bool ext = false;    // 8-byte header
    bool enc = false;    // E2E-encrypted payload (NCP §7.4)
    bool final = true;   // 0 only on non-final StreamFrame chunks
    Tier tier = Tier::json;
};

std::uint8_t encode_flags(const FrameFlags& flags);
// NCP-FRAME-FLAGS-INVALID for T1T0 = 11 and for any RSV bit set (error-codes
// "reserved bits non-zero"; NCP §3.2 says receivers ignore them, we refuse:
// docs/ncp-frames.md "Choices").
Result<FrameFlags> decode_flags(std::uint8_t byte);

struct FrameHeader {
    std::uint8_t frame_type = 0;
    FrameFlags flags{};
    std::uint32_t payload_len = 0;

    std::size_t header_len() const { return flags.ext ? kExtendedHeaderBytes : kHeaderBytes; }
};

// 4 or 8 header bytes (reserved bytes 6–7 written as 0). Fails with
// NCP-FRAME-PAYLOAD-TOO-LARGE when EXT = 0 and payload_len > 65,535.
Result<std::string> encode_frame_header(const FrameHeader& header);

// Reads the header at the start of `bytes` (which may hold more: the
// payload). Checks flags, then the type. Reserved bytes 6–7 are ignored
// (NCP §3.1). NWP-HTTP-FRAME-BODY-MALFORMED when fewer than 4 (or, with
// EXT, 8) bytes are given. The length is not checked against any limit here.
Result<FrameHeader> decode_frame_header(std::string_view bytes);

// Which tiers a receiver accepts (NCP §2.6, §8). Tier-3 is accepted only when
// enabled and the frame type has a standard BinaryVector v1 binding.
struct EncodingPolicy {
    Tier default_encoding = Tier::msgpack;
    bool json = true;
    bool msgpack = true;
    bool binary_vector_v1 = false;

    bool enabled(Tier tier) const;
};

// The frame types with a BinaryVector v1 binding: QueryFrame only (NCP §8.1,
// `vector_search.vector`).
bool has_binary_vector_binding(std::uint8_t frame_type);

// NCP-ENCODING-UNSUPPORTED when `tier` is not enabled, or is Tier-3 for a
// frame type without a binding.
Result<void> check_encoding(const EncodingPolicy& policy, std::uint8_t frame_type, Tier tier);

struct FrameDecodeOptions {
    EncodingPolicy policy{};
    std::size_t max_payload_bytes = limits::kMaxNcpFramePayloadBytes;
};

// One frame: its header and a view of its payload inside the input.
struct FrameView {
    FrameHeader header{};
    std::string_view payload;
};

// `bytes` must be exactly one frame (an HTTP body: transport-profile §2.1).
// Order: header (flags, type), ENC, policy (before any payload decode, as
// ncp.encoding_policy.001 requires), length limit, then the length itself.
Result<FrameView> decode_frame(std::string_view bytes, const FrameDecodeOptions& options = {});

// A frame decoded down to the JSON text of its payload (Tier-2 converted
// with the limits of msgpack_json.hpp). Tier-3 is refused with
// NCP-ENCODING-UNSUPPORTED even when the policy enables it: this runner has
// no BinaryVector decoder.
struct JsonFrame {
    FrameHeader header{};
    std::string json;
};
Result<JsonFrame> decode_frame_to_json(std::string_view bytes, const FrameDecodeOptions& options = {});

// A whole frame carrying `json_text` (a JSON object or any JSON value) as
// Tier-1 (verbatim) or Tier-2 (converted); EXT is set when the payload needs
// it. NCP-FRAME-PAYLOAD-TOO-LARGE beyond `max_payload_bytes`;
// NWP-HTTP-FRAME-BODY-MALFORMED when the JSON is not valid; Tier-3 →
// NCP-ENCODING-UNSUPPORTED.
Result<std::string> encode_frame(std::uint8_t frame_type, Tier tier, std::string_view json_text,
                                 std::size_t max_payload_bytes = limits::kMaxNcpFramePayloadBytes);

}  // namespace nps::proto::ncp
