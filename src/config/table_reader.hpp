// SPDX-License-Identifier: Apache-2.0
// TableReader: one table of the configuration file, read key by key. Every
// accessor returns nullopt for a key that is absent, the value for one of
// the right type and range, and otherwise an error naming the file, the
// table, the key and what was expected ("Invalid configuration in
// '/etc/nps-runner.toml': workers.max_pids: must be between 0 and 4194304").
// Internal to config/.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "nps/base/result.hpp"

namespace nps::config::detail {

class TableReader {
public:
    // `table` may be null (the section is absent); `origin` must outlive the reader.
    TableReader(const toml::table* table, std::string name, const std::string& origin)
        : table_(table), name_(std::move(name)), origin_(origin)
    {
    }

    const std::string& name() const { return name_; }
    const std::string& origin() const { return origin_; }
    // The key's node as it is, for values of more than one shape.
    const toml::node* find(const std::string& key) const { return table_ ? table_->get(key) : nullptr; }

    // The first key not in `known` is an error ("unknown key").
    Result<void> check_keys(std::set<std::string> known) const;

    Result<std::optional<std::string>> string(const std::string& key) const;
    Result<std::optional<std::int64_t>> integer(const std::string& key, std::int64_t min, std::int64_t max) const;
    // An integer or a float, within [min, max].
    Result<std::optional<double>> number(const std::string& key, double min, double max) const;
    Result<std::optional<bool>> boolean(const std::string& key) const;
    Result<std::optional<std::vector<std::string>>> strings(const std::string& key) const;
    // A byte size: an integer, or a quantity string like "1Mi"; within [min, max].
    Result<std::optional<std::uint64_t>> byte_size(const std::string& key, std::uint64_t min,
                                                   std::uint64_t max) const;
    // A CPU quantity in millicores: an integer (cores) or a string like
    // "500m"; 0 is "no limit".
    Result<std::optional<std::int64_t>> cpu_quantity(const std::string& key) const;

    // The error for `key` of this table.
    Error fail(const std::string& key, const std::string& what) const;

private:
    const toml::table* table_;
    std::string name_;
    const std::string& origin_;
};

// A control character (below 0x20, or DEL) in `s`.
bool has_control(const std::string& s);

}  // namespace nps::config::detail
