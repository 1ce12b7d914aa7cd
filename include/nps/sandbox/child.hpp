// SPDX-License-Identifier: Apache-2.0
// Child: the sandboxed process a spawn() started, owned through its pidfd.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::sandbox {

// How a process ended: exited with `code`, or killed by `signal`.
struct ExitStatus {
    bool exited = false;
    int code = 0;    // valid when exited
    int signal = 0;  // valid when !exited

    // The shell convention: the exit code, or 128 + signal.
    int shell_status() const { return exited ? code : 128 + signal; }
};

// Sole owner of a child process. Signals go through the pidfd, so they can
// never hit a recycled pid. Destroying a Child that has not been waited for
// kills it (SIGKILL) and reaps it: a sandbox never outlives its owner's
// interest in it. Move-only.
//
// A child spawned with SandboxSpec::hold_before_exec is *held*: set up
// completely, its seccomp filter loaded, it waits before its execve until
// release() (docs/sandbox.md "A child held before its execve").
class Child {
public:
    Child() = default;
    Child(pid_t pid, UniqueFd pidfd) noexcept : pid_(pid), pidfd_(std::move(pidfd)) {}
    Child(Child&& other) noexcept;
    Child& operator=(Child&& other) noexcept;
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;
    ~Child();

    // The pid in the caller's pid namespace; -1 once reaped or empty.
    pid_t pid() const noexcept { return pid_; }
    // Readable (poll POLLIN) when the process has exited.
    int pidfd() const noexcept { return pidfd_.get(); }
    bool valid() const noexcept { return pid_ > 0; }

    // Sends `signal` through the pidfd. Sending to an exited but unreaped
    // child succeeds (ESRCH is not an error here).
    Result<void> kill(int signal);

    // Blocks until the process exits and reaps it. Retries on EINTR.
    Result<ExitStatus> wait();

    bool held() const noexcept { return release_.valid(); }
    // Lets a held child execute its program, with `late_env` ("K=V" each, at
    // most limits::kMaxReleaseEnvEntries and kMaxReleaseEnvBytes, no NUL)
    // appended to the environment its spec gave, and waits until it has.
    // An entry refused leaves the child held; a failed execve is reported
    // as spawn() reports it ("Failed to execute '/bin/x' in the sandbox:
    // …") and the child reaped. Afterwards the child is an ordinary one.
    Result<void> release(const std::vector<std::string>& late_env = {});

    // For the spawns (src/sandbox): the child reported itself held on
    // `channel` (the parent's end of its report socket); `exec_failure`
    // words a failed execve.
    void set_held(UniqueFd channel, std::string exec_failure);
    // Keeps what a held child reads its plan from (a spawn server's shared
    // area) until it has exec'd or is gone.
    void keep_plan_until_exec(std::shared_ptr<void> plan) { plan_ = std::move(plan); }

private:
    void kill_and_reap() noexcept;

    pid_t pid_ = -1;
    UniqueFd pidfd_;
    // While held.
    UniqueFd release_;
    std::string exec_failure_;
    std::shared_ptr<void> plan_;
};

}  // namespace nps::sandbox
