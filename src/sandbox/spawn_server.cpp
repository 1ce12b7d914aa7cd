// SPDX-License-Identifier: Apache-2.0
// SpawnServer (see the header): a small fork of the runner that clones
// sandbox children with CLONE_PARENT.
//
// Requests go over a SOCK_SEQPACKET socketpair, one exchange at a time: the
// runner lays out the plan in a free shared area, sends a Request naming it
// with the plan's fds, the child's end of a sync socketpair and (v2) the
// cgroup to clone into; the server binds the fds into the plan, clones, and
// answers with a Reply and the child's pidfd. The child places itself in
// its v1 cgroups (their `tasks` files travel with the plan's fds), makes its
// mounts, then waits for the runner's go byte on the sync socket — sent once
// the runner holds its pidfd — so a child whose reply was lost never runs:
// the runner's end of the sync socket closes and the child exits.
#include "nps/sandbox/spawn_server.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>

#include "nps/base/limits.hpp"
#include "fd_message.hpp"
#include "setup.hpp"
#include "shared_plan.hpp"

namespace nps::sandbox {

namespace {

using detail::ChildPlan;

// The namespaces a request may ask for; the server adds CLONE_PARENT,
// CLONE_PIDFD and, with a cgroup fd, CLONE_INTO_CGROUP.
constexpr std::uint64_t kRequestFlags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET;

// Plan areas, mapped MAP_NORESERVE (only what plans touch is memory): one
// per parked child of a spawn pool, four for spawns under way at once
// (each holds its area until its child has exec'd; more wait for one), and
// kHeldAreas for children held before their execve, which keep theirs until
// released — a held spawn finding none free is a miss, never a wait, so
// held children cannot starve the others.
constexpr std::size_t kHeldAreas = 8;
constexpr std::size_t kPlanAreas = limits::kSpawnPoolMaxSize + 4 + kHeldAreas;

enum class RequestKind : std::uint32_t {
    spawn,  // fds: the plan's, the child's end of the sync socketpair, the cgroup directory when has_cgroup
    park,   // fds: the parked child's socket, the cgroup directory when has_cgroup, its v1 `tasks` files
};

struct Request {
    RequestKind kind;
    std::uint32_t area;  // < kPlanAreas
    std::uint64_t clone_flags;
    std::uint32_t plan_fds;  // spawn
    std::uint32_t has_cgroup;
    std::uint32_t cgroup_tasks;  // park: how many `tasks` files follow
};

struct Reply {
    std::int32_t pid;  // > 0, or -1 with err
    std::int32_t err;
};

struct Server {
    int socket;
    char* areas;  // kPlanAreas shared areas of kSharedPlanBytes, each starting with its ChildPlan
    cap_t empty_caps;
};

ChildPlan* area_plan(char* areas, std::size_t area)
{
    return static_cast<ChildPlan*>(static_cast<void*>(areas + area * detail::kSharedPlanBytes));
}

Reply clone_child(const Server& server, const Request& request, const int* fds, std::size_t count, int* pidfd)
{
    const bool park = request.kind == RequestKind::park;
    const std::size_t plan_fds = park ? 0 : request.plan_fds;
    const std::size_t tasks = park ? request.cgroup_tasks : 0;
    const std::size_t extra = 1 + (request.has_cgroup ? 1 : 0) + tasks;
    if ((request.kind != RequestKind::spawn && !park) || (request.clone_flags & ~kRequestFlags) != 0 ||
        request.area >= kPlanAreas || tasks > detail::kMaxCgroupTasks || plan_fds > count ||
        count - plan_fds != extra)
        return {-1, EINVAL};
    ChildPlan& plan = *area_plan(server.areas, request.area);
    if (!park) {
        if (!detail::bind_plan_fds(plan, fds, plan_fds))
            return {-1, EINVAL};
        plan.empty_caps = server.empty_caps;
    }
    const int own_fd = fds[plan_fds];  // the sync socket, or the parked child's
    detail::CloneArgs args{};
    args.flags = request.clone_flags | CLONE_PARENT | CLONE_PIDFD;
    if (request.has_cgroup) {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = static_cast<std::uint64_t>(fds[plan_fds + 1]);
    }
    args.pidfd = reinterpret_cast<std::uintptr_t>(pidfd);
    // exit_signal must be 0 with CLONE_PARENT: the child's is the server's
    // own (SIGCHLD), delivered to the runner.
    const long pid = ::syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0)
        return {-1, errno};
    if (pid == 0) {
        ::close(server.socket);
        if (park)
            detail::parked_child_main(own_fd, &plan, fds + count - tasks, tasks);
        detail::start_child(plan, own_fd);
    }
    return {static_cast<std::int32_t>(pid), 0};
}

// The server's life: requests until the runner closes its end. No
// allocation: it may be a copy of a multi-threaded process.
[[noreturn]] void server_main(const Server& server)
{
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::prctl(PR_SET_NAME, "nps-spawner");
    if (server.socket > 3)
        ::close_range(3, static_cast<unsigned>(server.socket) - 1, 0);
    ::close_range(static_cast<unsigned>(server.socket) + 1, ~0U, 0);
    for (;;) {
        Request request{};
        int fds[detail::kMaxMessageFds];
        std::size_t count = 0;
        const ssize_t n = detail::receive_with_fds(server.socket, &request, sizeof request, fds, &count);
        if (n == 0 || (n < 0 && n != -EMSGSIZE && n != -EPROTO))
            ::_exit(0);  // the runner went away
        int pidfd = -1;
        const Reply reply = n == static_cast<ssize_t>(sizeof request) ? clone_child(server, request, fds, count, &pidfd)
                                                                       : Reply{-1, EINVAL};
        (void)detail::send_with_fds(server.socket, &reply, sizeof reply, &pidfd, pidfd >= 0 ? 1 : 0);
        detail::close_fds(fds, count);
        if (pidfd >= 0)
            ::close(pidfd);
    }
}

}  // namespace

