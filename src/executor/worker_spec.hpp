// SPDX-License-Identifier: Apache-2.0
// The worker of a prepared launch as the supervisor runs it, but for what
// only its attempt gives (the DelegateFrame, the attempt number): a task's
// dispatch (TaskExecution), Supervisor::hold for a worker held ahead, and
// the worker kept warm for the next task (WarmStart) build it alike, so a
// held process and the worker that takes it compare equal.
#pragma once

#include "execution_context.hpp"

namespace nps::executor {

// `netns_fd` is the task's network namespace (sandbox/netns_pool.hpp).
supervisor::WorkerSpec worker_spec_for(const ExecutionContext& context, const PreparedWorker& prepared,
                                       int netns_fd);

}  // namespace nps::executor
