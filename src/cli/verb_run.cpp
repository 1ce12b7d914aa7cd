// SPDX-License-Identifier: Apache-2.0
// `nps-runner run`: one sandboxed process attached to our stdio.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "nps/base/unique_fd.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"
#include "nps/sandbox/spawner.hpp"

namespace nps::cli {

namespace {

// As podman and docker: the runner itself failed, the command never ran.
constexpr int kExitSandboxFailure = 125;

const VerbSpec kSpec{
    "run",
    "--rootfs DIR [--network none|host] [--env K=V]... [--hostname H] -- CMD [ARGS...]",
    "Run one command in a sandbox, attached to this terminal.",
    "The command runs as pid 1 of new pid, mount, uts, ipc and cgroup namespaces, in a\n"
    "read-only bind of DIR behind pivot_root with a fresh /proc, a minimal /dev and a tmpfs\n"
    "/tmp, with no capabilities, no_new_privs and the default seccomp filter. DIR must\n"
    "contain /proc, /dev and /tmp. The environment is PATH and HOME plus --env.\n\n"
    "Exit status: the command's, or 128+N when signal N killed it; 125 when the sandbox\n"
    "could not be set up or the command could not be executed. SIGINT, SIGTERM and\n"
    "SIGHUP kill the sandbox.\n\n"
    "Not yet available: --image, --memory, --cpu, --pids, --max-runtime, --idle-timeout.",
    {
        {"--rootfs", "DIR", "root filesystem directory (required)"},
        {"--network", "MODE", "'none' (default: only loopback) or 'host'"},
        {"--env", "K=V", "add or override an environment variable", true},
        {"--hostname", "NAME", "hostname inside the sandbox (default nps-sandbox)"},
    },
    1,
    static_cast<std::size_t>(-1),
};

int wait_attached(sandbox::Child& child, int signal_fd)
{
    pollfd fds[2] = {{child.pidfd(), POLLIN, 0}, {signal_fd, POLLIN, 0}};
    for (;;) {
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            std::perror("nps-runner run: poll");
            return kExitSandboxFailure;
        }
        if (fds[1].revents & POLLIN) {
            signalfd_siginfo info{};
            if (::read(signal_fd, &info, sizeof info) == sizeof info) {
                (void)child.kill(SIGKILL);
                (void)child.wait();
                return 128 + static_cast<int>(info.ssi_signo);
            }
        }
        if (fds[0].revents & POLLIN)
            break;
    }
    auto status = child.wait();
    if (!status) {
        std::fprintf(stderr, "nps-runner run: %s\n", status.error().describe().c_str());
        return kExitSandboxFailure;
    }
    return status->shell_status();
}

}  // namespace

int run(int argc, char** argv, int first)
{
    auto start = start_verb(kSpec, argc, argv, first);
    if (!start.args)
        return start.exit_status;
    const ParsedArgs& args = *start.args;

    sandbox::SandboxSpec spec{.argv = args.positionals,
                              .env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/"}};
    auto rootfs = args.value("--rootfs");
    if (!rootfs) {
        std::fprintf(stderr, "nps-runner run: --rootfs DIR is required (--image is not available yet)\n");
        return kExitUsage;
    }
    spec.rootfs = *rootfs;
    if (auto network = args.value("--network")) {
        if (*network == "host")
            spec.network = sandbox::Network::host;
        else if (*network != "none") {
            std::fprintf(stderr, "nps-runner run: --network must be 'none' or 'host', not '%s'\n", network->c_str());
            return kExitUsage;
        }
    }
    for (const auto& entry : args.values("--env")) {
        auto eq = entry.find('=');
        if (eq == 0 || eq == std::string::npos) {
            std::fprintf(stderr, "nps-runner run: --env needs K=V, not '%s'\n", entry.c_str());
            return kExitUsage;
        }
        std::string key = entry.substr(0, eq + 1);
        std::erase_if(spec.env, [&](const std::string& e) { return e.rfind(key, 0) == 0; });
        spec.env.push_back(entry);
    }
    if (auto hostname = args.value("--hostname"))
        spec.hostname = *hostname;

    // Block the signals that end us before spawning, so none arrives between
    // spawn and the signalfd; the sandbox child resets its mask.
    sigset_t mask;
    ::sigemptyset(&mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
        ::sigaddset(&mask, sig);
    ::sigprocmask(SIG_BLOCK, &mask, nullptr);
    UniqueFd signal_fd(::signalfd(-1, &mask, SFD_CLOEXEC));
    if (!signal_fd) {
        std::perror("nps-runner run: signalfd");
        return kExitSandboxFailure;
    }

    auto child = sandbox::spawn(spec);
    if (!child) {
        std::fprintf(stderr, "nps-runner run: %s\n", child.error().describe().c_str());
        return kExitSandboxFailure;
    }
    return wait_attached(*child, signal_fd.get());
}

}  // namespace nps::cli
