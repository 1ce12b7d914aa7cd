// SPDX-License-Identifier: Apache-2.0
#include "nps/cli/args.hpp"

#include <cstring>
#include <sstream>

namespace nps::cli {

std::optional<std::string> ParsedArgs::value(const std::string& name) const
{
    auto it = options.find(name);
    if (it == options.end() || it->second.empty())
        return std::nullopt;
    return it->second.back();
}

std::vector<std::string> ParsedArgs::values(const std::string& name) const
{
    auto it = options.find(name);
    return it == options.end() ? std::vector<std::string>{} : it->second;
}

namespace {

const OptionSpec* find_option(const VerbSpec& spec, const std::string& name)
{
    for (const auto& option : spec.options)
        if (name == option.name)
            return &option;
    return nullptr;
}

Error usage_error(const VerbSpec& spec, const std::string& what)
{
    return internal_error(what + "\nUsage: nps-runner " + spec.command + " " + spec.usage +
                          "\nTry 'nps-runner " + spec.command + " --help'.");
}

}  // namespace

Result<ParsedArgs> parse_args(const VerbSpec& spec, int argc, char** argv, int first)
{
    ParsedArgs parsed;
    bool options_done = false;
    for (int i = first; i < argc; ++i) {
        std::string arg = argv[i];
        if (!options_done && arg == "-h") {
            parsed.help = true;
            return parsed;
        }
        // A short option ("-f") counts when the verb declares it.
        const bool short_option = !options_done && arg.size() == 2 && arg[0] == '-' && arg[1] != '-' &&
                                  find_option(spec, arg) != nullptr;
        if (!short_option && (options_done || arg == "-" || arg.rfind("--", 0) != 0)) {
            if (!options_done && arg.size() > 1 && arg[0] == '-' && arg != "-")
                return usage_error(spec, "Unknown option '" + arg + "' for '" + spec.command + "'");
            parsed.positionals.push_back(arg);
            continue;
        }
        if (arg == "--") {
            options_done = true;
            continue;
        }
        if (arg == "--help") {
            parsed.help = true;
            return parsed;
        }
        std::string name = arg;
        std::optional<std::string> inline_value;
        if (auto eq = arg.find('='); eq != std::string::npos) {
            name = arg.substr(0, eq);
            inline_value = arg.substr(eq + 1);
        }
        const OptionSpec* option = find_option(spec, name);
        if (!option)
            return usage_error(spec, "Unknown option '" + name + "' for '" + spec.command + "'");
        auto& slot = parsed.options[name];
        if (!option->repeatable && !slot.empty())
            return usage_error(spec, "Option '" + name + "' given more than once");
        if (!option->value_name) {
            if (inline_value)
                return usage_error(spec, "Option '" + name + "' takes no value");
            slot.emplace_back();
            continue;
        }
        if (inline_value) {
            slot.push_back(*inline_value);
        } else if (i + 1 < argc) {
            slot.emplace_back(argv[++i]);
        } else {
            return usage_error(spec, "Option '" + name + "' needs a value (" + option->value_name + ")");
        }
    }
    if (parsed.positionals.size() < spec.min_positionals)
        return usage_error(spec, "Missing argument for '" + std::string(spec.command) + "'");
    if (parsed.positionals.size() > spec.max_positionals)
        return usage_error(spec, "Unexpected argument '" + parsed.positionals[spec.max_positionals] + "'");
    return parsed;
}

std::string help_text(const VerbSpec& spec)
{
    std::ostringstream out;
    out << "Usage: nps-runner " << spec.command << ' ' << spec.usage << "\n\n" << spec.summary << "\n";
    if (spec.description && *spec.description)
        out << '\n' << spec.description << '\n';
    if (!spec.options.empty()) {
        out << "\nOptions:\n";
        for (const auto& option : spec.options) {
            std::string left = std::string("  ") + option.name;
            if (option.value_name)
                left += std::string(" ") + option.value_name;
            out << left;
            if (left.size() < 26)
                out << std::string(26 - left.size(), ' ');
            else
                out << "\n" << std::string(26, ' ');
            out << option.help << (option.repeatable ? " (repeatable)" : "") << '\n';
        }
        out << "  -h, --help              show this help\n";
    }
    return out.str();
}

std::vector<OptionSpec> client_options()
{
    return {
        {"--server", "URL",
         "daemon to talk to: http://HOST:PORT or unix:/PATH (default: the configured socket if it exists, "
         "else http://127.0.0.1:17437; env NPS_RUNNER_SERVER)"},
        {"--token", "TOKEN", "bearer token for a TCP listener (env NPS_RUNNER_TOKEN; default api.token from config)"},
        {"--config", "FILE", "configuration file (default /etc/nps-runner/config.toml)"},
    };
}

}  // namespace nps::cli
