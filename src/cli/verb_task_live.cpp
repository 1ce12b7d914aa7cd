// SPDX-License-Identifier: Apache-2.0
// task watch | logs: a task's events and a node's log, as they happen.
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "nps/cli/output.hpp"
#include "nps/cli/sse_reader.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/net/http_client.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/states.hpp"
#include "task_client.hpp"

namespace nps::cli {

namespace {

using Json = nlohmann::json;

// Log text printed as whole lines, so a multi-byte character or an escape
// sequence split between two reads is escaped as the one it is.
class LinePrinter {
public:
    explicit LinePrinter(const Output& out) : out_(out) {}
    void add(std::string_view bytes)
    {
        pending_.append(bytes);
        const std::size_t end = pending_.rfind('\n');
        if (end != std::string::npos) {
            out_.write_text(std::string_view(pending_).substr(0, end + 1));
            pending_.erase(0, end + 1);
        } else if (pending_.size() >= kFlushBytes) {
            flush();
        }
        std::fflush(stdout);
    }
    void flush()
    {
        out_.write_text(pending_);
        pending_.clear();
        std::fflush(stdout);
    }

private:
    static constexpr std::size_t kFlushBytes = 64 * 1024;
    const Output& out_;
    std::string pending_;
};

// The node to show when none was named: the task's only node.
Result<std::string> only_node(const ApiClient& client, const std::string& task_id)
{
    const Json task = NPS_TRY(fetch_task(client, task_id));
    std::string names;
    std::size_t count = 0;
    std::string node;
    if (task["nodes"].is_object()) {
        for (const auto& [id, value] : task["nodes"].items()) {
            node = id;
            names += (count++ ? ", " : "") + id;
        }
    }
    if (count == 1)
        return node;
    if (count == 0)
        return protocol_error(proto::code::kNopTaskNotFound,
                              "Task '" + task_id + "' has no node with a record yet: name the NODE to follow");
    return protocol_error(proto::code::kNwpHttpParamInvalid,
                          "Task '" + task_id + "' has several nodes (" + names + "): name the NODE");
}

void print_event(const Json& event, const Output& out)
{
    std::string detail;
    if (event["detail"].is_object() && !event["detail"].empty())
        detail = out.field(event["detail"]);
    std::printf("%-26s %-28s %s\n", out.field(event["at"]).c_str(), out.field(event["event"]).c_str(),
                detail.c_str());
    std::fflush(stdout);
}

}  // namespace

int task_watch(int argc, char** argv, int first)
{
    VerbSpec spec{"task watch", "ID [--json] [--raw]",
                  "Print a task's events as they happen (its log so far first) until the task ends.\n"
                  "Exit 0 if it COMPLETED, 1 if it FAILED or was CANCELLED (or the feed broke off).",
                  "The feed is GET /v1/tasks/ID/events?follow=1 (Server-Sent Events).",
                  {{"--json", nullptr, "print each event as one line of JSON"}, {"--raw", nullptr,
                   "print worker-supplied text as it came, control characters included"}},
                  1, 1};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        const Output out{.raw = args.flag("--raw")};
        const bool json = args.flag("--json");
        std::optional<std::string> final_state;
        SseReader reader([&](const SseEvent& event) {
            const Json data = Json::parse(event.data, nullptr, false);
            if (event.type == "end") {
                final_state = data.is_object() && data["state"].is_string() ? data["state"].get<std::string>()
                                                                              : std::string("UNKNOWN");
                return false;
            }
            if (!data.is_object())
                return true;
            if (json) {
                std::printf("%s\n", data.dump(-1, ' ', true, Json::error_handler_t::replace).c_str());
                std::fflush(stdout);
            } else {
                print_event(data, out);
            }
            return true;
        });
        auto followed = client.follow("/v1/tasks/" + net::url_encode(args.positionals[0]) + "/events?follow=1",
                                      [&](std::string_view bytes) { return reader.feed(bytes); },
                                      {{"Accept", "text/event-stream"}});
        if (!followed)
            return report_error(followed.error());
        if (!final_state) {
            std::fprintf(stderr, "nps-runner: the daemon ended the feed before task '%s' ended (is it stopping?)\n",
                         out.text(args.positionals[0]).c_str());
            return kExitFailure;
        }
        if (!json)
            std::printf("task %s %s\n", out.text(args.positionals[0]).c_str(), out.text(*final_state).c_str());
        return *final_state == proto::task_state_text::completed ? kExitOk : kExitFailure;
    });
}

int task_logs(int argc, char** argv, int first)
{
    VerbSpec spec{"task logs", "ID [NODE] [-f] [--stream stderr|stdout] [--bytes N] [--raw] [--json]",
                  "Print the log of a node's worker: the running one's, else the last finished one's.\n"
                  "With -f, go on printing what the node's workers write (a retry's too) until the\n"
                  "node or the task ends. NODE may be left out when the task has one node.",
                  "Control characters in the log are printed escaped (\\x1b) unless --raw is given.",
                  {{"-f", nullptr, "follow: print new output as it is written"},
                   {"--follow", nullptr, "the same as -f"},
                   {"--stream", "S", "stderr (default) or stdout"},
                   {"--bytes", "N", "how much of the log's tail first (default 65536)"},
                   {"--raw", nullptr, "print the bytes as they came"},
                   {"--json", nullptr, "print the API's JSON {task_id, node_id, stream, log_dir, running, text} (not with -f)"}},
                  1, 2};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        const Output out{.raw = args.flag("--raw")};
        const std::string& task_id = args.positionals[0];
        std::string node;
        if (args.positionals.size() > 1) {
            node = args.positionals[1];
        } else {
            auto only = only_node(client, task_id);
            if (!only)
                return report_error(only.error());
            node = *only;
        }
        const std::string path = node_log_path(args, task_id, node);
        const bool follow = args.flag("-f") || args.flag("--follow");
        if (follow && args.flag("--json")) {
            std::fprintf(stderr, "nps-runner: task logs: --json prints one answer; it does not go with -f\n");
            return kExitUsage;
        }
        if (follow) {
            LinePrinter printer(out);
            auto followed = client.follow(path + "&follow=1", [&](std::string_view bytes) {
                printer.add(bytes);
                return true;
            });
            printer.flush();
            return followed ? kExitOk : report_error(followed.error());
        }
        return print_node_log(client, args, path);
    });
}

}  // namespace nps::cli
