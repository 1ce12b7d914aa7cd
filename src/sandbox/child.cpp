// SPDX-License-Identifier: Apache-2.0
#include "nps/sandbox/child.hpp"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "nps/base/limits.hpp"
#include "setup.hpp"

namespace nps::sandbox {

namespace {

// glibc 2.36 does not name P_PIDFD (linux/wait.h does, but clashes with sys/wait.h).
constexpr idtype_t kPidfdIdType = static_cast<idtype_t>(3);

int pidfd_send_signal(int pidfd, int signal)
{
    return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

}  // namespace

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), pidfd_(std::move(other.pidfd_)), release_(std::move(other.release_)),
      exec_failure_(std::move(other.exec_failure_)), plan_(std::move(other.plan_))
{
}

Child& Child::operator=(Child&& other) noexcept
{
    if (this != &other) {
        kill_and_reap();
        pid_ = std::exchange(other.pid_, -1);
        pidfd_ = std::move(other.pidfd_);
        release_ = std::move(other.release_);
        exec_failure_ = std::move(other.exec_failure_);
        plan_ = std::move(other.plan_);
    }
    return *this;
}

Child::~Child()
{
    kill_and_reap();
}

Result<void> Child::kill(int signal)
{
    if (!valid())
        return internal_error("Failed to signal child: no process");
    if (pidfd_send_signal(pidfd_.get(), signal) < 0 && errno != ESRCH)
        return system_error_errno("Failed to send signal " + std::to_string(signal) + " to pid " +
                                  std::to_string(pid_));
    return {};
}

Result<ExitStatus> Child::wait()
{
    if (!valid())
        return internal_error("Failed to wait for child: no process");
    siginfo_t info{};
    while (::waitid(kPidfdIdType, static_cast<id_t>(pidfd_.get()), &info, WEXITED) < 0) {
        if (errno != EINTR)
            return system_error_errno("Failed to wait for pid " + std::to_string(pid_));
    }
    pid_ = -1;
    pidfd_.reset();
    release_.reset();
    plan_.reset();
    if (info.si_code == CLD_EXITED)
        return ExitStatus{.exited = true, .code = info.si_status};
    return ExitStatus{.exited = false, .signal = info.si_status};
}

void Child::set_held(UniqueFd channel, std::string exec_failure)
{
    release_ = std::move(channel);
    exec_failure_ = std::move(exec_failure);
}

Result<void> Child::release(const std::vector<std::string>& late_env)
{
    if (!held() || !valid())
        return internal_error("Failed to release a sandbox child: it is not held");
    if (late_env.size() > limits::kMaxReleaseEnvEntries)
        return internal_error("Failed to release a sandbox child: " + std::to_string(late_env.size()) +
                              " environment entries, at most " + std::to_string(limits::kMaxReleaseEnvEntries));
    // The message: the block's size, then "K=V\0" entries (child_main.cpp).
    std::string message(sizeof(std::uint32_t), '\0');
    for (const std::string& entry : late_env) {
        if (entry.find('\0') != std::string::npos || entry.find('=') == std::string::npos || entry.front() == '=')
            return internal_error("Failed to release a sandbox child: the environment entry '" +
                                  entry.substr(0, entry.find('\0')) + "' is not of the form NAME=VALUE");
        message += entry;
        message += '\0';
    }
    const std::size_t block = message.size() - sizeof(std::uint32_t);
    if (block > limits::kMaxReleaseEnvBytes)
        return internal_error("Failed to release a sandbox child: its environment entries take " +
                              std::to_string(block) + " bytes, at most " +
                              std::to_string(limits::kMaxReleaseEnvBytes));
    const auto size = static_cast<std::uint32_t>(block);
    ::memcpy(message.data(), &size, sizeof size);
    for (std::size_t sent = 0; sent < message.size();) {
        const ssize_t n = ::send(release_.get(), message.data() + sent, message.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;  // it died: its report (none) says so below
        sent += static_cast<std::size_t>(n);
    }
    detail::Failure failure;
    ssize_t n;
    do {
        n = ::read(release_.get(), &failure, sizeof failure);
    } while (n < 0 && errno == EINTR);
    const int read_err = errno;
    release_.reset();
    plan_.reset();
    if (n == 0) {
        // EOF: its end closed on execve, or it died. A death is the
        // worker's exit, seen as any other.
        return {};
    }
    (void)wait();
    if (n < 0)
        return system_error("Failed to read the held sandbox child's report", read_err);
    if (n != sizeof failure || failure.step != detail::Step::exec)
        return internal_error("Failed to release a held sandbox child: unexpected report");
    return system_error(exec_failure_, failure.err);
}

void Child::kill_and_reap() noexcept
{
    if (!valid())
        return;
    (void)pidfd_send_signal(pidfd_.get(), SIGKILL);
    siginfo_t info{};
    while (::waitid(kPidfdIdType, static_cast<id_t>(pidfd_.get()), &info, WEXITED) < 0 &&
           errno == EINTR) {
    }
    pid_ = -1;
    pidfd_.reset();
    release_.reset();
    plan_.reset();
}

}  // namespace nps::sandbox
