// SPDX-License-Identifier: Apache-2.0
// spawn(): clone3 into new namespaces, then the child sets itself up and
// execs. The parent prepares every string, path and the seccomp program
// before cloning, because the child of a multi-threaded process must not
// allocate (another thread may have held the malloc lock at clone time).
//
// Protocol between the two: when the parent has work to do between clone
// and setup (cgroup placement, id maps), the child waits for one byte on a
// socketpair; otherwise it starts at once, saving a sleep and a wake-up on
// the hot path (`nps-runner run` without limits). A failure
// before execve is written as a Failure{step, errno} to a CLOEXEC pipe,
// whose EOF without data means execve succeeded.
#include "nps/sandbox/spawner.hpp"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
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
    int sync_fd;         // -1: no hand-shake
    int sync_parent_fd;
    int error_read_fd;
};

// The parent must act on the child before it may run.
bool needs_handshake(const SandboxSpec& spec)
{
    return spec.cgroup != nullptr;
}

// The child of a direct spawn: waits for the parent's placement and id maps
// (if any), then runs.
[[noreturn]] void direct_child_main(const DirectChild& c)
{
    ::close(c.error_read_fd);
    detail::reset_signals();
    // A worker never outlives the runner that started it: when the runner
    // dies (kill -9 included), the kernel kills the worker and with it its
    // pid namespace. With a hand-shake this is set before waiting for the go
    // byte, so a parent that died earlier is noticed (the read fails);
    // without one, a parent dying within these few instructions is missed.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        detail::report(c.plan, Step::sync, errno);
    if (c.sync_fd >= 0) {
        ::close(c.sync_parent_fd);
        char go = 0;
        if (::read(c.sync_fd, &go, 1) != 1)
            detail::report(c.plan, Step::sync, errno ? errno : EPIPE);
        ::close(c.sync_fd);
    }
    detail::run_child(c.plan);
}

std::string quoted(const std::string& s)
{
    return "'" + s + "'";
}

}  // namespace

