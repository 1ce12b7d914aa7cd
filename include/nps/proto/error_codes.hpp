// SPDX-License-Identifier: Apache-2.0
// The one table of protocol error codes the runner emits: each code with its
// NPS status and HTTP status (spec digest §6; status-codes.md v0.7;
// transport-profile §5 pins). The API uses it for every error body.
//
// Code inside the runner names a code by its constant, `proto::code::kNopClaimConflict`,
// never by a string literal, so a misspelt code does not compile; the
// constants and the lookup table are both generated from NPS_ERROR_CODES.
// Codes marked (ours) fill gaps where the spec defines no code for a
// condition the API must report; docs/errors.md lists them.
#pragma once

#include <optional>
#include <string_view>

// X(constant, NPS status constant) for every NPS status a code maps to.
#define NPS_STATUSES(X) \
    X(kNpsAuthForbidden, "NPS-AUTH-FORBIDDEN") \
    X(kNpsAuthUnauthenticated, "NPS-AUTH-UNAUTHENTICATED") \
    X(kNpsClientBadFrame, "NPS-CLIENT-BAD-FRAME") \
    X(kNpsClientBadParam, "NPS-CLIENT-BAD-PARAM") \
    X(kNpsClientConflict, "NPS-CLIENT-CONFLICT") \
    X(kNpsClientNotFound, "NPS-CLIENT-NOT-FOUND") \
    X(kNpsClientUnprocessable, "NPS-CLIENT-UNPROCESSABLE") \
    X(kNpsLimitPayload, "NPS-LIMIT-PAYLOAD") \
    X(kNpsLimitRate, "NPS-LIMIT-RATE") \
    X(kNpsServerEncodingUnsupported, "NPS-SERVER-ENCODING-UNSUPPORTED") \
    X(kNpsServerInternal, "NPS-SERVER-INTERNAL") \
    X(kNpsServerTimeout, "NPS-SERVER-TIMEOUT") \
    X(kNpsServerUnavailable, "NPS-SERVER-UNAVAILABLE") \
    X(kNpsStreamSeqGap, "NPS-STREAM-SEQ-GAP")

