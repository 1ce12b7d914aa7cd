// SPDX-License-Identifier: Apache-2.0
// TaskRun: the forward run beyond the vectors — attempts and their fields,
// retries with backoff timers, node and task timeouts, production-mode
// concurrency, cancel, abandon, resume, conditions and mapping failures.
#include <doctest/doctest.h>

#include "fake_host.hpp"
#include "nps/base/clock.hpp"
#include "nps/nop/subtask_id.hpp"
#include "nps/nop/task_run.hpp"

using namespace nps::test::nop;
using nps::nop::Mode;
using nps::nop::RunOptions;
using nps::nop::TaskRun;
using std::chrono::milliseconds;
using Strings = std::vector<std::string>;

TEST_CASE("engine: an attempt carries everything the host needs")
{
    nps::FakeClock clock(1'000'000);
    FakeHost host;
    const auto task = frame({node("fetch", {}, {{"timeout_ms", 1500}}),
                             node("double", {"fetch"}, {{"input_mapping", {{"value", "$.fetch.value"}}}})},
                            {{"timeout_ms", 9000}});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance, .clock = &clock});
    run.start();
    REQUIRE(host.dispatched.size() == 1);
    const Attempt first = host.dispatched[0];
    CHECK(first.node_id == "fetch");
    CHECK(first.agent == "urn:nps:agent:test:fetch");
    CHECK(first.action == "nwp://test.example/fetch/invoke");
    CHECK(first.number == 1);
    CHECK(first.params_json == "{}");
    CHECK(first.subtask_id == nps::nop::node_subtask_id("task-unit", "fetch"));
    CHECK(first.idempotency_key == "task-unit:fetch");
    CHECK_FALSE(first.compensation);
    CHECK(first.timeout == milliseconds(1500));
    CHECK(first.deadline_at_ms == 1'001'500);
    CHECK(host.state_of("fetch") == "RUNNING");
    // The task deadline and the attempt deadline are armed.
    CHECK(host.timers_with_delay(milliseconds(9000)).size() == 1);
    CHECK(host.timers_with_delay(milliseconds(1500)).size() == 1);

    // Reports for nodes that are not running change nothing.
    run.attempt_finished("ghost", success("{}"));
    run.attempt_finished("double", success("{}"));
    CHECK(host.dispatched.size() == 1);
    CHECK(host.events == Strings{"task:running"});

    clock.advance_ms(10);
    run.attempt_finished("fetch", success(R"({"value":2})"));
    CHECK(host.timers_with_delay(milliseconds(1500)).empty());  // its deadline is taken back
    REQUIRE(host.dispatched.size() == 2);
    const Attempt second = host.dispatched[1];
    CHECK(second.node_id == "double");
    CHECK(second.params_json == R"({"value":2})");
    CHECK(second.timeout == milliseconds(9000));  // the task's timeout_ms
    CHECK(second.deadline_at_ms == 1'009'010);

    run.attempt_finished("double", success(R"({"answer":4})"));
    REQUIRE(host.end);
    CHECK(host.end->state == "COMPLETED");
    CHECK_FALSE(host.end->error_code);
    CHECK(host.end->aggregate_json == R"({"answer":4})");
    CHECK(host.events == Strings{"task:running", "fetch:attempt:1", "fetch:completed", "double:attempt:1",
                                 "double:completed", "task:completed"});
    const auto update = host.last_update("double");
    REQUIRE(update);
    CHECK(update->state == "COMPLETED");
    CHECK(update->attempts == 1);
    CHECK(update->result_json == R"({"answer":4})");
    CHECK(host.timers.empty());
    CHECK(run.ended());
    // Input after the end is ignored.
    run.attempt_finished("double", success("{}"));
    run.cancel();
    CHECK(host.ends == 1);
    CHECK(host.calls_after_end.empty());
}

