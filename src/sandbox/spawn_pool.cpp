// SPDX-License-Identifier: Apache-2.0
// SpawnPool (see the header): parked children in pre-placed cgroups.
//
// The plan reaches the child through a MAP_SHARED page area mapped before
// the clone (shared_plan.hpp), its fds as SCM_RIGHTS on the slot's
// socketpair (fd_message.hpp).
#include "nps/sandbox/spawn_pool.hpp"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "nps/base/limits.hpp"
#include "fd_message.hpp"
#include "setup.hpp"
#include "shared_plan.hpp"

namespace nps::sandbox {

namespace {

using detail::ChildPlan;
using detail::Failure;
using detail::Step;

bool valid_prefix(const std::string& prefix)
{
    return !prefix.empty() && std::all_of(prefix.begin(), prefix.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '_' || c == '-';
    });
}

// Whether `limits` names every kind of limit `preset` does, so applying it
// over `preset` leaves none of preset's own behind.
bool covers(const cgroup::CgroupLimits& limits, const cgroup::CgroupLimits& preset)
{
    return (limits.memory_bytes || !preset.memory_bytes) && (limits.cpu_millicores || !preset.cpu_millicores) &&
           (limits.pids_max || !preset.pids_max);
}

}  // namespace

struct PooledSlot {
    // Destroyed in reverse: the socket closes (the child exits), the child
    // is killed and reaped, its plan area goes, then the cgroup is killed
    // and removed.
    std::optional<cgroup::WorkerCgroup> cgroup;
    std::unique_ptr<SpawnServer::Area> server_area;  // when the spawn server parked the child
    void* own_area = MAP_FAILED;                     // else: mapped here before the clone
    detail::EmptyCaps own_caps;
    void* area = nullptr;        // where the plan goes: one of the above
    cap_t empty_caps = nullptr;  // an empty capability set valid in the child
    Child child;
    UniqueFd socket;
    bool park_limits_set = false;  // the cgroup holds SpawnPoolOptions::park_limits

    PooledSlot() = default;
    PooledSlot(const PooledSlot&) = delete;
    PooledSlot& operator=(const PooledSlot&) = delete;
    ~PooledSlot()
    {
        child = Child();  // before its plan area goes
        if (own_area != MAP_FAILED)
            ::munmap(own_area, detail::kSharedPlanBytes);
    }
};

struct SpawnPool::Slots {
    mutable std::mutex mutex;
    std::deque<std::unique_ptr<PooledSlot>> parked;
    std::size_t serial = 0;
};

SpawnPool::SpawnPool(SpawnPoolOptions options) : options_(std::move(options)), slots_(std::make_unique<Slots>()) {}
SpawnPool::SpawnPool(SpawnPool&&) noexcept = default;
SpawnPool& SpawnPool::operator=(SpawnPool&&) noexcept = default;
SpawnPool::~SpawnPool() = default;

Result<SpawnPool> SpawnPool::create(SpawnPoolOptions options)
{
    if (!options.cgroup_base)
        return internal_error("Failed to create a spawn pool: no cgroup base given");
    if (!valid_prefix(options.name_prefix))
        return internal_error("Failed to create a spawn pool: invalid slot name prefix '" + options.name_prefix + "'");
    if (options.size < 1 || options.size > limits::kSpawnPoolMaxSize)
        return internal_error("Failed to create a spawn pool: size " + std::to_string(options.size) +
                              " is outside 1.." + std::to_string(limits::kSpawnPoolMaxSize));
    return SpawnPool(std::move(options));
}

std::size_t SpawnPool::ready() const
{
    std::lock_guard lock(slots_->mutex);
    return slots_->parked.size();
}

Result<void> SpawnPool::refill()
{
    while (NPS_TRY(park_one())) {
    }
    return {};
}

Result<bool> SpawnPool::park_one()
{
    std::size_t serial = 0;
    {
        std::lock_guard lock(slots_->mutex);
        if (slots_->parked.size() >= options_.size)
            return false;
        serial = slots_->serial++;
    }
    // The rest without the lock: spawn() must not wait for a migration.
    auto slot = std::make_unique<PooledSlot>();
    slot->cgroup = NPS_TRY(cgroup::WorkerCgroup::create(
        *options_.cgroup_base, {.name = options_.name_prefix + std::to_string(serial), .kill_method = options_.kill_method}));
    if (options_.park_limits)
        slot->park_limits_set =
            slot->cgroup->set_limits(*options_.cgroup_base, *options_.park_limits, options_.park_enforcement)
                .has_value();
    const std::vector<UniqueFd> tasks = NPS_TRY(detail::open_cgroup_tasks(*slot->cgroup));
    if (options_.server) {
        std::optional<SpawnServer::Parked> parked = NPS_TRY(options_.server->park(slot->cgroup->dir_fd(), tasks));
        if (parked) {  // else the server is gone: park a copy of this thread below
            slot->child = std::move(parked->child);
            slot->socket = std::move(parked->socket);
            slot->server_area = std::move(parked->area);
            slot->area = parked->plan_area;
            slot->empty_caps = static_cast<cap_t>(parked->empty_caps);
            return place_and_park(std::move(slot));
        }
    }
    slot->own_area =
        ::mmap(nullptr, detail::kSharedPlanBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (slot->own_area == MAP_FAILED)
        return system_error_errno("Failed to map a spawn pool plan area");
    slot->area = slot->own_area;
    slot->own_caps.reset(::cap_init());
    if (!slot->own_caps)
        return system_error_errno("Failed to allocate an empty capability set");
    slot->empty_caps = static_cast<cap_t>(slot->own_caps.get());
    auto [parent_end, child_end] = NPS_TRY(detail::seqpacket_pair("a spawn pool socketpair"));

    int pidfd = -1;
    detail::CloneArgs args{};
    args.flags = CLONE_PIDFD | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC;
    if (slot->cgroup->dir_fd() >= 0) {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = static_cast<std::uint64_t>(slot->cgroup->dir_fd());
    }
    args.pidfd = reinterpret_cast<std::uintptr_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    long pid = ::syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0)
        return system_error_errno("Failed to clone3 a parked sandbox child");
    if (pid == 0) {
        int tasks_fds[detail::kMaxCgroupTasks];
        for (std::size_t i = 0; i < tasks.size(); ++i)
            tasks_fds[i] = tasks[i].get();
        detail::parked_child_main(child_end.get(), static_cast<ChildPlan*>(slot->area), tasks_fds, tasks.size());
    }
    slot->child = Child(static_cast<pid_t>(pid), UniqueFd(pidfd));
    slot->socket = std::move(parent_end);
    child_end.reset();
    return place_and_park(std::move(slot));
}

