// SPDX-License-Identifier: Apache-2.0
// NDP AnnounceFrame signed body and trust (see nps/proto/announce.hpp).
#include "nps/proto/announce.hpp"

#include <optional>

#include "nps/base/limits.hpp"
#include "nps/proto/ed25519.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/json_reader.hpp"
#include "signed_body.hpp"

namespace nps::proto::ndp {

namespace {

constexpr std::string_view kInvalid = code::kNdpAnnounceInvalid;
constexpr std::string_view kSignatureInvalid = code::kNdpAnnounceSignatureInvalid;
constexpr std::string_view kNidMismatch = code::kNdpAnnounceNidMismatch;

const std::string kHeartbeatDefault = std::to_string(limits::kNdpDefaultHeartbeatIntervalMs);

Result<std::string> signed_body_of(simdjson::dom::element root)
{
    return detail::signed_body(root,
                               {.excluded = {"signature", "health", "last_seen", "frame"},
                                .drop_nulls = true,
                                .defaults = {{"heartbeat_interval_ms", kHeartbeatDefault}}},
                               kInvalid, "announce");
}

// The frame's string member `key`, or nullopt when absent, null or not a string.
std::optional<std::string_view> string_member(simdjson::dom::element root, std::string_view key)
{
    std::string_view value;
    if (root[key].get(value) != simdjson::SUCCESS)
        return std::nullopt;
    return value;
}

}  // namespace

Result<std::string> announce_signed_body(std::string_view frame_json)
{
    simdjson::dom::parser parser;
    const auto root = NPS_TRY(json::parse_document(parser, frame_json, "announce"));
    return signed_body_of(root);
}

Result<std::string> announce_wire_form(std::string_view frame_json)
{
    simdjson::dom::parser parser;
    const auto root = NPS_TRY(json::parse_document(parser, frame_json, "announce"));
    return detail::signed_body(root, {.excluded = {"frame"}}, kInvalid, "announce");
}

Result<void> verify_announce_signature(std::string_view frame_json, std::string_view public_key)
{
    simdjson::dom::parser parser;
    const auto root = NPS_TRY(json::parse_document(parser, frame_json, "announce"));
    const auto text = string_member(root, "signature");
    if (!text)
        return protocol_error(std::string(kSignatureInvalid), "announce: no signature");
    const std::string signature = NPS_TRY(decode_ed25519_signature(*text, kSignatureInvalid, "announce signature"));
    const std::string body = NPS_TRY(signed_body_of(root));
    if (!ed25519_verify(public_key, body, signature))
        return protocol_error(std::string(kSignatureInvalid), "announce: the signature does not verify");
    return {};
}

Result<std::string> sign_announce(std::string_view frame_json, std::string_view seed)
{
    const std::string body = NPS_TRY(announce_signed_body(frame_json));
    return encode_ed25519(NPS_TRY(ed25519_sign(seed, body)));
}

Result<SignatureStatus> check_announce_trust(std::string_view frame_json, const AnnounceTrust& trust)
{
    simdjson::dom::parser parser;
    const auto root = NPS_TRY(json::parse_document(parser, frame_json, "announce"));
    const auto nid = string_member(root, "nid");
    if (!nid)
        return protocol_error(std::string(kInvalid), "announce: 'nid' is required and must be a string");
    const auto signature_text = string_member(root, "signature");
    bool signature_member = false;
    {
        simdjson::dom::element member;
        signature_member = root["signature"].get(member) == simdjson::SUCCESS && !member.is_null();
    }
    if (!signature_member) {
        if (trust.require_signed)
            return protocol_error(std::string(kSignatureInvalid), "announce of '" + std::string(*nid) +
                                                                      "': unsigned, and signatures are required");
        return SignatureStatus::unverified;
    }
    if (!signature_text)
        return protocol_error(std::string(kSignatureInvalid), "announce: 'signature' is not a string");
    const std::string signature =
        NPS_TRY(decode_ed25519_signature(*signature_text, kSignatureInvalid, "announce signature"));
    const std::string body = NPS_TRY(signed_body_of(root));

    bool has_own_key = false;
    for (const auto& key : trust.keys) {
        if (key.nid != *nid)
            continue;
        has_own_key = true;
        if (ed25519_verify(key.public_key, body, signature))
            return SignatureStatus::verified;
    }
    if (has_own_key)
        return protocol_error(std::string(kSignatureInvalid),
                              "announce of '" + std::string(*nid) + "': no trusted key of this NID verifies it");
    for (const auto& key : trust.keys)
        if (ed25519_verify(key.public_key, body, signature))
            return protocol_error(std::string(kNidMismatch), "announce of '" + std::string(*nid) +
                                                                 "' is signed with the key of '" + key.nid + "'");
    if (trust.require_signed)
        return protocol_error(std::string(kNidMismatch),
                              "announce of '" + std::string(*nid) + "': no trusted key for this NID");
    return SignatureStatus::unverified;
}

}  // namespace nps::proto::ndp
