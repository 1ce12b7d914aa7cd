// SPDX-License-Identifier: Apache-2.0
// SpawnPool (see the header): parked children in pre-placed cgroups.
//
// The plan reaches the child through a MAP_SHARED page area mapped before
// the clone, so it sits at the same address in both processes and the
// parent can lay out ready-to-use pointers (argv, envp, paths) in it; the
// child cannot allocate, and need not. The ChildPlan itself is at the start
// of the area. Fds travel as SCM_RIGHTS on the slot's socketpair, in the
// order of kPassed below.
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
#include "setup.hpp"

namespace nps::sandbox {

namespace {

using detail::ChildPlan;
using detail::Failure;
using detail::Step;

// The fds passed with the go message, in this order; then, optionally, the
// network and the user namespace, whose indexes the plan's netns_fd and
// userns_fd hold (-1: none passed).
enum Passed { kErrorFd, kStdinFd, kStdoutFd, kStderrFd, kFixedCount, kPassedCount = kFixedCount + 2 };

struct Parked {
    int socket;       // >= 3
    ChildPlan* plan;  // at the start of the shared area
};

// The parked child: everything but its socket closed (it must not hold the
// caller's pipes open while it waits), then one message.
[[noreturn]] void parked_child_main(const Parked& parked)
{
    detail::reset_signals();
    // Orphaned, it would wait forever in a cgroup nobody removes.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (parked.socket > 3)
        ::close_range(3, static_cast<unsigned>(parked.socket) - 1, 0);
    ::close_range(static_cast<unsigned>(parked.socket) + 1, ~0U, 0);

    char tag = 0;
    iovec iov{&tag, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kPassedCount)];
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t n;
    do {
        n = ::recvmsg(parked.socket, &message, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0)
        ::_exit(0);  // the pool went away
    const cmsghdr* header = CMSG_FIRSTHDR(&message);
    if (!header || header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS)
        ::_exit(127);
    int fds[kPassedCount] = {-1, -1, -1, -1, -1, -1};
    std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    if (count < kFixedCount || count > kPassedCount)
        ::_exit(127);
    ::memcpy(fds, CMSG_DATA(header), count * sizeof(int));
    ::close(parked.socket);

    ChildPlan& plan = *parked.plan;
    plan.error_fd = fds[kErrorFd];
    plan.stdin_fd = fds[kStdinFd];
    plan.stdout_fd = fds[kStdoutFd];
    plan.stderr_fd = fds[kStderrFd];
    auto passed = [&](int index) { return index >= kFixedCount && index < static_cast<int>(count) ? fds[index] : -1; };
    plan.netns_fd = passed(plan.netns_fd);
    plan.userns_fd = passed(plan.userns_fd);
    plan.mounts.idmap_fd = passed(plan.mounts.idmap_fd);
    // From here on it is an ordinary sandbox, and like spawn()'s children it
    // keeps PR_SET_PDEATHSIG: it dies with the thread that cloned it (the
    // refilling thread, which outlives the pool's workers; see the header).
    detail::run_child(plan);
}

// A bump allocator over the shared area; remembers overflow instead of
// failing each call.
class PlanArea {
public:
    PlanArea(void* base, std::size_t size) : base_(static_cast<char*>(base)), size_(size) {}

    template <typename T>
    T* array(std::size_t count)
    {
        std::size_t at = (used_ + alignof(T) - 1) / alignof(T) * alignof(T);
        if (count > (size_ - std::min(at, size_)) / sizeof(T)) {
            overflow_ = true;
            return nullptr;
        }
        used_ = at + count * sizeof(T);
        return static_cast<T*>(static_cast<void*>(base_ + at));  // `at` is aligned for T
    }

    char* string(const std::string& s)
    {
        char* out = array<char>(s.size() + 1);
        if (out)
            ::memcpy(out, s.c_str(), s.size() + 1);
        return out;
    }

    // argv/envp: the strings and a null-terminated pointer array.
    char** strings(const std::vector<std::string>& list)
    {
        char** out = array<char*>(list.size() + 1);
        if (!out)
            return nullptr;
        for (std::size_t i = 0; i < list.size(); ++i)
            out[i] = string(list[i]);
        out[list.size()] = nullptr;
        return out;
    }

    bool overflowed() const { return overflow_; }

private:
    char* base_;
    std::size_t size_;
    std::size_t used_ = 0;
    bool overflow_ = false;
};

bool valid_prefix(const std::string& prefix)
{
    return !prefix.empty() && std::all_of(prefix.begin(), prefix.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '_' || c == '-';
    });
}

}  // namespace

struct PooledSlot {
    // Destroyed in reverse: the socket closes (the child exits), the child
    // is killed and reaped, then the cgroup is killed and removed.
    std::optional<cgroup::WorkerCgroup> cgroup;
    void* area = MAP_FAILED;
    detail::EmptyCaps empty_caps;
    Child child;
    UniqueFd socket;

