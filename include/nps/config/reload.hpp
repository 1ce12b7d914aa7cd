// SPDX-License-Identifier: Apache-2.0
// Configuration reload (SIGHUP, docs/configuration.md "Reload").
//
// `serve` re-reads its configuration file (and re-applies its command-line
// flags) on SIGHUP. A file that does not load — a syntax error, an unknown
// key, a bad value — changes nothing: the running configuration stays as it
// was and the error is logged. Otherwise every key is compared with the
// running value:
//  - reloadable keys (policy read on each use by the loop thread: the API's
//    token and limits, claim pacing, lease length, worker timeouts and log
//    caps, the worker and task caps, the log format) take their new values;
//  - every other key (listeners, paths, the store, the sandbox, images,
//    SpawnSpec resolution, reporting) keeps its running value, and the
//    outcome names it as needing a restart.
#pragma once

#include <string>
#include <vector>

#include "nps/config/config.hpp"

namespace nps::config {

struct ReloadOutcome {
    std::vector<std::string> applied;       // "api.token", "workers.max_concurrent", … changed and now in effect
    std::vector<std::string> need_restart;  // changed in the file, kept at the running value
};

// Copies the reloadable keys of `fresh` into `running` and reports which keys
// differed. Never touches a key that needs a restart.
ReloadOutcome apply_reload(Config& running, const Config& fresh);

// The keys apply_reload() may change (for docs and tests).
std::vector<std::string> reloadable_keys();

}  // namespace nps::config
