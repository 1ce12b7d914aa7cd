// SPDX-License-Identifier: Apache-2.0
// NDP AnnounceFrame signatures (NPS-4 §7.4): the canonical signed body, its
// Ed25519 signature, and the trust decision a registry makes before
// admitting an announce (ndp_registry.hpp).
//
// Signed body: the RFC 8785 form of the frame object without `signature`,
// `health`, `last_seen` and `frame`, without top-level members whose value
// is null, and with `heartbeat_interval_ms: 60000` when absent. Nested
// values are kept as they are (JCS sorts their keys too).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"

namespace nps::proto::ndp {

// The signed body of an AnnounceFrame's JSON text. Fails with
// NDP-ANNOUNCE-INVALID when the text is not an object, and with
// NWP-HTTP-FRAME-BODY-MALFORMED on invalid JSON (duplicate keys included).
Result<std::string> announce_signed_body(std::string_view frame_json);

// The whole frame in RFC 8785 form without the `frame` discriminant: two
// announces are exact retransmissions when these are equal (§7.4 rule 3).
Result<std::string> announce_wire_form(std::string_view frame_json);

// Verifies `signature` ("ed25519:<base64url 64 bytes>") over the signed body
// with `public_key` (raw 32 bytes). NDP-ANNOUNCE-SIGNATURE-INVALID when the
// signature is absent, malformed or does not verify.
Result<void> verify_announce_signature(std::string_view frame_json, std::string_view public_key);

// For tests and tooling: "ed25519:…" over the signed body, with the private
// key of a 32-byte seed.
Result<std::string> sign_announce(std::string_view frame_json, std::string_view seed);

// A publisher key a registry trusts, bound to one NID.
struct TrustedAnnounceKey {
    std::string nid;
    std::string public_key;  // raw 32 bytes (decode_ed25519_public_key)
};

struct AnnounceTrust {
    // [ndp] require_signed: every announce must carry a signature that a
    // trusted key of its NID verifies.
    bool require_signed = false;
    std::vector<TrustedAnnounceKey> keys;
};

enum class SignatureStatus {
    verified,    // a trusted key of the frame's NID verified the signature
    unverified,  // not required, and unsigned or no trusted key for the NID
};

// The trust decision, made before any registry state changes (§7.4 rule 1):
//   a signature that no trusted key of its NID verifies  → NDP-ANNOUNCE-SIGNATURE-INVALID
//   with require_signed: no signature                     → NDP-ANNOUNCE-SIGNATURE-INVALID
//   with require_signed: no trusted key for the NID, or
//   only another NID's key verifies it                    → NDP-ANNOUNCE-NID-MISMATCH
// Without require_signed, an announce from a NID with no trusted key is
// `unverified` unless another NID's key verifies it (NID-MISMATCH).
Result<SignatureStatus> check_announce_trust(std::string_view frame_json, const AnnounceTrust& trust);

}  // namespace nps::proto::ndp