TEST_CASE("engine: retries wait for backoff timers and reuse the subtask id")
{
    FakeHost host;
    const auto task = frame({node("invoke", {}, {{"retry_policy", {{"max_retries", 3}, {"backoff", "exponential"},
                                                                    {"initial_delay_ms", 100}, {"max_delay_ms", 250}}}})});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance});
    run.start();
    REQUIRE(host.dispatched.size() == 1);

    run.attempt_finished("invoke", failure("NWP-NODE-UNAVAILABLE", true));
    CHECK(host.dispatched.size() == 1);  // nothing before the timer
    CHECK(host.state_of("invoke") == "RUNNING");
    host.fire(milliseconds(100));
    REQUIRE(host.dispatched.size() == 2);
    run.attempt_finished("invoke", failure("NWP-NODE-UNAVAILABLE", true));
    host.fire(milliseconds(200));
    REQUIRE(host.dispatched.size() == 3);
    run.attempt_finished("invoke", failure("NWP-NODE-UNAVAILABLE", true));
    host.fire(milliseconds(250));  // 400 capped at max_delay_ms
    REQUIRE(host.dispatched.size() == 4);
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(host.dispatched[i].number == i + 1);
        CHECK(host.dispatched[i].subtask_id == host.dispatched[0].subtask_id);
        CHECK(host.dispatched[i].idempotency_key == "task-unit:invoke");
    }
    // The fourth attempt is the last (1 + max_retries 3): the failure is final.
    run.attempt_finished("invoke", failure("NWP-NODE-UNAVAILABLE", true));
    REQUIRE(host.end);
    CHECK(host.end->state == "FAILED");
    CHECK(host.end->error_code == "NWP-NODE-UNAVAILABLE");
    CHECK(host.events == Strings{"task:running", "invoke:attempt:1", "invoke:retrying", "invoke:attempt:2",
                                 "invoke:retrying", "invoke:attempt:3", "invoke:retrying", "invoke:attempt:4",
                                 "invoke:failed", "task:failed"});
    CHECK(host.last_update("invoke")->attempts == 4);
    CHECK(host.timers.empty());
}

TEST_CASE("engine: what is not retried")
{
    SUBCASE("not retryable")
    {
        FakeHost host;
        TaskRun run(frame({node("a")}, {{"max_retries", 5}}), host, RunOptions{});
        run.start();
        run.attempt_finished("a", failure("NOP-DELEGATE-REJECTED", false));
        REQUIRE(host.end);
        CHECK(host.end->error_code == "NOP-DELEGATE-REJECTED");
        CHECK(host.dispatched.size() == 1);
    }
    SUBCASE("code not in retry_on")
    {
        FakeHost host;
        TaskRun run(frame({node("a", {}, {{"retry_policy", {{"max_retries", 2}, {"retry_on", {"NWP-NODE-UNAVAILABLE"}}}}})}),
                    host, RunOptions{});
        run.start();
        run.attempt_finished("a", failure("NOP-DELEGATE-REJECTED", true));
        REQUIRE(host.end);
        CHECK(host.end->error_code == "NOP-DELEGATE-REJECTED");
        CHECK(host.dispatched.size() == 1);
    }
    SUBCASE("the node's max_retries 0 overrides the task's")
    {
        FakeHost host;
        TaskRun run(frame({node("a", {}, {{"retry_policy", {{"max_retries", 0}}}})}, {{"max_retries", 5}}), host,
                    RunOptions{});
        run.start();
        run.attempt_finished("a", failure("NWP-NODE-UNAVAILABLE", true));
        REQUIRE(host.end);
        CHECK(host.dispatched.size() == 1);
    }
    SUBCASE("the task's max_retries applies without a node policy, with the default backoff")
    {
        FakeHost host;
        TaskRun run(frame({node("a")}, {{"max_retries", 1}}), host, RunOptions{});
        run.start();
        run.attempt_finished("a", failure("NWP-NODE-UNAVAILABLE", true));
        CHECK_FALSE(host.end);
        host.fire(milliseconds(1000));
        CHECK(host.dispatched.size() == 2);
    }
}

