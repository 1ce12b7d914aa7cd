// SPDX-License-Identifier: Apache-2.0
// The sandbox child from the moment it may run to its execve. It runs in a
// process cloned from a possibly multi-threaded parent: no allocation, no
// exceptions, only what the ChildPlan holds.
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "nps/base/limits.hpp"
#include "setup.hpp"

namespace nps::sandbox::detail {

namespace {

int move_stdio(int from, int to)
{
    if (from == to)
        return ::fcntl(to, F_SETFD, 0);
    return ::dup2(from, to) < 0 ? -1 : 0;
}

// execve, searching PATH for a name without '/' (execvpe may allocate).
int exec_program(const ChildPlan& plan, char* const* envp)
{
    const char* file = plan.argv[0];
    if (::strchr(file, '/')) {
        ::execve(file, plan.argv, envp);
        return errno;
    }
    int result = ENOENT;
    for (const char* dir = plan.path; *dir;) {
        const char* end = ::strchrnul(dir, ':');
        int n = ::snprintf(plan.mounts.scratch, plan.mounts.scratch_size, "%.*s/%s", static_cast<int>(end - dir),
                           end == dir ? "." : dir, file);
        if (n > 0 && static_cast<std::size_t>(n) < plan.mounts.scratch_size) {
            ::execve(plan.mounts.scratch, plan.argv, envp);
            if (errno != ENOENT && errno != ENOTDIR)
                result = errno;
        }
        dir = *end ? end + 1 : end;
    }
    return result;
}

// Reads exactly `size` bytes; false on EOF or an error.
bool read_exactly(int fd, char* into, std::size_t size)
{
    while (size > 0) {
        const ssize_t n = ::read(fd, into, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        into += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

// A held child (ChildPlan::hold_before_exec), set up to the last step:
// says so on its report socket, waits for the release (Child::release: a
// size, then "K=V\0" entries), and execs with those entries after its
// own. The parent gone or a malformed release: it exits without running
// anything. Its buffers live on its stack (no allocation here).
[[noreturn]] [[gnu::noinline]] void exec_when_released(const ChildPlan& plan)
{
    const Failure held{Step::none, 0};
    if (::write(plan.error_fd, &held, sizeof held) != static_cast<ssize_t>(sizeof held))
        ::_exit(127);
    std::uint32_t size = 0;
    char block[limits::kMaxReleaseEnvBytes];
    if (!read_exactly(plan.error_fd, reinterpret_cast<char*>(&size), sizeof size) ||
        size > limits::kMaxReleaseEnvBytes || !read_exactly(plan.error_fd, block, size) ||
        (size > 0 && block[size - 1] != '\0'))
        ::_exit(127);
    char* envp[limits::kMaxHeldEnvEntries + 1];
    std::size_t count = 0;
    for (char* const* entry = plan.envp; *entry; ++entry) {
        if (count == limits::kMaxHeldEnvEntries)
            report(plan, Step::exec, E2BIG);
        envp[count++] = *entry;
    }
    for (std::size_t at = 0; at < size; at += ::strlen(block + at) + 1) {
        if (count == limits::kMaxHeldEnvEntries)
            report(plan, Step::exec, E2BIG);
        envp[count++] = block + at;
    }
    envp[count] = nullptr;
    report(plan, Step::exec, exec_program(plan, envp));
}

}  // namespace

void report(const ChildPlan& plan, Step step, int err)
{
    Failure failure{step, err};
    (void)!::write(plan.error_fd, &failure, sizeof failure);
    ::_exit(127);
}

void reset_signals()
{
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Ignored signals stay ignored across execve: undo the parent's choices.
    for (int sig = 1; sig < NSIG; ++sig) {
        if (sig != SIGKILL && sig != SIGSTOP)
            ::signal(sig, SIG_DFL);
    }
}

void start_child(const ChildPlan& plan, int sync_fd)
{
    reset_signals();
    // A worker never outlives the runner that started it: when the runner
    // dies (kill -9 included), the kernel kills the worker and with it its
    // pid namespace. A runner that died before this line is noticed too:
    // with a hand-shake the go byte's read fails; without one, the runner's
    // end of the report socket is closed (POLLHUP on the child's end).
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        report(plan, Step::sync, errno);
    if (sync_fd < 0) {
        pollfd error_end{.fd = plan.error_fd, .events = POLLOUT, .revents = 0};
        if (::poll(&error_end, 1, 0) == 1 && (error_end.revents & (POLLERR | POLLHUP)))
            ::_exit(127);
    }
    run_child(plan, sync_fd);
}

void run_child(const ChildPlan& plan, int sync_fd)
{
    // Into its v1 cgroups first, before anything the limits must hold: a
    // thread moving itself skips the kernel's threadgroup lock and its RCU
    // grace period (WorkerCgroup::open_tasks_outside_clone).
    for (std::size_t i = 0; i < plan.cgroup_tasks_count; ++i) {
        if (::write(plan.cgroup_tasks_fds[i], "0", 1) != 1)
            report(plan, Step::join_cgroup, errno);
        ::close(plan.cgroup_tasks_fds[i]);
    }
    // Leave the caller's session: sharing its controlling terminal would let
    // TIOCSTI type into the caller's shell.
    if (::setsid() < 0)
        report(plan, Step::new_session, errno);
    // A pooled child was parked before the rootfs existed: it copies the
    // mount table now, so it sees the rootfs (and no stale mount table).
    if (plan.unshare_mount && ::unshare(CLONE_NEWNS) < 0)
        report(plan, Step::mount_namespace, errno);

    if (Failure f = setup_mounts(plan.mounts); f.step != Step::none)
        report(plan, f.step, f.err);
    if (::sethostname(plan.hostname, plan.hostname_size) < 0)
        report(plan, Step::hostname, errno);
    if (plan.network == Network::none && plan.netns_fd >= 0) {
        if (::setns(plan.netns_fd, CLONE_NEWNET) < 0)
            report(plan, Step::join_netns, errno);
    } else if (plan.network == Network::none) {
        if (plan.unshare_net && ::unshare(CLONE_NEWNET) < 0)
            report(plan, Step::network_namespace, errno);
        if (int rc = bring_up_loopback(); rc < 0)
            report(plan, Step::loopback, -rc);
    }
    for (std::size_t i = 0; i < plan.rlimit_count; ++i) {
        const Rlimit& limit = plan.rlimits[i];
        rlimit value{limit.soft, limit.hard};
        if (::setrlimit(static_cast<__rlimit_resource>(limit.resource), &value) < 0)
            report(plan, Step::rlimit, errno);
    }
    // A spawn server's child: nothing of the worker's runs before the runner,
    // holding the child's pidfd, sends the go byte (spawn_server.cpp).
    if (sync_fd >= 0) {
        char go = 0;
        if (::read(sync_fd, &go, 1) != 1)
            report(plan, Step::sync, errno ? errno : EPIPE);
        ::close(sync_fd);
    }
    // After the placement in every hierarchy, so the namespace's root is the
    // worker's own cgroup in v1 hierarchies too.
    if (::unshare(CLONE_NEWCGROUP) < 0)
        report(plan, Step::cgroup_namespace, errno);
    // The last step as the host's root: every namespace made so far is owned
    // by the host's user namespace (so joining the task's netns above was
    // allowed); from here on the ids are the slot's, and the capabilities,
    // full in the new namespace only, are dropped below.
    if (plan.userns_fd >= 0 && ::setns(plan.userns_fd, CLONE_NEWUSER) < 0)
        report(plan, Step::join_userns, errno);
    if (::chdir(plan.cwd) < 0)
        report(plan, Step::cwd, errno);
    if (move_stdio(plan.stdin_fd, 0) < 0 || move_stdio(plan.stdout_fd, 1) < 0 || move_stdio(plan.stderr_fd, 2) < 0)
        report(plan, Step::stdio, errno);
    if (plan.controlling_terminal && ::ioctl(0, TIOCSCTTY, 0) < 0)
        report(plan, Step::stdio, errno);
    if (Failure f = drop_privileges(plan.uid, plan.gid, plan.empty_caps); f.step != Step::none)
        report(plan, f.step, f.err);
    // In ps(1) while held (its execve names it after its program), whoever
    // cloned it; before the filter, which need not allow it.
    if (plan.hold_before_exec)
        ::prctl(PR_SET_NAME, "nps-held");
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, plan.seccomp, 0, 0) < 0)
        report(plan, Step::seccomp, errno);
    if (plan.hold_before_exec)
        exec_when_released(plan);
    report(plan, Step::exec, exec_program(plan, plan.envp));
}

}  // namespace nps::sandbox::detail
