// SPDX-License-Identifier: Apache-2.0
// TaskRun's saga: candidates, order, params, strict and best_effort,
// compensation retries, and what stops it.
#include <doctest/doctest.h>

#include "fake_host.hpp"
#include "nps/nop/subtask_id.hpp"
#include "nps/nop/task_run.hpp"

using namespace nps::test::nop;
using nps::nop::Mode;
using nps::nop::RunOptions;
using nps::nop::TaskRun;
using std::chrono::milliseconds;
using Strings = std::vector<std::string>;

namespace {

Json compensable(const std::string& id, Json extra = Json::object())
{
    extra["compensate_action"] = "nwp://test.example/" + id + "/undo";
    return extra;
}

}  // namespace

TEST_CASE("saga: only completed ancestors of the failed node, most recent first, with mapped params")
{
    FakeHost host;
    // reserve → charge → ship, plus an unrelated branch "audit" that completes.
    const auto task = frame(
        {node("reserve", {}, compensable("reserve")),
         node("charge", {"reserve"},
              compensable("charge", {{"compensate_params_mapping", {{"charge_id", "$.charge_id"}, {"why", 7}}}})),
         node("ship", {"charge"}), node("audit", {}, compensable("audit"))},
        {{"compensation_policy", "best_effort"}});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance});
    run.start();
    run.attempt_finished("audit", success("{}"));
    run.attempt_finished("reserve", success(R"({"reservation_id":"r1"})"));
    run.attempt_finished("charge", success(R"({"charge_id":"c1","amount":5})"));
    run.attempt_finished("ship", failure("NOP-DELEGATE-REJECTED", false));

    const Attempt& refund = host.last_dispatch("charge");
    CHECK(refund.compensation);
    CHECK(refund.action == "nwp://test.example/charge/undo");
    CHECK(refund.number == 1);
    CHECK(refund.params_json == R"({"charge_id":"c1","why":7})");
    CHECK(refund.idempotency_key == "task-unit:charge:compensate");
    CHECK(refund.subtask_id == nps::nop::compensation_subtask_id("task-unit", "charge"));
    CHECK(host.state_of("charge") == "COMPENSATING");
    run.attempt_finished("charge", success("{}"));
    const Attempt& release = host.last_dispatch("reserve");
    CHECK(release.compensation);
    CHECK(release.params_json == "{}");
    run.attempt_finished("reserve", success("{}"));

    REQUIRE(host.end);
    CHECK(host.end->state == "FAILED");
    CHECK(host.end->error_code == "NOP-DELEGATE-REJECTED");
    CHECK(host.state_of("audit") == "COMPLETED");  // not an ancestor of ship
    CHECK(host.state_of("charge") == "COMPENSATED");
    CHECK(host.state_of("reserve") == "COMPENSATED");
    CHECK(host.last_update("charge")->result_json == R"({"charge_id":"c1","amount":5})");
    CHECK(host.last_update("charge")->attempts == 1);
    CHECK(host.events == Strings{"task:running", "audit:attempt:1", "audit:completed", "reserve:attempt:1",
                                 "reserve:completed", "charge:attempt:1", "charge:completed", "ship:attempt:1",
                                 "ship:failed", "charge:compensating", "charge:compensated", "reserve:compensating",
                                 "reserve:compensated", "task:failed"});
}

TEST_CASE("saga: best_effort skips nodes without compensate_action and goes on after a failure")
{
    FakeHost host;
    const auto task = frame({node("a", {}, compensable("a")), node("b", {"a"}), node("c", {"b"}, compensable("c")),
                             node("d", {"c"})});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance});
    run.start();
    run.attempt_finished("a", success("{}"));
    run.attempt_finished("b", success("{}"));
    run.attempt_finished("c", success("{}"));
    run.attempt_finished("d", failure("NWP-NODE-UNAVAILABLE", false));
    run.attempt_finished("c", failure("NOP-DELEGATE-REJECTED", false));  // c's compensation fails
    run.attempt_finished("a", success("{}"));
    REQUIRE(host.end);
    CHECK(host.end->error_code == "NWP-NODE-UNAVAILABLE");  // the original failure
    CHECK(host.state_of("c") == "COMPENSATION_FAILED");
    CHECK(host.last_update("c")->error_code == "NOP-DELEGATE-REJECTED");
    CHECK(host.state_of("b") == "COMPLETED");
    CHECK(host.state_of("a") == "COMPENSATED");
}