struct SpawnServer::State {
    // Destroyed in reverse: the socket closes (the server exits), the server
    // is killed if still there and reaped, the areas unmapped.
    void* areas = MAP_FAILED;
    detail::EmptyCaps empty_caps;
    Child server;
    UniqueFd socket;
    std::mutex mutex;  // the areas in use, the socket's request/reply exchange, `gone`
    std::condition_variable area_freed;
    bool busy[kPlanAreas] = {};
    std::size_t held = 0;  // areas taken for held spawns
    bool gone = false;

    State() = default;
    State(const State&) = delete;
    State& operator=(const State&) = delete;
    ~State()
    {
        socket.reset();
        server = Child();
        if (areas != MAP_FAILED)
            ::munmap(areas, kPlanAreas * detail::kSharedPlanBytes);
    }

    bool* free_area() { return std::find(busy, busy + kPlanAreas, false); }

    // A free area, waiting for one; nullptr once the server is gone, or for
    // a held spawn when kHeldAreas are taken.
    std::unique_ptr<Area> take_area(bool for_held = false)
    {
        std::unique_lock lock(mutex);
        if (for_held && held == kHeldAreas)
            return nullptr;
        area_freed.wait(lock, [this] { return gone || free_area() != busy + kPlanAreas; });
        if (gone)
            return nullptr;
        bool* free = free_area();
        *free = true;
        held += for_held ? 1 : 0;
        return std::make_unique<Area>(*this, static_cast<std::size_t>(free - busy), for_held);
    }

    // One request and its reply: the child the server cloned; nullopt (and
    // `gone`) when the server did not answer; an error naming `what` when
    // the clone failed.
    Result<std::optional<Child>> clone(const Request& request, const int* fds, std::size_t count,
                                       const std::string& what)
    {
        Reply reply{};
        int replied[detail::kMaxMessageFds];
        std::size_t received = 0;
        {
            std::lock_guard lock(mutex);
            if (gone)
                return std::optional<Child>();
            if (detail::send_with_fds(socket.get(), &request, sizeof request, fds, count) < 0 ||
                detail::receive_with_fds(socket.get(), &reply, sizeof reply, replied, &received) !=
                    static_cast<ssize_t>(sizeof reply)) {
                gone = true;
                area_freed.notify_all();
                return std::optional<Child>();
            }
        }
        if (reply.pid <= 0 || received != 1) {
            detail::close_fds(replied, received);
            return system_error("Failed to clone3 " + what + " in the spawn server", reply.err ? reply.err : EPROTO);
        }
        return std::optional<Child>(Child(static_cast<pid_t>(reply.pid), UniqueFd(replied[0])));
    }
};

SpawnServer::Area::~Area()
{
    {
        std::lock_guard lock(state_.mutex);
        state_.busy[index_] = false;
        state_.held -= held_ ? 1 : 0;
    }
    state_.area_freed.notify_one();
}

void* SpawnServer::Area::memory() const
{
    return static_cast<char*>(state_.areas) + index_ * detail::kSharedPlanBytes;
}

SpawnServer::SpawnServer(std::unique_ptr<State> state) : state_(std::move(state)) {}
SpawnServer::SpawnServer(SpawnServer&&) noexcept = default;
SpawnServer& SpawnServer::operator=(SpawnServer&&) noexcept = default;
SpawnServer::~SpawnServer() = default;

pid_t SpawnServer::pid() const
{
    if (!state_)
        return -1;
    std::lock_guard lock(state_->mutex);
    return state_->gone ? -1 : state_->server.pid();
}