// X(constant, code, NPS status constant, HTTP status) for every code.
#define NPS_ERROR_CODES(X) \
    /* NOP (NPS-5 §7, CR-0007 §7) */ \
    X(kNopTaskNotFound, "NOP-TASK-NOT-FOUND", kNpsClientNotFound, 404) \
    X(kNopTaskTimeout, "NOP-TASK-TIMEOUT", kNpsServerTimeout, 504) \
    X(kNopTaskDagInvalid, "NOP-TASK-DAG-INVALID", kNpsClientBadFrame, 400) \
    X(kNopTaskDagCycle, "NOP-TASK-DAG-CYCLE", kNpsClientBadFrame, 400) \
    X(kNopTaskDagTooLarge, "NOP-TASK-DAG-TOO-LARGE", kNpsClientBadFrame, 400) \
    X(kNopTaskAlreadyCompleted, "NOP-TASK-ALREADY-COMPLETED", kNpsClientConflict, 409) \
    X(kNopTaskCancelled, "NOP-TASK-CANCELLED", kNpsClientConflict, 409) \
    X(kNopDelegateScopeViolation, "NOP-DELEGATE-SCOPE-VIOLATION", kNpsAuthForbidden, 403) \
    X(kNopDelegateRejected, "NOP-DELEGATE-REJECTED", kNpsClientUnprocessable, 422) \
    X(kNopDelegateChainTooDeep, "NOP-DELEGATE-CHAIN-TOO-DEEP", kNpsClientBadParam, 400) \
    X(kNopDelegateTimeout, "NOP-DELEGATE-TIMEOUT", kNpsServerTimeout, 504) \
    X(kNopSyncTimeout, "NOP-SYNC-TIMEOUT", kNpsServerTimeout, 504) \
    X(kNopSyncDependencyFailed, "NOP-SYNC-DEPENDENCY-FAILED", kNpsClientUnprocessable, 422) \
    X(kNopStreamSeqGap, "NOP-STREAM-SEQ-GAP", kNpsStreamSeqGap, 422) \
    X(kNopStreamNidMismatch, "NOP-STREAM-NID-MISMATCH", kNpsAuthUnauthenticated, 401) \
    X(kNopStreamNakUnresolvable, "NOP-STREAM-NAK-UNRESOLVABLE", kNpsStreamSeqGap, 422) \
    X(kNopResourceInsufficient, "NOP-RESOURCE-INSUFFICIENT", kNpsServerUnavailable, 503) \
    X(kNopConditionEvalError, "NOP-CONDITION-EVAL-ERROR", kNpsClientBadParam, 400) \
    X(kNopInputMappingError, "NOP-INPUT-MAPPING-ERROR", kNpsClientUnprocessable, 422) \
    X(kNopCompensationFailed, "NOP-COMPENSATION-FAILED", kNpsClientUnprocessable, 422) \
    X(kNopCompensationNotSupported, "NOP-COMPENSATION-NOT-SUPPORTED", kNpsClientUnprocessable, 422) \
    X(kNopCallbackHmacMissing, "NOP-CALLBACK-HMAC-MISSING", kNpsAuthUnauthenticated, 401) \
    X(kNopCallbackHmacInvalid, "NOP-CALLBACK-HMAC-INVALID", kNpsAuthUnauthenticated, 401) \
    X(kNopCallbackInvalid, "NOP-CALLBACK-INVALID", kNpsClientBadParam, 400) \
    X(kNopTaskResultExpired, "NOP-TASK-RESULT-EXPIRED", kNpsClientNotFound, 404) \
    X(kNopClaimConflict, "NOP-CLAIM-CONFLICT", kNpsClientConflict, 409) \
    X(kNopSpawnSpecInvalid, "NOP-SPAWN-SPEC-INVALID", kNpsClientBadParam, 400) \
    X(kNopRuntimeIdleTimeout, "NOP-RUNTIME-IDLE-TIMEOUT", kNpsServerTimeout, 504) \
    X(kNopRuntimeMaxRuntime, "NOP-RUNTIME-MAX-RUNTIME", kNpsServerTimeout, 504) \
    /* (ours) malformed AlignStream from a worker */ \
    X(kNopStreamFrameInvalid, "NOP-STREAM-FRAME-INVALID", kNpsClientBadFrame, 400) \
    /* (ours) removing a task that is still pending or running */ \
    X(kNopTaskNotFinished, "NOP-TASK-NOT-FINISHED", kNpsClientConflict, 409) \
    /* NDP (NPS-4) */ \
    X(kNdpResolveNotFound, "NDP-RESOLVE-NOT-FOUND", kNpsClientNotFound, 404) \
    X(kNdpResolveStale, "NDP-RESOLVE-STALE", kNpsClientNotFound, 404) \
    X(kNdpAnnounceStale, "NDP-ANNOUNCE-STALE", kNpsClientNotFound, 404) \
    X(kNdpResolveAmbiguous, "NDP-RESOLVE-AMBIGUOUS", kNpsClientConflict, 409) \
    X(kNdpClusterSplit, "NDP-CLUSTER-SPLIT", kNpsClientConflict, 409) \
    X(kNdpAnnounceConflict, "NDP-ANNOUNCE-CONFLICT", kNpsClientConflict, 409) \
    X(kNdpResolveTimeout, "NDP-RESOLVE-TIMEOUT", kNpsServerTimeout, 504) \
    X(kNdpRegistryUnavailable, "NDP-REGISTRY-UNAVAILABLE", kNpsServerUnavailable, 503) \
    /* (ours) malformed announce body */ \
    X(kNdpAnnounceInvalid, "NDP-ANNOUNCE-INVALID", kNpsClientBadFrame, 400) \
    X(kNdpAnnounceSignatureInvalid, "NDP-ANNOUNCE-SIGNATURE-INVALID", kNpsAuthUnauthenticated, 401) \
    X(kNdpAnnounceNidMismatch, "NDP-ANNOUNCE-NID-MISMATCH", kNpsClientBadFrame, 400) \
    X(kNdpAnnounceRoleRemoved, "NDP-ANNOUNCE-ROLE-REMOVED", kNpsClientBadFrame, 400) \
    X(kNdpAnnounceRoleUnknown, "NDP-ANNOUNCE-ROLE-UNKNOWN", kNpsClientBadFrame, 400) \
    X(kNdpAnnounceProfileViolation, "NDP-ANNOUNCE-PROFILE-VIOLATION", kNpsAuthForbidden, 403) \
    X(kNdpGraphSeqRollback, "NDP-GRAPH-SEQ-ROLLBACK", kNpsClientBadFrame, 400) \
    /* NIP (NPS-3 §5.1, error-codes.md) */ \
    X(kNipCertSignatureInvalid, "NIP-CERT-SIGNATURE-INVALID", kNpsAuthUnauthenticated, 401) \
    X(kNipCertExpired, "NIP-CERT-EXPIRED", kNpsAuthUnauthenticated, 401) \
    X(kNipAssuranceUnknown, "NIP-ASSURANCE-UNKNOWN", kNpsClientBadFrame, 400) \
    X(kNipAssuranceMismatch, "NIP-ASSURANCE-MISMATCH", kNpsClientBadFrame, 400) \
    /* NCP (NPS-1 §4.1, §6) */ \
    X(kNcpAnchorIdMismatch, "NCP-ANCHOR-ID-MISMATCH", kNpsClientConflict, 409) \
    /* transport-profile §5 pin */ \
    X(kNcpFramePayloadTooLarge, "NCP-FRAME-PAYLOAD-TOO-LARGE", kNpsLimitPayload, 413) \
    X(kNcpFrameFlagsInvalid, "NCP-FRAME-FLAGS-INVALID", kNpsClientBadFrame, 400) \
    X(kNcpFrameUnknownType, "NCP-FRAME-UNKNOWN-TYPE", kNpsClientBadFrame, 400) \
    /* transport-profile §5 pin */ \
    X(kNcpEncodingUnsupported, "NCP-ENCODING-UNSUPPORTED", kNpsServerEncodingUnsupported, 415) \
    X(kNcpEncNotNegotiated, "NCP-ENC-NOT-NEGOTIATED", kNpsClientBadFrame, 400) \
    /* NWP HTTP binding (NPS-3 §9, npsd) */ \
    X(kNwpNodeUnavailable, "NWP-NODE-UNAVAILABLE", kNpsServerUnavailable, 503) \
    /* error-codes.md (not 415) */ \
    X(kNwpHttpContentTypeUnsupported, "NWP-HTTP-CONTENT-TYPE-UNSUPPORTED", kNpsClientBadFrame, 400) \
    X(kNwpHttpFrameBodyMalformed, "NWP-HTTP-FRAME-BODY-MALFORMED", kNpsClientBadFrame, 400) \
    X(kNwpHttpBodyTooLarge, "NWP-HTTP-BODY-TOO-LARGE", kNpsLimitPayload, 413) \
    /* (ours) no such route */ \
    X(kNwpHttpNotFound, "NWP-HTTP-NOT-FOUND", kNpsClientNotFound, 404) \
    /* (ours) route exists, method does not */ \
    X(kNwpHttpMethodNotAllowed, "NWP-HTTP-METHOD-NOT-ALLOWED", kNpsClientBadFrame, 405) \
    /* (ours) bad query/header/field */ \
    X(kNwpHttpParamInvalid, "NWP-HTTP-PARAM-INVALID", kNpsClientBadParam, 400) \
    /* (ours) missing/wrong bearer token */ \
    X(kNwpHttpUnauthenticated, "NWP-HTTP-UNAUTHENTICATED", kNpsAuthUnauthenticated, 401) \
    /* (ours) a dashboard write without its anti-CSRF token */ \
    X(kNwpHttpCsrfInvalid, "NWP-HTTP-CSRF-INVALID", kNpsAuthForbidden, 403) \
    /* (ours) NID outside the allowlist */ \
    X(kNwpInboxNotFound, "NWP-INBOX-NOT-FOUND", kNpsClientNotFound, 404) \
    /* npsd */ \
    X(kNwpInboxMessageNotFound, "NWP-INBOX-MESSAGE-NOT-FOUND", kNpsClientNotFound, 404) \
    /* npsd (status made canonical) */ \
    X(kNwpRateLimitInboxFull, "NWP-RATE-LIMIT-INBOX-FULL", kNpsLimitRate, 429) \
    /* (ours) task_id re-used with another body */ \
    X(kNwpTaskIdConflict, "NWP-TASK-ID-CONFLICT", kNpsClientConflict, 409) \
    /* (ours) runner.db cannot grow: nothing changed */ \
    X(kNwpStoreDiskFull, "NWP-STORE-DISK-FULL", kNpsServerUnavailable, 503) \
    /* NPS generic */ \
    X(kNpsServerInternal, "NPS-SERVER-INTERNAL", kNpsServerInternal, 500) \
    X(kNpsServerUnavailable, "NPS-SERVER-UNAVAILABLE", kNpsServerUnavailable, 503)

namespace nps::proto {

namespace status {
#define NPS_DECLARE_STATUS(name, text) inline constexpr char name[] = text;
NPS_STATUSES(NPS_DECLARE_STATUS)
#undef NPS_DECLARE_STATUS
}  // namespace status

namespace code {
#define NPS_DECLARE_CODE(name, text, status, http) inline constexpr char name[] = text;
NPS_ERROR_CODES(NPS_DECLARE_CODE)
#undef NPS_DECLARE_CODE
}  // namespace code

struct ErrorCodeInfo {
    std::string_view code;        // "NOP-CLAIM-CONFLICT"
    std::string_view nps_status;  // "NPS-CLIENT-CONFLICT"
    int http_status;              // 409
};

// nullopt for a code not in the table.
std::optional<ErrorCodeInfo> lookup_error_code(std::string_view code);

// The NPS status and HTTP code for an error code; unknown or empty codes map
// to NPS-SERVER-INTERNAL / 500 (a failure we did not classify).
ErrorCodeInfo classify_error_code(std::string_view code);

// Every entry, for tests and documentation.
const ErrorCodeInfo* error_code_table_begin();
const ErrorCodeInfo* error_code_table_end();

}  // namespace nps::proto
