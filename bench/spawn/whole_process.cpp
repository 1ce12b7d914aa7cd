// SPDX-License-Identifier: Apache-2.0
// bench-spawn, part 2: whole processes, each started by fork+execve from
// this process and timed to its waitpid, on the same busybox rootfs:
//
//   nps-runner run --rootfs R -- /bin/true                 (the target's subject)
//   nps-runner run --rootfs R --memory .. --cpu .. --pids .. -- /bin/true
//                                                          (with a cgroup, as crun makes one)
//   nps-runner version                                     (start-up and exit alone)
//   crun run --bundle B ID                                 (config.json from `crun spec`:
//                                                          args /bin/true, root R read-only,
//                                                          terminal false)
//   unshare -m sh -c 'mount -t tmpfs tmpfs /sys/fs/cgroup/unified && exec crun run ...'
//                                                          (hybrid hosts: the wrapper a user types)
//   bwrap --ro-bind R / --proc /proc --dev /dev --unshare-all /bin/true
//   unshare -fpmnuiC --mount-proc=/proc -R R /bin/true     (util-linux: chroot by -R)
//   R/bin/true                                             (plain fork/exec)
//
// crun 1.8 refuses a hybrid host ("cgroups in hybrid mode not supported");
// with a tmpfs over /sys/fs/cgroup/unified it sees a legacy (v1) host and
// works. The plain `crun run` row runs in a mount namespace prepared that
// way once (the child joins it with setns before execve), so it is timed
// without the wrapper's unshare, sh and mount; the wrapped row shows what
// the wrapper adds.
//
// The contenders run interleaved, one of each per round in a rotating order.
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench_spawn.hpp"

