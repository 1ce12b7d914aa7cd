// SPDX-License-Identifier: Apache-2.0
// task show | ls | wait | cancel
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "nps/cli/verb_runner.hpp"
#include "nps/net/http_client.hpp"

namespace nps::cli {

namespace {

using Json = nlohmann::json;

std::string text_or_dash(const Json& value)
{
    if (value.is_string())
        return value.get<std::string>();
    if (value.is_null())
        return "-";
    return value.dump();
}

void print_task(const Json& task)
{
    std::printf("task      %s\n", text_or_dash(task["task_id"]).c_str());
    std::printf("inbox     %s\n", text_or_dash(task["nid"]).c_str());
    std::printf("state     %s\n", text_or_dash(task["state"]).c_str());
    if (!task["error_code"].is_null())
        std::printf("error     %s %s\n", text_or_dash(task["error_code"]).c_str(),
                    task["error_message"].is_string() ? task["error_message"].get<std::string>().c_str() : "");
    if (!task["lease"].is_null())
        std::printf("lease     %s until %s\n", text_or_dash(task["lease"]["runner_nid"]).c_str(),
                    text_or_dash(task["lease"]["lease_expiry"]).c_str());
    std::printf("claims    %s\n", text_or_dash(task["claims"]).c_str());
    std::printf("created   %s\nupdated   %s\n", text_or_dash(task["created_at"]).c_str(),
                text_or_dash(task["updated_at"]).c_str());
    if (!task["aggregate"].is_null())
        std::printf("result    %s\n", task["aggregate"].dump().c_str());
    if (task["nodes"].is_object() && !task["nodes"].empty()) {
        std::printf("nodes:\n");
        for (const auto& [id, node] : task["nodes"].items())
            std::printf("  %-20s %-20s attempts=%s %s %s\n", id.c_str(), text_or_dash(node["state"]).c_str(),
                        text_or_dash(node["attempts"]).c_str(),
                        node["error_code"].is_null() ? "" : text_or_dash(node["error_code"]).c_str(),
                        node["result"].is_null() ? "" : node["result"].dump().c_str());
    }
    if (task["events"].is_array() && !task["events"].empty()) {
        std::printf("events:\n");
        for (const auto& e : task["events"])
            std::printf("  %s  %s\n", text_or_dash(e["at"]).c_str(), text_or_dash(e["event"]).c_str());
    }
}

bool is_terminal(const std::string& state)
{
    return state == "COMPLETED" || state == "FAILED" || state == "CANCELLED";
}

}  // namespace

int task_show(int argc, char** argv, int first)
{
    VerbSpec spec{"task show", "ID [--json] [--log NODE [--stream stderr|stdout] [--bytes N]]",
                  "Show a task: state, lease, nodes, result and event log; with --log, the tail of a\n"
                  "node's last worker log instead.",
                  "",
                  {{"--json", nullptr, "print the API's JSON"},
                   {"--log", "NODE", "print the log tail of NODE's last finished worker"},
                   {"--stream", "S", "with --log: stderr (default) or stdout"},
                   {"--bytes", "N", "with --log: how much of the tail (default 65536)"}},
                  1, 1};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        if (auto node = args.value("--log")) {
            std::string path = "/v1/tasks/" + net::url_encode(args.positionals[0]) + "/nodes/" +
                               net::url_encode(*node) + "/log?stream=" +
                               net::url_encode(args.value("--stream").value_or("stderr"));
            if (auto bytes = args.value("--bytes"))
                path += "&bytes=" + net::url_encode(*bytes);
            auto log = client.call("GET", path);
            if (!log)
                return report_error(log.error());
            if (args.flag("--json"))
                std::printf("%s\n", log->dump(2).c_str());
            else
                std::fwrite((*log)["text"].get<std::string>().data(), 1, (*log)["text"].get<std::string>().size(), stdout);
            return kExitOk;
        }
        auto task = client.call("GET", "/v1/tasks/" + net::url_encode(args.positionals[0]));
        if (!task)
            return report_error(task.error());
        if (args.flag("--json"))
            std::printf("%s\n", task->dump(2).c_str());
        else
            print_task(*task);
        return kExitOk;
    });
}

