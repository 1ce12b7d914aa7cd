// SPDX-License-Identifier: Apache-2.0
// bench-lifecycle: what the supervisor's lifecycle enforcement costs and how
// late it is (DESIGN §5: breach → worker dead and node FAILED within 20 ms
// p99 of the deadline; 500 supervised sleeping workers cost < 2% of a core).
//
// 1. Enforcement lateness. --breaches sandboxed `sleep 1000` workers (busybox
//    rootfs, the shared loopback network namespace, per-worker cgroups when
//    the host has them), --batch at a time,
//    each with a --limit-ms limit: first max_runtime, then idle_timeout.
//    Lateness = the moment the outcome is built (worker killed, reaped,
//    FAILED) minus the deadline (spawn + limit). Peer, same run, same batch
//    shape: coreutils `timeout -s KILL <limit> sleep 1000`, one supervising
//    process per worker, lateness = its reaping by waitpid minus (spawn +
//    limit); it needs no sandbox and no cgroup, so it is the floor of a
//    timer-per-worker design. The reference runner's 5 s monitor tick is
//    shown as the model it implies (uniform lateness in [0, 5 s]).
// 2. Supervision overhead. --sleepers sandboxed `sleep 3600` workers with a
//    max_runtime of 2 h; after they all run, this process's CPU time (user +
//    system) over --window seconds, its loop wakeups, and its RSS before the
//    workers and with them. Peer, same run: as many `timeout 3600 sleep 3600`
//    processes, their summed CPU over the same window and summed RSS.
//
// usage: bench-lifecycle [--breaches N] [--batch K] [--limit-ms M] [--sleepers N]
//                        [--window S] [--no-cgroups]
// Needs root, namespaces and /bin/busybox (busybox-static); exits 77 without.
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "nps/cgroup/delegation.hpp"
#include "nps/cgroup/mode.hpp"
#include "nps/sandbox/loopback_netns.hpp"
#include "nps/supervisor/supervisor.hpp"

extern char** environ;

namespace {

using namespace nps::supervisor;
using Ms = std::chrono::duration<double, std::milli>;

struct Options {
    int breaches = 100;
    int batch = 10;
    int limit_ms = 200;
    int sleepers = 500;
    int window_s = 10;
    bool cgroups = true;
};

[[noreturn]] void die(const std::string& what)
{
    std::cerr << "bench-lifecycle: " << what << "\n";
    std::exit(1);
}

double cpu_s()
{
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const auto s = [](timeval tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
    return s(ru.ru_utime) + s(ru.ru_stime);
}

long status_kib(pid_t pid, const char* key)
{
    std::ifstream in("/proc/" + (pid ? std::to_string(pid) : std::string("self")) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key, 0) == 0)
            return std::stol(line.substr(std::strlen(key)));
    return 0;
}

// utime + stime of a process, seconds.
double process_cpu_s(pid_t pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    std::getline(in, text);
    auto close = text.rfind(')');
    if (close == std::string::npos)
        return 0;
    std::istringstream fields(text.substr(close + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; fields >> field; ++i) {
        if (i == 14 || i == 15)
            ticks += std::stod(field);
        if (i == 15)
            break;
    }
    return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double percentile(std::vector<double> v, double p)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size())));
    return v[i];
}

std::string summary(const std::vector<double>& ms)
{
    char out[160];
    std::snprintf(out, sizeof out, "p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  (n=%zu)", percentile(ms, 50),
                  percentile(ms, 99), ms.empty() ? 0.0 : *std::max_element(ms.begin(), ms.end()), ms.size());
    return out;
}

std::string make_rootfs()
{
    char pattern[] = "/tmp/bench-lifecycle-XXXXXX";
    if (!::mkdtemp(pattern))
        die("mkdtemp failed");
    namespace fs = std::filesystem;
    const std::string root = pattern;
    for (const char* sub : {"bin", "proc", "dev", "tmp"})
        fs::create_directories(root + "/" + sub);
    fs::copy_file("/bin/busybox", root + "/bin/busybox");
    for (const char* applet : {"sh", "sleep"})
        fs::create_symlink("busybox", root + "/bin/" + applet);
    ::chmod(root.c_str(), 0755);
    return root;
}

std::string unavailable_reason()
{
    if (::geteuid() != 0)
        return "not running as root";
    if (::access("/bin/busybox", X_OK) != 0)
        return "no /bin/busybox (install busybox-static)";
    if (::access("/usr/bin/timeout", X_OK) != 0)
        return "no /usr/bin/timeout (coreutils), the peer";
    return "";
}