namespace bench_spawn {

namespace {

constexpr const char* kIdMark = "@ID@";  // replaced by a fresh container id per launch

struct Contender {
    std::string key;
    std::string label;
    std::vector<std::string> argv;  // argv[0] is an absolute path
    int mount_ns = -1;              // joined before execve when set
    std::string skip;               // why it does not run, when it does not
    std::vector<double> samples;
    std::vector<double> cpu;
};

std::string find_program(const std::string& name)
{
    for (const char* dir : {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
        std::string path = std::string(dir) + "/" + name;
        if (::access(path.c_str(), X_OK) == 0)
            return path;
    }
    return "";
}

std::string shell_words(const std::vector<std::string>& argv)
{
    std::string out;
    for (const auto& a : argv) {
        if (!out.empty())
            out += ' ';
        bool plain = a.find_first_of(" '\"&|;$") == std::string::npos && !a.empty();
        out += plain ? a : "'" + a + "'";
    }
    return out;
}

struct Launch {
    int status = 0;
    double ms = 0;
    double cpu_ms = 0;  // user + system of the process and the children it reaped (wait4)
};

// fork, (setns,) execve, waitpid; stdin and stdout on /dev/null, stderr to
// `stderr_fd`. Only the fork..waitpid span is timed.
Launch launch(const Contender& c, int serial, int devnull, int stderr_fd)
{
    std::vector<std::string> args = c.argv;
    const std::string id = "bench-spawn-" + std::to_string(::getpid()) + "-" + std::to_string(serial);
    for (auto& a : args) {
        for (auto at = a.find(kIdMark); at != std::string::npos; at = a.find(kIdMark))
            a.replace(at, std::string(kIdMark).size(), id);
    }
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    static char* const kEnv[] = {const_cast<char*>("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
                                 nullptr};

    Launch result;
    double t0 = now_ms();
    pid_t pid = ::fork();
    if (pid < 0)
        die_errno("fork failed");
    if (pid == 0) {
        if (c.mount_ns >= 0 && ::setns(c.mount_ns, CLONE_NEWNS) < 0)
            ::_exit(126);
        ::dup2(devnull, 0);
        ::dup2(devnull, 1);
        ::dup2(stderr_fd, 2);
        ::execve(argv[0], argv.data(), kEnv);
        ::_exit(127);
    }
    rusage ru{};
    while (::wait4(pid, &result.status, 0, &ru) < 0) {
        if (errno != EINTR)
            die_errno("wait4 failed");
    }
    result.ms = now_ms() - t0;
    result.cpu_ms = cpu_ms(ru);
    return result;
}

// config.json from `crun spec`, edited: /bin/true, the rootfs read-only, no terminal.
std::string make_bundle(const std::string& crun, const std::string& dir, const std::string& rootfs)
{
    std::filesystem::create_directories(dir);
    pid_t pid = ::fork();
    if (pid == 0) {
        if (::chdir(dir.c_str()) < 0)
            ::_exit(126);
        ::execl(crun.c_str(), crun.c_str(), "spec", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return "'crun spec' failed";
    const std::string path = dir + "/config.json";
    nlohmann::json config;
    try {
        std::ifstream(path) >> config;
        config["process"]["args"] = {"/bin/true"};
        config["process"]["terminal"] = false;
        config["root"] = {{"path", rootfs}, {"readonly", true}};
        std::ofstream(path) << config.dump(1) << "\n";
    } catch (const std::exception& e) {
        return std::string("cannot edit ") + path + ": " + e.what();
    }
    return "";
}

std::string first_line(const std::string& path)
{
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

}  // namespace

void run_whole_process(const Options& options, const std::string& rootfs, const std::string& work_dir,
                       int crun_mount_ns)
{
    const std::string crun = find_program("crun"), bwrap = find_program("bwrap"), unshare = find_program("unshare"),
                      sh = find_program("sh");
    const std::string bundle = work_dir + "/bundle";
    std::vector<Contender> cs;

    Contender nps{"nps", "nps-runner run", {options.runner, "run", "--rootfs", rootfs, "--", "/bin/true"}};
    if (::access(options.runner.c_str(), X_OK) != 0)
        nps.skip = "no nps-runner at " + options.runner + " (--runner PATH)";
    cs.push_back(nps);
    Contender limited{"nps+cg",
                      "nps-runner run + cgroup limits",
                      {options.runner, "run", "--rootfs", rootfs, "--memory", "256Mi", "--cpu", "1", "--pids", "64",
                       "--", "/bin/true"}};
    limited.skip = nps.skip;
    cs.push_back(limited);
    // The floor under both: process start-up (dynamic loading of every
    // library the binary links) and exit, with no sandbox.
    Contender version{"nps-ver", "nps-runner version (start-up)", {options.runner, "version"}};
    version.skip = nps.skip;
    cs.push_back(version);

    Contender crun_run{"crun", "crun run", {crun, "run", "--bundle", bundle, kIdMark}, crun_mount_ns};
    Contender crun_wrapped{"crun-sh",
                           "crun run in unshare+sh+mount",
                           {unshare, "-m", sh, "-c",
                            "mount -t tmpfs tmpfs /sys/fs/cgroup/unified && exec " + crun + " run --bundle " + bundle +
                                " " + kIdMark}};
    if (crun.empty()) {
        crun_run.skip = crun_wrapped.skip = "crun is not installed";
    } else if (std::string why = make_bundle(crun, bundle, rootfs); !why.empty()) {
        crun_run.skip = crun_wrapped.skip = why;
    }
    if (crun_mount_ns < 0)
        crun_wrapped.skip = "not a hybrid cgroup host: crun runs as it is";
    else if (unshare.empty() || sh.empty())
        crun_wrapped.skip = "no unshare or sh";
    cs.push_back(crun_run);
    cs.push_back(crun_wrapped);

    Contender bw{"bwrap", "bwrap", {bwrap, "--ro-bind", rootfs, "/", "--proc", "/proc", "--dev", "/dev",
                                    "--unshare-all", "/bin/true"}};
    if (bwrap.empty())
        bw.skip = "bwrap is not installed";
    cs.push_back(bw);
    Contender us{"unshare", "unshare + chroot (-R)",
                 {unshare, "-fpmnuiC", "--mount-proc=/proc", "-R", rootfs, "/bin/true"}};
    if (unshare.empty())
        us.skip = "unshare is not installed";
    cs.push_back(us);
    cs.push_back({"fork", "plain fork/exec of R/bin/true", {rootfs + "/bin/true"}});

    int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0)
        die_errno("Failed to open /dev/null");
    // A first run of each, its stderr kept: a contender that fails here is skipped with its message.
    const std::string err_path = work_dir + "/stderr";
    for (auto& c : cs) {
        if (!c.skip.empty())
            continue;
        int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        Launch l = launch(c, -1, devnull, err);
        ::close(err);
        if (!WIFEXITED(l.status) || WEXITSTATUS(l.status) != 0)
            c.skip = "failed (wait status " + std::to_string(l.status) + "): " + first_line(err_path);
    }

    std::printf("\nwhole process, %d rounds after %d warm-up, contenders interleaved (fork+execve+waitpid from here); "
                "R = %s\n",
                options.iterations, options.warmup, rootfs.c_str());
    for (const auto& c : cs) {
        std::printf("  %-8s %s%s\n", c.key.c_str(), shell_words(c.argv).c_str(),
                    c.mount_ns >= 0 ? "   [in a mount namespace with tmpfs over /sys/fs/cgroup/unified]" : "");
        if (!c.skip.empty())
            std::printf("           SKIPPED: %s\n", c.skip.c_str());
    }
    std::fflush(stdout);

    std::vector<Contender*> running;
    for (auto& c : cs)
        if (c.skip.empty())
            running.push_back(&c);
    const int n = static_cast<int>(running.size());
    int serial = 0;
    for (int round = 0; round < options.warmup + options.iterations; ++round) {
        for (int k = 0; k < n; ++k) {
            Contender& c = *running[static_cast<std::size_t>((round + k) % n)];
            int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            Launch l = launch(c, serial++, devnull, err);
            ::close(err);
            if (!WIFEXITED(l.status) || WEXITSTATUS(l.status) != 0)
                die(c.key + " failed in round " + std::to_string(round) + " (wait status " +
                    std::to_string(l.status) + "): " + first_line(err_path));
            if (round >= options.warmup) {
                c.samples.push_back(l.ms);
                c.cpu.push_back(l.cpu_ms);
            }
        }
    }
    ::close(devnull);

    const Contender& ref = cs[0];
    const Stats r = summarise(ref.samples), r_cpu = summarise(ref.cpu);
    std::printf("wall ms:%-33s%s  cpu mean   x nps: median    p99 cpu mean\n", "", stats_header().c_str());
    for (const auto& c : cs) {
        if (!c.skip.empty())
            continue;
        Stats s = summarise(c.samples), cpu = summarise(c.cpu);
        std::printf("  %-8s %-31s%s %9.3f", c.key.c_str(), c.label.c_str(), format_stats(s).c_str(), cpu.mean);
        if (ref.skip.empty())
            std::printf(" %13.2fx %6.2fx %7.2fx", s.median / r.median, s.p99 / r.p99, cpu.mean / r_cpu.mean);
        std::printf("\n");
    }
    if (!ref.skip.empty()) {
        std::printf("targets: not evaluated (nps-runner skipped)\n");
        return;
    }
    auto ratio = [&](const char* key) -> double {
        for (const auto& c : cs)
            if (c.key == key && c.skip.empty())
                return summarise(c.samples).median / r.median;
        return 0;
    };
    double crun_ratio = ratio("crun"), bwrap_ratio = ratio("bwrap");
    if (crun_ratio > 0)
        std::printf("target (DESIGN §5): crun run / nps-runner run, median: %.2fx >= 3: %s\n", crun_ratio,
                    crun_ratio >= 3 ? "met" : "MISSED");
    else
        std::printf("target (DESIGN §5): crun vs nps-runner not evaluated (crun skipped)\n");
    if (bwrap_ratio > 0)
        std::printf("target (DESIGN §5): bwrap / nps-runner run, median: %.2fx > 1: %s\n", bwrap_ratio,
                    bwrap_ratio > 1 ? "met" : "MISSED");
    else
        std::printf("target (DESIGN §5): bwrap vs nps-runner not evaluated (bwrap skipped)\n");
    std::fflush(stdout);
}

}  // namespace bench_spawn
