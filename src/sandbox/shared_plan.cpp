// SPDX-License-Identifier: Apache-2.0
#include "shared_plan.hpp"

#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "fd_message.hpp"

namespace nps::sandbox::detail {

namespace {

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

}  // namespace

ChildPlan* lay_out_plan(void* base, const SandboxSpec& spec, const ParentPrep& prep, cap_t empty_caps,
                        PlanNamespaces namespaces, PlanFds& fds)
{
    const std::string& rootfs = prep.rootfs;
    PlanArea area(base, kSharedPlanBytes);
    ChildPlan* plan = area.array<ChildPlan>(1);
    const sock_fprog* program = prep.seccomp->program();
    sock_fprog* fprog = area.array<sock_fprog>(1);
    sock_filter* filter = area.array<sock_filter>(program->len);
    Rlimit* rlimits = area.array<Rlimit>(spec.rlimits.size());
    char* scratch = area.array<char>(PATH_MAX);
    char** envp = area.strings(spec.env);
    const auto path_index = path_entry(spec.env);
    const char* path = path_index && envp ? envp[*path_index] + 5 : area.string(kDefaultPath);
    const bool from_child = namespaces == PlanNamespaces::from_child;
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
        .unshare_mount = from_child,
        .unshare_net = from_child && spec.network == Network::none && spec.netns_fd < 0,
        .userns_fd = -1,
        .rlimits = rlimits,
        .rlimit_count = spec.rlimits.size(),
        .uid = spec.uid,
        .gid = spec.gid,
        .seccomp = fprog,
        .empty_caps = empty_caps,
        .stdin_fd = -1,
        .stdout_fd = -1,
        .stderr_fd = -1,
        .controlling_terminal = false,
        .error_fd = -1,
        .hold_before_exec = spec.hold_before_exec,
        .cgroup_tasks_fds = {},
        .cgroup_tasks_count = 0,
    };
    if (area.overflowed())
        return nullptr;
    std::copy_n(program->filter, program->len, filter);
    *fprog = sock_fprog{.len = program->len, .filter = filter};
    std::copy(spec.rlimits.begin(), spec.rlimits.end(), rlimits);

    fds = PlanFds{};
    fds.fds[kErrorFd] = prep.error_write.get();
    fds.fds[kStdinFd] = spec.stdin_fd;
    fds.fds[kStdoutFd] = spec.stdout_fd;
    fds.fds[kStderrFd] = spec.stderr_fd;
    fds.count = kFixedFds;
    if (spec.network == Network::none && spec.netns_fd >= 0) {
        plan->netns_fd = static_cast<int>(fds.count);
        fds.fds[fds.count++] = spec.netns_fd;
    }
    if (spec.user_namespace) {
        plan->userns_fd = static_cast<int>(fds.count);
        if (!spec.user_namespace->rootfs_idmapped)
            plan->mounts.idmap_fd = plan->userns_fd;
        fds.fds[fds.count++] = spec.user_namespace->fd;
    }
    for (const UniqueFd& tasks : prep.cgroup_tasks) {
        plan->cgroup_tasks_fds[plan->cgroup_tasks_count++] = static_cast<int>(fds.count);
        fds.fds[fds.count++] = tasks.get();
    }
    return plan;
}

void parked_child_main(int socket, ChildPlan* plan, const int* cgroup_tasks, std::size_t tasks_count)
{
    reset_signals();
    // Orphaned, it would wait forever in a cgroup nobody removes.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::prctl(PR_SET_NAME, "nps-pool");  // in ps(1) until it executes its worker, whoever cloned it
    // A thread moving itself: no grace period (WorkerCgroup::open_tasks_outside_clone).
    for (std::size_t i = 0; i < tasks_count; ++i) {
        if (::write(cgroup_tasks[i], "0", 1) != 1)
            ::_exit(126);  // the pool sees the socket close instead of the byte
    }
    const char placed = 1;
    if (::send(socket, &placed, 1, MSG_NOSIGNAL) != 1)
        ::_exit(0);
    if (socket > 3)
        ::close_range(3, static_cast<unsigned>(socket) - 1, 0);
    ::close_range(static_cast<unsigned>(socket) + 1, ~0U, 0);

    char tag = 0;
    int fds[kMaxMessageFds];
    std::size_t count = 0;
    const ssize_t n = receive_with_fds(socket, &tag, 1, fds, &count);
    if (n == 0)
        ::_exit(0);  // the pool went away
    ::close(socket);
    if (n < 0 || !bind_plan_fds(*plan, fds, count))
        ::_exit(127);
    run_child(*plan);
}

bool bind_plan_fds(ChildPlan& plan, const int* fds, std::size_t count)
{
    const std::size_t expected = kFixedFds + (plan.netns_fd >= 0 ? 1 : 0) + (plan.userns_fd >= 0 ? 1 : 0) +
                                 plan.cgroup_tasks_count;
    if (count != expected || plan.cgroup_tasks_count > kMaxCgroupTasks)
        return false;
    plan.error_fd = fds[kErrorFd];
    plan.stdin_fd = fds[kStdinFd];
    plan.stdout_fd = fds[kStdoutFd];
    plan.stderr_fd = fds[kStderrFd];
    auto passed = [&](int index) { return index >= 0 ? fds[index] : -1; };
    plan.netns_fd = passed(plan.netns_fd);
    plan.userns_fd = passed(plan.userns_fd);
    plan.mounts.idmap_fd = passed(plan.mounts.idmap_fd);
    for (std::size_t i = 0; i < plan.cgroup_tasks_count; ++i)
        plan.cgroup_tasks_fds[i] = passed(plan.cgroup_tasks_fds[i]);
    return true;
}

}  // namespace nps::sandbox::detail