TEST_CASE("engine: a node timeout stops the attempt and retries it as NOP-DELEGATE-TIMEOUT")
{
    FakeHost host;
    const auto task = frame({node("slow", {}, {{"timeout_ms", 500},
                                               {"retry_policy", {{"max_retries", 1}, {"initial_delay_ms", 10}}}})});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance});
    run.start();
    host.fire(milliseconds(500));  // the attempt's deadline
    CHECK(host.stops == Strings{"slow"});
    CHECK(host.events == Strings{"task:running", "slow:attempt:1", "slow:retrying"});
    CHECK(host.details.back().find("NOP-DELEGATE-TIMEOUT") != std::string::npos);

    // The backoff elapses first; the next attempt still waits for the
    // stopped one to report, so one node never has two workers.
    host.fire(milliseconds(10));
    CHECK(host.dispatched.size() == 1);
    // The late report of the stopped attempt is dropped, even a success.
    run.attempt_finished("slow", success(R"({"late":true})"));
    REQUIRE(host.dispatched.size() == 2);
    CHECK(host.dispatched[1].number == 2);
    CHECK(host.state_of("slow") == "RUNNING");

    // Attempt 2 times out too: retries are exhausted.
    host.fire(milliseconds(500));
    CHECK(host.stops == Strings{"slow", "slow"});
    REQUIRE(host.end);
    CHECK(host.end->state == "FAILED");
    CHECK(host.end->error_code == "NOP-DELEGATE-TIMEOUT");
    CHECK(host.end->error_message == "attempt 2 of node 'slow' exceeded its deadline of 500 ms");
    CHECK(host.last_update("slow")->state == "FAILED");
    CHECK(host.last_update("slow")->attempts == 2);
}

TEST_CASE("engine: the task timeout fails the task with NOP-TASK-TIMEOUT")
{
    FakeHost host;
    const auto task = frame({node("a"), node("b", {"a"}, {{"timeout_ms", 60000}})}, {{"timeout_ms", 5000}});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance});
    run.start();
    run.attempt_finished("a", success("{}"));
    REQUIRE(host.dispatched.size() == 2);
    host.fire(milliseconds(5000));
    CHECK(host.stops == Strings{"b"});
    REQUIRE(host.end);
    CHECK(host.end->state == "FAILED");
    CHECK(host.end->error_code == "NOP-TASK-TIMEOUT");
    CHECK(host.end->error_message == "the task exceeded its timeout_ms of 5000 ms");
    CHECK(host.events ==
          Strings{"task:running", "a:attempt:1", "a:completed", "b:attempt:1", "b:failed", "task:failed"});
    CHECK(host.last_update("b")->state == "FAILED");
    CHECK(host.last_update("b")->error_code == "NOP-TASK-TIMEOUT");
    CHECK(host.last_update("a")->state == "COMPLETED");  // no saga after a task timeout
    CHECK(host.timers.empty());
    run.attempt_finished("b", success("{}"));
    CHECK(host.calls_after_end.empty());
}

TEST_CASE("engine: a diamond in production mode runs both branches at once")
{
    FakeHost host;
    const auto task = frame({node("fetch"), node("left", {"fetch"}), node("right", {"fetch"}),
                             node("merge", {"left", "right"})},
                            {{"aggregate", "all"}});
    TaskRun run(task, host, RunOptions{.mode = Mode::production, .max_parallel = 8});
    run.start();
    REQUIRE(host.dispatched.size() == 1);
    run.attempt_finished("fetch", success(R"({"v":1})"));
    REQUIRE(host.dispatched.size() == 3);
    CHECK(host.dispatched[1].node_id == "left");  // smallest id first
    CHECK(host.dispatched[2].node_id == "right");
    CHECK(host.state_of("left") == "RUNNING");
    CHECK(host.state_of("right") == "RUNNING");
    // The default params of a single dependency: its result.
    CHECK(host.dispatched[1].params_json == R"({"v":1})");
    // Completion order differs from the portable order.
    run.attempt_finished("right", success(R"({"r":2})"));
    CHECK(host.dispatched.size() == 3);  // merge still waits for left
    run.attempt_finished("left", success(R"({"l":1})"));
    REQUIRE(host.dispatched.size() == 4);
    CHECK(host.dispatched[3].node_id == "merge");
    // Several dependencies: params keyed by node id.
    CHECK(host.dispatched[3].params_json == R"({"left":{"l":1},"right":{"r":2}})");
    run.attempt_finished("merge", success(R"({"m":3})"));
    REQUIRE(host.end);
    CHECK(host.end->state == "COMPLETED");
    CHECK(host.end->aggregate_json == R"([{"m":3}])");
    CHECK(host.events == Strings{"task:running", "fetch:attempt:1", "fetch:completed", "right:attempt:1",
                                 "right:completed", "left:attempt:1", "left:completed", "merge:attempt:1",
                                 "merge:completed", "task:completed"});
}

