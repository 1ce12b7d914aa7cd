// SPDX-License-Identifier: Apache-2.0
// Who may use the daemon and read its files (docs/api.md "Access",
// docs/security.md rows 5 and 6), through the real binary: TCP needs the
// bearer token serve generates, the unix socket and api.token belong to the
// group nps-runner (root's when the group does not exist), the store's files
// are root's alone, also after an upgrade found them 0644.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "nps/net/http_client.hpp"
#include "runner_process.hpp"

using nps::test::check_error;
using nps::test::http;
using nps::test::http_without_token;
using nps::test::read_file;
using nps::test::Reply;
using nps::test::RunnerOptions;
using nps::test::RunnerProcess;
using nps::test::run_command;
using nps::test::task_frame;
using nps::test::TempDir;
using nps::test::write_file;

namespace {

const std::string kInbox = "urn:nps:agent:example.test:access";
const std::string kAgent = "urn:nps:agent:example.test:access-worker";
constexpr uid_t kNobody = 65534;

// The gid files and the socket must carry: nps-runner's, or root's without it.
gid_t expected_gid()
{
    const group* g = ::getgrnam("nps-runner");
    return g ? g->gr_gid : 0;
}

struct stat stat_of(const std::string& path)
{
    struct stat st{};
    REQUIRE_MESSAGE(::lstat(path.c_str(), &st) == 0, path);
    return st;
}

mode_t mode_of(const std::string& path)
{
    return stat_of(path).st_mode & 07777;
}

std::string inbox_path()
{
    return "/v1/inbox/" + nps::net::url_encode(kInbox);
}

// Over the unix socket: no token needed.
Reply local(const RunnerProcess& r, const std::string& method, const std::string& path,
            const std::optional<std::string>& body = std::nullopt)
{
    return http(method, "http://localhost" + path, body, {}, r.socket_path());
}

void check_unauthenticated(const Reply& reply)
{
    check_error(reply, 401, "NWP-HTTP-UNAUTHENTICATED");
    CHECK(reply.body["status"] == "NPS-AUTH-UNAUTHENTICATED");
    CHECK(reply.headers.count("www-authenticate") == 1);
    if (reply.headers.count("www-authenticate"))
        CHECK(reply.headers.at("www-authenticate") == "Bearer");
}

// Runs `argv` as uid/gid 65534 with no supplementary groups; exit status,
// stderr. A child: only async-signal-safe calls between fork and exec.
nps::test::CommandResult run_as_nobody(std::vector<std::string> args, const TempDir& io)
{
    const std::string err = io.file("nobody.err");
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int n = ::open("/dev/null", O_RDWR);
        ::dup2(n, 0);
        ::dup2(n, 1);
        ::dup2(e, 2);
        if (::setgroups(0, nullptr) != 0 || ::setresgid(kNobody, kNobody, kNobody) != 0 ||
            ::setresuid(kNobody, kNobody, kNobody) != 0)
            ::_exit(126);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), "", read_file(err)};
}

// errno of open(path, O_RDONLY) as uid/gid 65534 (0: it opened).
int open_errno_as_nobody(const std::string& path)
{
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(pipe_fds[0]);
        int err = 0;
        if (::setgroups(0, nullptr) != 0 || ::setresgid(kNobody, kNobody, kNobody) != 0 ||
            ::setresuid(kNobody, kNobody, kNobody) != 0)
            err = -1;
        else if (int fd = ::open(path.c_str(), O_RDONLY); fd < 0)
            err = errno;
        (void)!::write(pipe_fds[1], &err, sizeof err);
        ::_exit(0);
    }
    ::close(pipe_fds[1]);
    int err = -2;
    REQUIRE(::read(pipe_fds[0], &err, sizeof err) == sizeof err);
    ::close(pipe_fds[0]);
    ::waitpid(pid, nullptr, 0);
    REQUIRE_MESSAGE(err != -1, "could not become uid 65534");
    return err;
}

}  // namespace

