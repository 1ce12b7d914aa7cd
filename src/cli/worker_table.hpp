// SPDX-License-Identifier: Apache-2.0
// The running-worker table of `ps` and `status`, from GET /v1/workers.
#pragma once

#include <nlohmann/json.hpp>

#include "nps/cli/output.hpp"

namespace nps::cli {

// One line per worker: TASK NODE ATTEMPT STATE PID UPTIME MEMORY CPU AGENT
// IMAGE, with a header line; memory as used/limit.
void print_worker_table(const nlohmann::json& workers, const Output& out);

}  // namespace nps::cli
