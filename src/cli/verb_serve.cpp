// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <utility>

#include "nps/base/log.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"
#include "nps/config/config.hpp"
#include "nps/daemon/daemon.hpp"
#include "serve_flags.hpp"

namespace nps::cli {

int serve(int argc, char** argv, int first)
{
    const VerbSpec spec{
        "serve",
        "[--config FILE] [--state-dir DIR] [--listen ADDR:PORT] [--socket PATH] [--runner-nid NID] [--inbox NID]...\n"
        "      [--upstream-npsd URL] [--store postgresql://…]",
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
        "([upstream] token_file for the npsd's bearer token; docs/upstream.md).\n"
        "With --store (or [store] url) the tasks live in a PostgreSQL database that runners on several\n"
        "hosts share; each host keeps its images, workers and runner.db of its own (docs/scale-out.md):\n"
        "  nps-runner serve --store 'postgresql://nps@db.example/nps?sslmode=verify-full'\n"
        "'nps-runner config check' takes the same flags and shows the settings they give.",
        serve_config_options(),
        0,
        0,
    };
    auto [args, exit_status] = start_verb(spec, argc, argv, first);
    if (!args)
        return exit_status;
    // The flags are checked once here; the loader re-applies them on every
    // SIGHUP so that a reload compares like with like.
    if (auto checked = check_serve_flags(*args); !checked) {
        std::fprintf(stderr, "nps-runner: %s\n", checked.error().describe().c_str());
        return kExitUsage;
    }
    daemon::ConfigLoader load = [args = *args]() { return load_serve_config(args); };
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