nlohmann::json delegate_frame(int n)
{
    return {{"parent_task_id", "bench"}, {"subtask_id", "s-" + std::to_string(n)}, {"node_id", "n"},
            {"target_agent_nid", "urn:nps:agent:bench:w"}, {"action", "nwp://bench/act"},
            {"deadline_at", "2030-01-01T00:00:00Z"}};
}

struct Bench {
    std::unique_ptr<nps::event::EventLoop> loop;
    std::unique_ptr<Supervisor> supervisor;
    std::map<WorkerId, WorkerOutcome> outcomes;
    std::string rootfs;
    int netns_fd = -1;  // the shared loopback namespace, as the daemon will use it

    WorkerId start(const std::string& program_arg, std::optional<std::chrono::milliseconds> max,
                   std::optional<std::chrono::milliseconds> idle, int n)
    {
        WorkerSpec spec;
        spec.sandbox = {.rootfs = rootfs, .argv = {"/bin/sleep", program_arg}, .env = {"PATH=/bin"},
                        .netns_fd = netns_fd};
        spec.max_runtime = max;
        spec.idle_timeout = idle;
        spec.delegate_frame = delegate_frame(n);
        auto id = supervisor->start(std::move(spec), {.on_outcome = [this](const WorkerOutcome& o) {
                                                          outcomes[o.id] = o;
                                                      }});
        if (!id)
            die(id.error().describe());
        return *id;
    }

    void run_until(const std::function<bool()>& done)
    {
        while (!done())
            if (auto r = loop->run_once(std::chrono::milliseconds(1000)); !r)
                die(r.error().describe());
    }
};

struct Lateness {
    std::vector<double> total;     // deadline → outcome (killed, reaped, FAILED)
    std::vector<double> detect;    // deadline → SIGKILL sent
    std::vector<double> teardown;  // SIGKILL sent → reaped and outcome built
};

Lateness supervisor_lateness(Bench& b, const Options& opt, bool idle)
{
    Lateness lateness;
    const auto limit = std::chrono::milliseconds(opt.limit_ms);
    int n = 0;
    while (n < opt.breaches) {
        std::vector<WorkerId> ids;
        for (int i = 0; i < opt.batch && n < opt.breaches; ++i, ++n)
            ids.push_back(idle ? b.start("1000", std::nullopt, limit, n) : b.start("1000", limit, std::nullopt, n));
        b.run_until([&] {
            return std::all_of(ids.begin(), ids.end(), [&](WorkerId id) { return b.outcomes.count(id) > 0; });
        });
        for (WorkerId id : ids) {
            const WorkerOutcome& o = b.outcomes.at(id);
            const char* expected = idle ? "NOP-RUNTIME-IDLE-TIMEOUT" : "NOP-RUNTIME-MAX-RUNTIME";
            if (o.error_code != expected)
                die("worker " + std::to_string(id) + " ended with '" + o.error_code + "': " + o.error_message);
            const auto deadline = o.started + limit;
            lateness.total.push_back(Ms(o.ended - deadline).count());
            lateness.detect.push_back(Ms(o.killed - deadline).count());
            lateness.teardown.push_back(Ms(o.ended - o.killed).count());
        }
    }
    return lateness;
}

pid_t spawn_process(const std::vector<std::string>& args)
{
    std::vector<char*> argv;
    for (const auto& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (int err = ::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ); err != 0)
        die("posix_spawn " + args[0] + ": " + std::strerror(err));
    return pid;
}

std::vector<double> timeout_lateness(const Options& opt)
{
    std::vector<double> lateness;
    char limit[32];
    std::snprintf(limit, sizeof limit, "%.3f", opt.limit_ms / 1000.0);
    int n = 0;
    while (n < opt.breaches) {
        std::map<pid_t, std::chrono::steady_clock::time_point> started;
        for (int i = 0; i < opt.batch && n < opt.breaches; ++i, ++n) {
            const auto t = std::chrono::steady_clock::now();
            started[spawn_process({"/usr/bin/timeout", "-s", "KILL", limit, "/bin/busybox", "sleep", "1000"})] = t;
        }
        while (!started.empty()) {
            int status = 0;
            pid_t pid = ::waitpid(-1, &status, 0);
            if (pid < 0)
                die("waitpid failed");
            const auto now = std::chrono::steady_clock::now();
            auto it = started.find(pid);
            if (it == started.end())
                continue;
            lateness.push_back(Ms(now - (it->second + std::chrono::milliseconds(opt.limit_ms))).count());
            started.erase(it);
        }
    }
    return lateness;
}

