// SPDX-License-Identifier: Apache-2.0
// ps: the daemon's running workers.
#include <cstdio>
#include <string>

#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"
#include "worker_table.hpp"

namespace nps::cli {

namespace {

using Json = nlohmann::json;

std::string human_bytes(const Json& value)
{
    if (!value.is_number())
        return "-";
    double bytes = value.get<double>();
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (bytes >= 1024 && unit < 4) {
        bytes /= 1024;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f%s" : "%.1f%s", bytes, units[unit]);
    return text;
}

// "12s", "0.34s": a number of seconds with `decimals` places; "-" for null.
std::string seconds(const Json& value, int decimals)
{
    if (!value.is_number())
        return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.*fs", decimals, value.get<double>());
    return text;
}

}  // namespace

void print_worker_table(const Json& workers, const Output& out)
{
    std::printf("%-24s %-12s %3s %-8s %7s %7s %-19s %6s  %s\n", "TASK", "NODE", "TRY", "STATE", "PID", "UPTIME",
                "MEMORY", "CPU", "AGENT / IMAGE");
    for (const auto& w : workers) {
        const Json& limits = w["limits"];
        std::string memory = human_bytes(w["memory_bytes"]);
        if (limits.is_object() && limits["memory_bytes"].is_number())
            memory += "/" + human_bytes(limits["memory_bytes"]);
        std::printf("%-24s %-12s %3s %-8s %7s %7s %-19s %6s  %s %s\n", out.field(w["task_id"]).c_str(),
                    out.field(w["node_id"]).c_str(), out.field(w["attempt"]).c_str(), out.field(w["state"]).c_str(),
                    out.field(w["pid"]).c_str(), seconds(w["uptime_seconds"], 0).c_str(), memory.c_str(),
                    seconds(w["cpu_seconds"], 2).c_str(), out.field(w["agent"]).c_str(),
                    out.field(w["image"]).c_str());
    }
}

int ps(int argc, char** argv, int first)
{
    VerbSpec spec{"ps", "[--json]",
                  "List the daemon's workers: the task, node and attempt each one runs, its agent and\n"
                  "image, pid, state (queued, running, stopping), uptime, the memory and CPU time its\n"
                  "cgroup has used, and its limits.",
                  "",
                  {{"--json", nullptr, "print GET /v1/workers as JSON"}, {"--raw", nullptr, "print worker-supplied text as it came"}},
                  0,
                  0};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        auto list = client.call("GET", "/v1/workers");
        if (!list)
            return report_error(list.error());
        const Output out{.raw = args.flag("--raw")};
        if (args.flag("--json")) {
            out.print_json(*list);
            return kExitOk;
        }
        if ((*list)["workers"].empty()) {
            std::printf("no workers running\n");
            return kExitOk;
        }
        print_worker_table((*list)["workers"], out);
        return kExitOk;
    });
}

}  // namespace nps::cli
