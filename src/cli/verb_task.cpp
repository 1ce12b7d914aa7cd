// SPDX-License-Identifier: Apache-2.0
// task show | ls | wait | cancel | rm | prune
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "nps/cli/dag_picture.hpp"
#include "nps/cli/output.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/net/http_client.hpp"
#include "nps/proto/states.hpp"
#include "task_client.hpp"

namespace nps::cli {

namespace {

using Json = nlohmann::json;

const char* const kRawHelp = "print worker-supplied text as it came, control characters included";

void print_task(const Json& task, const Output& out)
{
    auto f = [&](const Json& value) { return out.field(value); };
    std::printf("task      %s\n", f(task["task_id"]).c_str());
    std::printf("inbox     %s\n", f(task["nid"]).c_str());
    std::printf("state     %s\n", f(task["state"]).c_str());
    if (!task["error_code"].is_null())
        std::printf("error     %s %s\n", f(task["error_code"]).c_str(),
                    task["error_message"].is_string() ? f(task["error_message"]).c_str() : "");
    if (!task["lease"].is_null())
        std::printf("lease     %s until %s\n", f(task["lease"]["runner_nid"]).c_str(),
                    f(task["lease"]["lease_expiry"]).c_str());
    std::printf("claims    %s\n", f(task["claims"]).c_str());
    std::printf("created   %s\nupdated   %s\n", f(task["created_at"]).c_str(), f(task["updated_at"]).c_str());
    if (task["results_expired"] == true)
        std::printf("result    expired (result_ttl_seconds)\n");
    else if (!task["aggregate"].is_null())
        std::printf("result    %s\n", f(task["aggregate"]).c_str());
    if (task["nodes"].is_object() && !task["nodes"].empty()) {
        std::printf("nodes:\n");
        for (const auto& [id, node] : task["nodes"].items())
            std::printf("  %-20s %-20s attempts=%s %s %s\n", out.text(id).c_str(), f(node["state"]).c_str(),
                        f(node["attempts"]).c_str(), node["error_code"].is_null() ? "" : f(node["error_code"]).c_str(),
                        node["result"].is_null() ? "" : f(node["result"]).c_str());
    }
    if (task["events"].is_array() && !task["events"].empty()) {
        std::printf("events:\n");
        for (const auto& e : task["events"])
            std::printf("  %s  %s\n", f(e["at"]).c_str(), f(e["event"]).c_str());
    }
}

// "90", "90s", "15m", "2h", "7d" → seconds; nullopt for anything else.
std::optional<std::int64_t> parse_duration_seconds(const std::string& text)
{
    if (text.empty())
        return std::nullopt;
    std::int64_t unit = 1;
    std::string digits = text;
    switch (text.back()) {
    case 's': unit = 1; digits.pop_back(); break;
    case 'm': unit = 60; digits.pop_back(); break;
    case 'h': unit = 3600; digits.pop_back(); break;
    case 'd': unit = 86400; digits.pop_back(); break;
    default: break;
    }
    if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    return std::stoll(digits) * unit;
}

}  // namespace

int task_show(int argc, char** argv, int first)
{
    VerbSpec spec{"task show", "ID [--json|--graph|--dot] [--raw] [--log NODE [--stream stderr|stdout] [--bytes N]]",
                  "Show a task: state, lease, nodes, result and event log; with --log, the tail of a\n"
                  "node's last worker log instead. --graph draws its DAG as text (each node with its\n"
                  "layer, state and predecessors, and its step in the saga's compensation order);\n"
                  "--dot prints it as Graphviz DOT. Control characters in worker-supplied text are\n"
                  "printed escaped (\\x1b, \\u009b) unless --raw is given.",
                  "Examples:\n  nps-runner task show demo-3-node-dag --graph\n"
                  "  nps-runner task show demo-3-node-dag --dot | dot -Tsvg > dag.svg\n",
                  {{"--json", nullptr, "print the API's JSON"},
                   {"--graph", nullptr, "draw the DAG as text: nodes, edges, states"},
                   {"--dot", nullptr, "print the DAG as Graphviz DOT"},
                   {"--log", "NODE", "print the log tail of NODE's last finished worker"},
                   {"--stream", "S", "with --log: stderr (default) or stdout"},
                   {"--bytes", "N", "with --log: how much of the tail (default 65536)"},
                   {"--raw", nullptr, kRawHelp}},
                  1, 1};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        const Output out{.raw = args.flag("--raw")};
        if (auto node = args.value("--log"))
            return print_node_log(client, args, node_log_path(args, args.positionals[0], *node));
        auto task = fetch_task(client, args.positionals[0]);
        if (!task)
            return report_error(task.error());
        if (args.flag("--json"))
            out.print_json(*task);
        else if (args.flag("--graph"))
            std::fputs(render_text(dag_picture(*task), out).c_str(), stdout);
        else if (args.flag("--dot"))
            std::fputs(render_dot(dag_picture(*task)).c_str(), stdout);
        else
            print_task(*task, out);
        return kExitOk;
    });
}

