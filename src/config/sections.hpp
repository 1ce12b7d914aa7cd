// SPDX-License-Identifier: Apache-2.0
// The configuration file's sections that have files of their own: each
// applies its table to the Config, or fails naming the key (table_reader.hpp).
// Internal to config/; parse_config() calls them in order.
#pragma once

#include "nps/config/config.hpp"
#include "table_reader.hpp"

namespace nps::config::detail {

Result<void> apply_sandbox(const TableReader& t, Config& c);
Result<void> apply_images(const TableReader& t, Config& c);
Result<void> apply_workers(const TableReader& t, Config& c);

}  // namespace nps::config::detail