    PooledSlot() = default;
    PooledSlot(const PooledSlot&) = delete;
    PooledSlot& operator=(const PooledSlot&) = delete;
    ~PooledSlot()
    {
        if (area != MAP_FAILED)
            ::munmap(area, limits::kSpawnPoolPlanBytes);
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
    slot->area =
        ::mmap(nullptr, limits::kSpawnPoolPlanBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (slot->area == MAP_FAILED)
        return system_error_errno("Failed to map a spawn pool plan area");
    slot->empty_caps.reset(::cap_init());
    if (!slot->empty_caps)
        return system_error_errno("Failed to allocate an empty capability set");
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
        return system_error_errno("Failed to create a spawn pool socketpair");
    UniqueFd parent_end(pair[0]), child_end(pair[1]);
    if (child_end.get() < 3) {  // the child keeps 0..2 and closes the rest
        child_end = UniqueFd(::fcntl(child_end.get(), F_DUPFD_CLOEXEC, 3));
        if (!child_end)
            return system_error_errno("Failed to move a spawn pool socket");
    }
    const Parked parked{.socket = child_end.get(), .plan = static_cast<ChildPlan*>(slot->area)};

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
    if (pid == 0)
        parked_child_main(parked);
    slot->child = Child(static_cast<pid_t>(pid), UniqueFd(pidfd));
    slot->socket = std::move(parent_end);
    child_end.reset();
    // The slow part on v1 hierarchies, and the reason for the pool.
    NPS_TRY_VOID(slot->cgroup->add_pid_outside_clone(slot->child.pid()));
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
    detail::ParentPrep prep = NPS_TRY(detail::prepare_parent(spec));
    const std::string& rootfs = prep.rootfs;

    std::unique_ptr<PooledSlot> slot = take();
    if (!slot)
        return PoolAttempt{.missed = "no parked child is ready"};

    // The plan, laid out in the shared area; the fds are filled in by the child.
    PlanArea area(slot->area, limits::kSpawnPoolPlanBytes);
    ChildPlan* plan = area.array<ChildPlan>(1);
    const sock_fprog* program = prep.seccomp->program();
    sock_fprog* fprog = area.array<sock_fprog>(1);
    sock_filter* filter = area.array<sock_filter>(program->len);
    Rlimit* rlimits = area.array<Rlimit>(spec.rlimits.size());
    char* scratch = area.array<char>(PATH_MAX);
    char** envp = area.strings(spec.env);
    const auto path_index = detail::path_entry(spec.env);
    const char* path = path_index && envp ? envp[*path_index] + 5 : area.string(kDefaultPath);
    *plan = ChildPlan{
        .mounts = {.rootfs = area.string(rootfs), .proc = area.string(rootfs + "/proc"),
                   .dev = area.string(rootfs + "/dev"), .tmp = area.string(rootfs + "/tmp"),
                   .read_only_root = spec.root == RootAccess::read_only,
                   .space_dir = spec.writable.host_dir.empty() ? nullptr : area.string(spec.writable.host_dir),
                   .space_options = area.string(prep.space_options), .idmap_fd = -1, .scratch = scratch,
                   .scratch_size = PATH_MAX},
        .argv = area.strings(spec.argv),
        .envp = envp,
        .path = path,
        .cwd = area.string(spec.cwd),
        .hostname = area.string(spec.hostname),
        .hostname_size = spec.hostname.size(),
        .network = spec.network,
        .netns_fd = -1,
        .unshare_mount = true,
        .unshare_net = spec.network == Network::none && spec.netns_fd < 0,
        .userns_fd = -1,
        .rlimits = rlimits,
        .rlimit_count = spec.rlimits.size(),
        .uid = spec.uid,
        .gid = spec.gid,
        .seccomp = fprog,
        .empty_caps = static_cast<cap_t>(slot->empty_caps.get()),
        .stdin_fd = -1,
        .stdout_fd = -1,
        .stderr_fd = -1,
        .controlling_terminal = false,
        .error_fd = -1,
    };
    if (area.overflowed()) {
        put_back(std::move(slot));  // untouched: the next plan overwrites the area
        return PoolAttempt{.missed = "the paths, argv and environment exceed " +
                                     std::to_string(limits::kSpawnPoolPlanBytes) + " bytes"};
    }
    std::copy_n(program->filter, program->len, filter);
    *fprog = sock_fprog{.len = program->len, .filter = filter};
    std::copy(spec.rlimits.begin(), spec.rlimits.end(), rlimits);
    NPS_TRY_VOID(slot->cgroup->set_limits(*options_.cgroup_base, limits, enforcement));

    int fds[kPassedCount] = {prep.error_write.get(), spec.stdin_fd, spec.stdout_fd, spec.stderr_fd, -1, -1};
    std::size_t count = kFixedCount;
    if (spec.network == Network::none && spec.netns_fd >= 0) {
        plan->netns_fd = static_cast<int>(count);
        fds[count++] = spec.netns_fd;
    }
    if (spec.user_namespace) {
        plan->userns_fd = static_cast<int>(count);
        if (!spec.user_namespace->rootfs_idmapped)
            plan->mounts.idmap_fd = plan->userns_fd;
        fds[count++] = spec.user_namespace->fd;
    }
    char tag = 'g';
    iovec iov{&tag, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * count);
    ::memcpy(CMSG_DATA(header), fds, sizeof(int) * count);
    if (::sendmsg(slot->socket.get(), &message, MSG_NOSIGNAL) < 0) {
        const int err = errno;  // the child died after take() looked
        return PoolAttempt{.missed = std::string("the parked child did not take the plan: ") + ::strerrordesc_np(err)};
    }
    prep.error_write.reset();
    slot->socket.reset();

    NPS_TRY_VOID(detail::await_exec(prep, slot->child, spec));
    return PoolAttempt{.started = PooledChild{std::move(slot->child), std::move(*slot->cgroup)}};
}

}  // namespace nps::sandbox
