// SPDX-License-Identifier: Apache-2.0
// The supervisor with real sandboxed busybox workers, with and without
// per-worker cgroups: the protocol, plain commands, limits, cancellation,
// process trees, floods, the concurrency cap. No timing is asserted: limits
// are short so the tests are quick, and only what happened is checked.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "supervisor_fixture.hpp"

using namespace nps::supervisor;
using namespace nps::test;
using namespace std::chrono_literals;
using Json = nlohmann::json;

#define CGROUP_MODES(mode)                     \
    Cgroups mode = Cgroups::none;              \
    SUBCASE("without cgroups") { mode = Cgroups::none; } \
    SUBCASE("with cgroups") { mode = Cgroups::host; }

namespace {

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

off_t file_size(const std::string& path)
{
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

}  // namespace

TEST_CASE("a framed worker: DelegateFrame on stdin, NPS_* environment, progress, result")
{
    CGROUP_MODES(mode);
    Harness h(mode);
    if (!h.available())
        return;
    auto id = h.start(sh_worker(
        "read -r frame; echo \"$frame\" >&2; "
        "echo \"env $NPS_PROTOCOL $NPS_TASK_ID $NPS_NODE_ID $NPS_ATTEMPT $NPS_IDEMPOTENCY_KEY\"; "
        "echo '{\"seq\":0,\"is_final\":false,\"data\":{\"step\":1}}'; "
        "echo '{\"seq\":1,\"is_final\":true,\"data\":{\"answer\":4}}'"));
    auto o = h.wait(id);
    CHECK(o.state == WorkerState::completed);
    CHECK(o.result_json == R"({"answer":4})");
    CHECK(o.error_code.empty());
    CHECK(o.killed_reason == KilledReason::none);
    CHECK(o.frames == 2);
    CHECK(o.exit_code == 0);
    CHECK(h.progress == std::vector<std::pair<WorkerId, std::uint64_t>>{{id, 0}});
    CHECK(contains(slurp(o.log_dir + "/stdout.log"), "env ndjson-v1 task-1 n1 1 idem-1\n"));
    CHECK_FALSE(contains(slurp(o.log_dir + "/stdout.log"), "\"seq\""));  // frames are not log
    CHECK(contains(o.stderr_tail, "\"parent_task_id\":\"task-1\""));
    CHECK(o.started_at_ms <= o.ended_at_ms);
    CHECK(h.no_cgroups_left());
}

TEST_CASE("plain commands: exit 0 completes, a failure names its exit status")
{
    CGROUP_MODES(mode);
    Harness h(mode);
    if (!h.available())
        return;
    auto ok = h.start(sh_worker("echo plain output"));
    auto bad = h.start(sh_worker("echo oops >&2; exit 3"));
    auto o = h.wait(ok);
    CHECK(o.state == WorkerState::completed);
    CHECK(o.result_json == R"({"exit_code":0})");
    CHECK(o.details_json == R"({"exit_code":0})");
    CHECK(slurp(o.log_dir + "/stdout.log") == "plain output\n");
    auto f = h.wait(bad);
    CHECK(f.state == WorkerState::failed);
    CHECK(f.error_code == "NOP-DELEGATE-REJECTED");
    CHECK(f.killed_reason == KilledReason::exit_status);
    CHECK(f.exit_code == 3);
    CHECK(f.details_json == R"({"exit_code":3})");
    CHECK(f.stderr_tail == "oops\n");
    CHECK(f.retryable);
    CHECK(h.no_cgroups_left());
}

TEST_CASE("a worker killed by a signal from elsewhere")
{
    CGROUP_MODES(mode);
    Harness h(mode);
    if (!h.available())
        return;
    auto id = h.start(sh_worker("sleep 100"));
    REQUIRE(h.run_until([&] { return h.supervisor().pid(id).has_value(); }));
    REQUIRE(::kill(*h.supervisor().pid(id), SIGKILL) == 0);
    auto o = h.wait(id);
    CHECK(o.state == WorkerState::failed);
    CHECK(o.killed_reason == KilledReason::signal);
    CHECK(o.signal == SIGKILL);
    CHECK(o.details_json == R"({"signal":9})");
    CHECK(contains(o.error_message, "SIGKILL"));
}

// How many fds of this process refer to the namespace `link` ("mnt:[N]").
static std::size_t own_fds_on(const std::string& link)
{
    std::size_t n = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        std::error_code unreadable;
        if (std::filesystem::read_symlink(entry.path(), unreadable).string() == link && !unreadable)
            ++n;
    }
    return n;
}

