// SPDX-License-Identifier: Apache-2.0
// The sandbox's promises, checked from inside a busybox rootfs through
// `nps-runner run` and through the spawner API.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "nps/base/unique_fd.hpp"
#include "nps/sandbox/spawner.hpp"
#include "sandbox_rootfs.hpp"

using nps::test::busybox_rootfs;
using nps::test::run_sh;

namespace {

nps::sandbox::SandboxSpec sleeper_spec()
{
    return {.rootfs = busybox_rootfs(), .argv = {"/bin/sleep", "100"}, .env = {"PATH=/bin"}};
}

bool pid_gone(pid_t pid)
{
    return ::kill(pid, 0) < 0 && errno == ESRCH;
}

// The first child of `parent` (from /proc), or -1 after ~5 s.
// The child of `parent` running the program named `comm` (the runner also
// has short-lived helper children, e.g. the user namespace probe's holder).
pid_t child_running(pid_t parent, const std::string& comm)
{
    std::string path = "/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children";
    for (int i = 0; i < 500; ++i) {
        std::ifstream in(path);
        for (pid_t child = -1; in >> child && child > 0;) {
            std::ifstream name("/proc/" + std::to_string(child) + "/comm");
            std::string text;
            if (std::getline(name, text) && text == comm)
                return child;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
}

}  // namespace

TEST_CASE("the command is pid 1 and sees only its own processes")
{
    auto r = run_sh("echo $$; ls /proc | grep -cE '^[0-9]+$'");
    REQUIRE(r.exit_status == 0);
    std::istringstream out(r.out);
    int self = 0, count = 0;
    out >> self >> count;
    CHECK(self == 1);
    CHECK(count >= 1);
    CHECK(count <= 4);  // sh, and perhaps ls and grep
}

TEST_CASE("the sandbox has its own hostname")
{
    auto r = run_sh("hostname", {"--hostname", "box-one"});
    REQUIRE(r.exit_status == 0);
    CHECK(r.out == "box-one\n");
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    CHECK(std::string(host) != "box-one");
}

TEST_CASE("mount and unshare are refused")
{
    auto r = run_sh("mount -t tmpfs none /tmp 2>&1; echo mount=$?; unshare -n true 2>&1; echo unshare=$?");
    REQUIRE(r.exit_status == 0);
    CHECK(r.out.find("mount=0") == std::string::npos);
    CHECK(r.out.find("unshare=0") == std::string::npos);
    CHECK(r.out.find("Operation not permitted") != std::string::npos);
}

TEST_CASE("network none: only loopback, and the host's 127.0.0.1 is unreachable")
{
    int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    REQUIRE(listener >= 0);
    nps::UniqueFd owned(listener);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener, 4) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    int port = ntohs(addr.sin_port);

    auto r = run_sh("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; "
                    "echo hi | nc -w 2 127.0.0.1 " + std::to_string(port) + " 2>/dev/null; echo nc=$?");
    REQUIRE(r.exit_status == 0);
    CHECK(r.out.rfind("lo\n", 0) == 0);
    CHECK(r.out.find("nc=0") == std::string::npos);
    CHECK(r.out.find("eth") == std::string::npos);
    CHECK(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC) < 0);
    CHECK(errno == EAGAIN);
}

TEST_CASE("the root is read-only, /tmp is writable, /proc/sys is read-only")
{
    auto r = run_sh("touch /new 2>&1; echo root=$?; touch /tmp/new; echo tmp=$?; "
                    "echo x 2>&1 > /proc/sys/kernel/hostname; echo procsys=$?");
    REQUIRE(r.exit_status == 0);
    CHECK(r.out.find("Read-only file system") != std::string::npos);
    CHECK(r.out.find("root=0") == std::string::npos);
    CHECK(r.out.find("tmp=0") != std::string::npos);
    CHECK(r.out.find("procsys=0") == std::string::npos);
    CHECK(::access((busybox_rootfs() + "/new").c_str(), F_OK) != 0);
}

TEST_CASE("sensitive /proc files are masked with /dev/null")
{
    // Which of them exist depends on the kernel's configuration.
    auto r = run_sh("for f in kcore keys timer_list sysrq-trigger kallsyms kmsg; do "
                    "if [ -e /proc/$f ]; then [ -c /proc/$f ] && echo \"$f masked\" || echo \"$f open\"; fi; done");
    REQUIRE(r.exit_status == 0);
    CHECK(r.out.find("open") == std::string::npos);
    CHECK(r.out.find("masked") != std::string::npos);
}

TEST_CASE("host files outside the rootfs are not visible")
{
    nps::test::TempDir outside("nps-outside");
    nps::test::write_file(outside.file("secret"), "host secret\n");
    auto r = run_sh("test -e " + outside.file("secret") + " && echo visible; test -e " + busybox_rootfs() +
                    "/bin && echo visible; ls /");
    REQUIRE(r.exit_status == 0);
    CHECK(r.out.find("visible") == std::string::npos);
    CHECK(r.out.find("bin") != std::string::npos);
}

