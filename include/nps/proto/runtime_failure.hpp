// SPDX-License-Identifier: Apache-2.0
// The failures the runtime itself reports for a node attempt, each with the
// code the attempt fails with and whether another attempt may overcome it:
// the one place that decides the retryability of the runner's own failures
// (docs/errors.md, "Which failures are retried").
//
// A worker's own error (its failed final frame) is not in this table: its
// `retryable` flag is the worker's (NPS-5 §3.5). For both, the DAG engine
// then retries only while attempts remain and `retry_on` is absent or names
// the code (nop/task_run.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "nps/base/result.hpp"
#include "nps/proto/error_codes.hpp"

// X(kind, code constant, retryable). protocol_violation has no code of its
// own: the violation's code (e.g. NOP-STREAM-FRAME-INVALID) is the attempt's.
#define NPS_RUNTIME_FAILURES(X) \
    /* preparing the worker (executor) */ \
    X(spawn_spec_invalid, kNopSpawnSpecInvalid, false) /* a wrong spec does not fix itself */ \
    X(image_unavailable, kNopResourceInsufficient, true) /* the registry or the disk may come back */ \
    X(sandbox_unavailable, kNopResourceInsufficient, true) /* no network or user namespace, no start */ \
    /* starting it (supervisor) */ \
    X(spawn_transient, kNopDelegateRejected, true) /* EAGAIN, ENOMEM, EMFILE, ENFILE, ENOSPC, EBUSY */ \
    X(spawn_refused, kNopDelegateRejected, false) /* any other errno */ \
    /* its end (supervisor) */ \
    X(exit_status, kNopDelegateRejected, true) /* exited non-zero without a final frame */ \
    X(killed_by_signal, kNopDelegateRejected, true) \
    X(no_final_frame, kNopDelegateRejected, false) /* exited 0 after frames, none final */ \
    X(status_unknown, kNopDelegateRejected, false) \
    X(out_of_memory, kNopResourceInsufficient, false) /* its memory limit is the same next time */ \
    X(protocol_violation, kNpsServerInternal, false) /* code: the violation's */ \
    X(idle_timeout, kNopRuntimeIdleTimeout, true) \
    X(max_runtime, kNopRuntimeMaxRuntime, true) \
    X(shutdown, kNpsServerUnavailable, true) /* the runner stopped: another runner may run it */ \
    /* the node's deadline (nop) */ \
    X(deadline, kNopDelegateTimeout, true) /* NPS-5 §3.5: SDKs treat it as retryable */

namespace nps::proto {

enum class RuntimeFailure : std::uint8_t {
#define NPS_RUNTIME_FAILURE_KIND(kind, code_name, retry) kind,
    NPS_RUNTIME_FAILURES(NPS_RUNTIME_FAILURE_KIND)
#undef NPS_RUNTIME_FAILURE_KIND
};

struct RuntimeFailureInfo {
    const char* name;  // "image_unavailable"
    const char* code;  // the attempt's error code
    bool retryable;
};

RuntimeFailureInfo describe(RuntimeFailure failure);

// An Error for the attempt: the table's code and retryability, `message`.
Error runtime_failure(RuntimeFailure failure, std::string message);

// Every kind, for tests and documentation.
const RuntimeFailureInfo* runtime_failure_table_begin();
const RuntimeFailureInfo* runtime_failure_table_end();

}  // namespace nps::proto
