// SPDX-License-Identifier: Apache-2.0
// The checks `serve` runs on runner.db once at start, before it opens its
// connections, so that a lost or damaged store stops the daemon with a
// message instead of a daemon that says "ready" while every route fails.
//
// - A zero-length runner.db in a state directory that already holds
//   images/, workers/ or logs/ is refused: the database was lost (truncated,
//   replaced), not never made, and SQLite would silently make it an empty
//   store. A zero-length or missing file in an otherwise empty state
//   directory is a fresh start and passes.
// - PRAGMA quick_check must answer "ok"; otherwise the error names the file,
//   the first problems quick_check reported and what to do. quick_check
//   reads every page (its cost grows with the file: docs/security.md "Store faults").
#pragma once

#include <string>

#include "nps/base/result.hpp"

namespace nps::store {

Result<void> check_store_at_start(const std::string& db_path, const std::string& state_dir);

}  // namespace nps::store
