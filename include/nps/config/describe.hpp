// SPDX-License-Identifier: Apache-2.0
// The effective configuration as settings, key by key (`nps-runner config
// check`): every key of docs/configuration.md with the value in force, as
// the file would spell it, and where that value came from.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nps/base/result.hpp"
#include "nps/config/config.hpp"

namespace nps::config {

enum class SettingSource { default_value, file, flag };
const char* to_string(SettingSource source);  // "default", "file", "flag"

struct Setting {
    std::string key;        // "workers.default_memory"
    nlohmann::json value;   // as the file would write it ("512Mi", 60, true, […]); null: unset
    SettingSource source = SettingSource::default_value;
};

// Every setting of `config`, in the order of docs/configuration.md. Secrets
// (tokens, registry passwords) are shown as "(set)", never their text.
// `from_file` holds the keys the file sets ("section.key", keys_in_file),
// `from_flags` those a command-line flag set; the rest are defaults.
std::vector<Setting> describe(const Config& config, const std::set<std::string>& from_file,
                              const std::set<std::string>& from_flags);

// The "section.key" names a config file sets (a missing file: none). The
// file must parse (load_config checks the rest).
Result<std::set<std::string>> keys_in_file(const std::string& path);

}  // namespace nps::config
