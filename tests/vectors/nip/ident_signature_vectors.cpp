// SPDX-License-Identifier: Apache-2.0
// nip/ident_signature_vectors.json, checked with the RFC 8032 §7.1 TEST 1
// key as the issuing CA:
//   - canonical_for_signing, metadata/signature exclusion, lineage presence
//     and key order, absent session-only fields → ident_signed_body;
//     each such frame is also signed with the test key, must verify, and must
//     stop verifying once its lineage (or capabilities) change;
//   - ident_frame_after_tamper → the original (before the lineage was added,
//     or with originally_signed_purpose) is signed, the signature moved to
//     the tampered frame, and verify_ident_frame must refuse it;
//   - other negative vectors → verify_ident_frame at verification_time (or
//     the frame's issued_at), with the x509_extension's assurance level;
//   - match / assurance_level_effective → effective_assurance.
// expected.reason_for_rejection is prose and not compared.
#include "nps/base/time_format.hpp"
#include "nps/proto/ed25519.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/ident.hpp"
#include "ncp/ncp_hex.hpp"
#include "vector_harness.hpp"

using namespace nps::proto;
using namespace nps::proto::nip;
using namespace nps::test::vectors;

namespace {

using Reasons = std::vector<std::string>;

const std::string kSeed =
    *nps::test::bytes_of_hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");

std::string test_public_key() { return ed25519_public_key(kSeed).value(); }

Json error_json(const nps::Error& e)
{
    return Json{{"error", e.code}, {"status", std::string(classify_error_code(e.code).nps_status)}};
}

IdentVerifyOptions options_for(const Json& input, const Json& frame)
{
    IdentVerifyOptions options{.issuer_public_key = test_public_key()};
    const std::string when = input.value("verification_time", frame.value("issued_at", ""));
    options.now_ms = nps::parse_rfc3339_ms(when).value_or(0);
    if (input.contains("x509_extension"))
        options.certificate_assurance = input["x509_extension"].value("value", "");
    return options;
}

Json signed_copy(Json frame)
{
    frame["signature"] = sign_ident_frame(frame.dump(), kSeed).value();
    return frame;
}

Reasons check_canonical(const Json& input, const Json& frame, const Json& expected)
{
    Reasons reasons;
    const auto body = ident_signed_body(frame.dump());
    if (!body)
        return {"canonicalization failed: " + body.error().message};
    const Json canonical = Json::parse(*body);
    Json actual{{"canonical_for_signing", *body},
                {"metadata_excluded", !canonical.contains("metadata")},
                {"signature_field_excluded", !canonical.contains("signature")},
                {"canonical_for_signing_includes_lineage", canonical.contains("lineage")}};
    if (canonical.contains("lineage")) {
        Json keys = Json::array();
        for (const auto& [key, value] : canonical["lineage"].items())
            keys.push_back(key);
        actual["lineage_keys_in_canonical_order"] = keys;
        Json absent = Json::array();
        for (const char* field : {"parent_nid", "group_nid", "session_id"})
            if (!canonical["lineage"].contains(field))
                absent.push_back(field);
        actual["session_only_fields_absent"] = absent;
    }
    reasons = compare_expected(expected, actual);

    // Signed by the test CA, the frame verifies; changed, it does not.
    const Json good = signed_copy(frame);
    if (const auto v = verify_ident_frame(good.dump(), options_for(input, frame)); !v)
        reasons.push_back("a frame signed with the test key does not verify: " + v.error().message);
    Json changed = good;
    if (changed.contains("lineage"))
        changed["lineage"]["purpose"] = "changed-after-signing";
    else
        changed["capabilities"].push_back("nwp:admin");
    const auto v = verify_ident_frame(changed.dump(), options_for(input, frame));
    if (v || v.error().code != "NIP-CERT-SIGNATURE-INVALID")
        reasons.push_back("a changed signed frame is not refused with NIP-CERT-SIGNATURE-INVALID");
    return reasons;
}

Reasons check_tampered(const Json& input, const Json& expected)
{
    const Json tampered = input["ident_frame_after_tamper"];
    Json original = tampered;
    if (input.contains("originally_signed_purpose"))
        original["lineage"]["purpose"] = input["originally_signed_purpose"];
    else
        original.erase("lineage");
    const Json signed_original = signed_copy(original);
    Reasons reasons;
    if (const auto v = verify_ident_frame(signed_original.dump(), options_for(input, original)); !v)
        reasons.push_back("the reconstructed original does not verify: " + v.error().message);
    Json attack = tampered;
    attack["signature"] = signed_original["signature"];
    for (const Json* frame : {static_cast<const Json*>(&attack), &tampered}) {
        const auto v = verify_ident_frame(frame->dump(), options_for(input, *frame));
        if (v)
            reasons.push_back("a tampered frame verified");
        else
            for (const auto& r : compare_expected(expected, error_json(v.error())))
                reasons.push_back(r);
    }
    return reasons;
}

Reasons check(const Json& input, Json expected, bool positive)
{
    Reasons reasons = unknown_keys(input, {"ident_frame", "ident_frame_after_tamper", "verification_time",
                                           "x509_extension", "originally_signed_purpose"});
    if (!reasons.empty())
        return reasons;
    expected.erase("reason_for_rejection");
    if (input.contains("ident_frame_after_tamper"))
        return check_tampered(input, expected);
    const Json frame = input.value("ident_frame", Json::object());
    if (expected.contains("match")) {
        std::optional<std::string> cert;
        if (input.contains("x509_extension"))
            cert = input["x509_extension"].value("value", "");
        const auto level = effective_assurance(frame.dump(), cert);
        if (!level)
            return compare_expected(expected, Json{{"match", false}, {"error", level.error().code}});
        return compare_expected(expected, Json{{"match", true},
                                               {"assurance_level_effective", std::string(assurance_name(*level))}});
    }
    if (!positive) {
        const auto v = verify_ident_frame(frame.dump(), options_for(input, frame));
        if (v)
            return {"verify_ident_frame accepted the frame"};
        return compare_expected(expected, error_json(v.error()));
    }
    return check_canonical(input, frame, expected);
}

}  // namespace

int main()
{
    return run_vector_file("nip/ident_signature_vectors.json",
                           [](Report&, const std::string& id, const Json& vector) -> std::optional<Reasons> {
        if (!id.starts_with("nip.ident."))
            return Reasons{"unknown vector id (this file holds nip.ident.* vectors)"};
        const std::string kind = vector.value("kind", "");
        if (kind != "positive" && kind != "negative")
            return Reasons{"kind is neither positive nor negative"};
        return check(vector["input"], vector["expected"], kind == "positive");
    });
}
