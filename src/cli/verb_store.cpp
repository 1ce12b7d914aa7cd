// SPDX-License-Identifier: Apache-2.0
// store migrate: bring the task store's schema to this binary's version.
#include <cstdio>
#include <string>
#include <vector>

#include "nps/base/clock.hpp"
#include "nps/cli/output.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"
#include "serve_flags.hpp"

namespace nps::cli {

int store_migrate(int argc, char** argv, int first)
{
    // serve's flags that say where the store is.
    std::vector<OptionSpec> options;
    for (const OptionSpec& option : serve_config_options())
        if (option.name == std::string("--config") || option.name == std::string("--store") ||
            option.name == std::string("--state-dir"))
            options.push_back(option);
    const VerbSpec spec{
        "store migrate",
        "[--config FILE] [--store postgresql://…] [--state-dir DIR]",
        "Bring the task store's schema to the version this nps-runner knows, and exit: the store of\n"
        "[store] url or --store (a PostgreSQL database shared by several hosts), else\n"
        "<state-dir>/runner.db. Exit 0 when the schema is current, 1 when it cannot be (the message\n"
        "says why: unreachable, a newer schema, tables that are not ours).",
        "Every runner migrates at start, one at a time under a lock, so this is optional; run it\n"
        "before rolling a new version out to several hosts, so that none of them starts on a\n"
        "schema it has not seen. A runner refuses a schema newer than it knows: upgrade every host\n"
        "before running a newer schema's 'store migrate' (docs/scale-out.md).",
        std::move(options),
        0,
        0};
    auto [args, exit_status] = start_verb(spec, argc, argv, first);
    if (!args)
        return exit_status;
    const auto fail = [](const Error& error) {
        std::fprintf(stderr, "nps-runner: %s\n", escape_terminal(error.describe()).c_str());
        return kExitFailure;
    };
    if (auto checked = check_serve_flags(*args); !checked) {
        std::fprintf(stderr, "nps-runner: %s\n", escape_terminal(checked.error().describe()).c_str());
        return kExitUsage;
    }
    auto config = load_serve_config(*args);
    if (!config)
        return fail(config.error());
    auto store = store::Store::open(config->store_options(store::Synchronous::full), SystemClock::instance());
    if (!store)
        return fail(store.error());
    const std::string where =
        config->store_url.empty() ? config->database_path() : store::redact_store_url(config->store_url);
    std::printf("%s: schema version %d (the latest this nps-runner knows)\n", escape_terminal(where).c_str(),
                (*store)->schema_version());
    return kExitOk;
}

}  // namespace nps::cli