TEST_CASE("a worker's mount namespace is held from its spawn until it is reaped, then let go")
{
    // Held, its exit does not tear the namespace down before we hear of it
    // (docs/supervisor.md); let go, it is torn down on a spawn thread.
    Harness h(Cgroups::none);
    auto id = h.start(sh_worker("sleep 100"));
    REQUIRE(h.run_until([&] { return h.supervisor().pid(id).has_value(); }));
    const pid_t pid = *h.supervisor().pid(id);
    std::error_code ec;
    const std::string ns = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/mnt", ec).string();
    REQUIRE(!ec);
    CHECK(ns != std::filesystem::read_symlink("/proc/self/ns/mnt").string());
    CHECK(own_fds_on(ns) == 1);
    REQUIRE(::kill(pid, SIGKILL) == 0);
    CHECK(h.wait(id).killed_reason == KilledReason::signal);
    CHECK(h.run_until([&] { return own_fds_on(ns) == 0; }, std::chrono::seconds(10)));
}

TEST_CASE("a final error frame fails the node with the worker's code")
{
    Harness h(Cgroups::none);
    auto id = h.start(sh_worker("read -r f; echo '{\"seq\":0,\"is_final\":true,\"error\":"
                                "{\"code\":\"NWP-ACTION-PARAMS-INVALID\",\"message\":\"bad x\",\"retryable\":true}}'"));
    auto o = h.wait(id);
    CHECK(o.state == WorkerState::failed);
    CHECK(o.error_code == "NWP-ACTION-PARAMS-INVALID");
    CHECK(o.error_message == "bad x");
    CHECK(o.retryable);
    CHECK(o.killed_reason == KilledReason::none);
}

TEST_CASE("protocol violations fail the node and kill the worker at once")
{
    CGROUP_MODES(mode);
    Harness h(mode);
    if (!h.available())
        return;
    auto gap = h.start(sh_worker("echo '{\"seq\":0,\"is_final\":false}'; echo '{\"seq\":2,\"is_final\":false}'; "
                                 "sleep 100"));
    auto nid = h.start(sh_worker("echo '{\"seq\":0,\"is_final\":true,\"sender_nid\":\"urn:nps:agent:x:y\"}'; "
                                 "sleep 100"));
    auto o = h.wait(gap);
    CHECK(o.state == WorkerState::failed);
    CHECK(o.error_code == "NOP-STREAM-SEQ-GAP");
    CHECK(contains(o.error_message, "expected 1, got 2"));
    CHECK(o.signal == SIGKILL);
    CHECK(o.killed_reason == KilledReason::none);
    CHECK(contains(slurp(o.log_dir + "/stdout.log"), "\"seq\":2"));  // the offending line is kept
    auto n = h.wait(nid);
    CHECK(n.error_code == "NOP-STREAM-NID-MISMATCH");
    CHECK(h.no_cgroups_left());
}

TEST_CASE("idle timeout: no output for the limit kills the whole worker")
{
    CGROUP_MODES(mode);
    Harness h(mode);
    if (!h.available())
        return;
    // A duration of this run's own, so that no other "sleep" on the host
    // (another test, an operator's shell) is taken for a survivor.
    const std::string sleep = "sleep 2" + std::to_string(::getpid());
    auto spec = sh_worker(sleep + " & " + sleep + "; echo never");
    spec.idle_timeout = 300ms;
    auto id = h.start(std::move(spec));
    auto o = h.wait(id);
    CHECK(o.state == WorkerState::failed);
    CHECK(o.error_code == "NOP-RUNTIME-IDLE-TIMEOUT");
    CHECK(o.killed_reason == KilledReason::idle_timeout);
    CHECK(o.signal == SIGKILL);
    CHECK(o.retryable);
    CHECK(contains(o.error_message, "300 ms"));
    CHECK_FALSE(process_running(sleep));
    CHECK(h.no_cgroups_left());
}

