// SPDX-License-Identifier: Apache-2.0
// NIP IdentFrame signatures (NPS-3 §5.1): the canonical form a CA signs
// (RFC 8785 of the frame without `signature` and `metadata`; `lineage` is
// included), assurance levels (§5.1.1) and the receiver's checks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nps/base/result.hpp"

namespace nps::proto::nip {

// The canonical form of an IdentFrame's JSON text. Fails with
// NIP-CERT-SIGNATURE-INVALID when it is not an object, and with
// NWP-HTTP-FRAME-BODY-MALFORMED on invalid JSON.
Result<std::string> ident_signed_body(std::string_view frame_json);

enum class AssuranceLevel { anonymous, attested, verified };
std::string_view assurance_name(AssuranceLevel level);

// The wire value: absent, null or "" → anonymous (the §5.1.1 default);
// any other value outside the enum → NIP-ASSURANCE-UNKNOWN (never demoted).
Result<AssuranceLevel> parse_assurance_level(std::optional<std::string_view> wire);

// The frame's level, checked against the certificate's
// id-nid-assurance-level extension when one is given: any disagreement →
// NIP-ASSURANCE-MISMATCH.
Result<AssuranceLevel> effective_assurance(std::string_view frame_json,
                                           std::optional<std::string_view> certificate_level);

struct IdentVerifyOptions {
    std::string issuer_public_key;                    // the CA's raw 32-byte Ed25519 key
    std::int64_t now_ms = 0;                          // verification time (Unix ms)
    std::optional<std::string> certificate_assurance; // id-nid-assurance-level, when a cert came with it
};

// Receiver checks, in this order (each failure stops):
//   1. assurance_level in the enum          → NIP-ASSURANCE-UNKNOWN
//   2. it agrees with the certificate        → NIP-ASSURANCE-MISMATCH
//   3. expires_at present and not before now → NIP-CERT-EXPIRED
//   4. lineage shaped per §5.1.3 (session: parent_nid, group_nid and
//      session_id; group: none of them)      → NIP-CERT-SIGNATURE-INVALID
//   5. signature verifies under the issuer's key over ident_signed_body
//                                            → NIP-CERT-SIGNATURE-INVALID
// Expiry before the signature follows nip.ident.004 ("regardless of
// signature validity"); both must pass for the frame to be accepted.
Result<void> verify_ident_frame(std::string_view frame_json, const IdentVerifyOptions& options);

// For tests and tooling: "ed25519:…" over ident_signed_body with the
// issuer's 32-byte seed.
Result<std::string> sign_ident_frame(std::string_view frame_json, std::string_view issuer_seed);

}  // namespace nps::proto::nip
