// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "nps/base/limits.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/config/config.hpp"
#include "nps/net/http_client.hpp"

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

}  // namespace

int submit(int argc, char** argv, int first)
{
    VerbSpec spec{
        "submit",
        "[--to NID] [--priority N] [--ttl S] FILE|-",
        "Deposit a TaskFrame (JSON) into an inbox and print its task_id.",
        "The frame is validated at the door: a malformed frame or DAG is refused with its NOP\n"
        "error code and nothing is stored. Submitting the same frame again is harmless (the\n"
        "original deposit is returned); the same task_id with a different frame is refused.\n\n"
        "Example:\n  nps-runner submit --to urn:nps:agent:example.com:worker task.json",
        {
            {"--to", "NID", "inbox to deposit into (default: the first runner.inboxes entry of the config)"},
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
            auto path = args.value("--config");
            auto config = config::load_config(path.value_or(config::kDefaultConfigPath), path.has_value());
            if (config && !config->inboxes.empty())
                to = config->inboxes.front();
        }
        if (!to) {
            std::fprintf(stderr, "nps-runner: no target inbox: pass --to NID (or set runner.inboxes in the config)\n");
            return kExitUsage;
        }
        auto frame = read_input(args.positionals[0]);
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
        if (args.flag("--json"))
            std::printf("%s\n", response->dump(2).c_str());
        else
            std::printf("%s\n", response->value("task_id", std::string()).c_str());
        return kExitOk;
    });
}

}  // namespace nps::cli
