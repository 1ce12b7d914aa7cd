// SPDX-License-Identifier: Apache-2.0
#include "worker_launch.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "nps/spawn/spawn_ceilings.hpp"

namespace nps::executor {

namespace {

Error unavailable(const std::string& what, const Error& cause,
                  proto::RuntimeFailure failure = proto::RuntimeFailure::image_unavailable)
{
    return proto::runtime_failure(failure, what + ": " + cause.describe());
}

}  // namespace

std::string next_worker_name()
{
    static std::atomic<std::uint64_t> counter{0};
    return "t-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

PreparedWorker::~PreparedWorker()
{
    (void)release();
}

Result<void> PreparedWorker::release()
{
    Result<void> first;
    if (rootfs) {
        first = rootfs->overlay.release();
        rootfs.reset();  // the pin goes after the overlay
        if (!worker_dir.empty() && ::rmdir(worker_dir.c_str()) < 0 && errno != ENOENT && first)
            first = system_error_errno("Failed to remove worker directory '" + worker_dir + "'");
    }
    userns.reset();
    return first;
}

Result<spawn::Resolution> resolve_agent_spec(const LaunchContext& context, const std::string& agent,
                                             const WorkerPolicy& policy)
{
    auto resolution = context.resolver.resolve_agent(agent);
    if (!resolution)
        return resolution.error().code.empty()
                   ? protocol_error(spawn::kSpawnSpecInvalid, resolution.error().describe())
                   : std::move(resolution).error();
    if (auto within = spawn::check_spawn_ceilings(resolution->spec, spawn_ceilings(policy)); !within)
        return protocol_error(spawn::kSpawnSpecInvalid, "Agent '" + agent + "': " + within.error().message);
    return resolution;
}

cgroup::CgroupLimits worker_limits(const spawn::SpawnSpec& spec, const WorkerPolicy& policy)
{
    auto or_default = [](const std::optional<std::int64_t>& asked, std::int64_t fallback) {
        return asked ? asked : fallback > 0 ? std::optional<std::int64_t>(fallback) : std::nullopt;
    };
    return {.memory_bytes = or_default(spec.memory_bytes, policy.default_memory_bytes),
            .cpu_millicores = or_default(spec.cpu_millicores, policy.default_cpu_millicores),
            .pids_max = or_default(std::nullopt, policy.default_pids)};
}

Result<ImageStorePool::Lease> borrow_image_store(const LaunchContext& context)
{
    auto lease = context.images.acquire();
    if (!lease)
        return unavailable("Failed to open the image store", lease.error());
    return lease;
}

Result<void> ensure_image(const LaunchContext& context, image::ImageStore& images, const std::string& reference)
{
    auto found = images.resolve(reference);
    if (found)
        return {};
    image::PullRequest pull{.reference = reference, .settings = context.options.registries};
    auto pulled = images.pull(pull);
    if (!pulled)
        return unavailable("Image '" + reference + "' is not in the image store (" + found.error().describe() +
                               ") and could not be pulled",
                           pulled.error());
    return {};
}

Result<std::unique_ptr<PreparedWorker>> prepare_worker(const LaunchContext& context, const std::string& agent,
                                                       const std::string& worker_name,
                                                       const WorkerPolicy& policy,
                                                       sandbox::UsernsSlots* userns)
{
    auto prepared = std::make_unique<PreparedWorker>();
    prepared->resolution = NPS_TRY(resolve_agent_spec(context, agent, policy));
    const spawn::SpawnSpec& spec = prepared->resolution.spec;
    prepared->limits = worker_limits(spec, policy);

    auto images = NPS_TRY(borrow_image_store(context));
    NPS_TRY_VOID(ensure_image(context, *images, spec.image));

    image::WorkerRootfsRequest request{.ref = spec.image,
                                       .worker_dir = context.options.state_dir + "/workers/" + worker_name,
                                       .holder = "worker " + worker_name,
                                       .disk_bytes = policy.default_disk};
    if (userns) {
        auto lease = userns->acquire();
        if (!lease)
            return unavailable("Failed to give the worker a user namespace", lease.error(),
                               proto::RuntimeFailure::sandbox_unavailable);
        prepared->userns.emplace(std::move(*lease));
        const sandbox::UserNamespace ns = prepared->userns->spec();
        request.userns_fd = ns.fd;
        request.userns_root_uid = ns.host_uid;
        request.userns_root_gid = ns.host_gid;
    }
    prepared->worker_dir = request.worker_dir;
    auto rootfs = image::prepare_worker_rootfs(*images, request);
    if (!rootfs)
        return unavailable("Failed to make the root filesystem of image '" + spec.image + "'", rootfs.error());
    prepared->rootfs.emplace(std::move(*rootfs));

    image::ProcessOverrides overrides;
    if (!spec.command.empty())
        overrides.command = spec.command;
    for (const auto& [key, value] : spec.env)
        overrides.env.push_back(key + "=" + value);
    auto process = image::image_process(prepared->rootfs->config(), prepared->rootfs->path(), overrides);
    if (!process)
        return protocol_error(spawn::kSpawnSpecInvalid, "Agent '" + agent + "': image '" + spec.image +
                                                            "': " + process.error().describe());
    prepared->process = std::move(*process);
    return prepared;
}

}  // namespace nps::executor
