// SPDX-License-Identifier: Apache-2.0
// Ed25519 (RFC 8032 §7.1 test vectors), key and signature encodings, the
// announce trust decision, and registry rules the vectors leave out (replay
// window, removed roles, TTL expiry on the clock, re-announce after offline).
#include <doctest/doctest.h>

#include <string>

#include "nps/base/clock.hpp"
#include "nps/base/digest.hpp"
#include "nps/base/time_format.hpp"
#include "nps/proto/announce.hpp"
#include "nps/proto/ed25519.hpp"
#include "nps/proto/ndp_registry.hpp"

using namespace nps::proto;
using namespace nps::proto::ndp;

namespace {

std::string unhex(std::string_view hex)
{
    std::string out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
    return out;
}

const std::string kSeed1 = unhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
const std::string kPub1 = unhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
const std::string kSeed2 = unhex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb");
const std::string kPub2 = unhex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c");

std::string announce(std::string_view nid, int seq, std::string_view timestamp = "2026-07-29T12:00:30Z",
                     int ttl = 120, std::string_view extra = "")
{
    return "{\"nid\":\"" + std::string(nid) + "\",\"timestamp\":\"" + std::string(timestamp) +
           "\",\"ttl\":" + std::to_string(ttl) + ",\"graph_seq\":" + std::to_string(seq) +
           ",\"capabilities\":[\"nwp:query\"]" + std::string(extra) + "}";
}

std::string with_signature(const std::string& frame, const std::string& seed)
{
    const std::string sig = sign_announce(frame, seed).value();
    return frame.substr(0, frame.size() - 1) + ",\"signature\":\"" + sig + "\"}";
}

}  // namespace

TEST_CASE("Ed25519: RFC 8032 §7.1 TEST 1 and TEST 2")
{
    CHECK(ed25519_public_key(kSeed1).value() == kPub1);
    const std::string sig1 = ed25519_sign(kSeed1, "").value();
    CHECK(nps::to_hex(sig1) ==
          "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b");
    CHECK(ed25519_verify(kPub1, "", sig1));
    const std::string sig2 = ed25519_sign(kSeed2, "\x72").value();
    CHECK(nps::to_hex(sig2) ==
          "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00");
    CHECK(ed25519_verify(kPub2, "\x72", sig2));
    CHECK_FALSE(ed25519_verify(kPub2, "\x73", sig2));
    CHECK_FALSE(ed25519_verify(kPub1, "\x72", sig2));
    CHECK_FALSE(ed25519_verify(kPub2.substr(1), "\x72", sig2));  // wrong sizes are false
    CHECK_FALSE(ed25519_verify(kPub2, "\x72", sig2.substr(1)));
    CHECK_FALSE(ed25519_sign("short", "x").has_value());
}

TEST_CASE("Ed25519 text forms: raw base64url, DER SPKI base64, and refusals")
{
    const std::string text = encode_ed25519(kPub1);
    CHECK(text == "ed25519:11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo");
    CHECK(decode_ed25519_public_key(text, "X", "key").value() == kPub1);
    // The IdentFrame form: base64 (with padding) of the 44-byte DER SubjectPublicKeyInfo.
    const std::string der = unhex("302a300506032b6570032100") + kPub1;
    CHECK(decode_ed25519_public_key("ed25519:" + nps::base64_encode(der), "X", "key").value() == kPub1);
    for (const std::string& bad : {std::string("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"),  // no prefix
                                  std::string("ed25519:!!!!"), std::string("ed25519:AAAA"),
                                  "ed25519:" + nps::base64url_encode(unhex("302a300506032b6571032100") + kPub1)}) {
        CAPTURE(bad);
        auto r = decode_ed25519_public_key(bad, "NDP-ANNOUNCE-SIGNATURE-INVALID", "key");
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code == "NDP-ANNOUNCE-SIGNATURE-INVALID");
    }
    // A 128-hex-digit "signature" is not 64 bytes of base64url.
    CHECK_FALSE(decode_ed25519_signature("ed25519:" + std::string(128, 'a'), "X", "sig").has_value());
}

