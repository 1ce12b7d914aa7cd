// SPDX-License-Identifier: Apache-2.0
// Task inspection, cancellation, removal and the node-result report endpoint.
#include "nps/api/api.hpp"

#include <cstdlib>
#include <limits>
#include <optional>
#include <string_view>

#include "nps/api/json_io.hpp"
#include "nps/base/ascii.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/time_format.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/states.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::api {

namespace {

Json time_or_null(const std::optional<std::int64_t>& ms)
{
    return ms ? Json(format_rfc3339_ms(*ms)) : Json(nullptr);
}

Json task_summary(const store::TaskRecord& t, std::int64_t now_ms)
{
    return {
        {"task_id", t.task_id},
        {"nid", t.nid},
        {"state", proto::to_string(t.state)},
        {"error_code", text_or_null(t.error_code)},
        {"created_at", format_rfc3339_ms(t.created_at_ms)},
        {"updated_at", format_rfc3339_ms(t.updated_at_ms)},
        {"finished_at", time_or_null(t.finished_at_ms)},
        {"results_expired", t.results_expired(now_ms)},
    };
}

const char* const kKilledReasons[] = {"idle_timeout", "max_runtime", "oom",     "signal",
                                      "exit_status",  "spawn_failed", "shutdown"};

// An error code's NPS status and HTTP status (the mapping of the error
// table), so a reader of a FAILED node sees what an API error would say.
Json error_status(const std::optional<std::string>& code)
{
    if (!code)
        return nullptr;
    auto info = proto::classify_error_code(*code);
    return {{"status", std::string(info.nps_status)}, {"http", info.http_status}};
}

// 404 NOP-TASK-RESULT-EXPIRED, with the task's state (which stays visible
// until the task itself is pruned) under "task".
net::HttpResponse results_expired_response(const store::TaskRecord& task, std::int64_t now_ms)
{
    const std::int64_t expired_at = task.results_expired_at_ms.value_or(task.results_expire_at_ms.value_or(now_ms));
    return error_response(proto::code::kNopTaskResultExpired,
                          "The results of task '" + task.task_id + "' expired at " + format_rfc3339_ms(expired_at) +
                              " (its result_ttl_seconds); its state is " + std::string(proto::to_string(task.state)),
                          {{"task", task_summary(task, now_ms)}});
}

}  // namespace

Result<net::HttpResponse> Api::get_task(const std::string& task_id)
{
    auto store = NPS_TRY(stores_.acquire());
    auto task = NPS_TRY(store->task(task_id));
    const std::int64_t now = NPS_TRY(store->time_now_ms());  // the clock of the task's times
    if (task.results_expired(now))
        return results_expired_response(task, now);
    auto results = NPS_TRY(store->node_results(task_id));
    auto events = NPS_TRY(store->events(task_id));

    Json body = task_summary(task, now);
    body["error_message"] = text_or_null(task.error_message);
    body["error_status"] = error_status(task.error_code);
    body["aggregate"] = json_or_null(task.aggregate_json);
    body["dag_hash"] = task.dag_hash;
    body["dedup_key"] = task.dedup_key;
    body["claims"] = task.claims;
    const bool leased = task.lease_owner && task.lease_expiry_ms > now;
    body["lease"] = leased ? Json{{"runner_nid", *task.lease_owner},
                                  {"lease_expiry", format_rfc3339_ms(task.lease_expiry_ms)}}
                           : Json(nullptr);
    Json nodes = Json::object();
    for (const auto& r : results) {
        if (r.dedup_key != task.dedup_key)
            continue;
        nodes[r.node_id] = {
            {"state", proto::to_string(r.state)},
            {"attempts", r.attempts},
            {"error_code", text_or_null(r.error_code)},
            {"error_message", text_or_null(r.error_message)},
            {"error_status", error_status(r.error_code)},
            {"result", json_or_null(r.result_json)},
            {"killed_reason", text_or_null(r.killed_reason)},
            {"runner_nid", text_or_null(r.runner_nid)},
            {"recorded_at", format_rfc3339_ms(r.recorded_at_ms)},
        };
    }
    Json event_list = Json::array();
    constexpr std::string_view kProgress = ":progress";
    for (const auto& e : events) {
        Json event = event_json(e);
        // The newest progress frame of each node (docs/api.md "Progress").
        if (e.name.size() > kProgress.size() && e.name.ends_with(kProgress) && event["detail"].is_object()) {
            Json progress = event["detail"];
            progress["at"] = event["at"];
            nodes[e.name.substr(0, e.name.size() - kProgress.size())]["progress"] = std::move(progress);
        }
        event_list.push_back(std::move(event));
    }
    body["nodes"] = std::move(nodes);
    body["events"] = std::move(event_list);
    // The DAG as deposited (its nodes and edges): what the dashboard draws.
    const Json frame = Json::parse(task.payload, nullptr, /*allow_exceptions=*/false);
    body["dag"] = frame.is_object() && frame.contains("dag") ? frame["dag"] : Json(nullptr);
    return json_response(200, body);
}

