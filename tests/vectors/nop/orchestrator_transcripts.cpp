// SPDX-License-Identifier: Apache-2.0
// nop/orchestrator_transcripts.json: every vector through the real engine.
//
// Each vector's input becomes a real TaskFrame JSON text, decoded with
// proto::decode_task_frame:
//   - depends_on → input_from and edges; each node gets an nwp:// action and
//     an agent NID of its own (so preflight answers are per node);
//   - task max_retries missing → 0 (the SDK runners' reading; every vector
//     agrees with the spec default too); node retry_on / max_retries →
//     retry_policy; the effective max_retries is capped by the scripted
//     attempts (attempts − 1), as the SDK runners cap it;
//   - task aggregate → the TaskFrame `aggregate` extension.
// A vector whose DAG does not decode (the cycle of .010) never reaches the
// engine — the engine only ever sees validated DAGs — so this runner reports
// what a runner reports for a frame rejected at the door: the single event
// "task:failed" with the decoder's error code.
//
// The engine runs against ScriptedHost, a TaskHost that replays the scripted
// attempts. Nothing is delivered inside a host call: outcomes, preflight
// answers and cancellation go to a run queue; timers fire from virtual time
// once the queue is empty. cancel_before = X cancels the task when the engine
// asks to dispatch X: the cancel() is queued after that dispatch() returns
// and before the attempt's outcome. A {"kind":"timeout"} attempt never
// answers, so the engine's own deadline timer fires (NOP-DELEGATE-TIMEOUT)
// and the host reports the stopped attempt afterwards, as a real host does.
//
// What is compared, exactly: events (the canonical names, in order),
// terminal_state, error_code, aggregate, node_states, attempt_counts,
// mapped_params and compensation_order. node_states and attempt_counts are
// the transcript's view: a node is in them once a canonical event names it
// (its state is its last NodeUpdate, lowercased; its count the attempts of
// that update). A node whose only attempt was cut short by cancellation has
// no transcript entry — the vectors' "absent if never reached" — and the
// runner checks that its last NodeUpdate is CANCELLED.
//
// Every vector runs in Mode::conformance (all of the above exact) and in
// Mode::production (all exact but the order of events, which must match as a
// multiset). The host also checks the engine's side of the contract: no
// second attempt of a node while one is outstanding, stable subtask ids and
// idempotency keys, consecutive attempt numbers, no host call but stop() and
// cancel_timer() after on_task_end(), which comes exactly once.
#include <algorithm>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include "nps/base/clock.hpp"
#include "nps/nop/task_run.hpp"
#include "nps/proto/task_frame.hpp"
#include "vector_harness.hpp"

using namespace nps::test::vectors;
using nps::nop::Attempt;
using nps::nop::AttemptOutcome;
using nps::nop::AttemptStatus;
using nps::nop::Mode;
using nps::nop::NodeUpdate;
using nps::nop::TaskEnd;
using nps::nop::TaskHost;
using nps::nop::TaskRun;

namespace {

const std::set<std::string> kTaskKeys = {"task_id", "aggregate", "max_retries", "compensation_policy",
                                         "preflight", "cancel_before", "nodes"};
const std::set<std::string> kNodeKeys = {"id", "depends_on", "attempts", "input_mapping", "condition",
                                         "retry_on", "max_retries", "compensate_action",
                                         "compensation_outcome", "preflight_available"};
const std::set<std::string> kAttemptKeys = {"kind", "result", "error_code", "retryable"};

std::string agent_of(const std::string& node_id)
{
    return "urn:nps:agent:vectors.example:" + node_id;
}

std::string lowercase(std::string text)
{
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c); });
    return text;
}

// The vector input as a TaskFrame JSON text (see the file comment).
Json task_frame_json(const Json& input, std::vector<std::string>& problems)
{
    for (auto& r : unknown_keys(input, kTaskKeys))
        problems.push_back(r);
    const unsigned task_retries = input.value("max_retries", 0u);
    Json frame{{"task_id", input.value("task_id", "")}, {"max_retries", task_retries}};
    for (const char* key : {"compensation_policy", "preflight", "aggregate"})
        if (input.contains(key))
            frame[key] = input[key];
    Json nodes = Json::array();
    Json edges = Json::array();
    for (const Json& v : input.value("nodes", Json::array())) {
        for (auto& r : unknown_keys(v, kNodeKeys))
            problems.push_back("node " + v.value("id", "?") + ": " + r);
        const std::string id = v.value("id", "");
        Json node{{"id", id}, {"action", "nwp://vectors.example/" + id + "/invoke"}, {"agent", agent_of(id)}};
        const Json deps = v.value("depends_on", Json::array());
        if (!deps.empty())
            node["input_from"] = deps;
        for (const Json& dep : deps)
            edges.push_back(Json{{"from", dep}, {"to", id}});
        for (const char* key : {"input_mapping", "condition", "compensate_action"})
            if (v.contains(key))
                node[key] = v[key];
        const std::size_t scripted = v.value("attempts", Json::array()).size();
        const unsigned wanted = v.value("max_retries", task_retries);
        const unsigned cap = scripted > 0 ? static_cast<unsigned>(scripted - 1) : 0u;
        Json policy{{"max_retries", std::min(wanted, cap)}};
        if (v.contains("retry_on"))
            policy["retry_on"] = v["retry_on"];
        node["retry_policy"] = policy;
        nodes.push_back(node);
    }
    frame["dag"] = Json{{"nodes", nodes}, {"edges", edges}};
    return frame;
}