TEST_CASE("TCP needs the generated bearer token; /healthz and /metrics stay open on loopback")
{
    nps::test::StartedRunner d;
    RunnerProcess& r = d.runner;
    const std::string token = r.token();
    REQUIRE(token.size() == 64);
    REQUIRE(local(r, "POST", inbox_path(), task_frame("access-1", 2)).status == 201);
    const std::string task = "/v1/tasks/access-1";
    const std::string announce = "/v1/ndp/announces/" + nps::net::url_encode(kAgent);
    const std::string announce_body = R"({"activation_mode":"ephemeral","spawn_spec_ref":"spawnspec:e30"})";

    for (const auto& headers : std::vector<std::vector<std::pair<std::string, std::string>>>{
             {}, {{"Authorization", "Bearer " + std::string(64, '0')}}, {{"Authorization", token}},
             {{"Authorization", "Bearer " + token.substr(1)}}}) {
        CAPTURE(headers.size());
        check_unauthenticated(http_without_token("PUT", r.url() + announce, announce_body, headers));
        check_unauthenticated(http_without_token("GET", r.url() + task, std::nullopt, headers));
        check_unauthenticated(http_without_token("GET", r.url() + "/v1/tasks", std::nullopt, headers));
        check_unauthenticated(http_without_token("POST", r.url() + task + "/cancel", std::nullopt, headers));
        check_unauthenticated(http_without_token("GET", r.url() + task + "/nodes/n0/log", std::nullopt, headers));
        check_unauthenticated(http_without_token("POST", r.url() + inbox_path(), task_frame("access-2", 1), headers));
    }
    // Nothing changed: no announce, the task neither cancelled nor joined by another.
    check_error(local(r, "GET", "/v1/ndp/resolve?nid=" + nps::net::url_encode(kAgent)), 404, "NDP-RESOLVE-NOT-FOUND");
    auto before = local(r, "GET", task);
    REQUIRE(before.status == 200);
    CHECK(before.body["state"] != "CANCELLED");
    check_error(local(r, "GET", "/v1/tasks/access-2"), 404, "NOP-TASK-NOT-FOUND");

    // Liveness and metrics without a token, on loopback.
    CHECK(http_without_token("GET", r.url() + "/healthz").status == 200);
    CHECK(http_without_token("GET", r.url() + "/health").status == 200);
    auto ready = http_without_token("GET", r.url() + "/readyz");
    CHECK(ready.status == 200);
    CHECK(ready.body["status"] == "ready");
    auto metrics = http_without_token("GET", r.url() + "/metrics");
    CHECK(metrics.status == 200);
    CHECK(metrics.raw.find("nps_http_requests_total") != std::string::npos);

    // With the token everything works.
    const std::vector<std::pair<std::string, std::string>> bearer = {{"Authorization", "Bearer " + token}};
    auto put = http_without_token("PUT", r.url() + announce, announce_body, bearer);
    CHECK_MESSAGE(put.status / 100 == 2, put.raw);
    CHECK(http_without_token("GET", r.url() + task, std::nullopt, bearer).status == 200);
    CHECK(http_without_token("GET", r.url() + "/v1/tasks", std::nullopt, bearer).status == 200);
    auto cancel = http_without_token("POST", r.url() + task + "/cancel", std::nullopt, bearer);
    CHECK_MESSAGE(cancel.status == 200, cancel.raw);
    CHECK(local(r, "GET", "/v1/ndp/resolve?nid=" + nps::net::url_encode(kAgent)).status == 200);
}

TEST_CASE("require_token = false opens TCP again, and no token is generated")
{
    nps::test::StartedRunner d("[api]\nrequire_token = false\n");
    CHECK(d.runner.token().empty());
    CHECK_FALSE(std::filesystem::exists(d.dir.file("api.token")));
    CHECK(http_without_token("GET", d.runner.url() + "/v1/tasks").status == 200);
    CHECK(http_without_token("POST", d.runner.url() + inbox_path(), task_frame("open-1", 1)).status == 201);
}