void sleepers(Bench& b, const Options& opt)
{
    const long rss_before = status_kib(0, "VmRSS:");
    std::vector<WorkerId> ids;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < opt.sleepers; ++i)
        ids.push_back(b.start("3600", std::chrono::hours(2), std::nullopt, i));
    b.run_until([&] { return b.supervisor->queued() == 0; });
    const double start_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (static_cast<int>(b.supervisor->running()) != opt.sleepers)
        die("only " + std::to_string(b.supervisor->running()) + " sleepers are running; " +
            std::to_string(b.outcomes.size()) + " ended (first: " +
            (b.outcomes.empty() ? std::string("-") : b.outcomes.begin()->second.error_message) + ")");
    (void)b.loop->run_once(std::chrono::milliseconds(1000));  // settle

    const long rss_with = status_kib(0, "VmRSS:");
    const double cpu0 = cpu_s();
    const auto wake0 = b.loop->wakeups();
    const auto w0 = std::chrono::steady_clock::now();
    const auto until = w0 + std::chrono::seconds(opt.window_s);
    while (std::chrono::steady_clock::now() < until) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        (void)b.loop->run_once(std::max(left, std::chrono::milliseconds(1)));
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    const double cpu = cpu_s() - cpu0;
    const auto wakeups = b.loop->wakeups() - wake0;
    std::printf("  nps-runner: %d sandboxed sleepers started in %.2f s; over %.1f s: CPU %.3f s = %.3f %% of a core, "
                "%llu loop wakeups\n",
                opt.sleepers, start_s, wall, cpu, 100.0 * cpu / wall, static_cast<unsigned long long>(wakeups));
    std::printf("              RSS %ld KiB before the workers, %ld KiB with them (+%.1f KiB per worker)\n",
                rss_before, rss_with, static_cast<double>(rss_with - rss_before) / opt.sleepers);
    const double ours_pct = 100.0 * cpu / wall;

    // Stop them (the destructor path: cgroup kill, SIGKILL, reap).
    const auto k0 = std::chrono::steady_clock::now();
    b.supervisor.reset();
    std::printf("              teardown (kill + reap + cgroup removal of all) %.2f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - k0).count());

    // Peer: one coreutils timeout per worker.
    std::vector<pid_t> pids;
    for (int i = 0; i < opt.sleepers; ++i)
        pids.push_back(spawn_process({"/usr/bin/timeout", "3600", "/bin/busybox", "sleep", "3600"}));
    ::usleep(1'000'000);
    long peer_rss = 0;
    double peer_cpu0 = 0;
    for (pid_t pid : pids) {
        peer_rss += status_kib(pid, "VmRSS:");
        peer_cpu0 += process_cpu_s(pid);
    }
    const auto p0 = std::chrono::steady_clock::now();
    ::usleep(static_cast<useconds_t>(opt.window_s) * 1'000'000);
    const double peer_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - p0).count();
    double peer_cpu = 0;
    for (pid_t pid : pids)
        peer_cpu += process_cpu_s(pid);
    peer_cpu -= peer_cpu0;
    // SIGTERM: timeout passes it on to its sleep and exits after it.
    for (pid_t pid : pids)
        ::kill(pid, SIGTERM);
    for (pid_t pid : pids)
        ::waitpid(pid, nullptr, 0);
    std::printf("  peer (coreutils timeout per worker): %d processes; over %.1f s: CPU %.3f s = %.3f %% of a core; "
                "RSS of the timeout processes %ld KiB (%.1f KiB each)\n",
                opt.sleepers, peer_wall, peer_cpu, 100.0 * peer_cpu / peer_wall, peer_rss,
                static_cast<double>(peer_rss) / opt.sleepers);
    std::printf("  ratio RSS (nps-runner total / peer total): %.3f; target CPU < 2 %%: %s\n",
                static_cast<double>(rss_with) / static_cast<double>(std::max(peer_rss, 1L)),
                ours_pct < 2.0 ? "met" : "MISSED");
}

}  // namespace