TEST_CASE("idle timeout: output keeps a worker alive past the limit")
{
    Harness h(Cgroups::none);
    auto spec = sh_worker("i=0; while [ $i -lt 25 ]; do echo tick; i=$((i+1)); sleep 0.1; done");
    spec.idle_timeout = 2s;  // 2.5 s of work, output every 0.1 s
    auto o = h.wait(h.start(std::move(spec)));
    CHECK(o.state == WorkerState::completed);
    CHECK(o.result_json == R"({"exit_code":0})");
}

TEST_CASE("stderr output is activity too")
{
    Harness h(Cgroups::none);
    auto spec = sh_worker("i=0; while [ $i -lt 25 ]; do echo tick >&2; i=$((i+1)); sleep 0.1; done");
    spec.idle_timeout = 2s;
    CHECK(h.wait(h.start(std::move(spec))).state == WorkerState::completed);
}

TEST_CASE("max runtime: a busy worker is stopped; with both limits passed max runtime wins")
{
    CGROUP_MODES(mode);
    Harness h(mode);
    if (!h.available())
        return;
    auto busy = sh_worker("while true; do echo x; sleep 0.05; done");
    busy.max_runtime = 500ms;
    busy.idle_timeout = 10s;
    auto both = sh_worker("sleep 100");
    both.max_runtime = 300ms;
    both.idle_timeout = 300ms;
    auto b = h.start(std::move(busy));
    auto t = h.start(std::move(both));
    auto o = h.wait(b);
    CHECK(o.error_code == "NOP-RUNTIME-MAX-RUNTIME");
    CHECK(o.killed_reason == KilledReason::max_runtime);
    auto p = h.wait(t);
    CHECK(p.error_code == "NOP-RUNTIME-MAX-RUNTIME");
    CHECK(p.killed_reason == KilledReason::max_runtime);
    CHECK(h.no_cgroups_left());
}

TEST_CASE("the runner's policy applies when the spec has no limits")
{
    Harness h(Cgroups::none, [](SupervisorOptions& o) { o.default_max_runtime = 300ms; });
    auto o = h.wait(h.start(sh_worker("sleep 100")));
    CHECK(o.error_code == "NOP-RUNTIME-MAX-RUNTIME");
}

TEST_CASE("cancel: a cooperative worker answers the cancel frame")
{
    CGROUP_MODES(mode);
    Harness h(mode);
    if (!h.available())
        return;
    auto id = h.start(sh_worker(
        "read -r f; echo '{\"seq\":0,\"is_final\":false}'; read -r c; "
        "case \"$c\" in *'\"action\":\"cancel\"'*) "
        "echo '{\"seq\":1,\"is_final\":true,\"error\":{\"code\":\"NOP-TASK-CANCELLED\",\"message\":\"as asked\"}}';; "
        "*) echo \"unexpected: $c\" >&2; exit 9;; esac"));
    h.on_progress = [&](WorkerId w, std::uint64_t) { h.supervisor().cancel(w); };
    auto o = h.wait(id);
    CHECK(o.state == WorkerState::cancelled);
    CHECK(o.error_code == "NOP-TASK-CANCELLED");
    CHECK(o.error_message == "as asked");
    CHECK(o.killed_reason == KilledReason::none);
    CHECK(o.exit_code == 0);
}

TEST_CASE("cancel: a worker ignoring the frame and SIGTERM is killed after the grace")
{
    CGROUP_MODES(mode);
    Harness h(mode);
    if (!h.available())
        return;
    auto id = h.start(sh_worker("trap '' TERM; echo '{\"seq\":0,\"is_final\":false}'; "
                                "while true; do sleep 1; done"));
    nps::event::EventLoop::TimePoint cancelled_at{};
    h.on_progress = [&](WorkerId w, std::uint64_t) {
        cancelled_at = nps::event::EventLoop::now();
        h.supervisor().cancel(w);
    };
    auto o = h.wait(id);
    CHECK(o.state == WorkerState::cancelled);
    CHECK(o.error_code == "NOP-TASK-CANCELLED");
    CHECK(o.killed_reason == KilledReason::signal);
    CHECK(o.signal == SIGKILL);
    // Not a timing assertion: SIGKILL comes after two graces, never before.
    CHECK(o.ended - cancelled_at >= 400ms);
    CHECK(h.no_cgroups_left());
}

