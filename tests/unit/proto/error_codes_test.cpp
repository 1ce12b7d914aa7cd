// SPDX-License-Identifier: Apache-2.0
// The proto area's codes are all in the error table with the spec's status.
#include <doctest/doctest.h>

#include "nps/proto/error_codes.hpp"

using nps::proto::classify_error_code;

TEST_CASE("error codes emitted by proto map to their NPS status")
{
    const struct {
        const char* code;
        const char* status;
        int http;
    } expected[] = {
        {"NWP-HTTP-FRAME-BODY-MALFORMED", "NPS-CLIENT-BAD-FRAME", 400},
        {"NOP-TASK-DAG-INVALID", "NPS-CLIENT-BAD-FRAME", 400},
        {"NOP-TASK-DAG-CYCLE", "NPS-CLIENT-BAD-FRAME", 400},
        {"NOP-TASK-DAG-TOO-LARGE", "NPS-CLIENT-BAD-FRAME", 400},
        {"NOP-DELEGATE-CHAIN-TOO-DEEP", "NPS-CLIENT-BAD-PARAM", 400},
        {"NOP-CONDITION-EVAL-ERROR", "NPS-CLIENT-BAD-PARAM", 400},
        {"NOP-INPUT-MAPPING-ERROR", "NPS-CLIENT-UNPROCESSABLE", 422},
        {"NOP-CALLBACK-INVALID", "NPS-CLIENT-BAD-PARAM", 400},
        {"NOP-CALLBACK-HMAC-MISSING", "NPS-AUTH-UNAUTHENTICATED", 401},
        {"NOP-CALLBACK-HMAC-INVALID", "NPS-AUTH-UNAUTHENTICATED", 401},
        {"NCP-ANCHOR-ID-MISMATCH", "NPS-CLIENT-CONFLICT", 409},
        // NCP frames, NDP announces and NIP signatures (issue 17; error-codes.md)
        {"NCP-FRAME-FLAGS-INVALID", "NPS-CLIENT-BAD-FRAME", 400},
        {"NCP-FRAME-UNKNOWN-TYPE", "NPS-CLIENT-BAD-FRAME", 400},
        {"NCP-FRAME-PAYLOAD-TOO-LARGE", "NPS-LIMIT-PAYLOAD", 413},
        {"NCP-ENCODING-UNSUPPORTED", "NPS-SERVER-ENCODING-UNSUPPORTED", 415},
        {"NCP-ENC-NOT-NEGOTIATED", "NPS-CLIENT-BAD-FRAME", 400},
        {"NDP-ANNOUNCE-SIGNATURE-INVALID", "NPS-AUTH-UNAUTHENTICATED", 401},
        {"NDP-ANNOUNCE-NID-MISMATCH", "NPS-CLIENT-BAD-FRAME", 400},
        {"NDP-ANNOUNCE-PROFILE-VIOLATION", "NPS-AUTH-FORBIDDEN", 403},
        {"NDP-ANNOUNCE-ROLE-REMOVED", "NPS-CLIENT-BAD-FRAME", 400},
        {"NDP-ANNOUNCE-ROLE-UNKNOWN", "NPS-CLIENT-BAD-FRAME", 400},
        {"NDP-ANNOUNCE-CONFLICT", "NPS-CLIENT-CONFLICT", 409},
        {"NDP-ANNOUNCE-STALE", "NPS-CLIENT-NOT-FOUND", 404},
        {"NDP-GRAPH-SEQ-ROLLBACK", "NPS-CLIENT-BAD-FRAME", 400},
        {"NDP-RESOLVE-STALE", "NPS-CLIENT-NOT-FOUND", 404},
        {"NDP-CLUSTER-SPLIT", "NPS-CLIENT-CONFLICT", 409},
        {"NIP-CERT-SIGNATURE-INVALID", "NPS-AUTH-UNAUTHENTICATED", 401},
        {"NIP-CERT-EXPIRED", "NPS-AUTH-UNAUTHENTICATED", 401},
        {"NIP-ASSURANCE-UNKNOWN", "NPS-CLIENT-BAD-FRAME", 400},
        {"NIP-ASSURANCE-MISMATCH", "NPS-CLIENT-BAD-FRAME", 400},
    };
    for (const auto& e : expected) {
        CAPTURE(e.code);
        const auto info = classify_error_code(e.code);
        CHECK(info.code == e.code);
        CHECK(info.nps_status == e.status);
        CHECK(info.http_status == e.http);
    }
    CHECK(classify_error_code("").nps_status == "NPS-SERVER-INTERNAL");
}