TEST_CASE("Announce trust: required signatures, NID binding")
{
    const std::string nid = "urn:nps:node:api.test:a";
    const std::string frame = announce(nid, 1);
    const std::string signed_frame = with_signature(frame, kSeed1);
    const AnnounceTrust required{.require_signed = true, .keys = {{.nid = nid, .public_key = kPub1}}};
    CHECK(check_announce_trust(signed_frame, required).value() == SignatureStatus::verified);
    CHECK(check_announce_trust(frame, required).error().code == "NDP-ANNOUNCE-SIGNATURE-INVALID");
    CHECK(check_announce_trust(with_signature(frame, kSeed2), required).error().code ==
          "NDP-ANNOUNCE-SIGNATURE-INVALID");
    // Signed by a key trusted for another NID.
    const AnnounceTrust other{.require_signed = true, .keys = {{.nid = "urn:nps:node:api.test:b", .public_key = kPub1}}};
    CHECK(check_announce_trust(signed_frame, other).error().code == "NDP-ANNOUNCE-NID-MISMATCH");
    const AnnounceTrust none{.require_signed = true, .keys = {}};
    CHECK(check_announce_trust(signed_frame, none).error().code == "NDP-ANNOUNCE-NID-MISMATCH");
    // Not required: unsigned or unknown publishers are unverified, bad signatures of known ones still fail.
    const AnnounceTrust optional{.require_signed = false, .keys = {{.nid = nid, .public_key = kPub1}}};
    CHECK(check_announce_trust(frame, optional).value() == SignatureStatus::unverified);
    CHECK(check_announce_trust(with_signature(frame, kSeed2), optional).error().code ==
          "NDP-ANNOUNCE-SIGNATURE-INVALID");
    // health and last_seen are outside the signature.
    const std::string advisory = signed_frame.substr(0, signed_frame.size() - 1) +
                                 ",\"health\":\"draining\",\"last_seen\":\"2026-07-29T12:00:40Z\"}";
    CHECK(check_announce_trust(advisory, required).value() == SignatureStatus::verified);
    // A null optional field is as if absent, and heartbeat_interval_ms defaults to 60000.
    CHECK(announce_signed_body(announce(nid, 1, "2026-07-29T12:00:30Z", 120, ",\"cluster_anchor\":null")).value() ==
          announce_signed_body(announce(nid, 1, "2026-07-29T12:00:30Z", 120, ",\"heartbeat_interval_ms\":60000")).value());
}

TEST_CASE("Registry model: replay window, roles, TTL expiry on the clock, offline fence")
{
    const std::string nid = "urn:nps:node:api.test:a";
    nps::FakeClock clock(*nps::parse_rfc3339_ms("2026-07-29T12:10:00Z"));
    const nps::Result<void> ok{};

    RegistryModel strict({.profile = RegistryProfile::org_private, .clock = &clock});
    // 9.5 minutes old at org-private: outside the 300 s replay window.
    auto old = strict.admit(announce(nid, 1, "2026-07-29T12:00:30Z", 3600), ok);
    CHECK(old.decision == Decision::rejected);
    CHECK(old.error->code == "NDP-ANNOUNCE-SIGNATURE-INVALID");
    // graph_seq is required outside local-dev.
    auto no_seq = strict.admit(R"({"nid":"urn:nps:node:api.test:a","timestamp":"2026-07-29T12:09:50Z","ttl":60})", ok);
    CHECK(no_seq.error->code == "NDP-ANNOUNCE-PROFILE-VIOLATION");

    RegistryModel reg({.profile = RegistryProfile::local_dev, .clock = &clock});
    CHECK(reg.admit(announce(nid, 1, "2026-07-29T12:09:50Z", 60, ",\"node_roles\":[\"gateway\"]"), ok).error->code ==
          "NDP-ANNOUNCE-ROLE-REMOVED");
    CHECK(reg.admit(announce(nid, 1, "2026-07-29T12:09:50Z", 60, ",\"node_roles\":[\"router\"]"), ok).error->code ==
          "NDP-ANNOUNCE-ROLE-UNKNOWN");
    CHECK(reg.highest_sequences().empty());  // failed steps change nothing

    CHECK(reg.admit(announce(nid, 1, "2026-07-29T12:09:50Z", 60), ok).decision == Decision::accepted);
    CHECK(reg.live_nids() == std::vector<std::string>{nid});
    clock.advance_ms(49'000);  // 12:10:49, fresh until 12:10:50
    CHECK(reg.resolve(nid).has_value());
    clock.advance_ms(1'000);
    CHECK(reg.live_nids().empty());
    CHECK(reg.resolve(nid).error().code == "NDP-RESOLVE-STALE");
    CHECK(reg.resolve("urn:nps:node:api.test:zzz").error().code == "NDP-RESOLVE-NOT-FOUND");

    // Offline at seq 2, then the old seq-1 announce is a rollback and seq 3 comes back.
    CHECK(reg.admit(announce(nid, 2, "2026-07-29T12:10:50Z", 0), ok).decision == Decision::removed);
    CHECK(reg.resolve(nid).error().code == "NDP-RESOLVE-NOT-FOUND");
    CHECK(reg.admit(announce(nid, 1, "2026-07-29T12:10:50Z", 60), ok).error->code == "NDP-GRAPH-SEQ-ROLLBACK");
    CHECK(reg.admit(announce(nid, 3, "2026-07-29T12:10:50Z", 60), ok).decision == Decision::accepted);
    CHECK(reg.highest_sequences().at(nid) == 3);

    // A bad signature verdict rejects before anything else.
    auto bad = reg.admit(announce(nid, 4, "2026-07-29T12:10:50Z", 60),
                         nps::protocol_error("NDP-ANNOUNCE-SIGNATURE-INVALID", "test"));
    CHECK(bad.error->code == "NDP-ANNOUNCE-SIGNATURE-INVALID");
    CHECK(reg.highest_sequences().at(nid) == 3);
    // Invalid JSON and non-object frames are rejected, not thrown.
    CHECK(reg.admit("{", ok).decision == Decision::rejected);
    CHECK(reg.admit("[]", ok).error->code == "NDP-ANNOUNCE-PROFILE-VIOLATION");
}
