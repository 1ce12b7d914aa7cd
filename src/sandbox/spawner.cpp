// SPDX-License-Identifier: Apache-2.0
// spawn(): clone3 into new namespaces, then the child sets itself up and
// execs (or, held, waits before its execve). The parent prepares every string, path and the seccomp program
// before cloning, because the child of a multi-threaded process must not
// allocate (another thread may have held the malloc lock at clone time).
//
// The child runs straight through: it is cloned into its v2 cgroup
// (CLONE_INTO_CGROUP) and places itself in its v1 ones (the `tasks` files
// the parent opened), so the parent has nothing to do before the child's
// program may run. A failure before execve is written as a
// Failure{step, errno} to a CLOEXEC socket, whose EOF without data means
// execve succeeded.
#include "nps/sandbox/spawner.hpp"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "nps/sandbox/userns.hpp"
#include "setup.hpp"

namespace nps::sandbox {

namespace {

using detail::ChildPlan;
using detail::CloneArgs;
using detail::Failure;
using detail::Step;

bool joins_shared_netns(const SandboxSpec& spec)
{
    return spec.network == Network::none && spec.netns_fd >= 0;
}

struct DirectChild {
    ChildPlan plan;
    int error_read_fd;
};

// The child of a direct spawn: drops the parent's end of the report socket and runs.
[[noreturn]] void direct_child_main(const DirectChild& c)
{
    ::close(c.error_read_fd);
    detail::start_child(c.plan, -1);
}

std::vector<char*> c_strings(std::vector<std::string>& strings)
{
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (auto& s : strings)
        out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

}  // namespace

Result<Child> spawn(const SandboxSpec& spec)
{
    detail::ParentPrep prep = NPS_TRY(detail::prepare_parent(spec));
    std::optional<UserNamespaceFd> own_userns;  // joined by the child before spawn() returns
    int userns_fd = -1;
    if (spec.user_namespace) {
        userns_fd = spec.user_namespace->fd;
        if (userns_fd < 0) {
            own_userns = NPS_TRY(UserNamespaceFd::create(spec.user_namespace->host_uid, spec.user_namespace->host_gid,
                                                         spec.user_namespace->count));
            userns_fd = own_userns->fd();
        }
    }
    const int rootfs_idmap_fd = spec.user_namespace && spec.user_namespace->rootfs_idmapped ? -1 : userns_fd;
    const std::string& rootfs = prep.rootfs;
    std::string proc = rootfs + "/proc", dev = rootfs + "/dev", tmp = rootfs + "/tmp";
    std::vector<char> scratch(PATH_MAX);

    std::vector<std::string> argv_strings = spec.argv, env_strings = spec.env;
    std::vector<char*> argv = c_strings(argv_strings), envp = c_strings(env_strings);
    const auto path_index = detail::path_entry(spec.env);
    const char* path = path_index ? spec.env[*path_index].c_str() + 5 : kDefaultPath;

    detail::EmptyCaps empty_caps(::cap_init());
    if (!empty_caps)
        return system_error_errno("Failed to allocate an empty capability set");

    DirectChild direct{
        .plan = {
            .mounts = {.rootfs = rootfs.c_str(), .proc = proc.c_str(), .dev = dev.c_str(), .tmp = tmp.c_str(),
                       .read_only_root = spec.root == RootAccess::read_only,
                       .space_dir = spec.writable.host_dir.empty() ? nullptr : spec.writable.host_dir.c_str(),
                       .space_options = prep.space_options.c_str(), .idmap_fd = rootfs_idmap_fd, .scratch = scratch.data(),
                       .scratch_size = scratch.size()},
            .argv = argv.data(),
            .envp = envp.data(),
            .path = path,
            .cwd = spec.cwd.c_str(),
            .hostname = spec.hostname.data(),
            .hostname_size = spec.hostname.size(),
            .network = spec.network,
            .netns_fd = joins_shared_netns(spec) ? spec.netns_fd : -1,
            .unshare_mount = false,
            .unshare_net = false,
            .userns_fd = userns_fd,
            .rlimits = spec.rlimits.data(),
            .rlimit_count = spec.rlimits.size(),
            .uid = spec.uid,
            .gid = spec.gid,
            .seccomp = prep.seccomp->program(),
            .empty_caps = static_cast<cap_t>(empty_caps.get()),
            .stdin_fd = spec.stdin_fd,
            .stdout_fd = spec.stdout_fd,
            .stderr_fd = spec.stderr_fd,
            .controlling_terminal = spec.controlling_terminal,
            .error_fd = prep.error_write.get(),
            .hold_before_exec = spec.hold_before_exec,
            .cgroup_tasks_fds = {},
            .cgroup_tasks_count = prep.cgroup_tasks.size(),
        },
        .error_read_fd = prep.error_read.get(),
    };
    for (std::size_t i = 0; i < prep.cgroup_tasks.size(); ++i)
        direct.plan.cgroup_tasks_fds[i] = prep.cgroup_tasks[i].get();

    int pidfd = -1;
    CloneArgs args{};
    args.flags = CLONE_PIDFD | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC;
    if (spec.network == Network::none && !joins_shared_netns(spec))
        args.flags |= CLONE_NEWNET;
    if (spec.cgroup && spec.cgroup->dir_fd() >= 0) {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = static_cast<std::uint64_t>(spec.cgroup->dir_fd());
    }
    args.pidfd = reinterpret_cast<std::uintptr_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    long pid = ::syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0)
        return system_error_errno("Failed to clone3 the sandbox for '" + rootfs + "'");
    if (pid == 0)
        direct_child_main(direct);

    Child child(static_cast<pid_t>(pid), UniqueFd(pidfd));
    prep.error_write.reset();
    prep.cgroup_tasks.clear();
    NPS_TRY_VOID(detail::await_exec(prep, child, spec));
    return child;
}

}  // namespace nps::sandbox
