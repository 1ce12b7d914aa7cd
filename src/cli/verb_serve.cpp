// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <utility>

#include "nps/base/log.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"
#include "nps/config/config.hpp"
#include "nps/daemon/daemon.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::cli {

int serve(int argc, char** argv, int first)
{
    static const VerbSpec spec{
        "serve",
        "[--config FILE] [--state-dir DIR] [--listen ADDR:PORT] [--socket PATH] [--runner-nid NID] [--inbox NID]...\n"
        "      [--upstream-npsd URL]",
        "Run the nps-runner daemon: the HTTP API (inbox, claims, leases, tasks, NDP registry,\n"
        "/healthz, /metrics) on TCP and on a unix socket, over the durable store in the state directory.",
        "Settings come from the config file; flags override it. The TCP listener binds loopback\n"
        "by default; every TCP request carries 'Authorization: Bearer TOKEN' (/healthz and /metrics\n"
        "from loopback excepted): api.token, else the token generated at first start in\n"
        "<state-dir>/api.token (0640, group nps-runner); api.require_token = false opts out, and a\n"
        "non-loopback address needs a configured api.token. The unix socket needs none: it is 0660,\n"
        "group nps-runner.\n"
        "SIGTERM or SIGINT stop the daemon cleanly; with NOTIFY_SOCKET set it reports readiness to systemd.\n"
        "SIGHUP reloads the config file: policy keys (api.token, inbox limits, runner pacing and caps,\n"
        "[workers] limits, log_format) take effect at once; other changed keys are logged and wait for a\n"
        "restart; a file that does not load changes nothing.\n"
        "With --upstream-npsd (or [upstream] npsd_url) the daemon also takes the TaskFrames of the first\n"
        "--inbox from that npsd inbox API into its own durable inbox, acking upstream only once each is\n"
        "on disk, and runs them as usual: e.g.\n"
        "  nps-runner serve --upstream-npsd https://npsd.example:8443 --inbox urn:nps:agent:example.com:jobs\n"
        "([upstream] token_file for the npsd's bearer token; docs/upstream.md).",
        {
            {"--config", "FILE", "configuration file (default /etc/nps-runner/config.toml; missing default is fine)"},
            {"--state-dir", "DIR", "state directory holding runner.db (default /var/lib/nps-runner)"},
            {"--listen", "ADDR:PORT", "TCP listener (default 127.0.0.1:17437; 'none' disables it; port 0 = any)"},
            {"--socket", "PATH", "unix socket (default /run/nps-runner/api.sock; 'none' disables it)"},
            {"--runner-nid", "NID", "this runner's NID (default urn:nps:node:<hostname>:nps-runner)"},
            {"--inbox", "NID", "an inbox this runner claims and executes from", true},
            {"--upstream-npsd", "URL", "pull the (first) inbox's TaskFrames from this npsd (http(s) API root)"},
        },
        0,
        0,
    };
    auto [args, exit_status] = start_verb(spec, argc, argv, first);
    if (!args)
        return exit_status;
    // The flags are checked once here; the loader re-applies them on every
    // SIGHUP so that a reload compares like with like.
    if (auto v = args->value("--runner-nid"); v && !proto::is_valid_nid(*v)) {
        std::fprintf(stderr, "nps-runner: --runner-nid '%s' is not a NID (urn:nps:…)\n", v->c_str());
        return kExitUsage;
    }
    for (const auto& nid : args->values("--inbox")) {
        if (!proto::is_valid_nid(nid)) {
            std::fprintf(stderr, "nps-runner: --inbox '%s' is not a NID (urn:nps:…)\n", nid.c_str());
            return kExitUsage;
        }
    }
    if (auto v = args->value("--upstream-npsd"); v && !config::is_service_url(*v)) {
        std::fprintf(stderr, "nps-runner: --upstream-npsd '%s' is not an http(s) URL with a host\n", v->c_str());
        return kExitUsage;
    }
    daemon::ConfigLoader load = [args = *args]() -> Result<config::Config> {
        auto config_path = args.value("--config");
        auto config = NPS_TRY(config::load_config(config_path.value_or(config::kDefaultConfigPath),
                                                   config_path.has_value()));
        if (auto v = args.value("--state-dir"))
            config.state_dir = *v;
        if (auto v = args.value("--listen"))
            config.listen = *v == "none" ? "" : *v;
        if (auto v = args.value("--socket"))
            config.socket = *v == "none" ? "" : *v;
        if (auto v = args.value("--runner-nid"))
            config.runner_nid = *v;
        if (args.flag("--inbox"))
            config.inboxes = args.values("--inbox");
        if (auto v = args.value("--upstream-npsd")) {
            config.upstream.npsd_url = *v;
            while (config.upstream.npsd_url->size() > 1 && config.upstream.npsd_url->back() == '/')
                config.upstream.npsd_url->pop_back();
            if (args.flag("--inbox"))
                config.upstream.inbox = config.inboxes.front();
        }
        return config;
    };
    auto config = load();
    if (!config) {
        log::error(config.error().describe());
        return kExitFailure;
    }
    if (config->log_json)
        log::set_format(log::Format::json);
    if (auto r = daemon::run(std::move(*config), std::move(load)); !r) {
        log::error(r.error().describe());
        return kExitFailure;
    }
    return kExitOk;
}

}  // namespace nps::cli
