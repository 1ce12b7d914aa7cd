// SPDX-License-Identifier: Apache-2.0
// ui: a one-time login URL of the daemon's web dashboard (docs/dashboard.md).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "nps/cli/output.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"

namespace nps::cli {

namespace {

using Json = nlohmann::json;

// Runs `opener URL` and waits for it; false when it cannot run or fails.
bool open_in_browser(const std::string& url)
{
    const pid_t pid = ::fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        ::execlp("xdg-open", "xdg-open", url.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int ui(int argc, char** argv, int first)
{
    VerbSpec spec{"ui", "[--task ID] [--open] [--json]",
                  "Print a URL of the daemon's web dashboard that logs the browser in once: the\n"
                  "overview, or with --task that task's page. The URL carries a one-time login code\n"
                  "(valid two minutes) that the daemon exchanges for a session cookie (12 hours).\n"
                  "Asking for it needs the same access as the API: the unix socket (root or group\n"
                  "nps-runner) or the token. The dashboard itself is served on the TCP listener.",
                  "Examples:\n  nps-runner ui\n  nps-runner ui --task demo-3-node-dag --open\n"
                  "  ssh -L 17437:127.0.0.1:17437 edge-host   # then open the URL on this machine\n",
                  {{"--task", "ID", "the URL of this task's page"},
                   {"--open", nullptr, "also open the URL with xdg-open"},
                   {"--json", nullptr, "print the daemon's answer as JSON"}},
                  0,
                  0};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        Json request = Json::object();
        if (auto task = args.value("--task"))
            request["task_id"] = *task;
        auto answer = client.call("POST", "/v1/ui/login-codes", request.dump(),
                                  {{"Content-Type", "application/json"}});
        if (!answer)
            return report_error(answer.error());
        // Over TCP the URL is the one this client reached; on the socket, the
        // daemon's own TCP listener.
        const auto base = client.tcp_base();
        if (!base && !(*answer)["url"].is_string()) {
            std::fprintf(stderr, "nps-runner: the daemon has no TCP listener, and the dashboard is served on it: "
                                 "set [api] listen (e.g. \"127.0.0.1:17437\") and restart it\n");
            return kExitFailure;
        }
        const std::string url = base ? *base + (*answer)["path"].get<std::string>() : (*answer)["url"].get<std::string>();
        if (args.flag("--json")) {
            Json out = *answer;
            out["url"] = url;
            Output{}.print_json(out);
        } else {
            std::printf("%s\n", url.c_str());
            std::fprintf(stderr, "nps-runner: the link logs in once, until %s\n",
                         Output{}.field((*answer)["expires_at"]).c_str());
        }
        if (args.flag("--open") && !open_in_browser(url)) {
            std::fprintf(stderr, "nps-runner: could not open a browser (xdg-open); open the URL above yourself\n");
            return kExitFailure;
        }
        return kExitOk;
    });
}

}  // namespace nps::cli