TEST_CASE("a configured api.token replaces the generated one; a non-loopback listener needs a token")
{
    nps::test::StartedRunner d("[api]\ntoken = \"configured-token-0123456789\"\n");
    CHECK_FALSE(std::filesystem::exists(d.dir.file("api.token")));
    check_unauthenticated(http_without_token("GET", d.runner.url() + "/v1/tasks"));
    CHECK(http_without_token("GET", d.runner.url() + "/v1/tasks", std::nullopt,
                             {{"Authorization", "Bearer configured-token-0123456789"}})
              .status == 200);

    TempDir dir;
    RunnerProcess open_wide(RunnerOptions{
        .state_dir = dir.path(), .config_text = "[api]\nrequire_token = false\n", .listen = "0.0.0.0:0"});
    CHECK_FALSE(open_wide.start());
    CHECK(open_wide.log().find("Refusing to listen on non-loopback address") != std::string::npos);
}

TEST_CASE("api.token: generated at first start, 0640 for the group, kept across restarts; the CLI reads it")
{
    TempDir dir;
    const std::string config = "[runner]\nstate_dir = \"" + dir.path() + "\"\n";
    RunnerProcess r(RunnerOptions{.state_dir = dir.path(), .config_text = config});
    REQUIRE_MESSAGE(r.start(), r.log());
    const std::string token_path = dir.file("api.token");
    const std::string first = r.token();
    REQUIRE(first.size() == 64);
    CHECK(first.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(mode_of(token_path) == 0640);
    CHECK(stat_of(token_path).st_uid == 0);
    CHECK(stat_of(token_path).st_gid == expected_gid());
    CHECK(r.log().find("generated the bearer token") != std::string::npos);

    // The CLI, as root, over TCP: it finds the token in the state directory.
    auto ls = run_command({"task", "ls", "--server", r.url(), "--config", dir.file("config.toml")});
    CHECK_MESSAGE(ls.exit_status == 0, ls.err);
    // Without a readable token the CLI says what the daemon wants.
    TempDir elsewhere;
    write_file(elsewhere.file("config.toml"), "[runner]\nstate_dir = \"" + elsewhere.path() + "\"\n");
    auto refused = run_command({"task", "ls", "--server", r.url(), "--config", elsewhere.file("config.toml")});
    CHECK(refused.exit_status != 0);
    CHECK_MESSAGE(refused.err.find("requires a bearer token") != std::string::npos, refused.err);

    // SIGHUP keeps the generated token in force.
    ::kill(r.pid(), SIGHUP);
    for (int i = 0; i < 600 && r.log().find("SIGHUP: configuration reloaded") == std::string::npos; ++i)
        ::usleep(50'000);
    REQUIRE(r.log().find("SIGHUP: configuration reloaded") != std::string::npos);
    check_unauthenticated(http_without_token("GET", r.url() + "/v1/tasks"));
    CHECK(http("GET", r.url() + "/v1/tasks").status == 200);

    REQUIRE(r.stop() == 0);
    ::chmod(token_path.c_str(), 0644);  // an operator's slip: corrected at start
    REQUIRE_MESSAGE(r.start(), r.log());
    CHECK(r.token() == first);
    CHECK(mode_of(token_path) == 0640);
    CHECK(r.log().find("bearer token from") != std::string::npos);
    CHECK(http("GET", r.url() + "/v1/tasks").status == 200);

    // Deleting it rotates it at the next start.
    REQUIRE(r.stop() == 0);
    REQUIRE(::unlink(token_path.c_str()) == 0);
    REQUIRE_MESSAGE(r.start(), r.log());
    CHECK(r.token().size() == 64);
    CHECK(r.token() != first);
}

TEST_CASE("the unix socket is 0660 for the group; a user outside it is told so")
{
    TempDir dir;
    // Others may pass through the state directory (as through /run/nps-runner).
    REQUIRE(::chmod(dir.path().c_str(), 0711) == 0);
    const std::string socket = dir.file("api.sock");
    const std::string config = "[api]\nsocket = \"" + socket + "\"\n";
    RunnerProcess r(RunnerOptions{.state_dir = dir.path(), .config_text = config});
    REQUIRE_MESSAGE(r.start(), r.log());
    CHECK(mode_of(socket) == 0660);
    CHECK(stat_of(socket).st_uid == 0);
    CHECK(stat_of(socket).st_gid == expected_gid());
    REQUIRE(::chmod(dir.file("config.toml").c_str(), 0644) == 0);

    TempDir io;
    REQUIRE(::chmod(io.path().c_str(), 0777) == 0);
    const std::string expected = "nps-runner: permission denied on unix:" + socket + " (add the user to group nps-runner)\n";
    // Named with --server, and found through the configuration.
    for (auto args : std::vector<std::vector<std::string>>{
             {"task", "ls", "--server", "unix:" + socket, "--config", dir.file("config.toml")},
             {"task", "ls", "--config", dir.file("config.toml")}}) {
        args.insert(args.begin(), nps::test::runner_binary());
        auto result = run_as_nobody(args, io);
        CHECK(result.exit_status == 1);
        CHECK(result.err == expected);
    }
    // Root is let in.
    auto ls = run_command({"task", "ls", "--server", "unix:" + socket, "--config", dir.file("config.toml")});
    CHECK_MESSAGE(ls.exit_status == 0, ls.err);
}

TEST_CASE("runner.db, its WAL and SHM, api.token and the state directory are not for others, also after an upgrade")
{
    TempDir dir;
    REQUIRE(::chmod(dir.path().c_str(), 0755) == 0);  // as an older version left it
    RunnerProcess r(RunnerOptions{.state_dir = dir.path()});
    REQUIRE_MESSAGE(r.start(), r.log());
    REQUIRE(local(r, "POST", inbox_path(), task_frame("files-1", 1)).status == 201);

    const std::vector<std::string> db_files = {dir.file("runner.db"), dir.file("runner.db-wal"), dir.file("runner.db-shm")};
    auto check_modes = [&] {
        for (const auto& path : db_files) {
            CAPTURE(path);
            CHECK(mode_of(path) == 0600);
            CHECK(stat_of(path).st_uid == 0);
        }
        CHECK(mode_of(dir.file("api.token")) == 0640);
        for (const auto& sub : {dir.path(), dir.file("workers"), dir.file("images"), dir.file("logs")}) {
            CAPTURE(sub);
            CHECK((mode_of(sub) & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH)) == 0);
        }
        CHECK(mode_of(dir.path()) == 0711);
        CHECK(open_errno_as_nobody(dir.file("runner.db")) == EACCES);
        CHECK(open_errno_as_nobody(dir.file("api.token")) == EACCES);
    };
    check_modes();

    // The upgrade case: files an older version made 0644, directories 0755
    // (a -wal and -shm left behind, empty ones if the clean stop removed them).
    REQUIRE(r.stop() == 0);
    for (const auto& path : db_files) {
        if (!std::filesystem::exists(path))
            write_file(path, "");
        REQUIRE(::chmod(path.c_str(), 0644) == 0);
    }
    REQUIRE(::chmod(dir.file("api.token").c_str(), 0644) == 0);
    for (const auto& sub : {dir.path(), dir.file("workers"), dir.file("images"), dir.file("logs")})
        REQUIRE(::chmod(sub.c_str(), 0755) == 0);
    CHECK(open_errno_as_nobody(dir.file("runner.db")) == 0);  // the finding, before the fix applies
    REQUIRE_MESSAGE(r.start(), r.log());
    REQUIRE(local(r, "POST", inbox_path(), task_frame("files-2", 1)).status == 201);
    check_modes();
}
