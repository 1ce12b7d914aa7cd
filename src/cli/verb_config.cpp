// SPDX-License-Identifier: Apache-2.0
// config check: validate a config file and show the settings serve would run with.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "nps/cli/output.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"
#include "nps/config/describe.hpp"
#include "serve_flags.hpp"

namespace nps::cli {

namespace {

using Json = nlohmann::json;

std::string shown(const Json& value)
{
    if (value.is_null())
        return "-";
    if (value.is_string())
        return value.get<std::string>().empty() ? "\"\"" : value.get<std::string>();
    return value.dump(-1, ' ', true);
}

}  // namespace

int config_check(int argc, char** argv, int first)
{
    std::vector<OptionSpec> options = serve_config_options();
    options.push_back({"--json", nullptr, "print {config, valid, settings:[{key, value, source}]} as JSON"});
    const VerbSpec spec{
        "config check",
        "[--config FILE] [serve's flags] [--json]",
        "Check a configuration file and print the settings 'serve' would run with: every key,\n"
        "its value in force and where that came from (default, file or flag). Exit 0 when the\n"
        "file is valid, 1 when not (the message names the key and what is wrong).",
        "Takes the flags of 'serve' (--state-dir, --listen, …), which override the file as they\n"
        "do there. Tokens and passwords are shown as (set), never their text. Run it before\n"
        "'systemctl reload nps-runner': a file that does not check would be refused by the\n"
        "reload too (the daemon keeps its settings).",
        std::move(options),
        0,
        0};
    auto [args, exit_status] = start_verb(spec, argc, argv, first);
    if (!args)
        return exit_status;
    const bool json = args->flag("--json");
    const std::string path = serve_config_path(*args);
    const auto invalid = [&](const Error& error) {
        if (json)
            Output{}.print_json({{"config", path}, {"valid", false}, {"error", error.describe()}});
        else
            std::fprintf(stderr, "nps-runner: %s\n", escape_terminal(error.describe()).c_str());
        return kExitFailure;
    };
    if (auto checked = check_serve_flags(*args); !checked) {
        std::fprintf(stderr, "nps-runner: %s\n", checked.error().describe().c_str());
        return kExitUsage;
    }
    auto config = load_serve_config(*args);
    if (!config)
        return invalid(config.error());
    auto file_keys = config::keys_in_file(path);
    if (!file_keys)
        return invalid(file_keys.error());
    const auto settings = config::describe(*config, *file_keys, keys_set_by_flags(*args));
    if (json) {
        Json list = Json::array();
        for (const auto& s : settings)
            list.push_back({{"key", s.key}, {"value", s.value}, {"source", config::to_string(s.source)}});
        Output{}.print_json({{"config", path}, {"valid", true}, {"settings", std::move(list)}});
        return kExitOk;
    }
    std::printf("%s: valid\n", Output{}.text(path).c_str());
    std::printf("%-40s %-32s %s\n", "KEY", "VALUE", "SOURCE");
    for (const auto& s : settings)
        std::printf("%-40s %-32s %s\n", s.key.c_str(), Output{}.text(shown(s.value)).c_str(),
                    config::to_string(s.source));
    return kExitOk;
}

}  // namespace nps::cli
