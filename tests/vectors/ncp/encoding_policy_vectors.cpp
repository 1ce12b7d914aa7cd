// SPDX-License-Identifier: Apache-2.0
// ncp/encoding_policy_vectors.json: a session policy and an inbound frame
// header → accept, or reject with NCP-ENCODING-UNSUPPORTED. Each vector runs
// twice: check_encoding on the named tier, and decode_frame on a real frame
// built from the vector's type and flags bytes (the policy refuses it before
// any payload decode, so the payload is left empty).
#include "nps/proto/error_codes.hpp"
#include "nps/proto/ncp_frame.hpp"
#include "ncp_hex.hpp"
#include "vector_harness.hpp"

using namespace nps::proto;
using namespace nps::proto::ncp;
using namespace nps::test::vectors;

namespace {

using Reasons = std::vector<std::string>;

Json decision_json(const nps::Result<void>& r)
{
    if (r)
        return Json{{"decision", "accept"}};
    return Json{{"decision", "reject"},
                {"error", r.error().code},
                {"status", std::string(classify_error_code(r.error().code).nps_status)}};
}

std::optional<std::uint8_t> byte_of(const Json& value)
{
    if (!value.is_string())
        return std::nullopt;
    const auto bytes = nps::test::bytes_of_hex(value.get<std::string>());
    if (!bytes || bytes->size() != 1)
        return std::nullopt;
    return static_cast<std::uint8_t>((*bytes)[0]);
}

Reasons check(const Json& input, const Json& expected)
{
    Reasons reasons = unknown_keys(input, {"policy", "inbound_frame"});
    const Json policy_in = input.value("policy", Json::object());
    const Json frame_in = input.value("inbound_frame", Json::object());
    for (const auto& r : unknown_keys(policy_in, {"default_encoding", "enabled_encodings"}))
        reasons.push_back(r);
    for (const auto& r : unknown_keys(frame_in, {"frame_type", "frame_name", "flags", "tier"}))
        reasons.push_back(r);
    if (!reasons.empty())
        return reasons;

    EncodingPolicy policy{.json = false, .msgpack = false, .binary_vector_v1 = false};
    const auto default_tier = tier_from_name(policy_in.value("default_encoding", ""));
    if (!default_tier)
        return {"unknown default_encoding"};
    policy.default_encoding = *default_tier;
    for (const Json& name : policy_in.value("enabled_encodings", Json::array())) {
        const auto tier = tier_from_name(name.is_string() ? name.get<std::string>() : "");
        if (!tier)
            return {"unknown enabled encoding " + name.dump()};
        (*tier == Tier::json ? policy.json : *tier == Tier::msgpack ? policy.msgpack : policy.binary_vector_v1) = true;
    }
    const auto type = byte_of(frame_in.value("frame_type", Json()));
    const auto flags_byte = byte_of(frame_in.value("flags", Json()));
    const auto tier = tier_from_name(frame_in.value("tier", ""));
    if (!type || !flags_byte || !tier)
        return {"inbound_frame needs frame_type and flags as hex bytes and a known tier"};
    const auto flags = decode_flags(*flags_byte);
    if (!flags || flags->tier != *tier)
        return {"flags " + frame_in["flags"].dump() + " do not carry tier " + frame_in["tier"].dump()};

    reasons = compare_expected(expected, decision_json(check_encoding(policy, *type, *tier)));
    // The same decision from the frame decoder on a header with these bytes.
    std::string frame;
    frame += static_cast<char>(*type);
    frame += static_cast<char>(*flags_byte);
    frame.append(2, '\0');
    const auto decoded = decode_frame(frame, {.policy = policy});
    const Json via_decoder = decoded ? decision_json({}) : decision_json(decoded.error());
    for (const auto& r : compare_expected(expected, via_decoder))
        reasons.push_back("decode_frame: " + r);
    return reasons;
}

}  // namespace

int main()
{
    return run_vector_file("ncp/encoding_policy_vectors.json",
                           [](Report&, const std::string& id, const Json& vector) -> std::optional<Reasons> {
        if (!id.starts_with("ncp.encoding_policy."))
            return Reasons{"unknown vector id (this file holds ncp.encoding_policy.* vectors)"};
        return check(vector["input"], vector["expected"]);
    });
}