TEST_CASE("no capabilities and no_new_privs")
{
    auto r = run_sh("grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status");
    REQUIRE(r.exit_status == 0);
    for (const char* line : {"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
                             "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1"}) {
        CAPTURE(line);
        CHECK(r.out.find(line) != std::string::npos);
    }
}

TEST_CASE("the exit status is propagated")
{
    CHECK(run_sh("exit 7").exit_status == 7);
    CHECK(run_sh("true").exit_status == 0);
}

TEST_CASE("a command killed by a signal gives 128+signal")
{
    // Everything that may throw happens before fork: the child only execs.
    std::string bin = nps::test::runner_binary(), rootfs = busybox_rootfs();
    pid_t runner = ::fork();
    REQUIRE(runner >= 0);
    if (runner == 0) {
        int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        ::dup2(devnull, 1);
        ::execl(bin.c_str(), bin.c_str(), "run", "--rootfs", rootfs.c_str(), "--", "/bin/sleep", "100", nullptr);
        ::_exit(126);
    }
    pid_t sandboxed = child_running(runner, "sleep");
    REQUIRE(sandboxed > 0);
    // Only SIGKILL reaches a pid 1 without handlers from outside.
    REQUIRE(::kill(sandboxed, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(runner, &status, 0) == runner);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 128 + SIGKILL);
}

TEST_CASE("spawn: Child::kill and wait report the signal")
{
    auto child = nps::sandbox::spawn(sleeper_spec());
    REQUIRE_MESSAGE(child.has_value(), child.error().describe());
    REQUIRE(child->kill(SIGKILL).has_value());
    auto status = child->wait();
    REQUIRE(status.has_value());
    CHECK_FALSE(status->exited);
    CHECK(status->signal == SIGKILL);
    CHECK(status->shell_status() == 137);
    CHECK_FALSE(child->valid());
}

TEST_CASE("spawn: the Child destructor kills and reaps")
{
    pid_t pid = -1;
    {
        auto child = nps::sandbox::spawn(sleeper_spec());
        REQUIRE_MESSAGE(child.has_value(), child.error().describe());
        pid = child->pid();
        CHECK(::kill(pid, 0) == 0);
    }
    CHECK(pid_gone(pid));
}

TEST_CASE("spawn: a missing binary fails naming the exec step")
{
    auto spec = sleeper_spec();
    spec.argv = {"/bin/does-not-exist"};
    auto child = nps::sandbox::spawn(spec);
    REQUIRE_FALSE(child.has_value());
    CHECK(child.error().sys_errno == ENOENT);
    CHECK(child.error().describe() ==
          "Failed to execute '/bin/does-not-exist' in the sandbox: No such file or directory");

    auto r = nps::test::run_command({"run", "--rootfs", busybox_rootfs(), "--", "nope"});
    CHECK(r.exit_status == 125);
    CHECK(r.err.find("Failed to execute 'nope' in the sandbox") != std::string::npos);
}

TEST_CASE("spawn: a rootfs without /proc fails naming the mount step")
{
    nps::test::TempDir empty("nps-empty-rootfs");
    auto spec = sleeper_spec();
    spec.rootfs = empty.path();
    auto child = nps::sandbox::spawn(spec);
    REQUIRE_FALSE(child.has_value());
    CHECK(child.error().describe() ==
          "Failed to mount proc on '" + empty.path() + "/proc': No such file or directory");
}

TEST_CASE("network none: loopback is up, alone, in a namespace of the command's own")
{
    auto r = run_sh("ip link show lo");
    REQUIRE(r.exit_status == 0);
    CHECK(r.out.find("UP") != std::string::npos);
    auto links = run_sh("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
    REQUIRE(links.exit_status == 0);
    CHECK(links.out == "lo\n");
    // Made on a thread of `run` while it sets up the rest: never the host's.
    auto inside = run_sh("readlink /proc/self/ns/net");
    REQUIRE(inside.exit_status == 0);
    char host[64] = {};
    REQUIRE(::readlink("/proc/self/ns/net", host, sizeof host - 1) > 0);
    CHECK(inside.out.rfind("net:[", 0) == 0);
    CHECK(inside.out != std::string(host) + "\n");
}

TEST_CASE("the environment is PATH and HOME plus --env")
{
    auto r = run_sh("echo \"$GREETING|$HOME|$PATH\"", {"--env", "GREETING=hi", "--env", "HOME=/root"});
    REQUIRE(r.exit_status == 0);
    CHECK(r.out == "hi|/root|/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n");
}

TEST_CASE("network host: the host's interfaces are visible")
{
    auto r = run_sh("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort", {"--network", "host"});
    REQUIRE(r.exit_status == 0);
    std::ifstream host("/proc/net/dev");
    std::string line, names;
    std::vector<std::string> sorted;
    for (int i = 0; std::getline(host, line); ++i) {
        if (i < 2)
            continue;
        auto colon = line.find(':');
        auto first = line.find_first_not_of(' ');
        sorted.push_back(line.substr(first, colon - first));
    }
    std::sort(sorted.begin(), sorted.end());
    for (const auto& name : sorted)
        names += name + "\n";
    CHECK(r.out == names);
}
