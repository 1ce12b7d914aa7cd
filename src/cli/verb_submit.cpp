// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "nps/base/limits.hpp"
#include "nps/base/random_id.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/cli/output.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/config/config.hpp"
#include "nps/net/http_client.hpp"
#include "task_client.hpp"

namespace nps::cli {

namespace {

// Reads at most limits::kMaxBodyBytes + 1 bytes, so an oversized input is
// refused without reading all of it.
Result<std::string> read_input(const std::string& path)
{
    UniqueFd owned;
    int fd = STDIN_FILENO;
    if (path != "-") {
        owned.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!owned)
            return system_error_errno("Failed to read TaskFrame file '" + path + "'");
        fd = owned.get();
    }
    std::string text;
    char buffer[65536];
    while (text.size() <= limits::kMaxBodyBytes) {
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return system_error_errno("Failed to read TaskFrame '" + path + "'");
        if (n == 0)
            return text;
        text.append(buffer, static_cast<std::size_t>(n));
    }
    return internal_error("TaskFrame '" + path + "' is larger than " + std::to_string(limits::kMaxBodyBytes) +
                          " bytes");
}

using Json = nlohmann::json;

// The frame with a generated task_id when it is a JSON object without one
// (`generated` set); any other text is sent as it is, for the daemon to judge.
Result<std::string> with_task_id(std::string frame, std::optional<std::string>& generated)
{
    Json parsed = Json::parse(frame, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object() || parsed.contains("task_id"))
        return frame;
    generated = NPS_TRY(random_uuid());
    parsed["task_id"] = *generated;
    return parsed.dump();
}

}  // namespace

int submit(int argc, char** argv, int first)
{
    VerbSpec spec{
        "submit",
        "[--to NID] [--priority N] [--ttl S] FILE|-",
        "Deposit a TaskFrame (JSON) into an inbox and print its task_id.",
        "The frame is validated at the door: a malformed frame or DAG is refused with its NOP\n"
        "error code and nothing is stored. A frame without a task_id gets a random UUID (said on\n"
        "stderr). Submitting the same frame again is harmless: the original deposit is returned\n"
        "and stderr says it was a replay; the same task_id with a different frame is refused.\n\n"
        "Example:\n  nps-runner submit --to urn:nps:agent:example.com:worker task.json",
        {
            {"--to", "NID", "inbox to deposit into (default: the daemon's inbox when it claims from one, else the config's first runner.inboxes entry)"},
            {"--priority", "N", "X-Nps-Inbox-Priority: higher is claimed first (default from the frame's priority)"},
            {"--ttl", "S", "X-Nps-Inbox-Ttl-Seconds: seconds the task may wait for its first claim"},
            {"--json", nullptr, "print the whole deposit response as JSON"},
        },
        1,
        1,
    };
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        std::optional<std::string> to = args.value("--to");
        if (!to) {
            auto found = default_inbox(args, client);
            if (!found) {
                std::fprintf(stderr, "nps-runner: %s\n", found.error().describe().c_str());
                return kExitUsage;
            }
            to = *found;
        }
        auto input = read_input(args.positionals[0]);
        if (!input)
            return report_error(input.error());
        std::optional<std::string> generated;
        auto frame = with_task_id(std::move(*input), generated);
        if (!frame)
            return report_error(frame.error());
        std::vector<std::pair<std::string, std::string>> headers;
        if (auto p = args.value("--priority"))
            headers.emplace_back("X-Nps-Inbox-Priority", *p);
        if (auto t = args.value("--ttl"))
            headers.emplace_back("X-Nps-Inbox-Ttl-Seconds", *t);
        auto response = client.call("POST", "/v1/inbox/" + net::url_encode(*to), *frame, headers);
        if (!response)
            return report_error(response.error());
        const Output out{};
        const std::string task_id = (*response)["task_id"].is_string() ? (*response)["task_id"].get<std::string>() : "";
        if (generated)
            std::fprintf(stderr, "nps-runner: the frame names no task_id; it was given %s\n", generated->c_str());
        if ((*response)["duplicate"] == true)
            std::fprintf(stderr,
                         "nps-runner: task %s already existed with this very frame: nothing new was deposited "
                         "(see: nps-runner task show %s)\n",
                         out.text(task_id).c_str(), out.text(task_id).c_str());
        if (args.flag("--json"))
            out.print_json(*response);
        else
            std::printf("%s\n", out.text(task_id).c_str());
        return kExitOk;
    });
}

}  // namespace nps::cli