TEST_CASE("saga: strict refuses to start when a candidate cannot be compensated")
{
    FakeHost host;
    const auto task = frame({node("reserve"), node("charge", {"reserve"}, compensable("charge")),
                             node("ship", {"charge"})},
                            {{"compensation_policy", "strict"}});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance});
    run.start();
    run.attempt_finished("reserve", success("{}"));
    run.attempt_finished("charge", success("{}"));
    run.attempt_finished("ship", failure("NOP-DELEGATE-REJECTED", false));
    REQUIRE(host.end);
    CHECK(host.end->state == "FAILED");
    CHECK(host.end->error_code == "NOP-COMPENSATION-NOT-SUPPORTED");
    CHECK(host.end->error_message ==
          "strict compensation after node 'ship' failed (NOP-DELEGATE-REJECTED): completed node(s) 'reserve' have no "
          "compensate_action");
    CHECK(host.dispatched.size() == 3);  // no compensation
    CHECK(host.state_of("charge") == "COMPLETED");
    CHECK(host.events.back() == "task:failed");
    CHECK(host.events[host.events.size() - 2] == "ship:failed");
}

TEST_CASE("saga: compensation_policy none compensates nothing; the task fails with the node's error")
{
    FakeHost host;
    const auto task = frame({node("reserve", {}, compensable("reserve")), node("ship", {"reserve"})},
                            {{"compensation_policy", "none"}});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance});
    run.start();
    run.attempt_finished("reserve", success("{}"));
    run.attempt_finished("ship", failure("NOP-DELEGATE-REJECTED", false));
    REQUIRE(host.end);
    CHECK(host.end->state == "FAILED");
    CHECK(host.end->error_code == "NOP-DELEGATE-REJECTED");
    CHECK(host.dispatched.size() == 2);  // no compensation
    CHECK(host.state_of("reserve") == "COMPLETED");
    CHECK(host.events == Strings{"task:running", "reserve:attempt:1", "reserve:completed", "ship:attempt:1",
                                 "ship:failed", "task:failed"});
}

TEST_CASE("saga: strict stops at the first compensation failure")
{
    FakeHost host;
    const auto task = frame({node("reserve", {}, compensable("reserve")),
                             node("charge", {"reserve"}, compensable("charge")), node("ship", {"charge"})},
                            {{"compensation_policy", "strict"}});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance});
    run.start();
    run.attempt_finished("reserve", success("{}"));
    run.attempt_finished("charge", success("{}"));
    run.attempt_finished("ship", failure("NOP-DELEGATE-REJECTED", false));
    run.attempt_finished("charge", failure("NWP-NODE-UNAVAILABLE", false));
    REQUIRE(host.end);
    CHECK(host.end->error_code == "NOP-COMPENSATION-FAILED");
    CHECK(host.state_of("reserve") == "COMPLETED");
    CHECK(host.dispatch_count("reserve") == 1);
}

TEST_CASE("saga: compensations retry under the node's retry policy")
{
    FakeHost host;
    const auto task = frame({node("charge", {}, compensable("charge", {{"retry_policy", {{"max_retries", 2},
                                                                                          {"backoff", "linear"},
                                                                                          {"initial_delay_ms", 40}}}})),
                             node("ship", {"charge"})});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance});
    run.start();
    run.attempt_finished("charge", success(R"({"charge_id":"c9"})"));
    run.attempt_finished("ship", failure("NOP-DELEGATE-REJECTED", false));
    REQUIRE(host.last_dispatch("charge").compensation);
    run.attempt_finished("charge", failure("NWP-NODE-UNAVAILABLE", true));
    CHECK(host.dispatch_count("charge") == 2);  // waiting for the backoff
    host.fire(milliseconds(40));
    CHECK(host.dispatch_count("charge") == 3);
    run.attempt_finished("charge", failure("NWP-NODE-UNAVAILABLE", true));
    host.fire(milliseconds(80));
    const Attempt& third = host.last_dispatch("charge");
    CHECK(third.compensation);
    CHECK(third.number == 3);
    CHECK(third.idempotency_key == "task-unit:charge:compensate");
    run.attempt_finished("charge", success("{}"));
    REQUIRE(host.end);
    CHECK(host.state_of("charge") == "COMPENSATED");
    CHECK(host.last_update("charge")->attempts == 1);  // forward attempts only
    // No canonical events for the compensation's retries.
    CHECK(host.events == Strings{"task:running", "charge:attempt:1", "charge:completed", "ship:attempt:1",
                                 "ship:failed", "charge:compensating", "charge:compensated", "task:failed"});
}