TEST_CASE("engine: the same diamond in conformance mode runs one node at a time")
{
    FakeHost host;
    const auto task = frame({node("fetch"), node("left", {"fetch"}), node("right", {"fetch"}),
                             node("merge", {"left", "right"})});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance});
    run.start();
    run.attempt_finished("fetch", success("{}"));
    REQUIRE(host.dispatched.size() == 2);
    CHECK(host.dispatched[1].node_id == "left");
    run.attempt_finished("left", success("{}"));
    REQUIRE(host.dispatched.size() == 3);
    CHECK(host.dispatched[2].node_id == "right");
}

TEST_CASE("engine: the host hears of each node once, two levels ahead of what runs")
{
    FakeHost host;
    const auto task = frame({node("fetch"), node("left", {"fetch"}), node("right", {"fetch"}),
                             node("merge", {"left", "right"}), node("report", {"merge"}),
                             node("archive", {"report"})});
    TaskRun run(task, host, RunOptions{.mode = Mode::production, .max_parallel = 8});
    run.start();
    REQUIRE(host.dispatched.size() == 1);
    // fetch runs: left and right may start next, merge after both; report
    // is three levels away.
    CHECK(host.anticipated ==
          Strings{"urn:nps:agent:test:left", "urn:nps:agent:test:right", "urn:nps:agent:test:merge"});
    run.attempt_finished("fetch", success("{}"));
    REQUIRE(host.anticipated.size() == 4);  // left and right run: merge next, report after it
    CHECK(host.anticipated.back() == "urn:nps:agent:test:report");
    run.attempt_finished("left", success("{}"));
    CHECK(host.anticipated.size() == 4);  // nothing new: right still runs
    run.attempt_finished("right", success("{}"));
    REQUIRE(host.anticipated.size() == 5);
    CHECK(host.anticipated.back() == "urn:nps:agent:test:archive");
    run.attempt_finished("merge", success("{}"));
    run.attempt_finished("report", success("{}"));
    run.attempt_finished("archive", success("{}"));
    REQUIRE(host.end);
    CHECK(host.end->state == "COMPLETED");
    CHECK(host.anticipated.size() == 5);  // never twice
}

TEST_CASE("engine: conformance mode hints nothing ahead")
{
    FakeHost host;
    const auto task = frame({node("fetch"), node("report", {"fetch"})});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance});
    run.start();
    run.attempt_finished("fetch", success("{}"));
    run.attempt_finished("report", success("{}"));
    REQUIRE(host.end);
    CHECK(host.anticipated.empty());
}

TEST_CASE("engine: max_parallel bounds production mode")
{
    FakeHost host;
    TaskRun run(frame({node("a"), node("b"), node("c")}), host,
                RunOptions{.mode = Mode::production, .max_parallel = 2});
    run.start();
    REQUIRE(host.dispatched.size() == 2);
    CHECK(host.dispatched[0].node_id == "a");
    CHECK(host.dispatched[1].node_id == "b");
    run.attempt_finished("b", success("{}"));
    REQUIRE(host.dispatched.size() == 3);
    CHECK(host.dispatched[2].node_id == "c");
}

