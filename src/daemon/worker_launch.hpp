// SPDX-License-Identifier: Apache-2.0
// Turning an attempt's agent NID into what a sandbox needs, the blocking part
// of a launch, run on a JobPool thread:
//   agent NID → announce → SpawnSpec (spawn/resolver.hpp)
//   → the image, pulled when the store lacks it
//   → a pinned overlay rootfs in <state_dir>/workers/<name>/
//   → argv, environment, working directory and ids (image/image_process.hpp).
// Failures carry the code the node fails with (docs/executor.md):
// NOP-SPAWN-SPEC-INVALID for anything about the agent or its SpawnSpec (not
// retryable), NOP-RESOURCE-INSUFFICIENT when the image is neither present
// nor pullable or the rootfs cannot be made (retryable).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/config/config.hpp"
#include "nps/image/image_process.hpp"
#include "nps/image/image_store.hpp"
#include "nps/image/worker_rootfs.hpp"
#include "nps/sandbox/userns.hpp"
#include "nps/spawn/resolver.hpp"

namespace nps::daemon {

inline constexpr const char* kImageUnavailable = "NOP-RESOURCE-INSUFFICIENT";

struct PreparedWorker {
    spawn::Resolution resolution;
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

struct LaunchContext {
    const config::Config& config;
    spawn::SpawnSpecResolver& resolver;
};

// Resolves `agent` to its SpawnSpec only (preflight and dispatch share it).
Result<spawn::Resolution> resolve_agent_spec(const LaunchContext& context, const std::string& agent);

// This thread's connection to the image store of `state_dir`, opened on first
// use (the pool's threads keep theirs; an ImageStore is not shared).
Result<image::ImageStore*> thread_image_store(const std::string& state_dir);

// The image named by the SpawnSpec, present in the store or pulled now.
Result<void> ensure_image(const LaunchContext& context, image::ImageStore& images, const std::string& reference);

// Everything above; `worker_name` names the worker directory.
Result<std::unique_ptr<PreparedWorker>> prepare_worker(const LaunchContext& context, const std::string& agent,
                                                       const std::string& worker_name);

}  // namespace nps::daemon
