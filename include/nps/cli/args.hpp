// SPDX-License-Identifier: Apache-2.0
// Command-line parsing for the verbs: each verb declares its options once and
// gets parsing, validation ("unknown option '--x' for 'task show'") and a
// generated --help from the same table.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/result.hpp"

namespace nps::cli {

struct OptionSpec {
    const char* name;        // "--server"
    const char* value_name;  // "URL", or nullptr for a flag
    const char* help;
    bool repeatable = false;
};

struct VerbSpec {
    const char* command;      // "task show"
    const char* usage;        // "ID [--json]"
    const char* summary;      // one line
    const char* description;  // paragraphs for --help, may be empty
    std::vector<OptionSpec> options;
    std::size_t min_positionals = 0;
    std::size_t max_positionals = 0;
};

struct ParsedArgs {
    std::map<std::string, std::vector<std::string>> options;
    std::vector<std::string> positionals;
    bool help = false;

    bool flag(const std::string& name) const { return options.count(name) != 0; }
    std::optional<std::string> value(const std::string& name) const;
    std::vector<std::string> values(const std::string& name) const;
};

// Parses argv[first..argc). "--opt=value" and "--opt value" both work; "--"
// ends options; "-" is a positional (stdin).
Result<ParsedArgs> parse_args(const VerbSpec& spec, int argc, char** argv, int first);

std::string help_text(const VerbSpec& spec);

// Options every client verb takes (--server, --token, --config).
std::vector<OptionSpec> client_options();

}  // namespace nps::cli