class ScriptedHost final : public TaskHost {
public:
    ScriptedHost(const Json& input, nps::FakeClock& clock) : clock_(clock), now_(clock.now_ms())
    {
        cancel_before_ = input.value("cancel_before", "");
        for (const Json& v : input.value("nodes", Json::array())) {
            const std::string id = v.value("id", "");
            scripts_[id] = v;
            agents_[agent_of(id)] = id;
        }
    }

    void bind(TaskRun& run) { run_ = &run; }

    // Runs the queue, then timers in virtual time, until nothing is left.
    void run()
    {
        for (int steps = 0; steps < 100'000; ++steps) {
            if (!queue_.empty()) {
                auto next = std::move(queue_.front());
                queue_.pop_front();
                next();
                continue;
            }
            if (timers_.empty())
                return;
            auto earliest = std::min_element(timers_.begin(), timers_.end(), [](const auto& a, const auto& b) {
                return std::pair(a.second.due, a.first) < std::pair(b.second.due, b.first);
            });
            now_ = std::max(now_, earliest->second.due);
            clock_.set_ms(now_);
            auto fire = std::move(earliest->second.fire);
            timers_.erase(earliest);
            fire();
        }
        problems.push_back("the run did not settle within 100000 steps");
    }

    void dispatch(const Attempt& a) override
    {
        after_end_check("dispatch");
        dispatches.push_back(a);
        Outstanding& o = outstanding_[a.node_id];
        if (o.count > 0)
            problems.push_back("node " + a.node_id + " dispatched while an attempt is outstanding");
        ++o.count;
        const std::string kind_key = a.compensation ? "compensation" : "forward";
        auto& last = last_attempt_[a.node_id + "/" + kind_key];
        if (last && (last->number + 1 != a.number || last->subtask_id != a.subtask_id ||
                     last->idempotency_key != a.idempotency_key))
            problems.push_back("attempt " + std::to_string(a.number) + " of " + a.node_id +
                               " does not continue the previous one (number, subtask_id or idempotency_key)");
        if (!last && a.number != 1)
            problems.push_back("first attempt of " + a.node_id + " has number " + std::to_string(a.number));
        last = a;

        if (!a.compensation && a.node_id == cancel_before_ && !cancelled_) {
            cancelled_ = true;
            queue_.push_back([this] { run_->cancel("cancel_before " + cancel_before_); });
        }
        const Json& script = scripts_[a.node_id];
        AttemptOutcome outcome;
        if (a.compensation) {
            if (script.value("compensation_outcome", "success") == "success") {
                outcome.status = AttemptStatus::success;
                outcome.result_json = "{}";
            } else {
                outcome.error_code = "NOP-DELEGATE-REJECTED";
                outcome.error_message = "scripted compensation failure";
            }
        } else {
            const Json attempts = script.value("attempts", Json::array());
            if (a.number > attempts.size()) {
                problems.push_back("engine dispatched attempt " + std::to_string(a.number) + " of " + a.node_id +
                                   " but only " + std::to_string(attempts.size()) + " are scripted");
                outcome.error_code = "NOP-DELEGATE-REJECTED";
            } else {
                const Json& step = attempts[a.number - 1];
                for (auto& r : unknown_keys(step, kAttemptKeys))
                    problems.push_back(a.node_id + " attempt: " + r);
                const std::string kind = step.value("kind", "");
                if (kind == "success") {
                    outcome.status = AttemptStatus::success;
                    outcome.result_json = step.value("result", Json::object()).dump();
                } else if (kind == "failure") {
                    outcome.error_code = step.value("error_code", "");
                    outcome.error_message = "scripted failure";
                    outcome.retryable = step.value("retryable", false);
                } else if (kind == "timeout") {
                    hung_.insert(a.node_id);  // answers only once stopped
                    return;
                } else {
                    problems.push_back(a.node_id + ": unknown attempt kind '" + kind + "'");
                }
            }
        }
        deliver(a.node_id, outcome);
    }