TEST_CASE("saga: a compensation that times out is retried, then fails")
{
    FakeHost host;
    const auto task = frame({node("charge", {}, compensable("charge", {{"timeout_ms", 300},
                                                                        {"retry_policy", {{"max_retries", 1},
                                                                                          {"initial_delay_ms", 5}}}})),
                             node("ship", {"charge"})});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance});
    run.start();
    run.attempt_finished("charge", success("{}"));
    run.attempt_finished("ship", failure("NOP-DELEGATE-REJECTED", false));
    host.fire(milliseconds(300));
    CHECK(host.stops == Strings{"charge"});
    host.fire(milliseconds(5));
    CHECK(host.dispatch_count("charge") == 2);  // waits for the stopped compensation to report
    run.attempt_finished("charge", success("{}"));  // the stopped one: dropped
    CHECK(host.dispatch_count("charge") == 3);
    host.fire(milliseconds(300));
    REQUIRE(host.end);
    CHECK(host.state_of("charge") == "COMPENSATION_FAILED");
    CHECK(host.last_update("charge")->error_code == "NOP-DELEGATE-TIMEOUT");
    CHECK(host.end->error_code == "NOP-DELEGATE-REJECTED");
}

TEST_CASE("saga: compensate_params_mapping failure is a compensation failure")
{
    FakeHost host;
    const auto task = frame({node("charge", {}, compensable("charge", {{"compensate_params_mapping",
                                                                        {{"id", "$.charge_id"}}}})),
                             node("ship", {"charge"})},
                            {{"compensation_policy", "strict"}});
    TaskRun run(task, host, RunOptions{.mode = Mode::conformance});
    run.start();
    run.attempt_finished("charge", success(R"({"other":1})"));
    run.attempt_finished("ship", failure("NOP-DELEGATE-REJECTED", false));
    REQUIRE(host.end);
    CHECK(host.end->error_code == "NOP-COMPENSATION-FAILED");
    CHECK(host.last_update("charge")->error_code == "NOP-INPUT-MAPPING-ERROR");
    CHECK(host.dispatch_count("charge") == 1);
}

TEST_CASE("saga: a failure in production mode stops the running siblings first")
{
    FakeHost host;
    const auto task = frame({node("root", {}, compensable("root")), node("bad", {"root"}), node("slow", {"root"})});
    TaskRun run(task, host, RunOptions{.mode = Mode::production});
    run.start();
    run.attempt_finished("root", success("{}"));
    REQUIRE(host.dispatched.size() == 3);
    run.attempt_finished("bad", failure("NOP-DELEGATE-REJECTED", false));
    CHECK(host.stops == Strings{"slow"});
    CHECK(host.state_of("slow") == "CANCELLED");
    REQUIRE(host.last_dispatch("root").compensation);
    // slow's stopped attempt reports during the saga: dropped.
    run.attempt_finished("slow", success("{}"));
    CHECK(host.state_of("slow") == "CANCELLED");
    run.attempt_finished("root", success("{}"));
    REQUIRE(host.end);
    CHECK(host.state_of("root") == "COMPENSATED");
    CHECK(host.end->error_code == "NOP-DELEGATE-REJECTED");
}

TEST_CASE("saga: cancel during compensation ends it")
{
    FakeHost host;
    const auto task = frame({node("a", {}, compensable("a")), node("b", {"a"})});
    TaskRun run(task, host, RunOptions{});
    run.start();
    run.attempt_finished("a", success("{}"));
    run.attempt_finished("b", failure("NOP-DELEGATE-REJECTED", false));
    run.cancel();
    CHECK(host.stops == Strings{"a"});
    REQUIRE(host.end);
    CHECK(host.end->state == "CANCELLED");
    CHECK(host.state_of("a") == "COMPENSATION_FAILED");
    CHECK(host.last_update("a")->error_code == "NOP-TASK-CANCELLED");
}

TEST_CASE("saga: resuming a task whose node failed under an earlier claim")
{
    FakeHost host;
    const auto task = frame({node("a", {}, compensable("a")), node("b", {"a"}, compensable("b")), node("c", {"b"})});
    RunOptions options{.mode = Mode::conformance};
    options.prior = {
        NodeUpdate{.node_id = "a", .state = NodeState::completed, .attempts = 1, .result_json = "{}"},
        NodeUpdate{.node_id = "b", .state = NodeState::compensated, .attempts = 1, .result_json = "{}"},
        NodeUpdate{.node_id = "c", .state = NodeState::failed, .attempts = 3, .error_code = "NWP-NODE-UNAVAILABLE",
                   .error_message = "gone"},
    };
    TaskRun run(task, host, options);
    run.start();
    // b was compensated already; a still needs it.
    REQUIRE(host.dispatched.size() == 1);
    CHECK(host.dispatched[0].node_id == "a");
    CHECK(host.dispatched[0].compensation);
    run.attempt_finished("a", success("{}"));
    REQUIRE(host.end);
    CHECK(host.end->error_code == "NWP-NODE-UNAVAILABLE");
    CHECK(host.events == Strings{"task:running", "a:compensating", "a:compensated", "task:failed"});
}
