// SPDX-License-Identifier: Apache-2.0
// `nps-runner run`: one sandboxed process attached to our stdio. This file
// turns the command line into a RunRequest; run_session.cpp runs it.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "nps/base/limits.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"
#include "nps/config/config.hpp"
#include "nps/image/image_store.hpp"
#include "nps/image/image_user.hpp"
#include "nps/image/worker_rootfs.hpp"
#include "nps/sandbox/spawner.hpp"
#include "nps/sandbox/userns.hpp"
#include "nps/spawn/quantity.hpp"
#include "run_session.hpp"

namespace nps::cli {

namespace {

const VerbSpec kSpec{
    "run",
    "--image REF | --rootfs DIR [--memory Q] [--cpu Q] [--pids N] [--disk Q] [--max-runtime S] [--idle-timeout S]\n"
    "       [--network none|host] [--env K=V]... [--hostname H] [--user UID[:GID]]\n"
    "       [--userns | --no-userns] [--entrypoint CMD] [-t] [--state-dir DIR] [--config FILE] [-- CMD [ARGS...]]",
    "Run one command in a sandbox, attached to this terminal.",
    "The command runs as pid 1 of new pid, mount, uts, ipc and cgroup namespaces, behind\n"
    "pivot_root with a fresh /proc, a minimal /dev and a tmpfs /tmp, with no capabilities,\n"
    "no_new_privs and the seccomp filter (plus the config's sandbox.seccomp_allow).\n\n"
    "--image REF: a read-only overlay of the image's layers (from the store in --state-dir,\n"
    "see 'nps-runner image') with a private upper directory removed afterwards. The image's\n"
    "Entrypoint runs with CMD ARGS, or with its Cmd when none are given; its Env, WorkingDir\n"
    "and User apply (--env and --user override them). --entrypoint CMD replaces the\n"
    "Entrypoint (as docker run does: the image's Cmd is then not used; '' clears it), e.g.\n"
    "'--entrypoint /bin/sh' to look around an image.\n"
    "-t gives the command a pseudo-terminal of its own as stdin, stdout, stderr and\n"
    "controlling terminal (job control, ^C), relayed to this one, which is put in raw mode\n"
    "meanwhile: 'nps-runner run -t --image wc:1 --entrypoint /bin/sh' is a shell in the\n"
    "image's sandbox. Never this terminal itself: through it the command could type into\n"
    "this session.\n"
    "--rootfs DIR: a read-only bind of DIR, which must contain /proc, /dev and /tmp; the\n"
    "environment is PATH and HOME plus --env.\n\n"
    "Limits: --memory (swap off), --cpu and --pids put the command in a cgroup beneath this\n"
    "process's own (quantities as Kubernetes writes them: --memory 64Mi, --cpu 500m). Without a\n"
    "flag the daemon's worker defaults apply: [workers] default_memory, default_cpu and\n"
    "default_pids of --config (built in: 512Mi, 1 CPU, 256; a default of 0 leaves that limit\n"
    "off). The flags are not bounded by the [workers] max_* ceilings, which govern SpawnSpecs:\n"
    "run is the operator's own tool. A limit this host cannot enforce is an error unless\n"
    "sandbox.allow_unenforced_limits is set.\n"
    "--disk Q bounds what the command can write: /tmp, /dev/shm and (with --image) the\n"
    "overlay's upper directory share one tmpfs of that size, so together they hold at most Q\n"
    "and a write beyond fails with ENOSPC (default workers.default_disk, 256Mi; at most\n"
    "workers.max_disk, 1Gi). The files are memory: with --memory below Q, a command that fills\n"
    "its disk is OOM-killed before it sees ENOSPC.\n"
    "--max-runtime S ends the command S seconds after it started; --idle-timeout S ends it\n"
    "after S seconds without a byte on its stdout or stderr.\n\n"
    "User namespace (sandbox.user_namespace, default auto: on where the kernel allows it;\n"
    "--userns forces it, --no-userns turns it off): the sandbox's ids 0..N-1 are a host id\n"
    "range of its own (a free slot from sandbox.userns_first_host_id, N = userns_id_count),\n"
    "so even its root is an unprivileged host user; the rootfs is idmapped, so its files keep\n"
    "their owners inside.\n\n"
    "Exit status: the command's, or 128+N when signal N killed it (an OOM kill is 137 and is\n"
    "reported); 124 when a time limit ended it; 125 when the sandbox could not be set up or\n"
    "the command could not be executed. SIGINT, SIGTERM and SIGHUP kill the sandbox.\n\n"
    "",
    {
        {"--image", "REF", "run this image (name or digest) from the image store"},
        {"--rootfs", "DIR", "run in this root filesystem directory instead"},
        {"--entrypoint", "CMD", "run CMD instead of the image's Entrypoint and Cmd (CMD ARGS follow it)"},
        {"-t", nullptr, "give the command a terminal of its own (a pty), for an interactive shell"},
        {"--tty", nullptr, "the same as -t"},
        {"--state-dir", "DIR", "the image store's state directory (default: runner.state_dir, /var/lib/nps-runner)"},
        {"--memory", "Q", "memory limit, e.g. 64Mi or 1G, swap off (default 512Mi, [workers] default_memory)"},
        {"--cpu", "Q", "CPU quota, e.g. 500m (half a CPU) or 2 (default 1, [workers] default_cpu)"},
        {"--pids", "N", "maximum number of processes and threads (default 256, [workers] default_pids)"},
        {"--disk", "Q", "writable space of /tmp, /dev/shm and the image's upper together (default 256Mi, "
                        "workers.default_disk; at most workers.max_disk)"},
        {"--max-runtime", "S", "end the command after S seconds"},
        {"--idle-timeout", "S", "end the command after S seconds without output"},
        {"--network", "MODE", "'none' (default: only loopback) or 'host'"},
        {"--env", "K=V", "add or override an environment variable", true},
        {"--hostname", "NAME", "hostname inside the sandbox (default nps-sandbox)"},
        {"--user", "UID[:GID]", "run as this uid and gid (default 0:0, without any capability)"},
        {"--userns", nullptr, "in a user namespace, or fail (default: sandbox.user_namespace, auto)"},
        {"--no-userns", nullptr, "without a user namespace"},
        {"--config", "FILE", "configuration file (default /etc/nps-runner/config.toml; missing default is fine)"},
    },
    0,
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

struct UserIds {
    uid_t uid;
    gid_t gid;
};

// Sets K=V in `env`, replacing an entry for K.
void set_env(std::vector<std::string>& env, const std::string& entry)
{
    std::string key = entry.substr(0, entry.find('=') + 1);
    std::erase_if(env, [&](const std::string& e) { return e.rfind(key, 0) == 0; });
    env.push_back(entry);
}

Result<UserIds> parse_user(const std::string& user)
{
    unsigned long uid = 0, gid = 0;
    char tail = 0;
    int n = std::sscanf(user.c_str(), "%lu:%lu%c", &uid, &gid, &tail);
    if (n == 1)
        gid = uid;
    if ((n != 1 && n != 2) || uid > 0xfffffffe || gid > 0xfffffffe || user.empty() || user[0] == '-' ||
        user.find_first_not_of("0123456789:") != std::string::npos)
        return internal_error("--user takes UID or UID:GID (numbers), not '" + user + "'");
    return UserIds{static_cast<uid_t>(uid), static_cast<gid_t>(gid)};
}

Result<RunRequest> build_request(const ParsedArgs& args, const config::Config& config)
{
    RunRequest request;
    request.terminal = args.flag("-t") || args.flag("--tty");
    request.sandbox.argv = args.positionals;
    if (auto entrypoint = args.value("--entrypoint"); entrypoint && !entrypoint->empty())
        request.sandbox.argv.insert(request.sandbox.argv.begin(), *entrypoint);
    request.sandbox.env = {sandbox::kDefaultPathEnv, "HOME=/"};
    auto rootfs = args.value("--rootfs");
    if (rootfs.has_value() == args.value("--image").has_value())
        return internal_error("give either --image REF or --rootfs DIR");
    if (rootfs && request.sandbox.argv.empty())
        return internal_error("--rootfs needs a command: -- CMD [ARGS...] (or --entrypoint CMD)");
    if (rootfs)
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
        set_env(request.sandbox.env, entry);
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
    // The daemon's worker defaults where no flag was given (0: none).
    const executor::WorkerPolicy& w = config.workers;
    if (!request.limits.memory_bytes && w.default_memory_bytes > 0)
        request.limits.memory_bytes = w.default_memory_bytes;
    if (!request.limits.cpu_millicores && w.default_cpu_millicores > 0)
        request.limits.cpu_millicores = w.default_cpu_millicores;
    if (!request.limits.pids_max && w.default_pids > 0)
        request.limits.pids_max = w.default_pids;
    NPS_TRY_VOID(cgroup::validate_limits(request.limits));
    request.sandbox.writable.bytes = config.workers.default_disk;
    if (auto disk = args.value("--disk")) {
        std::int64_t bytes = NPS_TRY(spawn::parse_memory_bytes(*disk));
        if (bytes < static_cast<std::int64_t>(limits::kMinWorkerDiskBytes))
            return internal_error("--disk must be at least " + std::to_string(limits::kMinWorkerDiskBytes) +
                                  " bytes (1Mi), not '" + *disk + "'");
        if (static_cast<std::uint64_t>(bytes) > config.workers.max_disk)
            return internal_error("--disk " + *disk + " exceeds workers.max_disk (" +
                                  std::to_string(config.workers.max_disk) + " bytes)");
        request.sandbox.writable.bytes = static_cast<std::uint64_t>(bytes);
    }
    request.max_runtime_seconds = NPS_TRY(seconds_option(args, "--max-runtime"));
    request.idle_timeout_seconds = NPS_TRY(seconds_option(args, "--idle-timeout"));
    if (auto user = args.value("--user")) {
        auto ids = NPS_TRY(parse_user(*user));
        request.sandbox.uid = ids.uid;
        request.sandbox.gid = ids.gid;
    }
    if (args.flag("--userns") && args.flag("--no-userns"))
        return internal_error("give --userns or --no-userns, not both");
    if (config.allow_unenforced_limits)
        request.enforcement = cgroup::Enforcement::allow_unenforced;
    return request;
}

// The image's process: Entrypoint + (the command line's CMD ARGS, else Cmd),
// Env under --env, WorkingDir, User unless --user.
Result<void> apply_image(const ParsedArgs& args, const image::WorkerRootfs& rootfs, RunRequest& request)
{
    const image::ImageConfig& config = rootfs.config();
    request.sandbox.rootfs = rootfs.path();
    request.sandbox.writable.host_dir = rootfs.space_dir();
    std::vector<std::string> argv = config.entrypoint;
    auto tail = args.positionals.empty() ? config.cmd : args.positionals;
    if (auto entrypoint = args.value("--entrypoint")) {
        // As docker run: the image's Entrypoint is replaced ('' clears it)
        // and its Cmd is not used.
        argv = entrypoint->empty() ? std::vector<std::string>{} : std::vector<std::string>{*entrypoint};
        tail = args.positionals;
    }
    argv.insert(argv.end(), tail.begin(), tail.end());
    if (argv.empty())
        return internal_error("the image has neither Entrypoint nor Cmd: give a command after -- (or --entrypoint)");
    request.sandbox.argv = std::move(argv);
    std::vector<std::string> env;
    if (std::none_of(config.env.begin(), config.env.end(), [](const std::string& e) { return e.rfind("PATH=", 0) == 0; }))
        env.emplace_back(sandbox::kDefaultPathEnv);
    env.insert(env.end(), config.env.begin(), config.env.end());
    for (const auto& entry : args.values("--env"))
        set_env(env, entry);
    request.sandbox.env = std::move(env);
    if (!config.working_dir.empty())
        request.sandbox.cwd = config.working_dir;
    if (!args.value("--user")) {
        auto ids = NPS_TRY(image::resolve_image_user(config.user, rootfs.path()));
        request.sandbox.uid = ids.uid;
        request.sandbox.gid = ids.gid;
    }
    return {};
}

std::string run_state_dir(const ParsedArgs& args, const config::Config& config)
{
    return args.value("--state-dir").value_or(config.state_dir);
}

// With the sandbox's user namespace `userns` (when it has one), the image's
// layers are idmapped into it.
Result<std::optional<image::WorkerRootfs>> prepare_image(const ParsedArgs& args, const config::Config& config,
                                                          std::uint64_t disk_bytes,
                                                          const std::optional<sandbox::UserNamespace>& userns,
                                                          std::unique_ptr<image::ImageStore>& store)
{
    auto ref = args.value("--image");
    if (!ref)
        return std::optional<image::WorkerRootfs>{};
    const std::string state_dir = run_state_dir(args, config);
    store = NPS_TRY(image::ImageStore::open({.state_dir = state_dir}));
    remove_dead_leftovers(state_dir, nullptr);
    std::string worker = "run-" + std::to_string(::getpid());
    image::WorkerRootfsRequest request{.ref = *ref,
                                       .worker_dir = state_dir + "/workers/" + worker,
                                       .holder = "nps-runner " + worker,
                                       .disk_bytes = disk_bytes};
    if (userns) {
        request.userns_fd = userns->fd;
        request.userns_root_uid = userns->host_uid;
        request.userns_root_gid = userns->host_gid;
    }
    return std::optional<image::WorkerRootfs>{NPS_TRY(image::prepare_worker_rootfs(*store, request))};
}

// The user namespace `run` uses: the mode (flags over sandbox.user_namespace)
// resolved as the daemon resolves it, and a slot of its own.
struct RunUserns {
    std::unique_ptr<sandbox::UsernsSlots> slots;
    std::optional<sandbox::UsernsLease> lease;
};

Result<void> apply_userns(const ParsedArgs& args, const config::Config& config, RunUserns& userns,
                          RunRequest& request)
{
    sandbox::UsernsMode mode = sandbox::UsernsMode::automatic;
    if (args.flag("--userns") || config.user_namespace == sandbox::UsernsMode::on)
        mode = sandbox::UsernsMode::on;
    if (args.flag("--no-userns") || (!args.flag("--userns") && config.user_namespace == sandbox::UsernsMode::off))
        mode = sandbox::UsernsMode::off;
    // An image's layers are idmapped where they live, in the state directory.
    const bool image = args.value("--image").has_value();
    auto decision = NPS_TRY(sandbox::decide_user_namespace(
        mode,
        sandbox::userns_slots_options(static_cast<std::uint32_t>(config.userns_first_host_id),
                                      static_cast<std::uint32_t>(config.userns_id_count), sandbox::kUsernsLockDir),
        image ? run_state_dir(args, config) + "/workers" : std::string(sandbox::kUsernsLockDir),
        image ? sandbox::RootfsKind::overlay : sandbox::RootfsKind::directory));
    if (!decision.enabled)
        return {};
    userns.slots = std::move(decision.slots);
    userns.lease.emplace(NPS_TRY(userns.slots->acquire()));
    request.sandbox.user_namespace = userns.lease->spec();
    request.sandbox.user_namespace->rootfs_idmapped = image;
    return {};
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
    RunUserns userns;  // the slot is held until the command has ended
    if (auto applied = apply_userns(args, *config, userns, *request); !applied) {
        std::fprintf(stderr, "nps-runner run: %s\n", applied.error().describe().c_str());
        return kExitSandboxFailure;
    }
    // Released after the command ended: the overlay, then the image's pin.
    std::unique_ptr<image::ImageStore> store;
    auto rootfs = prepare_image(args, *config, request->sandbox.writable.bytes, request->sandbox.user_namespace, store);
    if (!rootfs) {
        std::fprintf(stderr, "nps-runner run: %s\n", rootfs.error().describe().c_str());
        return kExitSandboxFailure;
    }
    if (*rootfs) {
        if (auto applied = apply_image(args, **rootfs, *request); !applied) {
            std::fprintf(stderr, "nps-runner run: %s\n", applied.error().describe().c_str());
            return kExitSandboxFailure;
        }
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
    int status = run_attached(std::move(*request));
    if (*rootfs) {
        // The worker directory goes with its overlay; the pin goes last.
        std::string worker_dir = (*rootfs)->path().substr(0, (*rootfs)->path().rfind('/'));
        if (auto released = (*rootfs)->overlay.release(); !released)
            std::fprintf(stderr, "nps-runner run: warning: %s\n", released.error().describe().c_str());
        else if (::rmdir(worker_dir.c_str()) < 0 && errno != ENOENT)  // gone with its space
            std::fprintf(stderr, "nps-runner run: warning: Failed to remove '%s': %s\n", worker_dir.c_str(),
                         std::strerror(errno));
    }
    return status;
}

}  // namespace nps::cli
