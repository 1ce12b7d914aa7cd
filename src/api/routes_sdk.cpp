// SPDX-License-Identifier: Apache-2.0
// The routes the official SDKs' NopClient uses (Python NPS-sdk-py, TypeScript
// NPS-sdk-ts), in the shapes they parse (docs/api.md, "SDK routes"):
//   POST {base}/task              a TaskFrame (an NCP frame, usually MsgPack) → {task_id, …}
//   GET  {base}/task/{id}         {task_id, state (lower case), aggregated_result, error_code,
//                                  error_message, node_results}
//   POST {base}/task/{id}/cancel  {task_id, state: "cancelled"}
// {base} is the daemon's root (the inbox api.task_inbox) or /v1/inbox/{nid}.
#include "nps/base/ascii.hpp"
#include "nps/api/api.hpp"
#include "nps/api/json_io.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/states.hpp"

namespace nps::api {

namespace {

// The SDKs' TaskState spelling of our task states.
std::string sdk_state(proto::TaskState state)
{
    return ascii_lower(proto::to_string(state));
}

}  // namespace

Result<std::string> Api::sdk_inbox() const
{
    if (!config_.task_inbox.empty())
        return config_.task_inbox;
    if (!config_.inboxes.empty())
        return config_.inboxes.front();
    return protocol_error(proto::code::kNwpInboxNotFound,
                          "POST /task needs an inbox: set api.task_inbox or runner.inboxes, or use "
                          "/v1/inbox/{nid}/task");
}

Result<store::TaskRecord> Api::sdk_task(const std::optional<std::string>& base_nid, const std::string& task_id)
{
    std::string nid;
    if (base_nid)
        nid = *base_nid;
    else
        nid = NPS_TRY(sdk_inbox());
    NPS_TRY_VOID(check_inbox_nid(nid));
    auto store = NPS_TRY(stores_.acquire());
    auto task = NPS_TRY(store->task(task_id));
    if (task.nid != nid)  // another inbox's task is not under this base
        return protocol_error(proto::code::kNopTaskNotFound,
                              "Task '" + task_id + "' does not exist in inbox '" + nid + "'");
    return task;
}

Result<net::HttpResponse> Api::sdk_task_cancel(const std::optional<std::string>& base_nid, const std::string& task_id)
{
    NPS_TRY(sdk_task(base_nid, task_id));
    auto store = NPS_TRY(stores_.acquire());
    auto cancelled = NPS_TRY(store->cancel(task_id));
    if (hooks_.cancelled)
        hooks_.cancelled(task_id);
    return json_response(200, {{"task_id", cancelled.task_id}, {"state", sdk_state(cancelled.state)}});
}

Result<net::HttpResponse> Api::sdk_task_status(const std::optional<std::string>& base_nid, const std::string& task_id)
{
    const auto task = NPS_TRY(sdk_task(base_nid, task_id));
    auto store = NPS_TRY(stores_.acquire());
    if (task.results_expired(NPS_TRY(store->time_now_ms())))  // the clock of the task's times
        return protocol_error(proto::code::kNopTaskResultExpired,
                              "The results of task '" + task_id + "' expired (its result_ttl_seconds); its state is " +
                                  std::string(proto::to_string(task.state)));
    Json node_results = Json::object();
    for (const auto& r : NPS_TRY(store->node_results(task_id)))
        if (r.dedup_key == task.dedup_key)
            node_results[r.node_id] = json_or_null(r.result_json);
    return json_response(200, {
                                  {"task_id", task.task_id},
                                  {"state", sdk_state(task.state)},
                                  {"aggregated_result", json_or_null(task.aggregate_json)},
                                  {"error_code", text_or_null(task.error_code)},
                                  {"error_message", text_or_null(task.error_message)},
                                  {"node_results", std::move(node_results)},
                              });
}

}  // namespace nps::api