namespace detail {

Result<void> validate_writable(const SandboxSpec& spec)
{
    const std::uint64_t bytes = spec.writable.bytes;
    if (spec.writable.host_dir.empty() && (bytes < limits::kMinWorkerDiskBytes || bytes > limits::kMaxWorkerDiskBytes))
        return internal_error("Failed to spawn a sandbox: its writable space of " + std::to_string(bytes) +
                              " bytes lies outside " + std::to_string(limits::kMinWorkerDiskBytes) + ".." +
                              std::to_string(limits::kMaxWorkerDiskBytes));
    return {};
}

Result<void> validate_user_namespace(const SandboxSpec& spec)
{
    const UserNamespace& ns = *spec.user_namespace;
    if (ns.host_uid == 0 || ns.host_gid == 0)
        return internal_error("Failed to spawn a sandbox: its user namespace would map the sandbox's ids onto the "
                              "host's root (host uid/gid 0)");
    if (ns.count == 0 || spec.uid >= ns.count || spec.gid >= ns.count)
        return internal_error("Failed to spawn a sandbox: uid " + std::to_string(spec.uid) + " / gid " +
                              std::to_string(spec.gid) + " lie outside its user namespace's " +
                              std::to_string(ns.count) + " mapped ids");
    if (ns.host_uid > UINT32_MAX - ns.count || ns.host_gid > UINT32_MAX - ns.count)
        return internal_error("Failed to spawn a sandbox: its user namespace's id range overflows");
    return {};
}

std::string tmpfs_owner_options(const UserNamespace& ns)
{
    return ",uid=" + std::to_string(ns.host_uid) + ",gid=" + std::to_string(ns.host_gid);
}

std::string failure_message(const SandboxSpec& spec, const std::string& rootfs, Step step)
{
    std::string object;
    switch (step) {
    case Step::sync: return "Failed to synchronise with the sandbox child";
    case Step::new_session: return "Failed to start a new session for the sandbox";
    case Step::cgroup_namespace: return "Failed to create the sandbox's cgroup namespace";
    case Step::mount_namespace: return "Failed to create the sandbox's mount namespace";
    case Step::network_namespace: return "Failed to create the sandbox's network namespace";
    case Step::make_private: return "Failed to make the sandbox's mounts private";
    case Step::bind_rootfs: return "Failed to bind-mount the rootfs " + quoted(rootfs);
    case Step::idmap_rootfs:
        return "Failed to idmap the rootfs " + quoted(rootfs) + " for the sandbox's user namespace";
    case Step::mount_proc: return "Failed to mount proc on " + quoted(rootfs + "/proc");
    case Step::mask_proc: return "Failed to mask files in " + quoted(rootfs + "/proc");
    case Step::read_only_proc: return "Failed to make directories in " + quoted(rootfs + "/proc") + " read-only";
    case Step::mount_dev: return "Failed to mount tmpfs on " + quoted(rootfs + "/dev");
    case Step::populate_dev: return "Failed to populate " + quoted(rootfs + "/dev");
    case Step::mount_devpts: return "Failed to mount devpts on " + quoted(rootfs + "/dev/pts");
    case Step::mount_shm: return "Failed to mount tmpfs on " + quoted(rootfs + "/dev/shm");
    case Step::mount_tmp: return "Failed to mount tmpfs on " + quoted(rootfs + "/tmp");
    case Step::read_only_root: return "Failed to remount the rootfs " + quoted(rootfs) + " read-only";
    case Step::pivot_root: return "Failed to pivot_root into " + quoted(rootfs);
    case Step::detach_old_root: return "Failed to detach the old root from " + quoted(rootfs);
    case Step::hostname: return "Failed to set the hostname " + quoted(spec.hostname);
    case Step::join_netns: return "Failed to join the sandbox's loopback network namespace";
    case Step::join_userns: return "Failed to join the sandbox's user namespace";
    case Step::loopback: return "Failed to bring up 'lo' in the sandbox's network namespace";
    case Step::rlimit: return "Failed to set a resource limit in the sandbox";
    case Step::cwd: return "Failed to change directory to " + quoted(spec.cwd) + " in the sandbox";
    case Step::stdio: return "Failed to set up the sandbox's standard input/output";
    case Step::drop_bounding: return "Failed to drop the capability bounding set";
    case Step::clear_ambient: return "Failed to clear the ambient capabilities";
    case Step::set_groups: return "Failed to clear the supplementary groups";
    case Step::set_gid: return "Failed to set gid " + std::to_string(spec.gid);
    case Step::set_uid: return "Failed to set uid " + std::to_string(spec.uid);
    case Step::drop_caps: return "Failed to drop all capabilities";
    case Step::no_new_privs: return "Failed to set no_new_privs";
    case Step::seccomp: return "Failed to load the seccomp filter";
    case Step::exec: return "Failed to execute " + quoted(spec.argv.front()) + " in the sandbox";
    case Step::none: break;
    }
    return "Failed to set up the sandbox (unknown step " + std::to_string(static_cast<int>(step)) + ")";
}

}  // namespace detail

namespace {

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
    if (spec.argv.empty() || spec.argv.front().empty())
        return internal_error("Failed to spawn a sandbox: no program given");
    if (spec.rootfs.empty())
        return internal_error("Failed to spawn a sandbox: no rootfs given");
    std::optional<UserNamespaceFd> own_userns;  // joined by the child before spawn() returns
    int userns_fd = -1;
    std::string tmpfs_owner;
    if (spec.user_namespace) {
        NPS_TRY_VOID(detail::validate_user_namespace(spec));
        userns_fd = spec.user_namespace->fd;
        if (userns_fd < 0) {
            own_userns = NPS_TRY(UserNamespaceFd::create(spec.user_namespace->host_uid, spec.user_namespace->host_gid,
                                                         spec.user_namespace->count));
            userns_fd = own_userns->fd();
        }
        tmpfs_owner = detail::tmpfs_owner_options(*spec.user_namespace);
    }
    const int rootfs_idmap_fd = spec.user_namespace && spec.user_namespace->rootfs_idmapped ? -1 : userns_fd;
    NPS_TRY_VOID(detail::validate_writable(spec));
    char resolved[PATH_MAX];
    if (!::realpath(spec.rootfs.c_str(), resolved))
        return system_error_errno("Failed to resolve the rootfs " + quoted(spec.rootfs));
    const std::string rootfs = resolved;
    std::string proc = rootfs + "/proc", dev = rootfs + "/dev", tmp = rootfs + "/tmp";
    std::vector<char> scratch(PATH_MAX);
    const std::string space_options = space_tmpfs_options(spec.writable.bytes) + tmpfs_owner;

