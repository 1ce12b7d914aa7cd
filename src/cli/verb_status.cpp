// SPDX-License-Identifier: Apache-2.0
// status: one screen about a running daemon, from GET /healthz and the inbox
// depths.
#include <cstdio>
#include <string>

#include "nps/cli/output.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"
#include "nps/net/http_client.hpp"
#include "worker_table.hpp"

namespace nps::cli {

namespace {

using Json = nlohmann::json;

// Escaped for the terminal (nps/cli/output.hpp): the daemon's answer is
// data, never terminal commands.
std::string text(const Json& value)
{
    return Output{}.field(value);
}

}  // namespace

int status(int argc, char** argv, int first)
{
    VerbSpec spec{"status", "[--json]",
                  "Summarise a running daemon: version, runner NID, cgroup mode and the limits it can\n"
                  "enforce, tasks and workers running (each worker, as ps shows it), and the depth of\n"
                  "each inbox it claims from.",
                  "",
                  {{"--json", nullptr, "print GET /healthz as JSON"}},
                  0,
                  0};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        // 503 "degraded" (runner.db cannot be written) is still a summary to
        // show, with the problem, and exit 1.
        Result<Json> health = internal_error("no answer");
        bool degraded = false;
        if (auto sent = client.send("GET", "/healthz"); sent && sent->status == 503) {
            Json parsed = Json::parse(sent->body, nullptr, false);
            degraded = parsed.is_object() && parsed.value("status", "") == "degraded";
            if (degraded)
                health = std::move(parsed);
        }
        if (!degraded)
            health = client.call("GET", "/healthz");
        if (!health)
            return report_error(health.error());
        if (args.flag("--json")) {
            Output{}.print_json(*health);
            return degraded ? kExitFailure : kExitOk;
        }
        const Json& h = *health;
        std::printf("server    %s (%s)\n", client.describe().c_str(), text(h["status"]).c_str());
        std::printf("version   %s, schema %s\n", text(h["version"]).c_str(), text(h["schema_version"]).c_str());
        std::printf("runner    %s\n", text(h["runner_nid"]).c_str());
        if (h.contains("store") && h["store"].is_object())
            std::printf("store     %s, %s\n", text(h["store"]["backend"]).c_str(), text(h["store"]["location"]).c_str());
        if (degraded)
            std::printf("store     degraded: %s\n", text(h["problem"]).c_str());
        const Json& cg = h["cgroup"];
        std::string limits;
        if (cg["limits"].is_object())
            for (const auto& [controller, by] : cg["limits"].items())
                limits += (limits.empty() ? "" : ", ") + controller + ": " + (by.is_null() ? "not enforceable" : text(by));
        std::printf("cgroups   %s (%s)\n", text(cg["mode"]).c_str(), limits.c_str());
        if (cg.contains("problem"))
            std::printf("          %s\n", text(cg["problem"]).c_str());
        if (h["executor"].is_object()) {
            const Json& e = h["executor"];
            std::printf("tasks     %s running (at most %s)\n", text(e["tasks_running"]).c_str(),
                        text(e["max_tasks"]).c_str());
            std::printf("workers   %s running (at most %s)\n", text(e["workers_running"]).c_str(),
                        text(e["max_workers"]).c_str());
        }
        if (auto workers = client.call("GET", "/v1/workers"); workers && !(*workers)["workers"].empty()) {
            std::printf("running:\n");
            print_worker_table((*workers)["workers"], Output{});
        }
        if (h["inboxes"].is_array() && !h["inboxes"].empty()) {
            std::printf("inboxes:\n");
            for (const auto& nid : h["inboxes"]) {
                auto depth = client.call("GET", "/v1/inbox/" + net::url_encode(text(nid)) + "/depth");
                std::printf("  %-50s %s queued\n", text(nid).c_str(),
                            depth ? text((*depth)["depth"]).c_str() : depth.error().describe().c_str());
            }
        } else {
            std::printf("inboxes   none: the daemon serves the API but claims nothing (serve --inbox NID)\n");
        }
        return degraded ? kExitFailure : kExitOk;
    });
}

}  // namespace nps::cli
