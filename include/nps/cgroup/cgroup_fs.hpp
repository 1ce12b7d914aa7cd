// SPDX-License-Identifier: Apache-2.0
// Small file helpers for cgroupfs (and /proc) whose errors name the
// operation, the value and the path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"

namespace nps::cgroup {

// Reads a whole (small) file.
Result<std::string> read_file(const std::string& path);
// Writes `value` in a single write(2), as cgroupfs wants:
// "Failed to write '20' to '/sys/fs/cgroup/pids/x/pids.max': Invalid argument".
Result<void> write_file(const std::string& path, std::string_view value);
bool file_exists(const std::string& path);
// The pids listed in a cgroup.procs file.
Result<std::vector<int>> read_pids(const std::string& procs_path);
// The value of `key` in a "key value" file (memory.events, cpu.stat, ...).
Result<std::int64_t> read_keyed(const std::string& path, std::string_view key);

}  // namespace nps::cgroup
