// SPDX-License-Identifier: Apache-2.0
// The DelegateFrame (NPS-5 §3.2) the runner writes to a worker's stdin for
// one attempt: the assignment, the mapped params, a delegated scope of just
// this node and action, the deadline, the idempotency key, and the task's
// priority and context. The supervisor checks it and writes its line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "nps/nop/task_run.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::executor {

nlohmann::json make_delegate_frame(const proto::TaskFrame& task, const nop::Attempt& attempt,
                                std::optional<std::int64_t> cgn_budget);

}  // namespace nps::executor
