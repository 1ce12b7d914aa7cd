// SPDX-License-Identifier: Apache-2.0
// GET /v1/overview (the dashboard's first page in one answer) and
// GET /v1/images (the image store, read-only).
#include "nps/api/api.hpp"
#include "nps/api/json_io.hpp"
#include "nps/proto/states.hpp"

namespace nps::api {

using Json = nlohmann::json;

Result<net::HttpResponse> Api::overview()
{
    auto store = NPS_TRY(stores_.acquire());
    Json inboxes = Json::array();
    for (const auto& nid : config_.inboxes)
        inboxes.push_back({{"nid", nid}, {"depth", NPS_TRY(store->depth(nid))}});
    Json tasks = Json::object();
#define NPS_TASK_STATE_ZERO(name, text, terminal) tasks[text] = 0;
    NPS_TASK_STATES(NPS_TASK_STATE_ZERO)
#undef NPS_TASK_STATE_ZERO
    for (const auto& count : NPS_TRY(store->task_state_counts()))
        tasks[std::string(proto::to_string(count.state))] = count.tasks;
    const store::ReportCounts reports = NPS_TRY(store->report_counts());
    Json workers = hooks_.workers ? hooks_.workers() : Json::array();
    return json_response(200, {{"runner_nid", config_.runner_nid},
                               {"version", NPS_RUNNER_VERSION},
                               {"inboxes", std::move(inboxes)},
                               {"tasks", std::move(tasks)},
                               {"workers_running", workers.is_array() ? workers.size() : 0},
                               {"reports", {{"backlog", reports.backlog}, {"dead", reports.dead}}}});
}

Result<net::HttpResponse> Api::list_images()
{
    Json images = Json::array();
    if (hooks_.images)
        images = NPS_TRY(hooks_.images());
    if (!images.is_array())
        return internal_error("the image store's list is not a JSON array");
    return json_response(200, {{"count", images.size()}, {"images", std::move(images)}});
}

}  // namespace nps::api