    void stop(const std::string& node_id) override
    {
        stops.push_back(node_id);
        if (hung_.erase(node_id) > 0) {
            AttemptOutcome killed;
            killed.error_code = "NOP-DELEGATE-TIMEOUT";
            killed.error_message = "stopped";
            killed.killed_reason = "signal";
            deliver(node_id, killed);
        }
    }

    void preflight(const std::vector<std::pair<std::string, std::string>>& probes) override
    {
        after_end_check("preflight");
        if (!std::is_sorted(probes.begin(), probes.end()))
            problems.push_back("preflight probes are not in lexicographic order");
        std::optional<nps::Error> rejection;
        for (const auto& [agent, action] : probes) {
            const std::string& node = agents_[agent];
            if (!scripts_[node].value("preflight_available", true) && !rejection)
                rejection = nps::protocol_error("NOP-RESOURCE-INSUFFICIENT",
                                                "agent " + agent + " rejected the preflight for " + action);
        }
        queue_.push_back([this, rejection] { run_->preflight_finished(rejection); });
    }

    TimerId start_timer(std::chrono::milliseconds delay, std::function<void()> fire) override
    {
        after_end_check("start_timer");
        const TimerId id = ++next_timer_;
        timers_[id] = Timer{now_ + delay.count(), std::move(fire)};
        return id;
    }

    void cancel_timer(TimerId id) override { timers_.erase(id); }

    void on_event(const std::string& name, const std::string& detail_json) override
    {
        after_end_check("on_event");
        const Json detail = Json::parse(detail_json, nullptr, false);
        if (detail.is_discarded() || !detail.is_object())
            problems.push_back("event " + name + " has a detail that is not a JSON object: " + detail_json);
        events.push_back(name);
    }

    void on_node(const NodeUpdate& update) override
    {
        after_end_check("on_node");
        updates.push_back(update);
    }

    void on_task_end(const TaskEnd& end) override
    {
        after_end_check("on_task_end");
        ++ends;
        task_end = end;
    }

    std::vector<std::string> events;
    std::vector<NodeUpdate> updates;
    std::vector<Attempt> dispatches;
    std::vector<std::string> stops;
    std::optional<TaskEnd> task_end;
    int ends = 0;
    std::vector<std::string> problems;

private:
    struct Timer {
        std::int64_t due = 0;
        std::function<void()> fire;
    };
    struct Outstanding {
        int count = 0;
    };

    void deliver(const std::string& node_id, AttemptOutcome outcome)
    {
        queue_.push_back([this, node_id, outcome] {
            --outstanding_[node_id].count;
            run_->attempt_finished(node_id, outcome);
        });
    }

    void after_end_check(const char* call)
    {
        if (ends > 0)
            problems.push_back(std::string("host.") + call + "() called after on_task_end()");
    }

    nps::FakeClock& clock_;
    std::int64_t now_;
    TaskRun* run_ = nullptr;
    std::string cancel_before_;
    bool cancelled_ = false;
    std::map<std::string, Json> scripts_;
    std::map<std::string, std::string> agents_;
    std::deque<std::function<void()>> queue_;
    std::map<TimerId, Timer> timers_;
    TimerId next_timer_ = 0;
    std::map<std::string, Outstanding> outstanding_;
    std::map<std::string, std::optional<Attempt>> last_attempt_;
    std::set<std::string> hung_;
};

// The node an event names, or "" for task events; nullopt when the name is
// not a canonical event of a known node.
std::optional<std::string> event_node(const std::string& name, const std::vector<std::string>& node_ids)
{
    static const std::set<std::string> kTask = {"task:preflight", "task:running", "task:completed", "task:failed",
                                                "task:cancelled"};
    static const std::set<std::string> kNode = {"retrying", "completed", "skipped", "failed",
                                                "compensating", "compensated", "compensation_failed"};
    if (kTask.contains(name))
        return std::string();
    for (const std::string& id : node_ids) {
        if (!name.starts_with(id + ":"))
            continue;
        const std::string rest = name.substr(id.size() + 1);
        if (kNode.contains(rest))
            return id;
        if (rest.starts_with("attempt:") && rest.size() > 8 &&
            rest.find_first_not_of("0123456789", 8) == std::string::npos)
            return id;
    }
    return std::nullopt;
}

Json rejected(const nps::Error& error)
{
    return Json{{"events", Json::array({"task:failed"})}, {"terminal_state", "failed"}, {"error_code", error.code},
                {"aggregate", nullptr}, {"node_states", Json::object()}, {"attempt_counts", Json::object()},
                {"mapped_params", Json::object()}, {"compensation_order", Json::array()}};
}

