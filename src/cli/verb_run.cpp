// SPDX-License-Identifier: Apache-2.0
// `nps-runner run`: one sandboxed process attached to our stdio. This file
// turns the command line into a RunRequest; run_session.cpp runs it.
#include <cstdio>
#include <string>

#include "nps/base/limits.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"
#include "nps/config/config.hpp"
#include "nps/spawn/quantity.hpp"
#include "run_session.hpp"

namespace nps::cli {

namespace {

constexpr const char* kDefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

const VerbSpec kSpec{
    "run",
    "--rootfs DIR [--memory Q] [--cpu Q] [--pids N] [--max-runtime S] [--idle-timeout S]\n"
    "       [--network none|host] [--env K=V]... [--hostname H] [--user UID[:GID]] [--userns]\n"
    "       [--config FILE] -- CMD [ARGS...]",
    "Run one command in a sandbox, attached to this terminal.",
    "The command runs as pid 1 of new pid, mount, uts, ipc and cgroup namespaces, in a\n"
    "read-only bind of DIR behind pivot_root with a fresh /proc, a minimal /dev and a tmpfs\n"
    "/tmp, with no capabilities, no_new_privs and the seccomp filter (plus the config's\n"
    "sandbox.seccomp_allow). DIR must contain /proc, /dev and /tmp. The environment is PATH\n"
    "and HOME plus --env.\n\n"
    "Limits: --memory (swap off), --cpu and --pids put the command in a cgroup beneath this\n"
    "process's own (quantities as Kubernetes writes them: --memory 64Mi, --cpu 500m). A limit\n"
    "this host cannot enforce is an error unless sandbox.allow_unenforced_limits is set.\n"
    "--max-runtime S ends the command S seconds after it started; --idle-timeout S ends it\n"
    "after S seconds without a byte on its stdout or stderr.\n\n"
    "With --userns (or sandbox.user_namespace) the sandbox's ids 0..N-1 are the host's\n"
    "sandbox.userns_first_host_id onwards, so even its root is an unprivileged host user.\n\n"
    "Exit status: the command's, or 128+N when signal N killed it (an OOM kill is 137 and is\n"
    "reported); 124 when a time limit ended it; 125 when the sandbox could not be set up or\n"
    "the command could not be executed. SIGINT, SIGTERM and SIGHUP kill the sandbox.\n\n"
    "Not yet available: --image (use --rootfs with an unpacked image).",
    {
        {"--rootfs", "DIR", "root filesystem directory (required)"},
        {"--memory", "Q", "memory limit, e.g. 64Mi or 1G (swap off)"},
        {"--cpu", "Q", "CPU quota, e.g. 500m (half a CPU) or 2"},
        {"--pids", "N", "maximum number of processes and threads"},
        {"--max-runtime", "S", "end the command after S seconds"},
        {"--idle-timeout", "S", "end the command after S seconds without output"},
        {"--network", "MODE", "'none' (default: only loopback) or 'host'"},
        {"--env", "K=V", "add or override an environment variable", true},
        {"--hostname", "NAME", "hostname inside the sandbox (default nps-sandbox)"},
        {"--user", "UID[:GID]", "run as this uid and gid (default 0:0, without any capability)"},
        {"--userns", nullptr, "in a user namespace (ids from sandbox.userns_first_host_id; also on when configured)"},
        {"--config", "FILE", "configuration file (default /etc/nps-runner/config.toml; missing default is fine)"},
    },
    1,
    static_cast<std::size_t>(-1),
};

Result<std::optional<std::uint32_t>> seconds_option(const ParsedArgs& args, const char* name)
{
    auto text = args.value(name);
    if (!text)
        return std::optional<std::uint32_t>{};
    char* end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(text->c_str(), &end, 10);
    if (text->empty() || *end || errno || value == 0 || value > limits::kMaxRunSeconds || (*text)[0] == '-')
        return internal_error(std::string(name) + " takes whole seconds from 1 to " +
                              std::to_string(limits::kMaxRunSeconds) + ", not '" + *text + "'");
    return std::optional<std::uint32_t>{static_cast<std::uint32_t>(value)};
}

Result<RunRequest> build_request(const ParsedArgs& args, const config::Config& config)
{
    RunRequest request;
    request.sandbox.argv = args.positionals;
    request.sandbox.env = {kDefaultPath, "HOME=/"};
    auto rootfs = args.value("--rootfs");
    if (!rootfs)
        return internal_error("--rootfs DIR is required (--image is not available yet)");
    request.sandbox.rootfs = *rootfs;
    if (auto network = args.value("--network")) {
        if (*network == "host")
            request.sandbox.network = sandbox::Network::host;
        else if (*network != "none")
            return internal_error("--network must be 'none' or 'host', not '" + *network + "'");
    }
    for (const auto& entry : args.values("--env")) {
        auto eq = entry.find('=');
        if (eq == 0 || eq == std::string::npos)
            return internal_error("--env needs K=V, not '" + entry + "'");
        std::string key = entry.substr(0, eq + 1);
        std::erase_if(request.sandbox.env, [&](const std::string& e) { return e.rfind(key, 0) == 0; });
        request.sandbox.env.push_back(entry);
    }
    if (auto hostname = args.value("--hostname"))
        request.sandbox.hostname = *hostname;
    if (auto memory = args.value("--memory"))
        request.limits.memory_bytes = NPS_TRY(spawn::parse_memory_bytes(*memory));
    if (auto cpu = args.value("--cpu"))
        request.limits.cpu_millicores = NPS_TRY(spawn::parse_cpu_millicores(*cpu));
    if (auto pids = args.value("--pids")) {
        char* end = nullptr;
        errno = 0;
        long long value = std::strtoll(pids->c_str(), &end, 10);
        if (pids->empty() || *end || errno || value < 1)
            return internal_error("--pids takes a positive whole number, not '" + *pids + "'");
        request.limits.pids_max = value;
    }
    NPS_TRY_VOID(cgroup::validate_limits(request.limits));
    request.max_runtime_seconds = NPS_TRY(seconds_option(args, "--max-runtime"));
    request.idle_timeout_seconds = NPS_TRY(seconds_option(args, "--idle-timeout"));
    if (auto user = args.value("--user")) {
        unsigned long uid = 0, gid = 0;
        char tail = 0;
        int n = std::sscanf(user->c_str(), "%lu:%lu%c", &uid, &gid, &tail);
        if (n == 1)
            gid = uid;
        if ((n != 1 && n != 2) || uid > 0xfffffffe || gid > 0xfffffffe || (*user)[0] == '-' ||
            user->find_first_not_of("0123456789:") != std::string::npos)
            return internal_error("--user takes UID or UID:GID (numbers), not '" + *user + "'");
        request.sandbox.uid = static_cast<uid_t>(uid);
        request.sandbox.gid = static_cast<gid_t>(gid);
    }
    if (args.flag("--userns") || config.user_namespace) {
        auto first = static_cast<std::uint32_t>(config.userns_first_host_id);
        request.sandbox.user_namespace =
            sandbox::UserNamespace{.host_uid = first, .host_gid = first,
                                   .count = static_cast<std::uint32_t>(config.userns_id_count)};
    }
    if (config.allow_unenforced_limits)
        request.enforcement = cgroup::Enforcement::allow_unenforced;
    return request;
}

}  // namespace

int run(int argc, char** argv, int first)
{
    auto start = start_verb(kSpec, argc, argv, first);
    if (!start.args)
        return start.exit_status;
    const ParsedArgs& args = *start.args;

    auto config_path = args.value("--config");
    auto config = config::load_config(config_path.value_or(config::kDefaultConfigPath), config_path.has_value());
    if (!config) {
        std::fprintf(stderr, "nps-runner run: %s\n", config.error().describe().c_str());
        return kExitUsage;
    }
    auto request = build_request(args, *config);
    if (!request) {
        std::fprintf(stderr, "nps-runner run: %s\n", request.error().describe().c_str());
        return kExitUsage;
    }
    std::shared_ptr<const sandbox::SeccompProgram> seccomp;
    if (!config->seccomp_allow.empty()) {
        auto compiled = sandbox::SeccompProgram::compile(config->seccomp_allow);
        if (!compiled) {
            std::fprintf(stderr, "nps-runner run: %s\n", compiled.error().describe().c_str());
            return kExitUsage;
        }
        seccomp = *compiled;
        request->sandbox.seccomp = seccomp.get();
    }
    return run_attached(std::move(*request));
}

}  // namespace nps::cli
