// SPDX-License-Identifier: Apache-2.0
// The configuration `serve` runs with: the config file, then serve's flags
// on top. Shared by serve (which reloads it on SIGHUP) and `config check`
// (which shows it).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "nps/cli/args.hpp"
#include "nps/config/config.hpp"

namespace nps::cli {

// --config and the flags that override file keys.
std::vector<OptionSpec> serve_config_options();
// The flags' own syntax (NIDs, URL); the message names the flag.
Result<void> check_serve_flags(const ParsedArgs& args);
// load_config(--config or the default), then the flags.
Result<config::Config> load_serve_config(const ParsedArgs& args);
// The config path in use and whether the user named it.
std::string serve_config_path(const ParsedArgs& args);
// The "section.key" names the given flags set.
std::set<std::string> keys_set_by_flags(const ParsedArgs& args);

}  // namespace nps::cli