TEST_CASE("cancel: a worker handling SIGTERM exits on it")
{
    Harness h(Cgroups::none);
    auto id = h.start(sh_worker("trap 'echo got-term >&2; exit 143' TERM; echo '{\"seq\":0,\"is_final\":false}'; "
                                "while true; do sleep 0.05; done"));
    h.on_progress = [&](WorkerId w, std::uint64_t) { h.supervisor().cancel(w); };
    auto o = h.wait(id);
    CHECK(o.state == WorkerState::cancelled);
    CHECK(o.exit_code == 143);
    CHECK(o.killed_reason == KilledReason::signal);
    CHECK(o.stderr_tail == "got-term\n");
}

TEST_CASE("a worker that forks children and exits: the children die with it")
{
    CGROUP_MODES(mode);
    Harness h(mode);
    if (!h.available())
        return;
    auto id = h.start(sh_worker("sleep 1234 & sleep 1234 & (sleep 1234 &) ; echo started; exit 0"));
    auto o = h.wait(id);
    CHECK(o.state == WorkerState::completed);
    CHECK(slurp(o.log_dir + "/stdout.log") == "started\n");
    CHECK_FALSE(process_running("sleep 1234"));
    CHECK(h.no_cgroups_left());
}

TEST_CASE("a final frame wins; a worker lingering after it is killed after the grace")
{
    Harness h(Cgroups::none);
    auto id = h.start(sh_worker("echo '{\"seq\":0,\"is_final\":true,\"data\":{\"ok\":true}}'; "
                                "trap '' TERM; sleep 100"));
    auto o = h.wait(id);
    CHECK(o.state == WorkerState::completed);
    CHECK(o.result_json == R"({"ok":true})");
    CHECK(o.signal == SIGKILL);
    CHECK(o.killed_reason == KilledReason::none);
}

TEST_CASE("exit 0 after progress but no final frame fails")
{
    Harness h(Cgroups::none);
    auto o = h.wait(h.start(sh_worker("echo '{\"seq\":0,\"is_final\":false}'")));
    CHECK(o.state == WorkerState::failed);
    CHECK(o.error_code == "NOP-DELEGATE-REJECTED");
    CHECK(contains(o.error_message, "no final frame"));
}

TEST_CASE("a worker flooding stdout: the caps hold and our memory stays flat")
{
    CGROUP_MODES(mode);
    Harness h(mode, [](SupervisorOptions& o) { o.log_limits = {.max_bytes = 64 * 1024, .keep = 1}; });
    if (!h.available())
        return;
    // Warm up (first worker, parser buffers) before measuring.
    (void)h.wait(h.start(sh_worker("echo warm")));
    const std::size_t rss_before = rss_bytes();

    auto lines = sh_worker("yes flood-line");                      // short lines, as fast as possible
    lines.max_runtime = 1500ms;
    auto one_line = sh_worker("cat /dev/zero");                    // one endless line of log
    one_line.max_runtime = 1500ms;
    auto frame = sh_worker("printf '{\"seq\":0,\"data\":\"'; cat /dev/zero | tr '\\0' x");  // an endless frame
    frame.max_runtime = 10s;
    auto stderr_flood = sh_worker("yes err-line >&2");
    stderr_flood.max_runtime = 1500ms;
    auto a = h.start(std::move(lines));
    auto b = h.start(std::move(one_line));
    auto c = h.start(std::move(frame));
    auto d = h.start(std::move(stderr_flood));

    for (auto id : {a, b, d}) {
        auto o = h.wait(id);
        CHECK(o.error_code == "NOP-RUNTIME-MAX-RUNTIME");
        for (const char* name : {"/stdout.log", "/stderr.log"}) {
            CHECK(file_size(o.log_dir + name) <= 64 * 1024);
            CHECK(file_size(o.log_dir + name + ".1") <= 64 * 1024);
            CHECK(file_size(o.log_dir + name + ".2") == -1);
        }
    }
    CHECK(file_size(h.wait(a).log_dir + "/stdout.log.1") == 64 * 1024);  // it did rotate
    auto oversized = h.wait(c);
    CHECK(oversized.error_code == "NCP-FRAME-PAYLOAD-TOO-LARGE");
    CHECK(oversized.signal == SIGKILL);

    const std::size_t rss_after = rss_bytes();
    MESSAGE("RSS before the floods " << rss_before / 1024 << " KiB, after " << rss_after / 1024 << " KiB");
    // The line buffer is capped at 512 KiB and released; stdout is never
    // held beyond a line. 16 MiB of slack for the allocator and the kernel.
    CHECK(rss_after < rss_before + 16 * 1024 * 1024);
    CHECK(h.no_cgroups_left());
}