Result<net::HttpResponse> Api::list_tasks(const net::HttpRequest& request)
{
    store::TaskListFilter filter;
    filter.limit = limits::kDefaultTaskListLimit;
    std::optional<std::int64_t> since_seconds;
    if (auto it = request.query.find("state"); it != request.query.end() && !it->second.empty()) {
        filter.state = proto::parse_task_state(ascii_upper(it->second));
        if (!filter.state)
            return protocol_error(proto::code::kNwpHttpParamInvalid,
                                  "state '" + it->second +
                                      "' is not one of PENDING, RUNNING, COMPLETED, FAILED, CANCELLED");
    }
    if (auto it = request.query.find("nid"); it != request.query.end() && !it->second.empty())
        filter.nid = it->second;
    if (auto it = request.query.find("q"); it != request.query.end() && !it->second.empty()) {
        if (it->second.size() > limits::kMaxIdChars)
            return protocol_error(proto::code::kNwpHttpParamInvalid, "q is longer than a task id (" +
                                                                         std::to_string(limits::kMaxIdChars) +
                                                                         " characters)");
        filter.task_id_contains = it->second;
    }
    if (auto it = request.query.find("since_seconds"); it != request.query.end()) {
        const std::int64_t seconds =
            NPS_TRY(bounded_integer(it->second, "since_seconds", 0, 1, limits::kMaxRetentionSeconds));
        if (seconds > 0)  // empty: no age filter
            since_seconds = seconds;
    }
    if (auto it = request.query.find("limit"); it != request.query.end()) {
        char* end = nullptr;
        long limit = std::strtol(it->second.c_str(), &end, 10);
        if (it->second.empty() || *end != '\0' || limit < 1)
            return protocol_error(proto::code::kNwpHttpParamInvalid,
                                  "limit '" + it->second + "' is not a positive integer");
        filter.limit = static_cast<std::uint32_t>(std::min<long>(limit, limits::kMaxTaskListLimit));
    }
    auto store = NPS_TRY(stores_.acquire());
    const std::int64_t now = NPS_TRY(store->time_now_ms());  // the clock of the tasks' times
    if (since_seconds)
        filter.created_after_ms = now - *since_seconds * 1000;
    auto tasks = NPS_TRY(store->list_tasks(filter));
    Json list = Json::array();
    for (const auto& t : tasks)
        list.push_back(task_summary(t, now));
    return json_response(200, {{"count", list.size()}, {"tasks", std::move(list)}});
}

namespace {

// The node report body (DESIGN §3.2; docs/reporting.md): {dedup_key, state,
// attempts?, runner_nid?, result?, error?:{code, message} | error_code?,
// killed_reason?} plus what report::node_report_body sends besides: task_id?
// and node_id? (must name the path's task and node), reported_at? (RFC 3339;
// informational). A report arrives through the sender's durable outbox,
// possibly after its lease ended, so it is refused only while ANOTHER runner
// holds a live lease (the sender lost the task: fencing, TC-N3-Claim-02);
// otherwise idempotency on (task_id, node_id, dedup_key) and the
// terminal-state rules of record_node_result decide.
Result<store::NodeResult> parse_node_report(const Json& body, const std::string& task_id, const std::string& node_id)
{
    store::NodeResult result;
    result.task_id = task_id;
    result.node_id = node_id;
    result.fence = store::LeaseFence::foreign_lease;
    if (auto named = NPS_TRY(optional_string(body, "task_id", limits::kMaxIdChars)); named && *named != task_id)
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              "task_id '" + *named + "' does not match the path's task");
    if (auto named = NPS_TRY(optional_string(body, "node_id", limits::kMaxIdChars)); named && *named != node_id)
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              "node_id '" + *named + "' does not match the path's node");
    if (auto at = NPS_TRY(optional_string(body, "reported_at", 64)); at && !parse_rfc3339_ms(*at))
        return protocol_error(proto::code::kNwpHttpParamInvalid, "reported_at '" + *at + "' is not an RFC 3339 time");
    result.dedup_key = NPS_TRY(required_string(body, "dedup_key", 64));
    const std::string state = NPS_TRY(required_string(body, "state", 32));
    const auto parsed = proto::parse_node_state(ascii_upper(state));
    if (!parsed)
        return protocol_error(proto::code::kNwpHttpParamInvalid, "state '" + state + "' is not a NOP node state");
    result.state = *parsed;
    result.attempts = NPS_TRY(optional_uint32(body, "attempts")).value_or(0);
    result.runner_nid = NPS_TRY(optional_string(body, "runner_nid", limits::kMaxNidChars));
    result.killed_reason = NPS_TRY(optional_string(body, "killed_reason", 32));
    if (result.killed_reason &&
        std::find(std::begin(kKilledReasons), std::end(kKilledReasons), *result.killed_reason) == std::end(kKilledReasons))
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              "killed_reason '" + *result.killed_reason + "' is not a known reason");
    // The error travels as {"error":{"code","message"}} (AlignStream shape) or flat error_code.
    if (auto it = body.find("error"); it != body.end() && !it->is_null()) {
        if (!it->is_object())
            return protocol_error(proto::code::kNwpHttpParamInvalid, "Field 'error' must be an object {code, message}");
        result.error_code = NPS_TRY(optional_string(*it, "code", 64));
        result.error_message = NPS_TRY(optional_string(*it, "message", 4096));
    }
    if (auto code = NPS_TRY(optional_string(body, "error_code", 64)))
        result.error_code = code;
    if (auto it = body.find("result"); it != body.end() && !it->is_null()) {
        result.result_json = it->dump();
        if (result.result_json->size() > limits::kMaxNodeResultBytes)
            return protocol_error(proto::code::kNwpHttpBodyTooLarge,
                                  "Node result exceeds " + std::to_string(limits::kMaxNodeResultBytes) + " bytes");
    }
    return result;
}

}  // namespace

