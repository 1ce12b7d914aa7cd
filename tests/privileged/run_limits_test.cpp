// SPDX-License-Identifier: Apache-2.0
// `nps-runner run` with cgroup and time limits, on this host's real cgroups.
#include <doctest/doctest.h>

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "nps/cgroup/mode.hpp"
#include "sandbox_rootfs.hpp"
#include "text_contains.hpp"

using nps::test::run_sh;

namespace {

using nps::test::contains;

// Entries named run-<pid> beneath this process's own cgroups (each
// hierarchy) whose `nps-runner run` has ended: what a run left behind. A
// live pid's group is another test's run, going on beside this one.
std::vector<std::string> leftover_run_groups()
{
    std::vector<std::string> found;
    auto layout = nps::cgroup::detect_cgroup_layout();
    if (!layout)
        return found;
    std::vector<std::string> dirs;
    if (!layout->unified_own_dir.empty())
        dirs.push_back(layout->unified_own_dir);
    for (const auto& h : layout->v1)
        dirs.push_back(h.own_dir);
    for (const auto& dir : dirs) {
        DIR* d = ::opendir(dir.c_str());
        if (!d)
            continue;
        while (dirent* e = ::readdir(d)) {
            std::string name = e->d_name;
            if (name.rfind("run-", 0) != 0)
                continue;
            const pid_t pid = static_cast<pid_t>(std::atoi(name.c_str() + 4));
            if (pid > 0 && ::kill(pid, 0) == 0)
                continue;
            found.push_back(dir + "/" + name);
        }
        ::closedir(d);
    }
    return found;
}

bool has_memory_limits()
{
    auto layout = nps::cgroup::detect_cgroup_layout();
    return layout && layout->mode != nps::cgroup::CgroupMode::none;
}

}  // namespace

TEST_CASE("run --memory: a hog is OOM-killed, reported, and exits 137")
{
    if (!has_memory_limits()) {
        MESSAGE("no cgroups on this host; covered by the allow_unenforced case");
        return;
    }
    auto r = run_sh("x=$(head -c 200000000 /dev/zero | tr '\\0' x); echo survived", {"--memory", "32Mi"});
    CHECK(r.exit_status == 137);
    CHECK(!contains(r.out, "survived"));
    CHECK(contains(r.err, "OOM killer"));
    CHECK(leftover_run_groups().empty());
}

TEST_CASE("run --pids: forks stop at the limit")
{
    // busybox sh gives up at the first failed fork, saying so.
    const std::string script = "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do sleep 5 & done; "
                                "echo all-started";
    auto limited = run_sh(script, {"--pids", "8", "--max-runtime", "30"});
    CHECK(limited.exit_status != 0);
    CHECK(contains(limited.err, "can't fork: Resource temporarily unavailable"));
    CHECK(!contains(limited.out, "all-started"));

    auto roomy = run_sh(script, {"--pids", "64", "--max-runtime", "30"});
    CHECK(roomy.exit_status == 0);
    CHECK(contains(roomy.out, "all-started"));
    CHECK(leftover_run_groups().empty());
}

TEST_CASE("run with limits: the command sits at the root of its own cgroup namespace")
{
    auto r = run_sh("cat /proc/self/cgroup", {"--memory", "64Mi", "--cpu", "250m", "--pids", "32"});
    REQUIRE(r.exit_status == 0);
    std::istringstream lines(r.out);
    std::string line;
    int count = 0;
    while (std::getline(lines, line)) {
        ++count;
        CHECK_MESSAGE(line.substr(line.rfind(':') + 1) == "/", line);
    }
    CHECK(count >= 1);
    CHECK(leftover_run_groups().empty());
}

TEST_CASE("run --max-runtime ends the command and everything it started, exit 124")
{
    auto r = run_sh("sleep 100 & sleep 100", {"--max-runtime", "1", "--pids", "16"});
    CHECK(r.exit_status == 124);
    CHECK(contains(r.err, "maximum runtime of 1 s"));
    CHECK(leftover_run_groups().empty());
}