TEST_CASE("the concurrency cap: workers wait in a FIFO queue")
{
    Harness h(Cgroups::none, [](SupervisorOptions& o) { o.max_concurrent = 2; });
    std::vector<WorkerId> ids;
    for (int i = 0; i < 6; ++i)
        ids.push_back(h.start(sh_worker("sleep 0.2")));
    CHECK(h.supervisor().queued() == 6);  // start() only queues
    CHECK(h.supervisor().running() == 0);
    CHECK_FALSE(h.supervisor().has_capacity());
    std::size_t most = 0;
    std::size_t finished = 0;
    h.on_outcome = [&](const WorkerOutcome&) { ++finished; };
    REQUIRE(h.run_until([&] {
        most = std::max(most, h.supervisor().running());
        return finished == 6;
    }));
    CHECK(most == 2);
    for (auto id : ids)
        CHECK(h.wait(id).state == WorkerState::completed);
    CHECK(h.supervisor().has_capacity());
    // The third started once one of the first two had ended.
    CHECK(h.wait(ids[2]).started >= std::min(h.wait(ids[0]).ended, h.wait(ids[1]).ended));
}

TEST_CASE("cancelling a queued worker: it never starts")
{
    Harness h(Cgroups::none, [](SupervisorOptions& o) { o.max_concurrent = 1; });
    auto running = h.start(sh_worker("sleep 100"));
    auto waiting = h.start(sh_worker("echo should-not-run"));
    REQUIRE(h.run_until([&] { return h.supervisor().running() == 1; }));
    h.supervisor().cancel(waiting);
    CHECK_FALSE(h.has_outcome(waiting));  // outcomes come from the loop
    auto o = h.wait(waiting);
    CHECK(o.state == WorkerState::cancelled);
    CHECK(o.error_code == "NOP-TASK-CANCELLED");
    CHECK(o.log_dir.empty());
    CHECK(o.details_json == "{}");
    h.supervisor().cancel(running);
    CHECK(h.wait(running).state == WorkerState::cancelled);
}

TEST_CASE("spawn failures are outcomes with killed_reason spawn_failed")
{
    CGROUP_MODES(mode);
    Harness h(mode);
    if (!h.available())
        return;
    auto spec = sh_worker("");
    spec.sandbox.argv = {"/bin/no-such-program"};
    auto o = h.wait(h.start(std::move(spec)));
    CHECK(o.state == WorkerState::failed);
    CHECK(o.killed_reason == KilledReason::spawn_failed);
    CHECK(o.error_code == "NOP-DELEGATE-REJECTED");
    CHECK(contains(o.error_message, "Failed to execute '/bin/no-such-program'"));
    CHECK(h.no_cgroups_left());
}

TEST_CASE("start() refuses a bad spec synchronously")
{
    Harness h(Cgroups::none);
    auto spec = sh_worker("true");
    spec.delegate_frame = {{"parent_task_id", "t"}};
    WorkerCallbacks callbacks{.on_outcome = [](const WorkerOutcome&) { FAIL("no outcome expected"); }};
    auto refused = h.supervisor().start(std::move(spec), callbacks);
    REQUIRE_FALSE(refused);
    CHECK(contains(refused.error().message, "subtask_id"));
}