int main(int argc, char** argv)
{
    Options opt;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> int {
            if (i + 1 >= argc)
                die(a + " needs a value");
            return std::atoi(argv[++i]);
        };
        if (a == "--breaches")
            opt.breaches = next();
        else if (a == "--batch")
            opt.batch = next();
        else if (a == "--limit-ms")
            opt.limit_ms = next();
        else if (a == "--sleepers")
            opt.sleepers = next();
        else if (a == "--window")
            opt.window_s = next();
        else if (a == "--no-cgroups")
            opt.cgroups = false;
        else {
            std::cerr << "usage: bench-lifecycle [--breaches N] [--batch K] [--limit-ms M] [--sleepers N] "
                         "[--window S] [--no-cgroups]\n";
            return a == "--help" ? 0 : 2;
        }
    }
    if (auto why = unavailable_reason(); !why.empty()) {
        std::printf("bench-lifecycle: skipped: %s\n", why.c_str());
        return 77;
    }

    std::optional<nps::cgroup::CgroupBase> base;
    if (opt.cgroups) {
        auto layout = nps::cgroup::detect_cgroup_layout();
        if (layout && layout->mode != nps::cgroup::CgroupMode::none) {
            auto prepared = nps::cgroup::prepare_cgroup_base(*layout);
            if (!prepared)
                die(prepared.error().describe());
            base = *prepared;
        }
    }
    const std::string rootfs = make_rootfs();
    auto netns = nps::sandbox::LoopbackNetns::create();
    if (!netns)
        die(netns.error().describe());
    auto make_bench = [&](std::size_t max_concurrent) {
        Bench b;
        b.rootfs = rootfs;
        b.netns_fd = netns->fd();
        auto loop = nps::event::EventLoop::create();
        if (!loop)
            die(loop.error().describe());
        b.loop = std::move(*loop);
        SupervisorOptions options;
        options.max_concurrent = max_concurrent;
        options.cgroup_base = base ? &*base : nullptr;
        options.name_prefix = "bench";
        auto s = Supervisor::create(*b.loop, options);
        if (!s)
            die(s.error().describe());
        b.supervisor = std::move(*s);
        return b;
    };

    char load[64] = {};
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
        if (!std::fgets(load, sizeof load, f))
            load[0] = '\0';
        std::fclose(f);
    }
    std::printf("bench-lifecycle: %d breaches per kind in batches of %d, limit %d ms; %d sleepers over %d s; "
                "cgroups: %s; load average %.14s\n",
                opt.breaches, opt.batch, opt.limit_ms, opt.sleepers, opt.window_s,
                base ? std::string(base->summary()).c_str() : "none", load);

    {
        Bench b = make_bench(static_cast<std::size_t>(opt.batch));
        std::printf("enforcement lateness (breach deadline → worker killed, reaped, node FAILED):\n");
        auto max_l = supervisor_lateness(b, opt, false);
        std::printf("  nps-runner max_runtime   %s\n", summary(max_l.total).c_str());
        std::printf("    of which deadline → SIGKILL sent  %s\n", summary(max_l.detect).c_str());
        std::printf("    of which SIGKILL → reaped, FAILED %s\n", summary(max_l.teardown).c_str());
        auto idle_l = supervisor_lateness(b, opt, true);
        std::printf("  nps-runner idle_timeout  %s\n", summary(idle_l.total).c_str());
        std::printf("    of which deadline → SIGKILL sent  %s\n", summary(idle_l.detect).c_str());
        std::printf("    of which SIGKILL → reaped, FAILED %s\n", summary(idle_l.teardown).c_str());
        const auto& max_ms = max_l.total;
        const auto& idle_ms = idle_l.total;
        auto peer = timeout_lateness(opt);
        std::printf("  peer: timeout -s KILL    %s\n", summary(peer).c_str());
        std::printf("  model: reference runner, 5 s monitor tick: p50 2500 ms, p99 4950 ms\n");
        std::vector<double> all = max_ms;
        all.insert(all.end(), idle_ms.begin(), idle_ms.end());
        std::printf("  ratio p99 (nps-runner / timeout): %.2f; vs the 5 s tick model: 1/%.0f; target p99 <= 20 ms: %s\n",
                    percentile(all, 99) / std::max(percentile(peer, 99), 0.001),
                    4950.0 / std::max(percentile(all, 99), 0.001), percentile(all, 99) <= 20.0 ? "met" : "MISSED");
    }
    {
        Bench b = make_bench(static_cast<std::size_t>(opt.sleepers));
        std::printf("supervision overhead, %d sleeping workers:\n", opt.sleepers);
        sleepers(b, opt);
    }
    std::filesystem::remove_all(rootfs);
    return 0;
}
