// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/runtime_failure.hpp"

#include <iterator>

namespace nps::proto {

namespace {

constexpr RuntimeFailureInfo kFailures[] = {
#define NPS_RUNTIME_FAILURE_ROW(kind, code_name, retry) {#kind, code::code_name, retry},
    NPS_RUNTIME_FAILURES(NPS_RUNTIME_FAILURE_ROW)
#undef NPS_RUNTIME_FAILURE_ROW
};

}  // namespace

RuntimeFailureInfo describe(RuntimeFailure failure)
{
    return kFailures[static_cast<std::size_t>(failure)];
}

Error runtime_failure(RuntimeFailure failure, std::string message)
{
    const RuntimeFailureInfo info = describe(failure);
    Error error = protocol_error(info.code, std::move(message));
    error.retryable = info.retryable;
    return error;
}

const RuntimeFailureInfo* runtime_failure_table_begin() { return std::begin(kFailures); }
const RuntimeFailureInfo* runtime_failure_table_end() { return std::end(kFailures); }

}  // namespace nps::proto