TEST_CASE("OOM: the kernel's kill is reported as oom")
{
    auto* base = host_cgroup_base();
    if (!base || base->enforced_by("memory").empty()) {
        MESSAGE("no memory cgroup here: skipped");
        return;
    }
    Harness h(Cgroups::host);
    auto spec = sh_worker("x=$(head -c 200000000 /dev/zero | tr '\\0' x); echo survived");
    spec.limits.memory_bytes = 32 * 1024 * 1024;
    auto o = h.wait(h.start(std::move(spec)));
    CHECK(o.state == WorkerState::failed);
    CHECK(o.oom_killed);
    CHECK(o.killed_reason == KilledReason::oom);
    CHECK(o.error_code == "NOP-RESOURCE-INSUFFICIENT");
    CHECK(h.no_cgroups_left());
}

TEST_CASE("logs rotate per stream; the outcome carries the stderr tail")
{
    Harness h(Cgroups::none, [](SupervisorOptions& o) { o.log_limits = {.max_bytes = 4096, .keep = 2}; });
    // 20,000 bytes of stderr in 100-byte lines.
    auto o = h.wait(h.start(sh_worker(
        "i=0; while [ $i -lt 200 ]; do printf '%099d\\n' $i >&2; i=$((i+1)); done")));
    CHECK(o.state == WorkerState::completed);
    CHECK(file_size(o.log_dir + "/stderr.log") <= 4096);
    CHECK(file_size(o.log_dir + "/stderr.log.1") == 4096);
    CHECK(file_size(o.log_dir + "/stderr.log.2") == 4096);
    CHECK(file_size(o.log_dir + "/stderr.log.3") == -1);
    CHECK(o.stderr_tail.size() == 4096);
    CHECK(o.stderr_tail.substr(o.stderr_tail.size() - 100) == std::string(96, '0') + "199\n");
    auto tail = read_log_tail(o.log_dir + "/stderr.log", 250);
    REQUIRE(tail);
    CHECK(tail->size() == 250);
    CHECK(file_size(o.log_dir + "/stdout.log") == -1);  // never written, never created
}

TEST_CASE("log_tail of a running worker")
{
    Harness h(Cgroups::none);
    auto id = h.start(sh_worker("echo first; echo second >&2; echo '{\"seq\":0,\"is_final\":false}'; sleep 100"));
    REQUIRE(h.run_until([&] { return !h.progress.empty(); }));
    REQUIRE(h.run_until([&] { return h.supervisor().log_tail(id, LogStream::err, 100) == "second\n"; }));
    CHECK(h.supervisor().log_tail(id, LogStream::out, 100) == "first\n");
    CHECK_FALSE(h.supervisor().log_tail(9999, LogStream::out, 100));
    h.supervisor().cancel(id);
    CHECK(h.wait(id).state == WorkerState::cancelled);
}

TEST_CASE("shutdown stops every worker, queued ones too")
{
    CGROUP_MODES(mode);
    Harness h(mode, [](SupervisorOptions& o) {
        o.max_concurrent = 2;
        o.stop_grace = 100ms;
    });
    if (!h.available())
        return;
    std::vector<WorkerId> ids;
    for (int i = 0; i < 3; ++i)
        ids.push_back(h.start(sh_worker("trap '' TERM; sleep 100")));
    REQUIRE(h.run_until([&] { return h.supervisor().running() == 2; }));
    h.supervisor().shutdown();
    for (auto id : ids) {
        auto o = h.wait(id);
        CHECK(o.state == WorkerState::failed);
        CHECK(o.killed_reason == KilledReason::shutdown);
        CHECK(o.error_code == "NPS-SERVER-UNAVAILABLE");
    }
    CHECK(h.no_cgroups_left());
}

