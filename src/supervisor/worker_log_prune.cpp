// SPDX-License-Identifier: Apache-2.0
// Retention of worker log directories: the per-file caps bound one worker,
// this bounds how long finished workers' logs stay on disk and how much
// they take together.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <tuple>

#include "nps/supervisor/worker_log.hpp"

namespace nps::supervisor {

namespace {

namespace fs = std::filesystem;
using TimePoint = std::chrono::system_clock::time_point;

constexpr std::size_t kMaxProblems = 5;

TimePoint modified(const struct stat& st)
{
    return TimePoint(std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec));
}

struct LogDir {
    fs::path path;
    std::string name;
    TimePoint last_written;  // of the directory and the files in it
    std::uint64_t bytes = 0;  // the files' sizes
    bool gone = false;
};

// A worker's logs are one level deep (stdout.log, stderr.log and rotations).
LogDir inspect(const fs::path& dir)
{
    LogDir d{.path = dir, .name = dir.filename().string(), .last_written = TimePoint::max()};
    struct stat st {};
    if (::lstat(dir.c_str(), &st) == 0)
        d.last_written = modified(st);
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (::lstat(it->path().c_str(), &st) != 0)
            continue;
        d.last_written = std::max(d.last_written, modified(st));
        if (S_ISREG(st.st_mode))
            d.bytes += static_cast<std::uint64_t>(st.st_size);
    }
    return d;
}

class Pruner {
public:
    explicit Pruner(std::size_t max_removals) : max_removals_(max_removals) {}

    bool can_remove() const { return report.removed < max_removals_; }

    // True when `dir` is gone.
    bool remove(const LogDir& dir)
    {
        std::error_code removal;
        fs::remove_all(dir.path, removal);
        if (removal) {
            problem("Failed to remove worker logs '" + dir.path.string() + "': " + removal.message());
            return false;
        }
        ++report.removed;
        return true;
    }

    void problem(std::string text)
    {
        if (report.problems.size() < kMaxProblems)
            report.problems.push_back(std::move(text));
    }

    LogPruneReport report;

private:
    std::size_t max_removals_;
};

}  // namespace

LogPruneReport prune_worker_logs(const std::string& root, const std::set<std::string>& running,
                                 const LogPruneOptions& options)
{
    Pruner pruner(options.max_removals);
    std::vector<LogDir> kept;
    std::error_code ec;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_directory(ec) || it->is_symlink(ec))
            continue;
        LogDir dir = inspect(it->path());
        const bool finished = !running.count(dir.name);
        if (finished && dir.last_written < options.cutoff && pruner.can_remove() && pruner.remove(dir))
            continue;
        kept.push_back(std::move(dir));
    }
    if (ec && ec != std::errc::no_such_file_or_directory)
        pruner.problem("Failed to list worker logs in '" + root + "': " + ec.message());

    std::uint64_t total = 0;
    for (const auto& dir : kept)
        total += dir.bytes;
    if (options.max_total_bytes > 0 && total > options.max_total_bytes) {
        // Least recently written first; the name breaks ties so the order is stable.
        std::vector<LogDir*> order;
        std::uint64_t spared = 0;
        for (auto& dir : kept) {
            if (running.count(dir.name))
                continue;
            if (dir.last_written < options.running_as_of)
                order.push_back(&dir);
            else
                spared += dir.bytes;
        }
        std::sort(order.begin(), order.end(), [](const LogDir* a, const LogDir* b) {
            return std::tie(a->last_written, a->name) < std::tie(b->last_written, b->name);
        });
        for (LogDir* dir : order) {
            if (total <= options.max_total_bytes || !pruner.can_remove())
                break;
            if (!pruner.remove(*dir))
                continue;
            ++pruner.report.removed_for_cap;
            total -= dir->bytes;
            dir->gone = true;
        }
        pruner.report.spared_recent = total > options.max_total_bytes && spared > 0;
    }
    for (const auto& dir : kept)
        if (!dir.gone) {
            ++pruner.report.kept;
            pruner.report.kept_bytes += dir.bytes;
        }
    return pruner.report;
}

LogPruneReport prune_worker_logs(const std::string& root, std::chrono::system_clock::time_point cutoff,
                                 const std::set<std::string>& running, std::size_t max_removals)
{
    return prune_worker_logs(root, running, {.cutoff = cutoff, .max_removals = max_removals});
}

std::uint64_t worker_log_bytes(const std::string& dir)
{
    return inspect(dir).bytes;
}

}  // namespace nps::supervisor