TEST_CASE("engine: cancel while running stops every running attempt")
{
    FakeHost host;
    const auto task = frame({node("fetch"), node("left", {"fetch"}), node("right", {"fetch"}),
                             node("merge", {"left", "right"})});
    TaskRun run(task, host, RunOptions{.mode = Mode::production});
    run.start();
    run.attempt_finished("fetch", success("{}"));
    REQUIRE(host.dispatched.size() == 3);
    run.cancel("operator asked");
    CHECK(host.stops == Strings{"left", "right"});
    REQUIRE(host.end);
    CHECK(host.end->state == "CANCELLED");
    CHECK(host.end->error_code == "NOP-TASK-CANCELLED");
    CHECK(host.end->error_message == "operator asked");
    CHECK(host.events == Strings{"task:running", "fetch:attempt:1", "fetch:completed", "task:cancelled"});
    CHECK(host.state_of("left") == "CANCELLED");
    CHECK(host.state_of("right") == "CANCELLED");
    CHECK(host.state_of("fetch") == "COMPLETED");
    CHECK(host.state_of("merge") == "");
    CHECK(host.timers.empty());
    // The stopped attempts report afterwards: nothing happens.
    run.attempt_finished("left", failure("NOP-TASK-CANCELLED", false));
    run.attempt_finished("right", success("{}"));
    CHECK(host.ends == 1);
    CHECK(host.calls_after_end.empty());
    CHECK(host.dispatched.size() == 3);
}

TEST_CASE("engine: cancel during the backoff and before start")
{
    SUBCASE("backoff")
    {
        FakeHost host;
        TaskRun run(frame({node("a")}, {{"max_retries", 1}}), host, RunOptions{});
        run.start();
        run.attempt_finished("a", failure("NWP-NODE-UNAVAILABLE", true));
        run.cancel();
        CHECK(host.stops.empty());  // nothing was in flight
        CHECK(host.state_of("a") == "CANCELLED");
        CHECK(host.end->state == "CANCELLED");
        CHECK(host.timers.empty());
    }
    SUBCASE("before start")
    {
        FakeHost host;
        TaskRun run(frame({node("a")}), host, RunOptions{});
        run.cancel();
        CHECK(host.events == Strings{"task:cancelled"});
        run.start();
        CHECK(host.dispatched.empty());
        CHECK(host.ends == 1);
    }
}

TEST_CASE("engine: abandon() stops attempts and then calls nothing")
{
    FakeHost host;
    TaskRun run(frame({node("a"), node("b")}, {{"max_retries", 1}}), host, RunOptions{.mode = Mode::production});
    run.start();
    REQUIRE(host.dispatched.size() == 2);
    run.attempt_finished("b", failure("NWP-NODE-UNAVAILABLE", true));  // b waits for its backoff
    const auto events = host.events.size();
    const auto updates = host.updates.size();
    run.abandon();
    CHECK(host.stops == Strings{"a"});
    CHECK(host.timers.empty());
    CHECK(run.ended());
    run.attempt_finished("a", success("{}"));
    run.cancel();
    run.abandon();
    CHECK(host.events.size() == events);
    CHECK(host.updates.size() == updates);
    CHECK(host.dispatched.size() == 2);
    CHECK(host.ends == 0);
}

TEST_CASE("engine: destroying a TaskRun takes its timers back")
{
    FakeHost host;
    {
        TaskRun run(frame({node("a")}), host, RunOptions{});
        run.start();
        CHECK_FALSE(host.timers.empty());
    }
    CHECK(host.timers.empty());
}

TEST_CASE("engine: resume skips prior terminal nodes and feeds their results on")
{
    FakeHost host;
    const auto task = frame({node("fetch"), node("gate", {"fetch"}, {{"condition", "$.fetch.value > 1"}}),
                             node("double", {"gate", "fetch"}, {{"input_mapping", {{"value", "$.fetch.value"}}}}),
                             node("side", {"fetch"})});
    RunOptions options{.mode = Mode::conformance};
    options.prior = {
        NodeUpdate{.node_id = "fetch", .state = NodeState::completed, .attempts = 2, .result_json = R"({"value":2})"},
        NodeUpdate{.node_id = "side", .state = NodeState::skipped},
        NodeUpdate{.node_id = "gate", .state = NodeState::running, .attempts = 1},  // not settled: runs again
        NodeUpdate{.node_id = "ghost", .state = NodeState::completed, .result_json = "{}"},  // unknown: ignored
    };
    TaskRun run(task, host, options);
    run.start();
    REQUIRE(host.dispatched.size() == 1);
    CHECK(host.dispatched[0].node_id == "gate");
    CHECK(host.dispatched[0].number == 1);
    CHECK(host.dispatched[0].params_json == R"({"value":2})");  // the prior result, passed on
    run.attempt_finished("gate", success(R"({"open":true})"));
    REQUIRE(host.dispatched.size() == 2);
    CHECK(host.dispatched[1].node_id == "double");
    CHECK(host.dispatched[1].params_json == R"({"value":2})");
    run.attempt_finished("double", success(R"({"answer":4})"));
    REQUIRE(host.end);
    CHECK(host.end->state == "COMPLETED");
    CHECK(host.end->aggregate_json == R"({"answer":4})");  // side (skipped) adds nothing
    CHECK(host.dispatch_count("fetch") == 0);
    CHECK(host.dispatch_count("side") == 0);
    CHECK(host.events == Strings{"task:running", "gate:attempt:1", "gate:completed", "double:attempt:1",
                                 "double:completed", "task:completed"});
}

