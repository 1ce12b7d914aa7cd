// SPDX-License-Identifier: Apache-2.0
#include "nps/sandbox/child.hpp"

#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace nps::sandbox {

namespace {

// glibc 2.36 does not name P_PIDFD (linux/wait.h does, but clashes with sys/wait.h).
constexpr idtype_t kPidfdIdType = static_cast<idtype_t>(3);

int pidfd_send_signal(int pidfd, int signal)
{
    return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

}  // namespace

Child::Child(Child&& other) noexcept : pid_(std::exchange(other.pid_, -1)), pidfd_(std::move(other.pidfd_)) {}

Child& Child::operator=(Child&& other) noexcept
{
    if (this != &other) {
        kill_and_reap();
        pid_ = std::exchange(other.pid_, -1);
        pidfd_ = std::move(other.pidfd_);
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
    if (info.si_code == CLD_EXITED)
        return ExitStatus{.exited = true, .code = info.si_status};
    return ExitStatus{.exited = false, .signal = info.si_status};
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
}

}  // namespace nps::sandbox
