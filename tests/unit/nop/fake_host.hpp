// SPDX-License-Identifier: Apache-2.0
// A TaskHost for engine unit tests: it records every call and delivers
// nothing by itself. Tests answer attempts with TaskRun::attempt_finished(),
// fire timers by hand (fake time, no sleeping) and look at what was
// recorded. It also notes calls the contract forbids after on_task_end().
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "nps/nop/task_run.hpp"
#include "nps/proto/states.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::test::nop {

using nps::nop::Attempt;
using nps::nop::AttemptOutcome;
using nps::nop::AttemptStatus;
using nps::nop::NodeUpdate;
using nps::nop::TaskEnd;
using nps::nop::TaskHost;
using nps::proto::NodeState;
using Json = nlohmann::ordered_json;

// What the engine reported, its states spelled as on the wire: the tests
// compare them with the spec's text.
struct RecordedUpdate {
    std::string node_id;
    std::string state;
    std::uint32_t attempts = 0;
    std::optional<std::string> error_code;
    std::optional<std::string> error_message;
    std::optional<std::string> result_json;
    std::optional<std::string> killed_reason;
};

struct RecordedEnd {
    std::string state;
    std::optional<std::string> error_code;
    std::optional<std::string> error_message;
    std::optional<std::string> aggregate_json;
};

class FakeHost final : public TaskHost {
public:
    struct Timer {
        std::chrono::milliseconds delay{0};
        std::function<void()> fire;
    };

    void dispatch(const Attempt& attempt) override
    {
        note_call("dispatch");
        dispatched.push_back(attempt);
    }
    void anticipate(const std::string& agent) override
    {
        note_call("anticipate");
        anticipated.push_back(agent);
    }
    void stop(const std::string& node_id) override { stops.push_back(node_id); }
    void preflight(const std::vector<std::pair<std::string, std::string>>& list) override
    {
        note_call("preflight");
        probes = list;
        preflight_asked = true;
    }
    TimerId start_timer(std::chrono::milliseconds delay, std::function<void()> fire) override
    {
        note_call("start_timer");
        const TimerId id = ++next_timer_;
        timers[id] = Timer{delay, std::move(fire)};
        return id;
    }
    void cancel_timer(TimerId id) override { timers.erase(id); }
    void on_event(const std::string& name, const std::string& detail_json) override
    {
        note_call("on_event");
        events.push_back(name);
        details.push_back(detail_json);
    }
    void on_node(const NodeUpdate& update) override
    {
        note_call("on_node");
        updates.push_back({.node_id = update.node_id,
                           .state = std::string(proto::to_string(update.state)),
                           .attempts = update.attempts,
                           .error_code = update.error_code,
                           .error_message = update.error_message,
                           .result_json = update.result_json,
                           .killed_reason = update.killed_reason});
    }
    void on_task_end(const TaskEnd& task_end) override
    {
        note_call("on_task_end");
        ++ends;
        end = RecordedEnd{.state = std::string(proto::to_string(task_end.state)),
                          .error_code = task_end.error_code,
                          .error_message = task_end.error_message,
                          .aggregate_json = task_end.aggregate_json};
    }

    // The live timers armed with this delay.
    std::vector<TimerId> timers_with_delay(std::chrono::milliseconds delay) const
    {
        std::vector<TimerId> out;
        for (const auto& [id, timer] : timers)
            if (timer.delay == delay)
                out.push_back(id);
        return out;
    }

    // Fires the one live timer with this delay (the test fails if there is
    // not exactly one).
    void fire(std::chrono::milliseconds delay)
    {
        const auto ids = timers_with_delay(delay);
        REQUIRE_MESSAGE(ids.size() == 1, "live timers with delay " << delay.count() << " ms: " << ids.size());
        auto timer = std::move(timers[ids.front()]);
        timers.erase(ids.front());
        timer.fire();
    }

    // The last dispatch of a node (the test fails if there is none).
    const Attempt& last_dispatch(const std::string& node_id) const
    {
        const auto it = std::find_if(dispatched.rbegin(), dispatched.rend(),
                                     [&](const Attempt& a) { return a.node_id == node_id; });
        REQUIRE_MESSAGE(it != dispatched.rend(), "no dispatch of " << node_id);
        return *it;
    }

    std::size_t dispatch_count(const std::string& node_id) const
    {
        return static_cast<std::size_t>(std::count_if(dispatched.begin(), dispatched.end(),
                                                      [&](const Attempt& a) { return a.node_id == node_id; }));
    }

    // The last state reported for a node, "" when none was.
    std::string state_of(const std::string& node_id) const
    {
        std::string state;
        for (const RecordedUpdate& u : updates)
            if (u.node_id == node_id)
                state = u.state;
        return state;
    }

    std::optional<RecordedUpdate> last_update(const std::string& node_id) const
    {
        std::optional<RecordedUpdate> out;
        for (const RecordedUpdate& u : updates)
            if (u.node_id == node_id)
                out = u;
        return out;
    }

    std::vector<Attempt> dispatched;
    std::vector<std::string> stops;
    std::vector<std::string> anticipated;  // agents, in hint order
    std::vector<std::pair<std::string, std::string>> probes;
    bool preflight_asked = false;
    std::map<TimerId, Timer> timers;
    std::vector<std::string> events;
    std::vector<std::string> details;
    std::vector<RecordedUpdate> updates;
    std::optional<RecordedEnd> end;
    int ends = 0;
    std::vector<std::string> calls_after_end;

private:
    void note_call(const char* what)
    {
        if (ends > 0)
            calls_after_end.emplace_back(what);
    }

    TimerId next_timer_ = 0;
};

inline AttemptOutcome success(const std::string& result_json)
{
    AttemptOutcome o;
    o.status = AttemptStatus::success;
    o.result_json = result_json;
    return o;
}

inline AttemptOutcome failure(const std::string& code, bool retryable)
{
    AttemptOutcome o;
    o.status = AttemptStatus::failure;
    o.error_code = code;
    o.error_message = "scripted " + code;
    o.retryable = retryable;
    return o;
}

// A DAG node for frame(): id, dependencies, extra members.
inline Json node(const std::string& id, const std::vector<std::string>& deps = {}, Json extra = Json::object())
{
    Json n{{"id", id}, {"action", "nwp://test.example/" + id + "/invoke"}, {"agent", "urn:nps:agent:test:" + id}};
    if (!deps.empty())
        n["input_from"] = deps;
    for (auto& [key, value] : extra.items())
        n[key] = value;
    return n;
}

// A TaskFrame decoded from task-level members plus nodes (the real decoder,
// so every frame is one the daemon could receive).
inline proto::TaskFrame frame(const std::vector<Json>& nodes, Json task = Json::object())
{
    Json f{{"task_id", "task-unit"}, {"max_retries", 0}};
    for (auto& [key, value] : task.items())
        f[key] = value;
    f["dag"] = Json{{"nodes", nodes}};
    auto decoded = proto::decode_task_frame(f.dump());
    REQUIRE_MESSAGE(decoded.has_value(), (decoded ? "" : decoded.error().code + " " + decoded.error().message));
    return std::move(decoded).value();
}

}  // namespace nps::test::nop
