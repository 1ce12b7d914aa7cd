// SPDX-License-Identifier: Apache-2.0
// NIP IdentFrame canonical form and verification (see nps/proto/ident.hpp).
#include "nps/proto/ident.hpp"

#include "message_text.hpp"
#include "nps/base/time_format.hpp"
#include "nps/proto/ed25519.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/json_reader.hpp"
#include "signed_body.hpp"

namespace nps::proto::nip {

namespace {

constexpr std::string_view kSignatureInvalid = code::kNipCertSignatureInvalid;

Result<std::string> signed_body_of(simdjson::dom::element root)
{
    return detail::signed_body(root, {.excluded = {"signature", "metadata"}}, kSignatureInvalid, "IdentFrame");
}

// A string member; nullopt when absent or null; an error when of another type.
Result<std::optional<std::string_view>> optional_string(simdjson::dom::element obj, std::string_view key,
                                                        std::string_view code)
{
    simdjson::dom::element value;
    if (obj[key].get(value) != simdjson::SUCCESS || value.is_null())
        return std::optional<std::string_view>{};
    std::string_view s;
    if (value.get(s) != simdjson::SUCCESS)
        return protocol_error(std::string(code), "IdentFrame: '" + std::string(key) + "' must be a string");
    return std::optional<std::string_view>{s};
}

Result<AssuranceLevel> level_of(simdjson::dom::element root, std::optional<std::string_view> certificate_level)
{
    const auto wire = NPS_TRY(optional_string(root, "assurance_level", code::kNipAssuranceUnknown));
    const AssuranceLevel level = NPS_TRY(parse_assurance_level(wire));
    if (certificate_level) {
        const auto cert = parse_assurance_level(*certificate_level);
        if (!cert || *cert != level)
            return protocol_error(code::kNipAssuranceMismatch,
                                  "IdentFrame: assurance_level '" + std::string(assurance_name(level)) +
                                      "' disagrees with the certificate's " + detail::quote_text(*certificate_level));
    }
    return level;
}

Result<void> check_lineage(simdjson::dom::element root)
{
    simdjson::dom::element lineage;
    if (root["lineage"].get(lineage) != simdjson::SUCCESS || lineage.is_null())
        return {};
    if (!lineage.is_object())
        return protocol_error(std::string(kSignatureInvalid), "IdentFrame: lineage must be an object");
    const auto role = NPS_TRY(optional_string(lineage, "role", kSignatureInvalid));
    if (!role)
        return protocol_error(std::string(kSignatureInvalid), "IdentFrame: lineage.role is required");
    const char* session_fields[] = {"parent_nid", "group_nid", "session_id"};
    if (*role == "session") {
        for (const char* field : session_fields)
            if (!NPS_TRY(optional_string(lineage, field, kSignatureInvalid)))
                return protocol_error(std::string(kSignatureInvalid),
                                      std::string("IdentFrame: lineage role 'session' requires ") + field);
    } else if (*role == "group") {
        for (const char* field : session_fields)
            if (NPS_TRY(optional_string(lineage, field, kSignatureInvalid)))
                return protocol_error(std::string(kSignatureInvalid),
                                      std::string("IdentFrame: lineage role 'group' must not carry ") + field);
    } else {
        return protocol_error(std::string(kSignatureInvalid),
                              "IdentFrame: lineage.role " + detail::quote_text(*role) + " is not group or session");
    }
    return {};
}

}  // namespace

Result<std::string> ident_signed_body(std::string_view frame_json)
{
    simdjson::dom::parser parser;
    const auto root = NPS_TRY(json::parse_document(parser, frame_json, "IdentFrame"));
    return signed_body_of(root);
}

std::string_view assurance_name(AssuranceLevel level)
{
    switch (level) {
    case AssuranceLevel::anonymous: return "anonymous";
    case AssuranceLevel::attested: return "attested";
    case AssuranceLevel::verified: return "verified";
    }
    return "anonymous";
}

Result<AssuranceLevel> parse_assurance_level(std::optional<std::string_view> wire)
{
    if (!wire || wire->empty())
        return AssuranceLevel::anonymous;
    for (AssuranceLevel level : {AssuranceLevel::anonymous, AssuranceLevel::attested, AssuranceLevel::verified})
        if (assurance_name(level) == *wire)
            return level;
    return protocol_error(code::kNipAssuranceUnknown, "IdentFrame: assurance_level " + detail::quote_text(*wire) +
                                                          " is not anonymous, attested or verified");
}

Result<AssuranceLevel> effective_assurance(std::string_view frame_json,
                                           std::optional<std::string_view> certificate_level)
{
    simdjson::dom::parser parser;
    const auto root = NPS_TRY(json::parse_document(parser, frame_json, "IdentFrame"));
    return level_of(root, certificate_level);
}

Result<void> verify_ident_frame(std::string_view frame_json, const IdentVerifyOptions& options)
{
    simdjson::dom::parser parser;
    const auto root = NPS_TRY(json::parse_document(parser, frame_json, "IdentFrame"));
    if (!root.is_object())
        return protocol_error(std::string(kSignatureInvalid), "IdentFrame: not a JSON object");
    const std::optional<std::string_view> cert_level =
        options.certificate_assurance ? std::optional<std::string_view>(*options.certificate_assurance)
                                      : std::nullopt;
    NPS_TRY(level_of(root, cert_level));

    const auto expires_text = NPS_TRY(optional_string(root, "expires_at", kSignatureInvalid));
    const auto expires = expires_text ? parse_rfc3339_ms(*expires_text) : std::nullopt;
    if (!expires)
        return protocol_error(std::string(kSignatureInvalid), "IdentFrame: expires_at must be an RFC 3339 time");
    if (*expires < options.now_ms)
        return protocol_error(code::kNipCertExpired, "IdentFrame: expired at " + std::string(*expires_text));

    NPS_TRY_VOID(check_lineage(root));

    const auto signature_text = NPS_TRY(optional_string(root, "signature", kSignatureInvalid));
    if (!signature_text)
        return protocol_error(std::string(kSignatureInvalid), "IdentFrame: no signature");
    const std::string signature =
        NPS_TRY(decode_ed25519_signature(*signature_text, kSignatureInvalid, "IdentFrame signature"));
    const std::string body = NPS_TRY(signed_body_of(root));
    if (!ed25519_verify(options.issuer_public_key, body, signature))
        return protocol_error(std::string(kSignatureInvalid), "IdentFrame: the issuer's signature does not verify");
    return {};
}

Result<std::string> sign_ident_frame(std::string_view frame_json, std::string_view issuer_seed)
{
    const std::string body = NPS_TRY(ident_signed_body(frame_json));
    return encode_ed25519(NPS_TRY(ed25519_sign(issuer_seed, body)));
}

}  // namespace nps::proto::nip
