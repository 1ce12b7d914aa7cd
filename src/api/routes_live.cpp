// SPDX-License-Identifier: Apache-2.0
// Watching work: a task's event log and every task's, a node's worker log;
// each read once, or followed live (live_feeds.hpp).
#include <cstdlib>
#include <optional>
#include <string>

#include "live_feeds.hpp"
#include "nps/api/api.hpp"
#include "nps/api/json_io.hpp"
#include "nps/base/limits.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/task_frame.hpp"
#include "nps/supervisor/worker_log.hpp"

namespace nps::api {

namespace {

// ?follow=1|true|0|false; a request that accepts only text/event-stream
// follows too (what EventSource sends).
Result<bool> wants_follow(const net::HttpRequest& request, bool event_stream)
{
    if (auto it = request.query.find("follow"); it != request.query.end()) {
        if (it->second == "1" || it->second == "true")
            return true;
        if (it->second == "0" || it->second == "false" || it->second.empty())
            return false;
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              "follow must be 1, true, 0 or false, not '" + it->second + "'");
    }
    return event_stream && request.header("accept") == "text/event-stream";
}

// Where a feed resumes: the Last-Event-ID header (a reconnecting
// EventSource) or ?after=; nullopt when neither is given.
Result<std::optional<std::int64_t>> resume_point(const net::HttpRequest& request)
{
    std::string text = request.header("last-event-id");
    const char* name = "Last-Event-ID";
    if (text.empty()) {
        if (auto it = request.query.find("after"); it != request.query.end()) {
            text = it->second;
            name = "after";
        }
    }
    if (text.empty())
        return std::optional<std::int64_t>();
    return std::optional<std::int64_t>(NPS_TRY(bounded_integer(text, name, 0, 0, limits::kMaxEventCursor)));
}

}  // namespace

Result<net::HttpResponse> Api::task_events(const net::HttpRequest& request, const std::string& task_id)
{
    const auto after = NPS_TRY(resume_point(request));
    if (NPS_TRY(wants_follow(request, true)))
        return feeds_->follow_events(task_id, after.value_or(0));
    auto store = NPS_TRY(stores_.acquire());
    NPS_TRY(store->task(task_id));  // NOP-TASK-NOT-FOUND
    std::int64_t limit = limits::kMaxTaskListLimit;
    if (auto it = request.query.find("limit"); it != request.query.end())
        limit = NPS_TRY(bounded_integer(it->second, "limit", limit, 1, limits::kMaxTaskListLimit));
    auto events = NPS_TRY(store->events_after({.task_id = task_id,
                                                .after = after.value_or(0),
                                                .limit = static_cast<std::size_t>(limit)}));
    Json list = Json::array();
    for (const auto& e : events)
        list.push_back(event_json(e.event));
    return json_response(200, {{"task_id", task_id}, {"events", std::move(list)}});
}

Result<net::HttpResponse> Api::all_events(const net::HttpRequest& request)
{
    const auto after = NPS_TRY(resume_point(request));
    if (NPS_TRY(wants_follow(request, true)))
        return feeds_->follow_events(std::nullopt, after);
    std::int64_t limit = limits::kDefaultTaskListLimit;
    if (auto it = request.query.find("limit"); it != request.query.end())
        limit = NPS_TRY(bounded_integer(it->second, "limit", limit, 1, limits::kMaxTaskListLimit));
    auto store = NPS_TRY(stores_.acquire());
    const std::int64_t last = NPS_TRY(store->last_event_pos());
    // Without a cursor: the newest `limit` events.
    const std::int64_t from = after ? *after : std::max<std::int64_t>(0, last - limit);
    auto events = NPS_TRY(store->events_after({.after = from, .limit = static_cast<std::size_t>(limit)}));
    Json list = Json::array();
    for (const auto& e : events) {
        Json event = event_json(e.event);
        event["task_id"] = e.task_id;
        list.push_back(std::move(event));
    }
    return json_response(200, {{"events", std::move(list)}, {"last_pos", last}});
}

// GET /v1/tasks/{task_id}/nodes/{node_id}/log?stream=stderr|stdout&bytes=N:
// the tail of the log of the node's last finished worker (the log directory
// its "<node>:worker" event names), N bytes (default 64 KiB, at most 1 MiB).
Result<net::HttpResponse> Api::node_log(const net::HttpRequest& request, const std::string& task_id,
                                        const std::string& node_id)
{
    if (!proto::is_valid_identifier(node_id))
        return protocol_error(proto::code::kNwpHttpParamInvalid, "node id '" + node_id + "' is not a valid identifier");
    std::string stream = "stderr";
    if (auto it = request.query.find("stream"); it != request.query.end())
        stream = it->second;
    if (stream != "stderr" && stream != "stdout")
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              "stream must be 'stderr' or 'stdout', not '" + stream + "'");
    std::int64_t bytes = limits::kDefaultNodeLogTailBytes;
    if (auto it = request.query.find("bytes"); it != request.query.end())
        bytes = NPS_TRY(bounded_integer(it->second, "bytes", bytes, 1,
                                        static_cast<std::int64_t>(limits::kMaxNodeLogTailBytes)));
    const bool follow = NPS_TRY(wants_follow(request, false));

    auto store = NPS_TRY(stores_.acquire());
    const auto task = NPS_TRY(store->task(task_id));  // NOP-TASK-NOT-FOUND
    // The node's last finished worker, from its `<node>:worker` events.
    std::optional<std::string> finished_dir;
    for (const auto& e : NPS_TRY(store->events(task_id))) {
        if (e.name != node_id + ":worker")
            continue;
        auto detail = Json::parse(e.detail_json, nullptr, /*allow_exceptions=*/false);
        if (detail.is_object() && detail.contains("log_dir") && detail["log_dir"].is_string())
            finished_dir = detail["log_dir"].get<std::string>();
    }
    if (follow && !proto::is_terminal(task.state))
        return feeds_->follow_log({.task_id = task_id,
                                   .node_id = node_id,
                                   .stream = stream,
                                   .tail_bytes = static_cast<std::size_t>(bytes),
                                   .finished_dir = finished_dir});

    const auto running = hooks_.running_log ? hooks_.running_log(task_id, node_id) : std::nullopt;
    const std::optional<std::string> log_dir = running ? running : finished_dir;
    if (!log_dir)
        return protocol_error(proto::code::kNopTaskNotFound,
                              "Node '" + node_id + "' of task '" + task_id + "' has not run a worker on this runner" +
                                  (proto::is_terminal(task.state) ? "" : " yet (follow=1 waits for one)"));
    auto text = NPS_TRY(supervisor::read_log_tail(*log_dir + "/" + stream + ".log", static_cast<std::size_t>(bytes)));
    if (follow) {
        // The task is over: the log as it ends, as a followed stream would give it.
        net::HttpResponse response;
        response.content_type = "text/plain; charset=utf-8";
        response.body = std::move(text);
        response.headers = {{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}};
        return response;
    }
    return json_response(200, {{"task_id", task_id},
                               {"node_id", node_id},
                               {"stream", stream},
                               {"log_dir", *log_dir},
                               {"running", running.has_value()},
                               {"text", text}});
}

}  // namespace nps::api