Result<net::HttpResponse> Api::report_node(const net::HttpRequest& request, const std::string& task_id,
                                           const std::string& node_id)
{
    if (!proto::is_valid_identifier(node_id))
        return protocol_error(proto::code::kNwpHttpParamInvalid, "node id '" + node_id + "' is not a valid identifier");
    auto result = NPS_TRY(parse_node_report(NPS_TRY(parse_json_object(request.body)), task_id, node_id));
    auto outcome = NPS_TRY(NPS_TRY(stores_.acquire())->record_node_result(result));
    ++metrics_.node_results;
    return json_response(200, {{"outcome", store::to_string(outcome)},
                               {"task_id", task_id},
                               {"node_id", node_id},
                               {"state", proto::to_string(result.state)}});
}

// POST /v1/tasks/{task_id}/cancel: the task CANCELLED (its workers are ended
// by the cancelled hook), answered with its summary.
Result<net::HttpResponse> Api::cancel_task(const std::string& task_id)
{
    auto store = NPS_TRY(stores_.acquire());
    auto task = NPS_TRY(store->cancel(task_id));
    if (hooks_.cancelled)
        hooks_.cancelled(task_id);
    // Its summary as of the cancel (updated_at: the store's clock), not a
    // second round trip to read that clock.
    return json_response(200, task_summary(task, task.updated_at_ms));
}

Result<net::HttpResponse> Api::remove_task(const std::string& task_id)
{
    auto store = NPS_TRY(stores_.acquire());
    NPS_TRY_VOID(store->remove_task(task_id));
    return json_response(200, {{"task_id", task_id}, {"removed", true}});
}

Result<net::HttpResponse> Api::prune_tasks(const net::HttpRequest& request)
{
    // DELETE /v1/tasks?older_than_seconds=N[&state=S]
    const auto older = request.query.find("older_than_seconds");
    if (older == request.query.end())
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              "DELETE /v1/tasks needs older_than_seconds (finished tasks older than that are removed)");
    const std::int64_t seconds = NPS_TRY(
        bounded_integer(older->second, "older_than_seconds", 0, 0, limits::kMaxRetentionSeconds));
    store::PruneRequest prune;
    if (auto it = request.query.find("state"); it != request.query.end() && !it->second.empty()) {
        // Any other state is refused by the store, in the same words.
        prune.state = proto::parse_task_state(ascii_upper(it->second));
        if (!prune.state)
            return protocol_error(proto::code::kNwpHttpParamInvalid,
                                  "state '" + it->second + "' is not a finished state (COMPLETED, FAILED, CANCELLED)");
    }
    // Batches of the store's size until none is left: a hand prune of a big
    // backlog holds the write lock for one batch at a time.
    auto store = NPS_TRY(stores_.acquire());
    prune.finished_before_ms = NPS_TRY(store->time_now_ms()) - seconds * 1000;  // the clock of finished_at
    std::int64_t removed = 0;
    for (;;) {
        const std::int64_t n = NPS_TRY(store->prune_tasks(prune));
        removed += n;
        if (n < prune.limit)
            break;
    }
    NPS_TRY(store->reclaim_space(std::numeric_limits<std::uint32_t>::max()));
    return json_response(200, {{"removed", removed}});
}

}  // namespace nps::api
