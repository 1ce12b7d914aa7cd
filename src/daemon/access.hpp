// SPDX-License-Identifier: Apache-2.0
// Who may reach the daemon and read its files (docs/api.md "Access",
// docs/security.md "Access to the daemon and its files"): the group the
// API socket and the generated token belong to, the modes of the state
// directory, and the bearer token `serve` generates when none is configured.
//
// Ownership: files keep their owner (root, when the daemon runs as root);
// only the group of the socket and of api.token is set, and only when the
// group exists. The state directory itself keeps its owner and group: the
// systemd unit's StateDirectory= re-chowns the whole tree when the top
// directory's owner differs from the service's user and group.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "nps/base/result.hpp"

namespace nps::daemon {

// Modes the daemon gives its files. Others may search the state directory
// and workers/ (with [sandbox] user_namespace a worker's root file system
// under workers/ is bound by a process that is already an unprivileged host
// user) but list or read nothing; images/ is root's alone.
inline constexpr mode_t kStateDirMode = 0711;
inline constexpr mode_t kWorkersDirMode = 0711;
inline constexpr mode_t kImagesDirMode = 0700;
inline constexpr mode_t kLogsDirMode = 0700;  // worker logs: 0750 directories, 0640 files
inline constexpr mode_t kTokenFileMode = 0640;

// The gid of config::kRunnerGroup; nullopt when the group does not exist.
std::optional<gid_t> runner_group();

// Creates the state directory (kStateDirMode) or, when it exists, takes the
// read and write bits of group and other away (a 0755 directory of an older
// version becomes 0711); creates workers/, images/ and logs/ likewise. Errors name
// the directory.
Result<void> secure_state_dir(const std::string& dir);

struct GeneratedToken {
    std::string token;
    bool created = false;  // false: an existing file was read
};

// The token in `path` (one line, ≥ 16 characters), or a fresh one written
// there: 32 bytes from getrandom(2), as 64 hex digits, mode kTokenFileMode,
// group `group` (root's otherwise). An existing file is kept — its mode and
// group are corrected — so the token survives restarts; deleting it rotates
// the token at the next start or SIGHUP.
Result<GeneratedToken> ensure_generated_token(const std::string& path, std::optional<gid_t> group);

}  // namespace nps::daemon