    std::vector<std::string> argv_strings = spec.argv, env_strings = spec.env;
    std::vector<char*> argv = c_strings(argv_strings), envp = c_strings(env_strings);
    const char* path = kDefaultPath;
    for (const auto& entry : spec.env) {
        if (entry.rfind("PATH=", 0) == 0)
            path = entry.c_str() + 5;
    }

    std::shared_ptr<const SeccompProgram> default_seccomp;
    const SeccompProgram* seccomp = spec.seccomp;
    if (!seccomp) {
        default_seccomp = NPS_TRY(SeccompProgram::default_program());
        seccomp = default_seccomp.get();
    }
    detail::EmptyCaps empty_caps(::cap_init());
    if (!empty_caps)
        return system_error_errno("Failed to allocate an empty capability set");

    UniqueFd sync_parent, sync_child;
    if (needs_handshake(spec)) {
        int sync[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync) < 0)
            return system_error_errno("Failed to create the sandbox sync socketpair");
        sync_parent = UniqueFd(sync[0]);
        sync_child = UniqueFd(sync[1]);
    }
    int error_pipe[2];
    if (::pipe2(error_pipe, O_CLOEXEC) < 0)
        return system_error_errno("Failed to create the sandbox error pipe");
    UniqueFd error_read(error_pipe[0]), error_write(error_pipe[1]);

    DirectChild direct{
        .plan = {
            .mounts = {.rootfs = rootfs.c_str(), .proc = proc.c_str(), .dev = dev.c_str(), .tmp = tmp.c_str(),
                       .read_only_root = spec.root == RootAccess::read_only,
                       .space_dir = spec.writable.host_dir.empty() ? nullptr : spec.writable.host_dir.c_str(),
                       .space_options = space_options.c_str(), .idmap_fd = rootfs_idmap_fd, .scratch = scratch.data(),
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
            .seccomp = seccomp->program(),
            .empty_caps = static_cast<cap_t>(empty_caps.get()),
            .stdin_fd = spec.stdin_fd,
            .stdout_fd = spec.stdout_fd,
            .stderr_fd = spec.stderr_fd,
            .controlling_terminal = spec.controlling_terminal,
            .error_fd = error_write.get(),
        },
        .sync_fd = sync_child.get(),
        .sync_parent_fd = sync_parent.get(),
        .error_read_fd = error_read.get(),
    };

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
        return system_error_errno("Failed to clone3 the sandbox for " + quoted(rootfs));
    if (pid == 0)
        direct_child_main(direct);

    Child child(static_cast<pid_t>(pid), UniqueFd(pidfd));
    sync_child.reset();
    error_write.reset();
    if (spec.cgroup) {
        if (auto placed = spec.cgroup->add_pid_outside_clone(child.pid()); !placed)
            return placed.error();
    }
    if (sync_parent) {
        char go = 1;
        // A child that already died shows up through the error pipe.
        (void)::send(sync_parent.get(), &go, 1, MSG_NOSIGNAL);
    }

    Failure failure;
    ssize_t n;
    do {
        n = ::read(error_read.get(), &failure, sizeof failure);
    } while (n < 0 && errno == EINTR);
    if (n == 0)
        return child;
    int read_err = errno;
    (void)child.wait();
    if (n < 0)
        return system_error("Failed to read the sandbox error pipe", read_err);
    if (n != sizeof failure)
        return internal_error("Failed to set up the sandbox: short report from the child");
    return system_error(detail::failure_message(spec, rootfs, failure.step), failure.err);
}

}  // namespace nps::sandbox
