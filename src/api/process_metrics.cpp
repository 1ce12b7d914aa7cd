// SPDX-License-Identifier: Apache-2.0
#include "nps/api/process_metrics.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "nps/base/prometheus_text.hpp"
#include "nps/base/small_file.hpp"

namespace nps::api {

namespace {

double resident_bytes()
{
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double cpu_seconds()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double open_fds()
{
    DIR* dir = opendir("/proc/self/fd");
    if (!dir)
        return 0;
    double count = 0;
    while (const dirent* entry = readdir(dir))
        if (entry->d_name[0] != '.')
            ++count;
    closedir(dir);
    return count - 1;  // the directory's own fd
}

// Process start, seconds since the epoch: the boot time (btime of
// /proc/stat) plus field 22 of /proc/self/stat (clock ticks after boot).
double start_time_seconds()
{
    auto stat = read_small_file("/proc/self/stat", 4096, "process status");
    auto system = read_small_file("/proc/stat", 256 * 1024, "kernel statistics");
    if (!stat || !system)
        return 0;
    const auto after_comm = stat->rfind(')');
    const auto btime = system->find("\nbtime ");
    if (after_comm == std::string::npos || btime == std::string::npos)
        return 0;
    std::istringstream fields(stat->substr(after_comm + 2));  // field 3 on
    std::string field;
    for (int i = 3; i <= 22 && fields >> field; ++i) {
    }
    const double boot = std::strtod(system->c_str() + btime + 7, nullptr);
    return boot + std::strtod(field.c_str(), nullptr) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

std::string render_process_metrics(std::optional<std::int64_t> store_bytes)
{
    using prometheus::Type;
    std::string out;
    prometheus::family(out, "nps_runner_build_info", Type::gauge, "The nps-runner build: 1, its version as a label.");
    prometheus::sample(out, "nps_runner_build_info", prometheus::label("version", NPS_RUNNER_VERSION), 1);
    prometheus::metric(out, "process_resident_memory_bytes", Type::gauge, "Resident memory of the daemon process.",
                       resident_bytes());
    prometheus::metric(out, "process_cpu_seconds_total", Type::counter,
                       "User and system CPU time of the daemon process.", cpu_seconds());
    prometheus::metric(out, "process_open_fds", Type::gauge, "Open file descriptors of the daemon process.",
                       open_fds());
    prometheus::metric(out, "process_start_time_seconds", Type::gauge,
                       "When the daemon process started, seconds since the epoch.", start_time_seconds());
    if (store_bytes)
        prometheus::metric(out, "nps_store_bytes", Type::gauge,
                           "What the task store takes on disk: runner.db with its WAL, or the tables of its "
                           "PostgreSQL schema.",
                           *store_bytes);
    return out;
}

}  // namespace nps::api