TEST_CASE("run --idle-timeout: silence ends the command; output keeps it alive")
{
    auto idle = run_sh("echo first; sleep 100", {"--idle-timeout", "1"});
    CHECK(idle.exit_status == 124);
    CHECK(idle.out == "first\n");
    CHECK(contains(idle.err, "no output for 1 s"));

    auto chatty = run_sh("for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo $i >&2; sleep 0.25; done; echo done",
                         {"--idle-timeout", "3"});
    CHECK(chatty.exit_status == 0);
    CHECK(chatty.out == "done\n");
    CHECK(contains(chatty.err, "12\n"));
}

TEST_CASE("run's output is relayed in full when it is watched for idleness")
{
    auto r = run_sh("i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done; echo end >&2; exit 3",
                    {"--idle-timeout", "10"});
    CHECK(r.exit_status == 3);
    CHECK(contains(r.out, "line-0\n"));
    CHECK(contains(r.out, "line-1999\n"));
    CHECK(r.err == "end\n");
}

TEST_CASE("run refuses bad limits before starting anything")
{
    struct Case {
        std::vector<std::string> args;
        std::string message;
    } cases[] = {
        {{"--cpu", "5m"}, "below the kernel's minimum"},
        {{"--memory", "lots"}, "lots"},
        {{"--pids", "0"}, "--pids takes a positive whole number"},
        {{"--max-runtime", "0"}, "--max-runtime takes whole seconds"},
        {{"--idle-timeout", "-1"}, "--idle-timeout takes whole seconds"},
    };
    for (const auto& c : cases) {
        auto r = run_sh("echo ran", c.args);
        CHECK_MESSAGE(r.exit_status == 2, c.args.front());
        CHECK_MESSAGE(contains(r.err, c.message), r.err);
        CHECK(!contains(r.out, "ran"));
    }
}

TEST_CASE("sandbox.seccomp_allow extends the filter; bad names are refused")
{
    nps::test::TempDir dir("nps-run-config");
    nps::test::write_file(dir.file("bad.toml"), "[sandbox]\nseccomp_allow = [\"no_such_call\"]\n");
    auto bad = run_sh("echo ran", {"--config", dir.file("bad.toml")});
    CHECK(bad.exit_status == 2);
    CHECK(contains(bad.err, "'no_such_call' is not a system call"));

    nps::test::write_file(dir.file("clone3.toml"), "[sandbox]\nseccomp_allow = [\"clone3\"]\n");
    auto clone3 = run_sh("echo ran", {"--config", dir.file("clone3.toml")});
    CHECK(clone3.exit_status == 2);
    CHECK(contains(clone3.err, "'clone3' keeps its built-in rule"));

    // sethostname is refused by the default filter (and by the dropped
    // CAP_SYS_ADMIN): allowing the call changes the error from seccomp's
    // EPERM to the capability check's EPERM, so look at the filter itself.
    nps::test::write_file(dir.file("ok.toml"), "[sandbox]\nseccomp_allow = [\"syslog\"]\n");
    auto ok = run_sh("grep Seccomp: /proc/self/status", {"--config", dir.file("ok.toml")});
    CHECK(ok.exit_status == 0);
    CHECK(contains(ok.out, "Seccomp:\t2"));
}

namespace {

// Starts background sleepers until fork fails, printing the count: the
// last number printed is how many processes the limit allowed besides sh.
const std::string kForkBomb =
    "n=0; while [ $n -lt 3000 ]; do sleep 30 & n=$((n+1)); echo $n; done; echo all-started";

long last_count(const std::string& out)
{
    std::istringstream lines(out);
    long last = 0;
    for (std::string line; std::getline(lines, line);)
        if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos)
            last = std::stol(line);
    return last;
}

// A string doubling in awk: 256 MiB plus its 512 MiB copy passes 512Mi.
// exec: the hog is the command itself (a shell would outlive its OOM-killed child).
const std::string kMemoryHog = "exec awk 'BEGIN { s = \"x\"; while (1) s = s s }'";

}  // namespace