int task_ls(int argc, char** argv, int first)
{
    VerbSpec spec{"task ls", "[--state STATE] [--limit N] [--json] [--raw]", "List tasks, newest first.", "",
                  {{"--state", "STATE", "only PENDING, RUNNING, COMPLETED, FAILED or CANCELLED"},
                   {"--limit", "N", "at most N tasks (default 100, max 1000)"},
                   {"--json", nullptr, "print the API's JSON"},
                   {"--raw", nullptr, kRawHelp}},
                  0, 0};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        const Output out{.raw = args.flag("--raw")};
        std::string path = "/v1/tasks?limit=" + net::url_encode(args.value("--limit").value_or("100"));
        if (auto state = args.value("--state"))
            path += "&state=" + net::url_encode(*state);
        auto list = client.call("GET", path);
        if (!list)
            return report_error(list.error());
        if (args.flag("--json")) {
            out.print_json(*list);
            return kExitOk;
        }
        std::printf("%-38s %-10s %-26s %s\n", "TASK", "STATE", "CREATED", "ERROR");
        for (const auto& t : (*list)["tasks"])
            std::printf("%-38s %-10s %-26s %s\n", out.field(t["task_id"]).c_str(), out.field(t["state"]).c_str(),
                        out.field(t["created_at"]).c_str(), out.field(t["error_code"]).c_str());
        return kExitOk;
    });
}

int task_wait(int argc, char** argv, int first)
{
    VerbSpec spec{"task wait", "ID [--timeout S] [--json] [--raw]",
                  "Wait until a task is terminal; print it. Exit 0 if COMPLETED, 1 if FAILED or CANCELLED, "
                  "3 on timeout.",
                  "",
                  {{"--timeout", "S", "give up after S seconds (default 60)"},
                   {"--json", nullptr, "print the API's JSON"},
                   {"--raw", nullptr, kRawHelp}},
                  1, 1};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        const Output out{.raw = args.flag("--raw")};
        double timeout_s = 60;
        if (auto t = args.value("--timeout")) {
            char* end = nullptr;
            timeout_s = std::strtod(t->c_str(), &end);
            if (t->empty() || *end != '\0' || timeout_s < 0) {
                std::fprintf(stderr, "nps-runner: --timeout '%s' is not a number of seconds\n", t->c_str());
                return kExitUsage;
            }
        }
        auto task = wait_for_task(client, args.positionals[0], std::chrono::duration<double>(timeout_s));
        if (!task)
            return report_error(task.error());
        if (!*task) {
            std::fprintf(stderr, "nps-runner: task '%s' is still not finished after %.0f s\n",
                         out.text(args.positionals[0]).c_str(), timeout_s);
            return kExitTimeout;
        }
        if (args.flag("--json"))
            out.print_json(**task);
        else
            print_task(**task, out);
        return (**task)["state"] == proto::task_state_text::completed ? kExitOk : kExitFailure;
    });
}

int task_cancel(int argc, char** argv, int first)
{
    VerbSpec spec{"task cancel", "ID [--json]", "Cancel a task that is not yet terminal.", "",
                  {{"--json", nullptr, "print the API's JSON (the task's summary)"}}, 1, 1};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        const Output out{.raw = args.flag("--raw")};
        auto task = client.call("POST", "/v1/tasks/" + net::url_encode(args.positionals[0]) + "/cancel", "{}");
        if (!task)
            return report_error(task.error());
        if (args.flag("--json")) {
            out.print_json(*task);
            return kExitOk;
        }
        std::printf("%s %s\n", out.field((*task)["task_id"]).c_str(), out.field((*task)["state"]).c_str());
        return kExitOk;
    });
}

int task_rm(int argc, char** argv, int first)
{
    VerbSpec spec{"task rm", "ID... [--json]",
                  "Delete finished tasks now: each task's record, frame, events, node results and reports.\n"
                  "A task still PENDING or RUNNING is refused (cancel it first). Exit 1 if any ID\n"
                  "could not be removed.",
                  "Finished tasks are also deleted on their own after [store] task_retention_hours.",
                  {{"--json", nullptr, "print [{id, removed, error, message}]"}},
                  1, 1000};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        return remove_each(client, args.positionals, "/v1/tasks/", args.flag("--json"));
    });
}

int task_prune(int argc, char** argv, int first)
{
    VerbSpec spec{"task prune", "--older-than DURATION [--state STATE] [--json]",
                  "Delete the tasks that finished more than DURATION ago (90s, 15m, 2h, 7d; a bare\n"
                  "number is seconds), optionally only those in STATE (COMPLETED, FAILED or\n"
                  "CANCELLED). A task with a report still to deliver is kept. Prints how many went.",
                  "The daemon prunes on its own after [store] task_retention_hours (default 168).",
                  {{"--older-than", "DURATION", "finished at least this long ago (required)"},
                   {"--state", "STATE", "only tasks that ended COMPLETED, FAILED or CANCELLED"},
                   {"--json", nullptr, "print the API's JSON"}},
                  0, 0};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        const auto older = args.value("--older-than");
        if (!older) {
            std::fprintf(stderr, "nps-runner: task prune needs --older-than DURATION (e.g. 7d)\n");
            return kExitUsage;
        }
        const auto seconds = parse_duration_seconds(*older);
        if (!seconds) {
            std::fprintf(stderr, "nps-runner: --older-than '%s' is not a duration (90s, 15m, 2h, 7d)\n",
                         Output{}.text(*older).c_str());
            return kExitUsage;
        }
        std::string path = "/v1/tasks?older_than_seconds=" + std::to_string(*seconds);
        if (auto state = args.value("--state"))
            path += "&state=" + net::url_encode(*state);
        auto pruned = client.call("DELETE", path, std::nullopt, {}, 600'000);
        if (!pruned)
            return report_error(pruned.error());
        if (args.flag("--json"))
            Output{}.print_json(*pruned);
        else
            std::printf("%s finished task(s) removed\n", Output{}.field((*pruned)["removed"]).c_str());
        return kExitOk;
    });
}

}  // namespace nps::cli
