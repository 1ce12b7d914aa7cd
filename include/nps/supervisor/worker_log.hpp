// SPDX-License-Identifier: Apache-2.0
// Per-worker log files with a size cap and rotation.
//
// A stream's log is <path> (newest), <path>.1, …, <path>.<keep> (oldest).
// When <path> would pass max_bytes it is rotated: each file moves one number
// up, the one past `keep` is deleted, and writing continues in a fresh
// <path>; so a stream never takes more than (keep + 1) × max_bytes on disk.
// With keep = 0 there is nothing to rotate into: the first max_bytes are
// kept, then one marker line, and later output is dropped (counted).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::supervisor {

struct LogLimits {
    std::uint64_t max_bytes = 1 << 20;  // per file
    std::uint32_t keep = 1;             // rotated files kept
};

class RotatingLog {
public:
    RotatingLog() = default;  // no file: write() discards
    // Nothing is created until the first write (a silent worker leaves no
    // file); then the parent directory is made if missing (its own parent
    // must exist) and <path> is created or truncated.
    RotatingLog(std::string path, LogLimits limits) : path_(std::move(path)), limits_(limits) {}

    // Appends `bytes`. Never fails: after an I/O error the error is kept in
    // error() and later output is discarded (and counted).
    void write(std::string_view bytes);
    void close() { fd_.reset(); }

    bool enabled() const { return !path_.empty(); }
    const std::string& path() const { return path_; }
    std::uint64_t written() const { return written_; }  // accepted, including what rotated away
    std::uint64_t dropped() const { return dropped_; }  // discarded (keep = 0 cap, or after an error)
    const std::optional<Error>& error() const { return error_; }

private:
    Result<void> open_file();
    Result<void> rotate();
    Result<void> write_all(std::string_view bytes);

    std::string path_;
    LogLimits limits_;
    UniqueFd fd_;
    std::uint64_t size_ = 0;  // of the current file
    std::uint64_t written_ = 0;
    std::uint64_t dropped_ = 0;
    bool full_ = false;  // keep = 0 and the cap is reached
    std::optional<Error> error_;
};

// The last `max_bytes` of the log at `path`, taken from <path> and as many
// rotated files as needed, oldest bytes first. "" when there is no log.
Result<std::string> read_log_tail(const std::string& path, std::size_t max_bytes);

// Retention of finished workers' logs (docs/supervisor.md "Logs").
struct LogPruneReport {
    std::size_t removed = 0;            // worker log directories deleted (for age or for the cap)
    std::size_t removed_for_cap = 0;    // of which for max_total_bytes
    bool spared_recent = false;         // still above the cap, with logs spared by running_as_of
    std::size_t kept = 0;               // worker log directories left
    std::uint64_t kept_bytes = 0;       // the sizes of the files in them
    std::vector<std::string> problems;  // "Failed to remove '…': …", at most a few
};

struct LogPruneOptions {
    // Directories whose files were all last written before this go;
    // time_point::min(): none for age.
    std::chrono::system_clock::time_point cutoff = std::chrono::system_clock::time_point::min();
    // Then, while all worker log directories together (running ones
    // included) hold more than this many bytes, finished ones go, least
    // recently written first; 0: no cap.
    std::uint64_t max_total_bytes = 0;
    // When `running` was taken: a directory written since may belong to a
    // worker started after, so the cap spares it (age cannot reach it).
    std::chrono::system_clock::time_point running_as_of = std::chrono::system_clock::time_point::max();
    std::size_t max_removals = 1000;
};

// Deletes worker log directories (each directory directly under `root`) as
// `options` say, never one whose name is in `running`. Other entries (files,
// symbolic links) are left alone and not counted; at most max_removals
// directories go per call, so one call's cost is bounded. A missing root is
// an empty one.
LogPruneReport prune_worker_logs(const std::string& root, const std::set<std::string>& running,
                                 const LogPruneOptions& options);

// Age only: prune_worker_logs(root, running, {.cutoff, .max_removals}).
LogPruneReport prune_worker_logs(const std::string& root, std::chrono::system_clock::time_point cutoff,
                                 const std::set<std::string>& running, std::size_t max_removals);

// The sizes of the files in one worker log directory (0 when missing).
std::uint64_t worker_log_bytes(const std::string& dir);

}  // namespace nps::supervisor
