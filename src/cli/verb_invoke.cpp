// SPDX-License-Identifier: Apache-2.0
// invoke: a one-node task to an agent through the daemon, the worker
// author's test loop.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nps/base/random_id.hpp"
#include "nps/cli/output.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"
#include "nps/net/http_client.hpp"
#include "nps/proto/states.hpp"
#include "task_client.hpp"

namespace nps::cli {

namespace {

using Json = nlohmann::json;

// nwp://<authority>/<name>/invoke for urn:nps:<kind>:<authority>:<name>; the
// action is what the worker sees as NPS_ACTION.
std::string default_action(const std::string& agent)
{
    const auto last = agent.rfind(':');
    const auto authority = last == std::string::npos ? std::string::npos : agent.rfind(':', last - 1);
    if (authority == std::string::npos || last == authority + 1 || last + 1 == agent.size())
        return "nwp://localhost/invoke";
    return "nwp://" + agent.substr(authority + 1, last - authority - 1) + "/" + agent.substr(last + 1) + "/invoke";
}

}  // namespace

int invoke(int argc, char** argv, int first)
{
    VerbSpec spec{
        "invoke",
        "AGENT [--params JSON] [--action URL] [--to NID] [--wait [--timeout S]] [--json]",
        "Run one node on AGENT through the daemon: deposit a one-node TaskFrame whose params\n"
        "are --params, and print its task_id; with --wait, wait for it and print the node's\n"
        "result (exit 0), or its error (exit 1; 3 on timeout). The agent must be announced\n"
        "(nps-runner announce AGENT --spawn-spec REF). The test loop of a worker's author.",
        "Example:\n  nps-runner invoke urn:nps:agent:example.com:wc --params '{\"text\":\"a b c\"}' --wait",
        {
            {"--params", "JSON", "the node's params, a JSON object (default {}); a string value starting with $ is refused"},
            {"--action", "URL", "the node's action (default nwp://AUTHORITY/NAME/invoke from the agent's NID)"},
            {"--to", "NID", "inbox to deposit into (default: the daemon's inbox when it claims from one)"},
            {"--wait", nullptr, "wait until the task ends and print the result"},
            {"--timeout", "S", "with --wait: give up after S seconds (default 60)"},
            {"--json", nullptr, "print the deposit, or with --wait the task, as JSON"},
            {"--raw", nullptr, "print worker-supplied text as it came, control characters included"},
        },
        1,
        1,
    };
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        const Output out{.raw = args.flag("--raw")};
        const std::string& agent = args.positionals[0];
        Json params = Json::object();
        if (auto text = args.value("--params")) {
            params = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
            if (!params.is_object()) {
                std::fprintf(stderr, "nps-runner: --params must be a JSON object, e.g. '{\"n\": 3}'\n");
                return kExitUsage;
            }
            for (const auto& [key, value] : params.items())
                if (value.is_string() && value.get_ref<const std::string&>().starts_with('$')) {
                    std::fprintf(stderr,
                                 "nps-runner: --params: '%s' starts with $, which input_mapping reads as a path; "
                                 "wrap it in an object\n",
                                 out.text(key).c_str());
                    return kExitUsage;
                }
        }
        double timeout_s = 60;
        if (auto t = args.value("--timeout")) {
            char* end = nullptr;
            timeout_s = std::strtod(t->c_str(), &end);
            if (t->empty() || *end != '\0' || timeout_s < 0) {
                std::fprintf(stderr, "nps-runner: --timeout '%s' is not a number of seconds\n", out.text(*t).c_str());
                return kExitUsage;
            }
        }
        std::string to;
        if (auto given = args.value("--to")) {
            to = *given;
        } else {
            auto found = default_inbox(args, client);
            if (!found) {
                std::fprintf(stderr, "nps-runner: %s\n", found.error().describe().c_str());
                return kExitUsage;
            }
            to = *found;
        }
        auto task_id = random_uuid();
        if (!task_id)
            return report_error(task_id.error());
        const Json frame = {
            {"task_id", *task_id},
            {"dag",
             {{"nodes",
               {{{"id", "invoke"},
                 {"agent", agent},
                 {"action", args.value("--action").value_or(default_action(agent))},
                 {"input_mapping", params}}}}}},
        };
        auto deposited = client.call("POST", "/v1/inbox/" + net::url_encode(to), frame.dump());
        if (!deposited)
            return report_error(deposited.error());
        if (!args.flag("--wait")) {
            if (args.flag("--json"))
                out.print_json(*deposited);
            else
                std::printf("%s\n", task_id->c_str());
            return kExitOk;
        }
        auto task = wait_for_task(client, *task_id, std::chrono::duration<double>(timeout_s));
        if (!task)
            return report_error(task.error());
        if (!*task) {
            std::fprintf(stderr, "nps-runner: task %s is still running after %.0f s (nps-runner task show %s)\n",
                         task_id->c_str(), timeout_s, task_id->c_str());
            return kExitTimeout;
        }
        const Json& t = **task;
        if (args.flag("--json")) {
            out.print_json(t);
        } else if (t["state"] == proto::task_state_text::completed) {
            const Json& node = t["nodes"]["invoke"];
            std::printf("%s\n", out.field(node.is_object() ? node["result"] : Json(nullptr)).c_str());
        } else {
            const Json& node = t["nodes"]["invoke"];
            std::fprintf(stderr, "nps-runner: task %s %s: %s %s\n", task_id->c_str(), out.field(t["state"]).c_str(),
                         out.field(node.is_object() ? node["error_code"] : t["error_code"]).c_str(),
                         out.field(node.is_object() ? node["error_message"] : t["error_message"]).c_str());
        }
        return t["state"] == proto::task_state_text::completed ? kExitOk : kExitFailure;
    });
}

}  // namespace nps::cli
