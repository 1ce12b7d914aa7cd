// SPDX-License-Identifier: Apache-2.0
// One sandboxed command under poll(2): the pidfd says it ended, a signalfd
// carries SIGINT/SIGTERM/SIGHUP, timerfds carry the time limits. With an
// idle timeout the command's stdout and stderr are pipes we relay, since
// activity means "a byte on stdout or stderr" (DESIGN §3.3). With a
// terminal (run -t) the command's stdio is a pty of its own, relayed both
// ways (run_terminal.hpp).
#include "run_session.hpp"

#include "run_terminal.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <cstdio>
#include <string>

#include "nps/base/unique_fd.hpp"
#include "nps/cgroup/delegation.hpp"
#include "nps/cgroup/mode.hpp"
#include "nps/executor/recovery.hpp"

namespace nps::cli {

namespace {

void say(const std::string& message)
{
    std::fprintf(stderr, "nps-runner run: %s\n", message.c_str());
}

bool has_limits(const cgroup::CgroupLimits& limits)
{
    return limits.memory_bytes || limits.cpu_millicores || limits.pids_max;
}

Result<std::optional<cgroup::WorkerCgroup>> make_cgroup(const RunRequest& request)
{
    if (!has_limits(request.limits))
        return std::optional<cgroup::WorkerCgroup>{};
    auto layout = NPS_TRY(cgroup::detect_cgroup_layout());
    auto base = NPS_TRY(cgroup::prepare_cgroup_base(layout));
    remove_dead_leftovers("", &base);
    auto group = NPS_TRY(cgroup::WorkerCgroup::create(
        base, {.name = "run-" + std::to_string(::getpid()), .limits = request.limits,
               .enforcement = request.enforcement}));
    for (const auto& skipped : group.unenforced())
        say("warning: this host cannot enforce the " + skipped +
            " limit; running without it (sandbox.allow_unenforced_limits)");
    return std::optional<cgroup::WorkerCgroup>{std::move(group)};
}

Result<UniqueFd> make_timer(std::uint32_t seconds)
{
    UniqueFd fd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    if (!fd)
        return system_error_errno("Failed to create a timerfd");
    itimerspec when{};
    when.it_value.tv_sec = seconds;
    if (::timerfd_settime(fd.get(), 0, &when, nullptr) < 0)
        return system_error_errno("Failed to arm a timerfd");
    return fd;
}

struct Pipe {
    UniqueFd read_end, write_end;
};

Result<Pipe> make_pipe()
{
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) < 0)
        return system_error_errno("Failed to create an output pipe");
    return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Copies what is readable from `from` to `to`; false at EOF.
bool relay(int from, int to)
{
    char buffer[65536];
    ssize_t n = ::read(from, buffer, sizeof buffer);
    if (n <= 0)
        return n < 0 && (errno == EINTR || errno == EAGAIN);
    for (ssize_t done = 0; done < n;) {
        ssize_t w = ::write(to, buffer + done, static_cast<std::size_t>(n - done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return true;  // our own output is gone; keep draining so the command is not blocked
        done += w;
    }
    return true;
}

enum class Ending { exited, signal, max_runtime, idle };

}  // namespace

void remove_dead_leftovers(const std::string& state_dir, const cgroup::CgroupBase* cgroups)
{
    auto report = executor::remove_stale_workers(state_dir, cgroups);
    if (report.worker_dirs || report.cgroups || report.killed)
        say("removed " + std::to_string(report.worker_dirs) + " worker dir(s) and " + std::to_string(report.cgroups) +
            " cgroup(s) that a dead run or runner left, killing " + std::to_string(report.killed) +
            " leftover process(es)");
    for (const auto& problem : report.problems)
        say("warning: " + problem);
}

int run_attached(RunRequest request)
{
    sigset_t mask;
    ::sigemptyset(&mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGWINCH})
        ::sigaddset(&mask, sig);
    // Blocked before spawning so none slips in between; the child resets its mask.
    ::sigprocmask(SIG_BLOCK, &mask, nullptr);
    UniqueFd signal_fd(::signalfd(-1, &mask, SFD_CLOEXEC));
    if (!signal_fd) {
        say("Failed to create a signalfd: " + std::string(strerror(errno)));
        return kExitSandboxFailure;
    }

    auto group = make_cgroup(request);
    if (!group) {
        say(group.error().describe());
        return kExitSandboxFailure;
    }
    request.sandbox.cgroup = *group ? &**group : nullptr;

    std::optional<Pipe> out, err;
    std::optional<RunTerminal> terminal;
    if (request.terminal) {
        auto opened = RunTerminal::open();
        if (!opened) {
            say(opened.error().describe());
            return kExitSandboxFailure;
        }
        terminal.emplace(std::move(*opened));
        request.sandbox.stdin_fd = request.sandbox.stdout_fd = request.sandbox.stderr_fd = terminal->slave();
        request.sandbox.controlling_terminal = true;
    } else if (request.idle_timeout_seconds) {
        auto o = make_pipe(), e = make_pipe();
        if (!o || !e) {
            say((o ? e : o).error().describe());
            return kExitSandboxFailure;
        }
        out = std::move(*o);
        err = std::move(*e);
        request.sandbox.stdout_fd = out->write_end.get();
        request.sandbox.stderr_fd = err->write_end.get();
    }

    UniqueFd max_timer, idle_timer;
    auto arm = [&](UniqueFd& timer, std::optional<std::uint32_t> seconds) -> bool {
        if (!seconds)
            return true;
        auto made = make_timer(*seconds);
        if (!made) {
            say(made.error().describe());
            return false;
        }
        timer = std::move(*made);
        return true;
    };

    auto child = sandbox::spawn(request.sandbox);
    if (!child) {
        say(child.error().describe());
        return kExitSandboxFailure;
    }
    if (out) {
        out->write_end.reset();
        err->write_end.reset();
    }
    if (terminal)
        terminal->close_slave();
    if (!arm(max_timer, request.max_runtime_seconds) || !arm(idle_timer, request.idle_timeout_seconds))
        return kExitSandboxFailure;  // ~Child kills and reaps

    enum { kPid, kSignal, kMax, kIdle, kOut, kErr, kIn, kCount };
    std::array<pollfd, kCount> fds{};
    fds[kPid] = {child->pidfd(), POLLIN, 0};
    fds[kSignal] = {signal_fd.get(), POLLIN, 0};
    fds[kMax] = {max_timer.get(), POLLIN, 0};
    fds[kIdle] = {idle_timer.get(), POLLIN, 0};
    // With a terminal, its master carries all output, and our stdin goes to it.
    fds[kOut] = {terminal ? terminal->master() : out ? out->read_end.get() : -1, POLLIN, 0};
    fds[kErr] = {err ? err->read_end.get() : -1, POLLIN, 0};
    fds[kIn] = {terminal ? STDIN_FILENO : -1, POLLIN, 0};

    Ending ending = Ending::exited;
    int caught_signal = 0;
    bool exited = false;
    while (ending == Ending::exited) {
        if (::poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR)
                continue;
            say("poll failed: " + std::string(strerror(errno)));
            return kExitSandboxFailure;
        }
        for (int i : {kOut, kErr}) {
            if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                if (!relay(fds[i].fd, i == kOut ? 1 : 2))
                    fds[i].fd = -1;  // EOF (a terminal's master: EIO once the command's side is closed)
                if (idle_timer) {
                    itimerspec when{};
                    when.it_value.tv_sec = *request.idle_timeout_seconds;
                    ::timerfd_settime(idle_timer.get(), 0, &when, nullptr);
                }
            }
        }
        if (fds[kIn].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (!relay(STDIN_FILENO, terminal->master())) {
                // Our stdin ended (a pipe): end-of-file for the command's terminal.
                fds[kIn].fd = -1;
                const char eot = 0x04;
                (void)::write(terminal->master(), &eot, 1);
            }
        }
        if (fds[kPid].revents & POLLIN) {
            exited = true;  // a limit that fires from now on is too late to matter
            fds[kPid].fd = fds[kMax].fd = fds[kIdle].fd = -1;
            fds[kMax].revents = fds[kIdle].revents = 0;
        }
        if (fds[kSignal].revents & POLLIN) {
            signalfd_siginfo info{};
            if (::read(signal_fd.get(), &info, sizeof info) != sizeof info) {
            } else if (info.ssi_signo == SIGWINCH) {
                if (terminal)
                    terminal->copy_window_size();
            } else {
                caught_signal = static_cast<int>(info.ssi_signo);
                ending = Ending::signal;
            }
        } else if (fds[kMax].revents & POLLIN) {
            ending = Ending::max_runtime;
        } else if (fds[kIdle].revents & POLLIN) {
            ending = Ending::idle;
        }
        if (exited && fds[kOut].fd < 0 && fds[kErr].fd < 0)
            break;  // and what it wrote has been relayed
    }

    if (ending != Ending::exited) {
        // Everything the command started goes, not only pid 1.
        if (*group)
            (void)(*group)->kill_all();
        (void)child->kill(SIGKILL);
    }
    terminal.reset();  // our terminal back to its mode before anything more is said
    auto status = child->wait();
    bool oom = false;
    if (*group) {
        auto killed = (*group)->oom_killed();
        oom = killed && *killed;
    }
    if (*group) {
        (void)(*group)->kill_all();
        if (auto removed = (*group)->remove(); !removed)
            say("warning: " + removed.error().describe());
    }
    if (!status) {
        say(status.error().describe());
        return kExitSandboxFailure;
    }
    switch (ending) {
    case Ending::signal: return 128 + caught_signal;
    case Ending::max_runtime:
        say("stopped: the maximum runtime of " + std::to_string(*request.max_runtime_seconds) + " s was reached");
        return kExitTimeLimit;
    case Ending::idle:
        say("stopped: no output for " + std::to_string(*request.idle_timeout_seconds) + " s (idle timeout)");
        return kExitTimeLimit;
    case Ending::exited: break;
    }
    if (oom)
        say("the command was killed by the kernel's OOM killer: it reached its memory limit");
    return status->shell_status();
}

}  // namespace nps::cli
