// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/error_codes.hpp"

#include <iterator>

namespace nps::proto {

namespace {

// Codes marked (ours) fill gaps where the spec defines no code for a
// condition the API must report; docs/errors.md lists them.
constexpr ErrorCodeInfo kTable[] = {
    // NOP (NPS-5 §7, CR-0007 §7)
    {"NOP-TASK-NOT-FOUND", "NPS-CLIENT-NOT-FOUND", 404},
    {"NOP-TASK-TIMEOUT", "NPS-SERVER-TIMEOUT", 504},
    {"NOP-TASK-DAG-INVALID", "NPS-CLIENT-BAD-FRAME", 400},
    {"NOP-TASK-DAG-CYCLE", "NPS-CLIENT-BAD-FRAME", 400},
    {"NOP-TASK-DAG-TOO-LARGE", "NPS-CLIENT-BAD-FRAME", 400},
    {"NOP-TASK-ALREADY-COMPLETED", "NPS-CLIENT-CONFLICT", 409},
    {"NOP-TASK-CANCELLED", "NPS-CLIENT-CONFLICT", 409},
    {"NOP-DELEGATE-SCOPE-VIOLATION", "NPS-AUTH-FORBIDDEN", 403},
    {"NOP-DELEGATE-REJECTED", "NPS-CLIENT-UNPROCESSABLE", 422},
    {"NOP-DELEGATE-CHAIN-TOO-DEEP", "NPS-CLIENT-BAD-PARAM", 400},
    {"NOP-DELEGATE-TIMEOUT", "NPS-SERVER-TIMEOUT", 504},
    {"NOP-SYNC-TIMEOUT", "NPS-SERVER-TIMEOUT", 504},
    {"NOP-SYNC-DEPENDENCY-FAILED", "NPS-CLIENT-UNPROCESSABLE", 422},
    {"NOP-STREAM-SEQ-GAP", "NPS-STREAM-SEQ-GAP", 422},
    {"NOP-STREAM-NID-MISMATCH", "NPS-AUTH-UNAUTHENTICATED", 401},
    {"NOP-STREAM-NAK-UNRESOLVABLE", "NPS-STREAM-SEQ-GAP", 422},
    {"NOP-RESOURCE-INSUFFICIENT", "NPS-SERVER-UNAVAILABLE", 503},
    {"NOP-CONDITION-EVAL-ERROR", "NPS-CLIENT-BAD-PARAM", 400},
    {"NOP-INPUT-MAPPING-ERROR", "NPS-CLIENT-UNPROCESSABLE", 422},
    {"NOP-COMPENSATION-FAILED", "NPS-CLIENT-UNPROCESSABLE", 422},
    {"NOP-COMPENSATION-NOT-SUPPORTED", "NPS-CLIENT-UNPROCESSABLE", 422},
    {"NOP-CALLBACK-HMAC-MISSING", "NPS-AUTH-UNAUTHENTICATED", 401},
    {"NOP-CALLBACK-HMAC-INVALID", "NPS-AUTH-UNAUTHENTICATED", 401},
    {"NOP-CALLBACK-INVALID", "NPS-CLIENT-BAD-PARAM", 400},
    {"NOP-TASK-RESULT-EXPIRED", "NPS-CLIENT-NOT-FOUND", 404},
    {"NOP-CLAIM-CONFLICT", "NPS-CLIENT-CONFLICT", 409},
    {"NOP-SPAWN-SPEC-INVALID", "NPS-CLIENT-BAD-PARAM", 400},
    {"NOP-RUNTIME-IDLE-TIMEOUT", "NPS-SERVER-TIMEOUT", 504},
    {"NOP-RUNTIME-MAX-RUNTIME", "NPS-SERVER-TIMEOUT", 504},
    {"NOP-STREAM-FRAME-INVALID", "NPS-CLIENT-BAD-FRAME", 400},  // (ours) malformed AlignStream from a worker
    {"NOP-TASK-NOT-FINISHED", "NPS-CLIENT-CONFLICT", 409},     // (ours) removing a task that is still pending or running
    // NDP (NPS-4)
    {"NDP-RESOLVE-NOT-FOUND", "NPS-CLIENT-NOT-FOUND", 404},
    {"NDP-RESOLVE-STALE", "NPS-CLIENT-NOT-FOUND", 404},
    {"NDP-ANNOUNCE-STALE", "NPS-CLIENT-NOT-FOUND", 404},
    {"NDP-RESOLVE-AMBIGUOUS", "NPS-CLIENT-CONFLICT", 409},
    {"NDP-CLUSTER-SPLIT", "NPS-CLIENT-CONFLICT", 409},
    {"NDP-ANNOUNCE-CONFLICT", "NPS-CLIENT-CONFLICT", 409},
    {"NDP-RESOLVE-TIMEOUT", "NPS-SERVER-TIMEOUT", 504},
    {"NDP-REGISTRY-UNAVAILABLE", "NPS-SERVER-UNAVAILABLE", 503},
    {"NDP-ANNOUNCE-INVALID", "NPS-CLIENT-BAD-FRAME", 400},  // (ours) malformed announce body
    {"NDP-ANNOUNCE-SIGNATURE-INVALID", "NPS-AUTH-UNAUTHENTICATED", 401},
    {"NDP-ANNOUNCE-NID-MISMATCH", "NPS-CLIENT-BAD-FRAME", 400},
    {"NDP-ANNOUNCE-ROLE-REMOVED", "NPS-CLIENT-BAD-FRAME", 400},
    {"NDP-ANNOUNCE-ROLE-UNKNOWN", "NPS-CLIENT-BAD-FRAME", 400},
    {"NDP-ANNOUNCE-PROFILE-VIOLATION", "NPS-AUTH-FORBIDDEN", 403},
    {"NDP-GRAPH-SEQ-ROLLBACK", "NPS-CLIENT-BAD-FRAME", 400},
    // NIP (NPS-3 §5.1, error-codes.md)
    {"NIP-CERT-SIGNATURE-INVALID", "NPS-AUTH-UNAUTHENTICATED", 401},
    {"NIP-CERT-EXPIRED", "NPS-AUTH-UNAUTHENTICATED", 401},
    {"NIP-ASSURANCE-UNKNOWN", "NPS-CLIENT-BAD-FRAME", 400},
    {"NIP-ASSURANCE-MISMATCH", "NPS-CLIENT-BAD-FRAME", 400},
    // NCP (NPS-1 §4.1, §6)
    {"NCP-ANCHOR-ID-MISMATCH", "NPS-CLIENT-CONFLICT", 409},
    {"NCP-FRAME-PAYLOAD-TOO-LARGE", "NPS-LIMIT-PAYLOAD", 413},  // transport-profile §5 pin
    {"NCP-FRAME-FLAGS-INVALID", "NPS-CLIENT-BAD-FRAME", 400},
    {"NCP-FRAME-UNKNOWN-TYPE", "NPS-CLIENT-BAD-FRAME", 400},
    {"NCP-ENCODING-UNSUPPORTED", "NPS-SERVER-ENCODING-UNSUPPORTED", 415},  // transport-profile §5 pin
    {"NCP-ENC-NOT-NEGOTIATED", "NPS-CLIENT-BAD-FRAME", 400},
    // NWP HTTP binding (NPS-3 §9, npsd)
    {"NWP-NODE-UNAVAILABLE", "NPS-SERVER-UNAVAILABLE", 503},
    {"NWP-HTTP-CONTENT-TYPE-UNSUPPORTED", "NPS-CLIENT-BAD-FRAME", 400},            // error-codes.md (not 415)
    {"NWP-HTTP-FRAME-BODY-MALFORMED", "NPS-CLIENT-BAD-FRAME", 400},
    {"NWP-HTTP-BODY-TOO-LARGE", "NPS-LIMIT-PAYLOAD", 413},
    {"NWP-HTTP-NOT-FOUND", "NPS-CLIENT-NOT-FOUND", 404},            // (ours) no such route
    {"NWP-HTTP-METHOD-NOT-ALLOWED", "NPS-CLIENT-BAD-FRAME", 405},   // (ours) route exists, method does not
    {"NWP-HTTP-PARAM-INVALID", "NPS-CLIENT-BAD-PARAM", 400},        // (ours) bad query/header/field
    {"NWP-HTTP-UNAUTHENTICATED", "NPS-AUTH-UNAUTHENTICATED", 401},  // (ours) missing/wrong bearer token
    {"NWP-HTTP-CSRF-INVALID", "NPS-AUTH-FORBIDDEN", 403},  // (ours) a dashboard write without its anti-CSRF token
    {"NWP-INBOX-NOT-FOUND", "NPS-CLIENT-NOT-FOUND", 404},           // (ours) NID outside the allowlist
    {"NWP-INBOX-MESSAGE-NOT-FOUND", "NPS-CLIENT-NOT-FOUND", 404},   // npsd
    {"NWP-RATE-LIMIT-INBOX-FULL", "NPS-LIMIT-RATE", 429},           // npsd (status made canonical)
    {"NWP-TASK-ID-CONFLICT", "NPS-CLIENT-CONFLICT", 409},           // (ours) task_id re-used with another body
    {"NWP-STORE-DISK-FULL", "NPS-SERVER-UNAVAILABLE", 503},         // (ours) runner.db cannot grow: nothing changed
    // NPS generic
    {"NPS-SERVER-INTERNAL", "NPS-SERVER-INTERNAL", 500},
    {"NPS-SERVER-UNAVAILABLE", "NPS-SERVER-UNAVAILABLE", 503},
};

}  // namespace

std::optional<ErrorCodeInfo> lookup_error_code(std::string_view code)
{
    for (const auto& entry : kTable)
        if (entry.code == code)
            return entry;
    return std::nullopt;
}

ErrorCodeInfo classify_error_code(std::string_view code)
{
    if (auto info = lookup_error_code(code))
        return *info;
    return {"NPS-SERVER-INTERNAL", "NPS-SERVER-INTERNAL", 500};
}

const ErrorCodeInfo* error_code_table_begin() { return std::begin(kTable); }
const ErrorCodeInfo* error_code_table_end() { return std::end(kTable); }

}  // namespace nps::proto
