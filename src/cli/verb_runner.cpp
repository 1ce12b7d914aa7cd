// SPDX-License-Identifier: Apache-2.0
#include "nps/cli/verb_runner.hpp"

namespace nps::cli {

VerbStart start_verb(const VerbSpec& spec, int argc, char** argv, int first)
{
    auto args = parse_args(spec, argc, argv, first);
    if (!args) {
        std::fprintf(stderr, "nps-runner: %s\n", args.error().message.c_str());
        return {std::nullopt, kExitUsage};
    }
    if (args->help) {
        std::fputs(help_text(spec).c_str(), stdout);
        return {std::nullopt, kExitOk};
    }
    return {std::move(*args), kExitOk};
}

int run_client_verb(VerbSpec spec, int argc, char** argv, int first,
                    const std::function<int(const ParsedArgs&, const ApiClient&)>& body)
{
    for (auto& option : client_options())
        spec.options.push_back(option);
    auto [args, exit_status] = start_verb(spec, argc, argv, first);
    if (!args)
        return exit_status;
    auto client = ApiClient::from_args(*args);
    if (!client)
        return report_error(client.error());
    return body(*args, *client);
}

}  // namespace nps::cli