TEST_CASE("destroying the supervisor kills and reaps every worker")
{
    CGROUP_MODES(mode);
    Harness h(mode);
    if (!h.available())
        return;
    auto id = h.start(sh_worker("sleep 4321 & sleep 4321"));
    REQUIRE(h.run_until([&] { return h.supervisor().pid(id).has_value(); }));
    REQUIRE(h.run_until([&] { return process_running("sleep 4321"); }));
    const pid_t pid = *h.supervisor().pid(id);
    h.destroy_supervisor();
    CHECK(::kill(pid, 0) < 0);
    CHECK_FALSE(process_running("sleep 4321"));
    CHECK(h.leftover_cgroups().empty());
    CHECK_FALSE(h.has_outcome(id));  // no callback from the destructor
}

TEST_CASE("with a spawn server, workers are cloned by it and supervised as any")
{
    CGROUP_MODES(mode);
    auto server = nps::sandbox::SpawnServer::start();
    REQUIRE_MESSAGE(server, (server ? std::string() : server.error().describe()));
    Harness h(mode, [&server](SupervisorOptions& o) {
        o.spawn_server = &*server;
        o.spawn_pool = 0;
    });
    if (!h.available())
        return;
    auto framed = h.start(sh_worker("read -r frame; echo '{\"seq\":0,\"is_final\":true,\"data\":{\"answer\":4}}'"));
    auto bad = h.start(sh_worker("echo oops >&2; exit 3"));
    auto spec = sh_worker("");
    spec.sandbox.argv = {"/bin/no-such-program"};
    auto missing = h.start(std::move(spec));
    auto o = h.wait(framed);
    CHECK(o.state == WorkerState::completed);
    CHECK(o.result_json == R"({"answer":4})");
    auto f = h.wait(bad);
    CHECK(f.exit_code == 3);
    CHECK(f.stderr_tail == "oops\n");
    auto m = h.wait(missing);
    CHECK(m.killed_reason == KilledReason::spawn_failed);
    CHECK(contains(m.error_message, "Failed to execute '/bin/no-such-program'"));
    const SpawnStats stats = h.supervisor().spawn_stats();
    CHECK(stats.server == 2);  // a spawn that failed counts on no path
    CHECK(stats.direct == 0);
    CHECK(h.no_cgroups_left());
}

TEST_CASE("with its spawn server gone, workers are spawned directly")
{
    auto server = nps::sandbox::SpawnServer::start();
    REQUIRE(server);
    Harness h(Cgroups::none, [&server](SupervisorOptions& o) { o.spawn_server = &*server; });
    REQUIRE(::kill(server->pid(), SIGKILL) == 0);
    auto o = h.wait(h.start(sh_worker("echo fine")));
    CHECK(o.state == WorkerState::completed);
    const SpawnStats stats = h.supervisor().spawn_stats();
    CHECK(stats.server == 0);
    CHECK(stats.direct == 1);
}

TEST_CASE("a worker cancelled or killed while it is being spawned is stopped as soon as its child exists")
{
    CGROUP_MODES(mode);
    // With a minute's grace, only a stop without one ends the worker within the wait below.
    Harness h(mode, [](SupervisorOptions& o) { o.stop_grace = 60s; });
    if (!h.available())
        return;
    for (const bool kill : {false, true}) {
        CAPTURE(kill);
        int hits = 0;
        for (int attempt = 0; attempt < 20 && hits == 0; ++attempt) {
            auto id = h.start(sh_worker("trap '' TERM; sleep 100"));
            REQUIRE(h.run_until([&] { return h.supervisor().running() == 1; }));
            if (h.supervisor().pid(id)) {  // the spawn was done already: not this case
                h.supervisor().kill(id);
                h.wait(id);
                continue;
            }
            ++hits;
            if (kill)
                h.supervisor().kill(id);
            else
                h.supervisor().cancel(id);
            auto o = h.wait(id, 20s);
            if (kill) {
                CHECK(o.state == WorkerState::failed);
                CHECK(o.killed_reason == KilledReason::shutdown);
            } else {
                CHECK(o.state == WorkerState::cancelled);
            }
        }
        CHECK(hits == 1);
    }
    CHECK(h.no_cgroups_left());
}