// One run of the vector in `mode`: the outcome in the vectors' `expected`
// shape, plus the contract problems seen.
Json run_vector(const Json& input, Mode mode, std::vector<std::string>& problems)
{
    const Json frame_json = task_frame_json(input, problems);
    auto frame = nps::proto::decode_task_frame(frame_json.dump());
    if (!frame)
        return rejected(frame.error());

    nps::FakeClock clock;
    ScriptedHost host(input, clock);
    TaskRun run(*frame, host, nps::nop::RunOptions{.mode = mode, .max_parallel = 8, .clock = &clock});
    host.bind(run);
    run.start();
    host.run();
    problems.insert(problems.end(), host.problems.begin(), host.problems.end());
    if (host.ends != 1 || !host.task_end) {
        problems.push_back("on_task_end() was called " + std::to_string(host.ends) + " times");
        return Json::object();
    }
    if (!run.ended())
        problems.push_back("TaskRun::ended() is false after on_task_end()");

    std::vector<std::string> node_ids;
    std::set<std::string> with_mapping;
    for (const Json& v : input["nodes"]) {
        node_ids.push_back(v.value("id", ""));
        if (v.contains("input_mapping"))
            with_mapping.insert(v.value("id", ""));
    }

    Json out;
    out["events"] = host.events;
    std::set<std::string> in_transcript;
    std::map<std::string, int> attempt_events;
    for (const std::string& name : host.events) {
        const auto node = event_node(name, node_ids);
        if (!node) {
            problems.push_back("event '" + name + "' is not a canonical event");
            continue;
        }
        if (!node->empty()) {
            in_transcript.insert(*node);
            if (name.starts_with(*node + ":attempt:"))
                ++attempt_events[*node];
        }
    }

    const TaskEnd& end = *host.task_end;
    out["terminal_state"] = lowercase(std::string(nps::proto::to_string(end.state)));
    out["error_code"] = end.error_code ? Json(*end.error_code) : Json(nullptr);
    out["aggregate"] = end.aggregate_json ? Json::parse(*end.aggregate_json) : Json(nullptr);

    std::map<std::string, NodeUpdate> last;
    for (const NodeUpdate& u : host.updates)
        last[u.node_id] = u;
    Json states = Json::object();
    Json counts = Json::object();
    for (const auto& [node, update] : last) {
        if (!in_transcript.contains(node)) {
            if (update.state != nps::proto::NodeState::cancelled)
                problems.push_back("node " + node + " ended " + std::string(nps::proto::to_string(update.state)) +
                                   " without a canonical event");
            continue;
        }
        states[node] = lowercase(std::string(nps::proto::to_string(update.state)));
        counts[node] = update.attempts;
        if (static_cast<int>(update.attempts) != attempt_events[node])
            problems.push_back("node " + node + " reports " + std::to_string(update.attempts) + " attempts but has " +
                               std::to_string(attempt_events[node]) + " attempt events");
    }
    for (const std::string& node : in_transcript)
        if (!last.contains(node))
            problems.push_back("node " + node + " has events but no NodeUpdate");
    out["node_states"] = states;
    out["attempt_counts"] = counts;

    Json mapped = Json::object();
    Json compensations = Json::array();
    for (const Attempt& a : host.dispatches) {
        if (a.compensation && a.number == 1)
            compensations.push_back(a.node_id);
        if (!a.compensation && a.number == 1 && with_mapping.contains(a.node_id))
            mapped[a.node_id] = Json::parse(a.params_json);
    }
    out["mapped_params"] = mapped;
    out["compensation_order"] = compensations;
    return out;
}

// Objects compare member by member whatever the order they were written in.
Json sorted_keys(const Json& value)
{
    return Json(nlohmann::json(value));
}

std::vector<std::string> check(const Json& vector)
{
    std::vector<std::string> reasons;
    const Json& input = vector["input"];
    Json expected = sorted_keys(vector["expected"]);

    std::vector<std::string> problems;
    const Json conformance = sorted_keys(run_vector(input, Mode::conformance, problems));
    for (auto& d : compare_expected(expected, conformance))
        reasons.push_back("[conformance] " + d);
    for (auto& p : problems)
        reasons.push_back("[conformance] " + p);

    problems.clear();
    Json production = sorted_keys(run_vector(input, Mode::production, problems));
    for (auto& p : problems)
        reasons.push_back("[production] " + p);
    if (production.contains("events") && expected.contains("events")) {
        auto got = production["events"].get<std::vector<std::string>>();
        auto want = expected["events"].get<std::vector<std::string>>();
        std::sort(got.begin(), got.end());
        std::sort(want.begin(), want.end());
        if (got != want)
            reasons.push_back("[production] events as a multiset differ: got " + production["events"].dump());
        production.erase("events");
        expected.erase("events");
    }
    for (auto& d : compare_expected(expected, production))
        reasons.push_back("[production] " + d);
    return reasons;
}

}  // namespace

int main()
{
    return run_vector_file("nop/orchestrator_transcripts.json",
                           [](Report&, const std::string&, const Json& vector) -> std::optional<std::vector<std::string>> {
                               return check(vector);
                           });
}
