// SPDX-License-Identifier: Apache-2.0
#include "worker_spec.hpp"

namespace nps::executor {

supervisor::WorkerSpec worker_spec_for(const ExecutionContext& context, const PreparedWorker& prepared,
                                       int netns_fd)
{
    supervisor::WorkerSpec worker;
    worker.sandbox.rootfs = prepared.rootfs->path();
    worker.sandbox.writable.host_dir = prepared.rootfs->space_dir();
    worker.sandbox.argv = prepared.process.argv;
    worker.sandbox.env = prepared.process.env;
    worker.sandbox.cwd = prepared.process.cwd;
    worker.sandbox.uid = prepared.process.ids.uid;
    worker.sandbox.gid = prepared.process.ids.gid;
    worker.sandbox.seccomp = context.seccomp;
    worker.sandbox.netns_fd = netns_fd;
    // The host id range of its own it holds while it runs (its rootfs was
    // made for it: idmapped layers).
    if (prepared.userns) {
        worker.sandbox.user_namespace = prepared.userns->spec();
        worker.sandbox.user_namespace->rootfs_idmapped = true;
    }
    worker.limits = prepared.limits;
    worker.enforcement = context.enforcement;
    const spawn::SpawnSpec& spec = prepared.resolution.spec;
    if (spec.idle_timeout_seconds)
        worker.idle_timeout = std::chrono::seconds(*spec.idle_timeout_seconds);
    if (spec.max_runtime_seconds)
        worker.max_runtime = std::chrono::seconds(*spec.max_runtime_seconds);
    worker.cgn_budget = spec.cgn_budget;
    return worker;
}

}  // namespace nps::executor
