// SPDX-License-Identifier: Apache-2.0
// Turning an attempt's agent NID into what a sandbox needs, the blocking part
// of a launch, run on a JobPool thread:
//   agent NID → announce → SpawnSpec (spawn/resolver.hpp)
//   → the image, pulled when the store lacks it
//   → a pinned overlay rootfs in <state_dir>/workers/<name>/, its upper in
//     the worker's bounded writable space (a tmpfs on that directory)
//   → argv, environment, working directory and ids (image/image_process.hpp).
// Failures carry the code the node fails with (docs/executor.md):
// NOP-SPAWN-SPEC-INVALID for anything about the agent or its SpawnSpec (not
// retryable) — a limit above the operator's ceilings included —, and the
// runtime failure image_unavailable (proto/runtime_failure.hpp: retryable)
// when the image is neither present nor pullable or the rootfs cannot be made.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/connection_pool.hpp"
#include "nps/base/result.hpp"
#include "nps/cgroup/worker_cgroup.hpp"
#include "nps/executor/executor_options.hpp"
#include "nps/image/image_process.hpp"
#include "nps/image/image_store.hpp"
#include "nps/image/worker_rootfs.hpp"
#include "nps/proto/runtime_failure.hpp"
#include "nps/sandbox/userns.hpp"
#include "nps/spawn/resolver.hpp"

namespace nps::executor {

struct PreparedWorker {
    spawn::Resolution resolution;
    cgroup::CgroupLimits limits;  // worker_limits() of the SpawnSpec
    std::optional<image::WorkerRootfs> rootfs;
    std::string worker_dir;
    image::ImageProcess process;
    // The worker's user namespace slot (with sandbox.user_namespace), held
    // until the worker's processes are gone.
    std::optional<sandbox::UsernsLease> userns;

    PreparedWorker() = default;
    PreparedWorker(const PreparedWorker&) = delete;
    PreparedWorker& operator=(const PreparedWorker&) = delete;
    // release(), errors ignored.
    ~PreparedWorker();

    // Unmounts the rootfs, removes the worker directory, drops the pin.
    // Idempotent. Call once the worker's processes are gone.
    Result<void> release();
};

// Worker directory names: unique in this process, and carrying its pid so
// a later start-up can tell a dead runner's leftovers from a live one's.
std::string next_worker_name();

// Connections to the image store of the state directory, borrowed by the
// launch threads for one job each.
using ImageStorePool = ConnectionPool<image::ImageStore>;

// Used on JobPool threads: only the options a reload never changes
// (state_dir, registries) are read through it.
struct LaunchContext {
    const ExecutorOptions& options;
    spawn::SpawnSpecResolver& resolver;
    ImageStorePool& images;
};

// Resolves `agent` to its SpawnSpec only (preflight and dispatch share it),
// refused when it asks more than `policy`'s ceilings (spawn_ceilings.hpp).
// `policy` is a copy taken on the loop thread: a reload changes the running
// worker policy there.
Result<spawn::Resolution> resolve_agent_spec(const LaunchContext& context, const std::string& agent,
                                             const WorkerPolicy& policy);

// The cgroup limits of a worker of `spec`: the SpawnSpec's memory and CPU,
// else `policy`'s defaults; pids always the default (a SpawnSpec has no
// pids field). A default of 0 leaves that limit off.
cgroup::CgroupLimits worker_limits(const spawn::SpawnSpec& spec, const WorkerPolicy& policy);

// A connection to the image store, borrowed from the context's pool.
Result<ImageStorePool::Lease> borrow_image_store(const LaunchContext& context);

// The image named by the SpawnSpec, present in the store or pulled now.
Result<void> ensure_image(const LaunchContext& context, image::ImageStore& images, const std::string& reference);

// Everything above; `worker_name` names the worker directory. `policy` is a
// copy of the [workers] settings taken on the loop thread, where a reload
// changes them: its defaults and ceilings bound the SpawnSpec's limits, and
// `default_disk` is the worker's disk (its overlay upper, /tmp and /dev/shm
// share a tmpfs of that size: image/worker_space.hpp). With `userns` (the
// executor's slots, when workers run in user namespaces) the worker gets a
// slot of its own (PreparedWorker::userns) and its rootfs is made from
// layers idmapped into that slot's namespace; no free slot is
// NOP-RESOURCE-INSUFFICIENT.
Result<std::unique_ptr<PreparedWorker>> prepare_worker(const LaunchContext& context, const std::string& agent,
                                                       const std::string& worker_name,
                                                       const WorkerPolicy& policy,
                                                       sandbox::UsernsSlots* userns);

}  // namespace nps::executor