Result<SpawnServer> SpawnServer::start()
{
    auto state = std::make_unique<State>();
    state->areas = ::mmap(nullptr, kPlanAreas * detail::kSharedPlanBytes, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (state->areas == MAP_FAILED)
        return system_error_errno("Failed to map the spawn server's plan areas");
    state->empty_caps.reset(::cap_init());
    if (!state->empty_caps)
        return system_error_errno("Failed to allocate an empty capability set");
    auto [runner_end, server_end] = NPS_TRY(detail::seqpacket_pair("the spawn server's socketpair"));
    const Server server{.socket = server_end.get(),
                        .areas = static_cast<char*>(state->areas),
                        .empty_caps = static_cast<cap_t>(state->empty_caps.get())};
    int pidfd = -1;
    detail::CloneArgs args{};
    args.flags = CLONE_PIDFD;
    args.pidfd = reinterpret_cast<std::uintptr_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    const long pid = ::syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0)
        return system_error_errno("Failed to start the spawn server");
    if (pid == 0)
        server_main(server);
    state->server = Child(static_cast<pid_t>(pid), UniqueFd(pidfd));
    state->socket = std::move(runner_end);
    return SpawnServer(std::move(state));
}

Result<ServerAttempt> SpawnServer::try_spawn(const SandboxSpec& spec)
{
    if (spec.user_namespace && spec.user_namespace->fd < 0)
        return ServerAttempt{.missed = "a user namespace without an fd needs sandbox::spawn()"};
    detail::ParentPrep prep = NPS_TRY(detail::prepare_parent(spec));
    State& s = *state_;
    std::unique_ptr<Area> area = s.take_area(spec.hold_before_exec);
    if (!area)
        return ServerAttempt{.missed = spec.hold_before_exec ? "no plan area is free for a held child"
                                                             : "the spawn server is gone"};

    detail::PlanFds plan_fds;
    if (!detail::lay_out_plan(area->memory(), spec, prep, nullptr, detail::PlanNamespaces::from_clone, plan_fds))
        return ServerAttempt{.missed = "the paths, argv and environment exceed " +
                                       std::to_string(detail::kSharedPlanBytes) + " bytes"};
    auto [sync_parent, sync_child] = NPS_TRY(detail::seqpacket_pair("the sandbox sync socketpair"));

    Request request{.kind = RequestKind::spawn,
                    .area = static_cast<std::uint32_t>(area->index()),
                    .clone_flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC,
                    .plan_fds = static_cast<std::uint32_t>(plan_fds.count),
                    .has_cgroup = 0};
    if (spec.network == Network::none && spec.netns_fd < 0)
        request.clone_flags |= CLONE_NEWNET;
    int fds[detail::kMaxMessageFds];
    std::size_t count = plan_fds.count;
    std::copy_n(plan_fds.fds, count, fds);
    fds[count++] = sync_child.get();
    if (spec.cgroup && spec.cgroup->dir_fd() >= 0) {
        request.has_cgroup = 1;
        fds[count++] = spec.cgroup->dir_fd();
    }

    std::optional<Child> cloned = NPS_TRY(s.clone(request, fds, count, "the sandbox for '" + prep.rootfs + "'"));
    if (!cloned)
        return ServerAttempt{.missed = "the spawn server is gone"};
    Child child = std::move(*cloned);
    sync_child.reset();
    prep.error_write.reset();
    prep.cgroup_tasks.clear();
    const char go = 1;
    // A child that already died shows up through the report socket.
    (void)::send(sync_parent.get(), &go, 1, MSG_NOSIGNAL);
    // The area stays ours until the child has exec'd: it reads its plan
    // there. A held child keeps it until it is released.
    NPS_TRY_VOID(detail::await_exec(prep, child, spec));
    if (child.held())
        child.keep_plan_until_exec(std::shared_ptr<Area>(std::move(area)));
    return ServerAttempt{.started = std::move(child)};
}

Result<std::optional<SpawnServer::Parked>> SpawnServer::park(int cgroup_dir_fd, const std::vector<UniqueFd>& cgroup_tasks)
{
    State& s = *state_;
    std::unique_ptr<Area> area = s.take_area();
    if (!area)
        return std::optional<Parked>();
    auto [pool_end, child_end] = NPS_TRY(detail::seqpacket_pair("a spawn pool socketpair"));
    Request request{.kind = RequestKind::park,
                    .area = static_cast<std::uint32_t>(area->index()),
                    .clone_flags = CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC,
                    .plan_fds = 0,
                    .has_cgroup = cgroup_dir_fd >= 0 ? 1u : 0u,
                    .cgroup_tasks = static_cast<std::uint32_t>(cgroup_tasks.size())};
    if (cgroup_tasks.size() > detail::kMaxCgroupTasks)
        return internal_error("Failed to park a sandbox child: its cgroup spans too many v1 hierarchies");
    int fds[detail::kMaxMessageFds];
    std::size_t count = 0;
    fds[count++] = child_end.get();
    if (request.has_cgroup)
        fds[count++] = cgroup_dir_fd;
    for (const UniqueFd& tasks : cgroup_tasks)
        fds[count++] = tasks.get();
    std::optional<Child> cloned = NPS_TRY(s.clone(request, fds, count, "a parked sandbox child"));
    if (!cloned)
        return std::optional<Parked>();
    Parked parked{.child = std::move(*cloned),
                  .socket = std::move(pool_end),
                  .area = nullptr,
                  .plan_area = area->memory(),
                  .empty_caps = s.empty_caps.get()};
    parked.area = std::move(area);
    return std::optional<Parked>(std::move(parked));
}

}  // namespace nps::sandbox
