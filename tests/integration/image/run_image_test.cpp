// SPDX-License-Identifier: Apache-2.0
// `nps-runner run --image`: an imported image as the sandbox's root (an
// overlay of its layers), with the image config's Entrypoint, Cmd, Env,
// WorkingDir and User; nothing of the worker is left afterwards.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "nps/sandbox/userns.hpp"
#include "runner_process.hpp"
#include "temp_dir.hpp"
#include "test_images.hpp"

using nps::test::mounts_beneath;
using nps::test::run_command;
namespace fs = std::filesystem;

namespace {

struct RunImageFixture {
    nps::test::TempDir dir{"nps-run-image"};
    std::string state = dir.path() + "/state";

    RunImageFixture()
    {
        auto imported = run_command({"image", "import", image_it::test_images().oci_dir, "--name", "bb:1",
                                     "--state-dir", state, "--quiet"});
        INFO(imported.err);
        REQUIRE(imported.exit_status == 0);
    }

    nps::test::CommandResult run(std::vector<std::string> extra, std::vector<std::string> command = {})
    {
        std::vector<std::string> args = {"run", "--image", "bb:1", "--state-dir", state};
        args.insert(args.end(), extra.begin(), extra.end());
        if (!command.empty()) {
            args.push_back("--");
            args.insert(args.end(), command.begin(), command.end());
        }
        return run_command(args);
    }

    // Worker directories and pins left behind.
    std::vector<std::string> leftovers() const
    {
        std::vector<std::string> found;
        for (const char* sub : {"/workers", "/images/pins"}) {
            std::error_code ec;
            for (auto it = fs::directory_iterator(state + sub, ec); !ec && it != fs::directory_iterator(); ++it)
                found.push_back(it->path().string());
        }
        return found;
    }
};

}  // namespace

TEST_CASE("run --image runs the image's Entrypoint and Cmd")
{
    RunImageFixture f;
    auto r = f.run({});
    INFO(r.err);
    CHECK(r.exit_status == 0);
    CHECK(r.out == "hello from the image\n");
    for (const auto& left : f.leftovers())
        FAIL_CHECK("left behind: " << left);
}

TEST_CASE("run --image: arguments replace Cmd; Env, WorkingDir and User apply")
{
    RunImageFixture f;
    auto r = f.run({}, {"-c", "id -u; id -g; pwd; echo $GREETING; touch /written 2>/dev/null && echo root-writable; true"});
    INFO(r.err);
    CHECK(r.exit_status == 0);
    CHECK(r.out.rfind("1000\n1000\n/tmp\nhello\n", 0) == 0);
    CHECK(r.out.find("root-writable") == std::string::npos);  // the root is read-only
    for (const auto& left : f.leftovers())
        FAIL_CHECK("left behind: " << left);
}

TEST_CASE("run --image --entrypoint replaces the Entrypoint and drops Cmd, as docker run does")
{
    RunImageFixture f;
    auto r = f.run({"--entrypoint", "/bin/echo"}, {"plain", "words"});
    INFO(r.err);
    CHECK(r.exit_status == 0);
    CHECK(r.out == "plain words\n");
    r = f.run({"--entrypoint", "/bin/echo"});
    CHECK(r.exit_status == 0);
    CHECK(r.out == "\n");  // the image's Cmd (-c 'echo hello…') is not passed
    r = f.run({"--entrypoint", ""}, {"/bin/echo", "cleared"});
    CHECK(r.exit_status == 0);
    CHECK(r.out == "cleared\n");
    r = f.run({"--entrypoint", ""});
    CHECK(r.exit_status == 125);  // the command never ran
    CHECK(r.err.find("neither Entrypoint nor Cmd") != std::string::npos);
}

TEST_CASE("run -t gives the command a terminal of its own, its controlling one, relayed both ways")
{
    RunImageFixture f;
    // stdin here is a pipe: the command's is the pty all the same.
    auto r = nps::test::run_command(
        {"run", "--image", "bb:1", "--state-dir", f.state, "-t", "--", "-c",
         "test -t 0 && test -t 1 && test -t 2 && echo all-terminals; "
         "read -r pid comm state ppid pgrp session tty rest < /proc/self/stat; "
         "[ \"$tty\" != 0 ] && echo has-controlling-terminal; "
         "read -r line; echo got:$line"},
        "typed words\n");
    INFO(r.out << r.err);
    CHECK(r.exit_status == 0);
    CHECK(r.out.find("all-terminals\r\n") != std::string::npos);  // the pty's line discipline: \n → \r\n
    CHECK(r.out.find("has-controlling-terminal") != std::string::npos);
    CHECK(r.out.find("got:typed words") != std::string::npos);
    // Without -t the same command sees pipes.
    r = f.run({}, {"-c", "test -t 0 || echo not-a-terminal"});
    CHECK(r.out == "not-a-terminal\n");
    // End of our stdin is end-of-file on its terminal: a reading command ends.
    r = nps::test::run_command({"run", "--image", "bb:1", "--state-dir", f.state, "-t", "--", "-c",
                                "cat; echo cat-ended"});
    CHECK(r.exit_status == 0);
    CHECK(r.out.find("cat-ended") != std::string::npos);
}