TEST_CASE("run without limit flags: the worker defaults hold (a fork bomb stops at 256 pids, a hog at 512Mi)")
{
    if (!has_memory_limits()) {
        MESSAGE("no cgroups on this host; the defaults cannot be enforced here");
        return;
    }
    auto bomb = run_sh(kForkBomb, {"--max-runtime", "60"});
    CHECK(bomb.exit_status != 0);
    CHECK(contains(bomb.err, "can't fork"));
    CHECK(!contains(bomb.out, "all-started"));
    CHECK(last_count(bomb.out) < 256);
    CHECK(last_count(bomb.out) >= 200);

    auto hog = run_sh(kMemoryHog, {"--max-runtime", "60"});
    CHECK(hog.exit_status == 137);
    CHECK(contains(hog.err, "OOM killer"));

    // Within the defaults a command just works.
    auto fine = run_sh("sleep 0 & wait; echo fine");
    CHECK(fine.exit_status == 0);
    CHECK(fine.out == "fine\n");
    CHECK(leftover_run_groups().empty());
}

TEST_CASE("run takes [workers] default_* from --config; flags override them and are not held to the ceilings")
{
    if (!has_memory_limits()) {
        MESSAGE("no cgroups on this host");
        return;
    }
    nps::test::TempDir dir("nps-run-config");
    nps::test::write_file(dir.file("small.toml"), "[workers]\ndefault_pids = 16\ndefault_memory = \"32Mi\"\n");
    auto bomb = run_sh(kForkBomb, {"--config", dir.file("small.toml"), "--max-runtime", "60"});
    CHECK(bomb.exit_status != 0);
    CHECK(last_count(bomb.out) < 16);
    CHECK(last_count(bomb.out) >= 10);
    auto hog = run_sh("x=$(head -c 100000000 /dev/zero | tr '\\0' x); echo survived",
                      {"--config", dir.file("small.toml")});
    CHECK(hog.exit_status == 137);

    // --pids overrides the configured default.
    auto roomy = run_sh("for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do sleep 5 & done; "
                        "echo all-started",
                        {"--config", dir.file("small.toml"), "--pids", "64", "--max-runtime", "30"});
    CHECK(roomy.exit_status == 0);
    CHECK(contains(roomy.out, "all-started"));

    // A default of 0 leaves the limit off; and --memory above [workers]
    // max_memory is the operator's call.
    nps::test::write_file(dir.file("none.toml"), "[workers]\ndefault_pids = 0\nmax_pids = 0\n");
    auto unlimited = run_sh("n=0; while [ $n -lt 300 ]; do sleep 30 & n=$((n+1)); done; echo all-started",
                            {"--config", dir.file("none.toml"), "--max-runtime", "60"});
    CHECK(unlimited.exit_status == 0);
    CHECK(contains(unlimited.out, "all-started"));
    auto big = run_sh("echo big", {"--memory", "5Gi"});
    CHECK(big.exit_status == 0);
    CHECK(big.out == "big\n");

    // A config whose ceiling is below its default is refused, naming both keys.
    nps::test::write_file(dir.file("bad.toml"), "[workers]\nmax_pids = 10\n");
    auto bad = run_sh("echo ran", {"--config", dir.file("bad.toml")});
    CHECK(bad.exit_status == 2);
    CHECK(contains(bad.err, "workers.max_pids: 10 is below workers.default_pids = 256"));
    CHECK(!contains(bad.out, "ran"));
    CHECK(leftover_run_groups().empty());
}

TEST_CASE("run --help names the limits' defaults and their keys")
{
    auto help = nps::test::run_command({"run", "--help"});
    CHECK(help.exit_status == 0);
    CHECK(contains(help.out, "default 512Mi, [workers] default_memory"));
    CHECK(contains(help.out, "default 1, [workers] default_cpu"));
    CHECK(contains(help.out, "default 256, [workers] default_pids"));
    CHECK(contains(help.out, "not bounded by the [workers] max_* ceilings"));
}
