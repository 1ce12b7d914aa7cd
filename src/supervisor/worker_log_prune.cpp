// SPDX-License-Identifier: Apache-2.0
// Retention of worker log directories: the per-file caps bound one worker,
// this bounds how many finished workers' logs stay on disk.
#include <sys/stat.h>

#include <filesystem>
#include <system_error>

#include "nps/supervisor/worker_log.hpp"

namespace nps::supervisor {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxProblems = 5;

std::chrono::system_clock::time_point modified(const struct stat& st)
{
    return std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec) +
                                                  std::chrono::nanoseconds(st.st_mtim.tv_nsec));
}

// The newest modification time of the directory and the files in it; a
// worker's logs are one level deep (stdout.log, stderr.log and rotations).
std::chrono::system_clock::time_point last_written(const fs::path& dir)
{
    struct stat st {};
    auto newest = ::lstat(dir.c_str(), &st) == 0 ? modified(st) : std::chrono::system_clock::time_point::max();
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (::lstat(it->path().c_str(), &st) == 0)
            newest = std::max(newest, modified(st));
    return newest;
}

}  // namespace

LogPruneReport prune_worker_logs(const std::string& root, std::chrono::system_clock::time_point cutoff,
                                 const std::set<std::string>& running, std::size_t max_removals)
{
    LogPruneReport report;
    std::error_code ec;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path& dir = it->path();
        if (!it->is_directory(ec) || it->is_symlink(ec))
            continue;
        const std::string name = dir.filename().string();
        if (running.count(name) || report.removed >= max_removals || last_written(dir) >= cutoff) {
            ++report.kept;
            continue;
        }
        std::error_code removal;
        fs::remove_all(dir, removal);
        if (removal) {
            ++report.kept;
            if (report.problems.size() < kMaxProblems)
                report.problems.push_back("Failed to remove worker logs '" + dir.string() + "': " + removal.message());
            continue;
        }
        ++report.removed;
    }
    if (ec && ec != std::errc::no_such_file_or_directory && report.problems.size() < kMaxProblems)
        report.problems.push_back("Failed to list worker logs in '" + root + "': " + ec.message());
    return report;
}

}  // namespace nps::supervisor