TEST_CASE("engine: resume with every node settled completes at once")
{
    FakeHost host;
    RunOptions options;
    options.prior = {NodeUpdate{.node_id = "a", .state = NodeState::completed, .attempts = 1, .result_json = R"({"x":1})"}};
    TaskRun run(frame({node("a")}), host, options);
    run.start();
    CHECK(host.dispatched.empty());
    REQUIRE(host.end);
    CHECK(host.end->state == "COMPLETED");
    CHECK(host.end->aggregate_json == R"({"x":1})");
}

TEST_CASE("engine: skipped nodes")
{
    SUBCASE("a skipped terminal node leaves the task COMPLETED without an aggregate")
    {
        FakeHost host;
        TaskRun run(frame({node("seed"), node("publish", {"seed"}, {{"condition", "$.seed.score > 0.7"}})}), host,
                    RunOptions{.mode = Mode::conformance});
        run.start();
        run.attempt_finished("seed", success(R"({"score":0.4})"));
        REQUIRE(host.end);
        CHECK(host.end->state == "COMPLETED");
        CHECK_FALSE(host.end->aggregate_json);
        CHECK(host.state_of("publish") == "SKIPPED");
        CHECK(host.last_update("publish")->attempts == 0);
        CHECK(host.dispatch_count("publish") == 0);
    }
    SUBCASE("a skipped dependency satisfies its dependant, which sees no result")
    {
        FakeHost host;
        TaskRun run(frame({node("a", {}, {{"condition", "false"}}),
                           node("b", {"a"}, {{"condition", "$.a == null"}})}),
                    host, RunOptions{.mode = Mode::conformance});
        run.start();
        REQUIRE(host.dispatched.size() == 1);
        CHECK(host.dispatched[0].node_id == "b");
        CHECK(host.dispatched[0].params_json == "{}");
        run.attempt_finished("b", success(R"({"done":1})"));
        CHECK(host.end->aggregate_json == R"({"done":1})");
        CHECK(host.events == Strings{"task:running", "a:skipped", "b:attempt:1", "b:completed", "task:completed"});
    }
    SUBCASE("conditions only see ancestors")
    {
        FakeHost host;
        // "b_other" completes before "check" in the portable order but is
        // not its ancestor: the condition reads null.
        TaskRun run(frame({node("a"), node("b_other"), node("check", {"a"}, {{"condition", "$.b_other.x == null"}})}),
                    host, RunOptions{.mode = Mode::conformance});
        run.start();
        run.attempt_finished("a", success("{}"));
        REQUIRE(host.dispatched.size() == 2);
        CHECK(host.dispatched[1].node_id == "b_other");
        run.attempt_finished("b_other", success(R"({"x":1})"));
        REQUIRE(host.dispatched.size() == 3);
        CHECK(host.dispatched[2].node_id == "check");
    }
}

