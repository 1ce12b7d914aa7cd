// SPDX-License-Identifier: Apache-2.0
// ncp/frame_header_vectors.json: encode vectors (input frame_type, flags,
// payload_len → header_hex, header_len; or the encoder's refusal) and decode
// vectors (input header_hex → the fields, or the decoder's refusal). Every
// positive encode vector is also decoded back to its input.
#include "nps/proto/error_codes.hpp"
#include "nps/proto/ncp_frame.hpp"
#include "ncp_hex.hpp"
#include "vector_harness.hpp"

using namespace nps::proto;
using namespace nps::proto::ncp;
using namespace nps::test::vectors;

namespace {

using Reasons = std::vector<std::string>;

Json error_json(const nps::Error& e)
{
    return Json{{"error", e.code}, {"status", std::string(classify_error_code(e.code).nps_status)}};
}

Json flags_json(const FrameFlags& f)
{
    return Json{{"ext", f.ext}, {"enc", f.enc}, {"final", f.final}, {"tier", std::string(tier_name(f.tier))}};
}

Json header_json(const FrameHeader& h)
{
    return Json{{"frame_type", h.frame_type}, {"flags", flags_json(h.flags)}, {"payload_len", h.payload_len}};
}

std::optional<FrameHeader> header_from_input(const Json& input, Reasons& reasons)
{
    reasons = unknown_keys(input, {"frame_type", "flags", "payload_len"});
    const Json& flags = input.value("flags", Json::object());
    const auto more = unknown_keys(flags, {"ext", "enc", "final", "tier"});
    reasons.insert(reasons.end(), more.begin(), more.end());
    const auto tier = tier_from_name(flags.value("tier", ""));
    if (!tier)
        reasons.push_back("unknown tier " + flags.value("tier", Json()).dump());
    if (!input.value("frame_type", Json()).is_number_unsigned() || !input.value("payload_len", Json()).is_number_unsigned())
        reasons.push_back("frame_type and payload_len must be unsigned integers");
    if (!reasons.empty())
        return std::nullopt;
    return FrameHeader{
        .frame_type = input["frame_type"].get<std::uint8_t>(),
        .flags = {.ext = flags.value("ext", false), .enc = flags.value("enc", false),
                  .final = flags.value("final", false), .tier = *tier},
        .payload_len = input["payload_len"].get<std::uint32_t>(),
    };
}

Reasons check_encode(const Json& input, const Json& expected, bool positive)
{
    Reasons reasons;
    const auto header = header_from_input(input, reasons);
    if (!header)
        return reasons;
    const auto encoded = encode_frame_header(*header);
    if (!encoded)
        return positive ? Reasons{"refused: " + encoded.error().code + " " + encoded.error().message}
                        : compare_expected(expected, error_json(encoded.error()));
    if (!positive)
        return {"encoded " + nps::test::hex_of(*encoded) + " instead of refusing"};
    reasons = compare_expected(expected, Json{{"header_hex", nps::test::hex_of(*encoded)},
                                              {"header_len", encoded->size()}});
    // Round trip: the encoded header decodes to the input.
    const auto decoded = decode_frame_header(*encoded);
    if (!decoded)
        reasons.push_back("the encoded header does not decode: " + decoded.error().message);
    else if (header_json(*decoded) != header_json(*header))
        reasons.push_back("round trip gave " + header_json(*decoded).dump());
    return reasons;
}

Reasons check_decode(const Json& input, const Json& expected, bool positive)
{
    Reasons reasons = unknown_keys(input, {"header_hex"});
    if (!reasons.empty())
        return reasons;
    const auto bytes = nps::test::bytes_of_hex(input.value("header_hex", ""));
    if (!bytes)
        return {"header_hex is not hex"};
    const auto decoded = decode_frame_header(*bytes);
    if (!decoded)
        return positive ? Reasons{"refused: " + decoded.error().code + " " + decoded.error().message}
                        : compare_expected(expected, error_json(decoded.error()));
    if (!positive)
        return {"decoded " + header_json(*decoded).dump() + " instead of refusing"};
    return compare_expected(expected, header_json(*decoded));
}

}  // namespace

int main()
{
    return run_vector_file("ncp/frame_header_vectors.json",
                           [](Report&, const std::string& id, const Json& vector) -> std::optional<Reasons> {
        if (!id.starts_with("ncp.header."))
            return Reasons{"unknown vector id (this file holds ncp.header.* vectors)"};
        const bool positive = vector.value("kind", "") == "positive";
        if (!positive && vector.value("kind", "") != "negative")
            return Reasons{"kind is neither positive nor negative"};
        const Json& input = vector["input"];
        if (input.contains("header_hex"))
            return check_decode(input, vector["expected"], positive);
        return check_encode(input, vector["expected"], positive);
    });
}