Result<bool> SpawnPool::place_and_park(std::unique_ptr<PooledSlot> slot)
{
    // The child places itself in its v1 groups, then says so: parked only
    // once it is in its cgroup in every hierarchy.
    char placed = 0;
    ssize_t n;
    do {
        n = ::recv(slot->socket.get(), &placed, 1, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return system_error_errno("Failed to hear from a parked sandbox child");
    if (n == 0)
        return internal_error("Failed to park a sandbox child: it exited before it was in its v1 cgroups");
    std::lock_guard lock(slots_->mutex);
    slots_->parked.push_back(std::move(slot));
    return true;
}

std::unique_ptr<PooledSlot> SpawnPool::take()
{
    // A parked child that died meanwhile (the OOM killer, a stray kill) is
    // dropped here, outside the lock (reaping it and removing its cgroup take
    // a while); one that dies between this check and the hand-over shows up
    // as a worker that ended at once, its exit status saying how.
    for (;;) {
        std::unique_ptr<PooledSlot> slot;
        {
            std::lock_guard lock(slots_->mutex);
            if (slots_->parked.empty())
                return nullptr;
            slot = std::move(slots_->parked.front());
            slots_->parked.pop_front();
        }
        pollfd exited{slot->child.pidfd(), POLLIN, 0};
        if (::poll(&exited, 1, 0) == 0)
            return slot;
        // kills nothing: it is gone; ~PooledSlot reaps it, removes its cgroup
    }
}

void SpawnPool::put_back(std::unique_ptr<PooledSlot> slot)
{
    std::lock_guard lock(slots_->mutex);
    slots_->parked.push_front(std::move(slot));
}

Result<PooledChild> SpawnPool::spawn(const SandboxSpec& spec, const cgroup::CgroupLimits& limits,
                                     cgroup::Enforcement enforcement)
{
    PoolAttempt attempt = NPS_TRY(try_spawn(spec, limits, enforcement));
    if (!attempt.started)
        return internal_error("Failed to spawn a sandbox from the pool: " + attempt.missed);
    return std::move(*attempt.started);
}

Result<PoolAttempt> SpawnPool::try_spawn(const SandboxSpec& spec, const cgroup::CgroupLimits& limits,
                                         cgroup::Enforcement enforcement)
{
    if (spec.cgroup || (spec.user_namespace && spec.user_namespace->fd < 0))
        return PoolAttempt{.missed = "caller-made cgroups and user namespaces without an fd need sandbox::spawn()"};
    if (spec.hold_before_exec)
        return PoolAttempt{.missed = "a child held before its execve is not taken from the pool"};
    detail::ParentPrep prep = NPS_TRY(detail::prepare_parent(spec));

    std::unique_ptr<PooledSlot> slot = take();
    if (!slot)
        return PoolAttempt{.missed = "no parked child is ready"};
    if (slot->park_limits_set && !covers(limits, *options_.park_limits)) {
        // A limit set ahead that this spawn does not ask for could not be
        // lifted by set_limits(), which leaves unnamed ones alone.
        put_back(std::move(slot));
        return PoolAttempt{.missed = "the parked children hold limits this worker does not ask for"};
    }

    // The plan, laid out in the shared area; the fds are bound by the child.
    detail::PlanFds fds;
    if (!detail::lay_out_plan(slot->area, spec, prep, slot->empty_caps,
                              detail::PlanNamespaces::from_child, fds)) {
        put_back(std::move(slot));  // untouched: the next plan overwrites the area
        return PoolAttempt{.missed = "the paths, argv and environment exceed " +
                                     std::to_string(detail::kSharedPlanBytes) + " bytes"};
    }
    if (!(slot->park_limits_set && limits == *options_.park_limits && enforcement == options_.park_enforcement))
        NPS_TRY_VOID(slot->cgroup->set_limits(*options_.cgroup_base, limits, enforcement));
    const char tag = 'g';
    // A child that died after take() looked does not take it.
    if (int rc = detail::send_with_fds(slot->socket.get(), &tag, 1, fds.fds, fds.count); rc < 0)
        return PoolAttempt{.missed = std::string("the parked child did not take the plan: ") + ::strerrordesc_np(-rc)};
    prep.error_write.reset();
    slot->socket.reset();

    NPS_TRY_VOID(detail::await_exec(prep, slot->child, spec));
    return PoolAttempt{.started = PooledChild{std::move(slot->child), std::move(*slot->cgroup)}};
}

}  // namespace nps::sandbox
