// SPDX-License-Identifier: Apache-2.0
#include "task_client.hpp"

#include <cstdio>
#include <thread>
#include <vector>

#include "nps/cli/output.hpp"
#include "nps/cli/verbs.hpp"
#include "nps/config/config.hpp"
#include "nps/net/http_client.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/states.hpp"

namespace nps::cli {

using Json = nlohmann::json;

Result<std::string> default_inbox(const ParsedArgs& args, const ApiClient& client)
{
    std::vector<std::string> daemon_inboxes;
    if (auto health = client.call("GET", "/healthz"); health && (*health)["inboxes"].is_array())
        for (const auto& nid : (*health)["inboxes"])
            if (nid.is_string())
                daemon_inboxes.push_back(nid.get<std::string>());
    if (daemon_inboxes.size() == 1)
        return daemon_inboxes.front();
    if (daemon_inboxes.size() > 1) {
        std::string list;
        for (const auto& nid : daemon_inboxes)
            list += (list.empty() ? "" : ", ") + nid;
        return internal_error("the daemon claims from " + std::to_string(daemon_inboxes.size()) + " inboxes (" +
                              list + "): pass --to NID");
    }
    auto path = args.value("--config");
    auto config = config::load_config(path.value_or(config::kDefaultConfigPath), path.has_value());
    if (config && !config->inboxes.empty())
        return config->inboxes.front();
    return internal_error("no target inbox: the daemon claims from none; pass --to NID");
}

Result<Json> fetch_task(const ApiClient& client, const std::string& task_id)
{
    const std::string path = "/v1/tasks/" + net::url_encode(task_id);
    auto task = client.call("GET", path);
    if (task || task.error().code != proto::code::kNopTaskResultExpired)
        return task;
    auto raw = NPS_TRY(client.send("GET", path));
    Json body = Json::parse(raw.body, nullptr, false);
    if (body.is_object() && body["task"].is_object())
        return body["task"];
    return task;
}

int remove_each(const ApiClient& client, const std::vector<std::string>& ids, const std::string& path_prefix,
                bool json)
{
    const Output out{};
    int status = kExitOk;
    Json results = Json::array();
    for (const auto& id : ids) {
        auto removed = client.call("DELETE", path_prefix + net::url_encode(id));
        if (!removed) {
            status = kExitFailure;
            if (json)
                results.push_back({{"id", id}, {"removed", false}, {"error", removed.error().code},
                                   {"message", removed.error().describe()}});
            else
                report_error(removed.error());
        } else if (json) {
            results.push_back({{"id", id}, {"removed", true}});
        } else {
            std::printf("%s removed\n", out.text(id).c_str());
        }
    }
    if (json)
        out.print_json(results);
    return status;
}

std::string node_log_path(const ParsedArgs& args, const std::string& task_id, const std::string& node)
{
    std::string path = "/v1/tasks/" + net::url_encode(task_id) + "/nodes/" + net::url_encode(node) +
                       "/log?stream=" + net::url_encode(args.value("--stream").value_or("stderr"));
    if (auto bytes = args.value("--bytes"))
        path += "&bytes=" + net::url_encode(*bytes);
    return path;
}

int print_node_log(const ApiClient& client, const ParsedArgs& args, const std::string& path)
{
    const Output out{.raw = args.flag("--raw")};
    auto log = client.call("GET", path);
    if (!log)
        return report_error(log.error());
    if (args.flag("--json"))
        out.print_json(*log);
    else if ((*log)["text"].is_string())
        out.write_text((*log)["text"].get_ref<const std::string&>());
    return kExitOk;
}

bool is_terminal_state(const std::string& state)
{
    const auto parsed = proto::parse_task_state(state);
    return parsed && proto::is_terminal(*parsed);
}

Result<std::optional<Json>> wait_for_task(const ApiClient& client, const std::string& task_id,
                                          std::chrono::duration<double> timeout)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto delay = std::chrono::milliseconds(5);
    for (;;) {
        Json task = NPS_TRY(fetch_task(client, task_id));
        if (task["state"].is_string() && is_terminal_state(task["state"].get<std::string>()))
            return std::optional<Json>(std::move(task));
        if (std::chrono::steady_clock::now() >= deadline)
            return std::optional<Json>();
        std::this_thread::sleep_for(delay);
        delay = std::min(delay * 2, std::chrono::milliseconds(200));
    }
}

}  // namespace nps::cli
