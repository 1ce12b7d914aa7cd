// SPDX-License-Identifier: Apache-2.0
// ndp/announce_canonicalization_vectors.json: the signed body of each frame
// must equal expected.canonical_json, and the vector's Ed25519 signature must
// verify under its public key exactly when expected.signature_valid (else
// NDP-ANNOUNCE-SIGNATURE-INVALID). The signature is checked twice: directly,
// and through check_announce_trust with the key trusted for the frame's NID
// and signatures required.
#include "nps/proto/announce.hpp"
#include "nps/proto/ed25519.hpp"
#include "vector_harness.hpp"

using namespace nps::proto;
using namespace nps::proto::ndp;
using namespace nps::test::vectors;

namespace {

using Reasons = std::vector<std::string>;

Reasons check(const Json& input, const Json& expected)
{
    Reasons reasons = unknown_keys(input, {"public_key", "signature", "frame"});
    if (!reasons.empty())
        return reasons;
    const auto key = decode_ed25519_public_key(input.value("public_key", ""), "NDP-ANNOUNCE-SIGNATURE-INVALID",
                                               "public_key");
    if (!key)
        return {"public_key: " + key.error().message};
    // The vector's frame carries a placeholder signature; the real one is beside it.
    Json frame = input.value("frame", Json::object());
    frame["signature"] = input.value("signature", "");
    const std::string text = frame.dump();

    Json actual;
    const auto body = announce_signed_body(text);
    if (!body)
        return {"canonicalization failed: " + body.error().message};
    actual["canonical_json"] = *body;
    const auto verified = verify_announce_signature(text, *key);
    actual["signature_valid"] = static_cast<bool>(verified);
    if (!verified)
        actual["error"] = verified.error().code;
    reasons = compare_expected(expected, actual);

    const AnnounceTrust trust{.require_signed = true,
                              .keys = {{.nid = frame.value("nid", ""), .public_key = *key}}};
    const auto trusted = check_announce_trust(text, trust);
    if (static_cast<bool>(trusted) != static_cast<bool>(verified))
        reasons.push_back("check_announce_trust disagrees with verify_announce_signature");
    else if (trusted && *trusted != SignatureStatus::verified)
        reasons.push_back("check_announce_trust did not report the signature as verified");
    else if (!trusted && trusted.error().code != verified.error().code)
        reasons.push_back("check_announce_trust failed with " + trusted.error().code);
    return reasons;
}

}  // namespace

int main()
{
    return run_vector_file("ndp/announce_canonicalization_vectors.json",
                           [](Report&, const std::string& id, const Json& vector) -> std::optional<Reasons> {
        if (!id.starts_with("ndp.announce.canonical."))
            return Reasons{"unknown vector id (this file holds ndp.announce.canonical.* vectors)"};
        return check(vector["input"], vector["expected"]);
    });
}