int task_ls(int argc, char** argv, int first)
{
    VerbSpec spec{"task ls", "[--state STATE] [--limit N] [--json]", "List tasks, newest first.", "",
                  {{"--state", "STATE", "only PENDING, RUNNING, COMPLETED, FAILED or CANCELLED"},
                   {"--limit", "N", "at most N tasks (default 100, max 1000)"},
                   {"--json", nullptr, "print the API's JSON"}},
                  0, 0};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        std::string path = "/v1/tasks?limit=" + net::url_encode(args.value("--limit").value_or("100"));
        if (auto state = args.value("--state"))
            path += "&state=" + net::url_encode(*state);
        auto list = client.call("GET", path);
        if (!list)
            return report_error(list.error());
        if (args.flag("--json")) {
            std::printf("%s\n", list->dump(2).c_str());
            return kExitOk;
        }
        std::printf("%-38s %-10s %-26s %s\n", "TASK", "STATE", "CREATED", "ERROR");
        for (const auto& t : (*list)["tasks"])
            std::printf("%-38s %-10s %-26s %s\n", text_or_dash(t["task_id"]).c_str(), text_or_dash(t["state"]).c_str(),
                        text_or_dash(t["created_at"]).c_str(), text_or_dash(t["error_code"]).c_str());
        return kExitOk;
    });
}

int task_wait(int argc, char** argv, int first)
{
    VerbSpec spec{"task wait", "ID [--timeout S] [--json]",
                  "Wait until a task is terminal; print it. Exit 0 if COMPLETED, 1 if FAILED or CANCELLED, "
                  "3 on timeout.",
                  "",
                  {{"--timeout", "S", "give up after S seconds (default 60)"},
                   {"--json", nullptr, "print the API's JSON"}},
                  1, 1};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        double timeout_s = 60;
        if (auto t = args.value("--timeout")) {
            char* end = nullptr;
            timeout_s = std::strtod(t->c_str(), &end);
            if (t->empty() || *end != '\0' || timeout_s < 0) {
                std::fprintf(stderr, "nps-runner: --timeout '%s' is not a number of seconds\n", t->c_str());
                return kExitUsage;
            }
        }
        auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        auto delay = std::chrono::milliseconds(5);
        for (;;) {
            auto task = client.call("GET", "/v1/tasks/" + net::url_encode(args.positionals[0]));
            if (!task)
                return report_error(task.error());
            std::string state = (*task)["state"].is_string() ? (*task)["state"].get<std::string>() : "";
            if (is_terminal(state)) {
                if (args.flag("--json"))
                    std::printf("%s\n", task->dump(2).c_str());
                else
                    print_task(*task);
                return state == "COMPLETED" ? kExitOk : kExitFailure;
            }
            if (std::chrono::steady_clock::now() >= deadline) {
                std::fprintf(stderr, "nps-runner: task '%s' is still %s after %.0f s\n", args.positionals[0].c_str(),
                             state.c_str(), timeout_s);
                return kExitTimeout;
            }
            std::this_thread::sleep_for(delay);
            delay = std::min(delay * 2, std::chrono::milliseconds(200));
        }
    });
}

int task_cancel(int argc, char** argv, int first)
{
    VerbSpec spec{"task cancel", "ID", "Cancel a task that is not yet terminal.", "", {}, 1, 1};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        auto task = client.call("POST", "/v1/tasks/" + net::url_encode(args.positionals[0]) + "/cancel", "{}");
        if (!task)
            return report_error(task.error());
        std::printf("%s %s\n", text_or_dash((*task)["task_id"]).c_str(), text_or_dash((*task)["state"]).c_str());
        return kExitOk;
    });
}

}  // namespace nps::cli