TEST_CASE("run --image: --env and --user override the image config")
{
    RunImageFixture f;
    auto r = f.run({"--env", "GREETING=hi", "--user", "0:0"}, {"-c", "id -u; echo $GREETING"});
    INFO(r.err);
    CHECK(r.exit_status == 0);
    CHECK(r.out == "0\nhi\n");
}

TEST_CASE("run --image: two runs share the unpacked layers; limits apply")
{
    RunImageFixture f;
    auto first = f.run({"--memory", "64Mi", "--pids", "16"}, {"-c", "exit 7"});
    CHECK(first.exit_status == 7);
    std::size_t layers = 0;
    for (const auto& e : fs::directory_iterator(f.state + "/images/layers"))
        layers += e.path().filename().string().size() == 64;
    CHECK(layers == 1);
    auto second = f.run({}, {"-c", "echo again"});
    CHECK(second.out == "again\n");
    for (const auto& left : f.leftovers())
        FAIL_CHECK("left behind: " << left);
}

TEST_CASE("run --image --userns: the image's files are the namespace root's, the host sees a slot's ids")
{
    RunImageFixture f;
    const std::string why_not = nps::sandbox::user_namespace_unavailable_reason(
        nps::sandbox::userns_slots_options(0x7000'0000, 65'536, nps::sandbox::kUsernsLockDir), f.state + "/workers",
        nps::sandbox::RootfsKind::overlay);
    auto r = f.run({"--userns", "--user", "0:0"},
                   {"-c", "cat /proc/self/uid_map; busybox stat -c %u:%g /bin/busybox /bin; busybox touch /tmp/made && "
                          "busybox stat -c %u /tmp/made; busybox mkdir /tmp/d && echo tmp-writable"});
    if (!why_not.empty()) {
        // Where the kernel cannot (e.g. no idmapped mounts on the layers'
        // file system), --userns fails naming why and runs nothing.
        CHECK(r.exit_status == 125);
        CHECK(r.err.find("sandbox.user_namespace is on, but") != std::string::npos);
        CHECK(r.out.empty());
        return;
    }
    INFO(r.err);
    REQUIRE(r.exit_status == 0);
    std::istringstream out(r.out);
    unsigned inside = 1, outside = 0, count = 0;
    out >> inside >> outside >> count;
    CHECK(inside == 0);
    CHECK(outside >= 0x7000'0000u);
    CHECK((outside - 0x7000'0000u) % 65'536 == 0);
    CHECK(count == 65'536);
    // The layers are shown through the namespace's mapping: root-owned files
    // of the image are its root's (not 65534), and what it writes is its.
    CHECK(r.out.find("\n0:0\n0:0\n0\ntmp-writable\n") != std::string::npos);
    for (const auto& left : f.leftovers())
        FAIL_CHECK("left behind: " << left);
    // The idmapped layer mounts are gone with the overlay.
    std::ifstream mounts("/proc/self/mountinfo");
    for (std::string line; std::getline(mounts, line);)
        CHECK_MESSAGE(line.find(f.state) == std::string::npos, "mount left behind: " << line);
}

TEST_CASE("run --image: the user namespace is the default where the kernel allows it")
{
    RunImageFixture f;
    const bool allowed = nps::sandbox::user_namespace_unavailable_reason(
                             nps::sandbox::userns_slots_options(0x7000'0000, 65'536, nps::sandbox::kUsernsLockDir),
                             f.state + "/workers", nps::sandbox::RootfsKind::overlay)
                             .empty();
    auto r = f.run({}, {"-c", "cat /proc/self/uid_map"});
    INFO(r.err);
    REQUIRE(r.exit_status == 0);
    CHECK((r.out.find("4294967295") == std::string::npos) == allowed);
    auto off = f.run({"--no-userns"}, {"-c", "cat /proc/self/uid_map"});
    REQUIRE(off.exit_status == 0);
    CHECK(off.out.find("4294967295") != std::string::npos);
}

TEST_CASE("run --image: an unknown image or a missing choice is a clear error")
{
    RunImageFixture f;
    auto unknown = run_command({"run", "--image", "nope:1", "--state-dir", f.state, "--", "true"});
    CHECK(unknown.exit_status == 125);
    CHECK(unknown.err.find("nope") != std::string::npos);

    auto both = run_command({"run", "--image", "bb:1", "--rootfs", "/", "--", "true"});
    CHECK(both.exit_status == 2);
    CHECK(both.err.find("either --image REF or --rootfs DIR") != std::string::npos);
}

namespace {

// `run --image bb:1 --memory 64Mi -- -c 'sleep 600'` in the background.
pid_t start_sleeping_run(const std::string& state)
{
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::vector<std::string> args = {nps::test::runner_binary(), "run", "--image", "bb:1", "--state-dir", state,
                                         "--memory", "64Mi", "--", "-c", "sleep 600"};
        std::vector<char*> argv;
        for (auto& a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    return pid;
}

// The cgroup directories named `name` beneath /sys/fs/cgroup.
std::vector<std::string> cgroups_named(const std::string& name)
{
    std::vector<std::string> found;
    std::error_code ec;
    auto options = fs::directory_options::skip_permission_denied;
    for (auto it = fs::recursive_directory_iterator("/sys/fs/cgroup", options, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_directory(ec) && it->path().filename() == name)
            found.push_back(it->path().string());
        if (it.depth() > 6)
            it.disable_recursion_pending();
    }
    return found;
}

// Waits (≤ 60 s) until `run` pid has its overlay mounted and its cgroup made.
bool wait_until_running(const std::string& state, pid_t pid)
{
    const std::string rootfs = state + "/workers/run-" + std::to_string(pid) + "/rootfs";
    for (int i = 0; i < 600; ++i) {
        if (!mounts_beneath(rootfs).empty() && !cgroups_named("run-" + std::to_string(pid)).empty())
            return true;
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

}  // namespace

TEST_CASE("run --image killed with SIGKILL: the next run removes its overlay, upper dir and cgroup, not a live run's")
{
    RunImageFixture f;
    pid_t dead = start_sleeping_run(f.state);
    pid_t live = start_sleeping_run(f.state);
    // A failed REQUIRE must not leave a `run` sleeping with our stdout open.
    struct KillOnExit {
        pid_t pids[2];
        ~KillOnExit()
        {
            for (pid_t pid : pids) {
                if (::kill(pid, SIGKILL) == 0)
                    ::waitpid(pid, nullptr, 0);
            }
        }
    } kill_on_exit{{dead, live}};
    REQUIRE(wait_until_running(f.state, dead));
    REQUIRE(wait_until_running(f.state, live));
    const std::string dead_dir = f.state + "/workers/run-" + std::to_string(dead);
    const std::string live_dir = f.state + "/workers/run-" + std::to_string(live);
    const auto dead_cgroups = cgroups_named("run-" + std::to_string(dead));
    REQUIRE(fs::exists(dead_dir + "/upper"));

    ::kill(dead, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(dead, &status, 0) == dead);
    // Nothing of it went away by itself.
    CHECK(!mounts_beneath(dead_dir).empty());
    CHECK(fs::exists(dead_dir + "/upper"));

    auto next = f.run({"--memory", "64Mi"}, {"-c", "true"});
    CHECK_MESSAGE(next.exit_status == 0, next.err);
    CHECK_MESSAGE(next.err.find("that a dead run or runner left") != std::string::npos, next.err);
    CHECK(mounts_beneath(dead_dir).empty());
    CHECK(!fs::exists(dead_dir));
    for (const auto& group : dead_cgroups)
        CHECK_MESSAGE(!fs::exists(group), group);
    // The live run's are untouched, and it still runs.
    CHECK(!mounts_beneath(live_dir + "/rootfs").empty());
    CHECK(fs::exists(live_dir + "/upper"));
    CHECK(!cgroups_named("run-" + std::to_string(live)).empty());
    CHECK(::waitpid(live, &status, WNOHANG) == 0);

    ::kill(live, SIGTERM);
    REQUIRE(::waitpid(live, &status, 0) == live);
    CHECK(mounts_beneath(live_dir).empty());
}