TEST_CASE("engine: condition and mapping failures fail the node without an attempt")
{
    SUBCASE("condition evaluation error")
    {
        FakeHost host;
        TaskRun run(frame({node("a"), node("b", {"a"}, {{"condition", "$.a.name > 1"}})}), host, RunOptions{});
        run.start();
        run.attempt_finished("a", success(R"({"name":"x"})"));
        REQUIRE(host.end);
        CHECK(host.end->state == "FAILED");
        CHECK(host.end->error_code == "NOP-CONDITION-EVAL-ERROR");
        CHECK(host.end->error_message == "condition: cannot compare a string with a number using '>' at column 10");
        CHECK(host.last_update("b")->state == "FAILED");
        CHECK(host.last_update("b")->attempts == 0);
        CHECK(host.events == Strings{"task:running", "a:attempt:1", "a:completed", "b:failed", "task:failed"});
    }
    SUBCASE("condition that does not parse")
    {
        FakeHost host;
        TaskRun run(frame({node("a", {}, {{"condition", "$.x.y ="}})}), host, RunOptions{});
        run.start();
        REQUIRE(host.end);
        CHECK(host.end->error_code == "NOP-CONDITION-EVAL-ERROR");
        CHECK(host.dispatched.empty());
    }
    SUBCASE("mapping to a missing value")
    {
        FakeHost host;
        TaskRun run(frame({node("a"), node("b", {"a"}, {{"input_mapping", {{"v", "$.a.missing"}}}})}), host,
                    RunOptions{});
        run.start();
        run.attempt_finished("a", success(R"({"x":1})"));
        REQUIRE(host.end);
        CHECK(host.end->error_code == "NOP-INPUT-MAPPING-ERROR");
        CHECK(host.end->error_message == R"(input_mapping.v: "$.a.missing" resolved to nothing)");
        CHECK(host.last_update("b")->attempts == 0);
        CHECK(host.dispatch_count("b") == 0);
    }
    SUBCASE("a result that is not JSON")
    {
        FakeHost host;
        TaskRun run(frame({node("a")}), host, RunOptions{});
        run.start();
        run.attempt_finished("a", success("{nope"));
        REQUIRE(host.end);
        CHECK(host.end->error_code == "NOP-STREAM-FRAME-INVALID");
    }
}

TEST_CASE("engine: preflight")
{
    SUBCASE("distinct pairs in lexicographic order, then the run")
    {
        FakeHost host;
        Json same_agent = node("b");
        same_agent["agent"] = "urn:nps:agent:test:a";
        same_agent["action"] = "nwp://test.example/a/invoke";
        TaskRun run(frame({node("c"), node("a"), same_agent}, {{"preflight", true}}), host, RunOptions{});
        run.start();
        CHECK(host.events == Strings{"task:preflight"});
        CHECK(host.dispatched.empty());
        CHECK(host.probes == std::vector<std::pair<std::string, std::string>>{
                                 {"urn:nps:agent:test:a", "nwp://test.example/a/invoke"},
                                 {"urn:nps:agent:test:c", "nwp://test.example/c/invoke"}});
        run.preflight_finished(std::nullopt);
        CHECK(host.events == Strings{"task:preflight", "task:running"});
        CHECK(host.dispatched.size() == 3);
    }
    SUBCASE("a rejection fails the task before any dispatch")
    {
        FakeHost host;
        TaskRun run(frame({node("a")}, {{"preflight", true}}), host, RunOptions{});
        run.start();
        run.preflight_finished(nps::protocol_error("NOP-RESOURCE-INSUFFICIENT", "agent urn:nps:agent:test:a: no capacity"));
        REQUIRE(host.end);
        CHECK(host.end->error_code == "NOP-RESOURCE-INSUFFICIENT");
        CHECK(host.end->error_message == "agent urn:nps:agent:test:a: no capacity");
        CHECK(host.events == Strings{"task:preflight", "task:failed"});
        CHECK(host.dispatched.empty());
        CHECK(host.updates.empty());
    }
}

TEST_CASE("engine: an invalid DAG built by hand fails at start")
{
    nps::proto::TaskFrame task;
    task.task_id = "task-bad";
    nps::proto::DagNode a;
    a.id = "a";
    a.input_from = {"b"};
    nps::proto::DagNode b;
    b.id = "b";
    b.input_from = {"a"};
    task.dag.nodes = {a, b};
    FakeHost host;
    TaskRun run(task, host, RunOptions{});
    run.start();
    REQUIRE(host.end);
    CHECK(host.end->error_code == "NOP-TASK-DAG-CYCLE");
    CHECK(host.events == Strings{"task:failed"});
}
