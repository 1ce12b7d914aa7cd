// SPDX-License-Identifier: Apache-2.0
// bench-spawn: statistics, clock, load and the busybox rootfs.
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>

#include "bench_spawn.hpp"

namespace bench_spawn {

void die(const std::string& what)
{
    throw Failure(what);
}

void die_errno(const std::string& what)
{
    die(what + ": " + ::strerror(errno));
}

double now_ms()
{
    using Ms = std::chrono::duration<double, std::milli>;
    return std::chrono::duration_cast<Ms>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpu_ms(const rusage& usage)
{
    auto ms = [](timeval tv) { return static_cast<double>(tv.tv_sec) * 1e3 + static_cast<double>(tv.tv_usec) / 1e3; };
    return ms(usage.ru_utime) + ms(usage.ru_stime);
}

std::string load_average()
{
    std::ifstream in("/proc/loadavg");
    std::string a, b, c;
    in >> a >> b >> c;
    return a + " " + b + " " + c;
}

Stats summarise(std::vector<double> samples)
{
    Stats s;
    s.n = samples.size();
    if (samples.empty())
        return s;
    std::sort(samples.begin(), samples.end());
    auto rank = [&](double q) {
        auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(samples.size())));
        return samples[std::clamp<std::size_t>(i, 1, samples.size()) - 1];
    };
    s.median = rank(0.5);
    s.p90 = rank(0.9);
    s.p99 = rank(0.99);
    s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
    s.min = samples.front();
    s.max = samples.back();
    return s;
}

std::string format_stats(const Stats& s)
{
    char line[128];
    std::snprintf(line, sizeof line, "%8.3f %8.3f %8.3f %8.3f %8.3f", s.median, s.p90, s.p99, s.mean, s.max);
    return line;
}

std::string stats_header()
{
    return "  median      p90      p99     mean      max";
}

std::string make_busybox_rootfs(const std::string& dir)
{
    namespace fs = std::filesystem;
    for (const char* sub : {"bin", "proc", "dev", "tmp", "sys", "etc", "root"})
        fs::create_directories(dir + "/" + sub);
    fs::copy_file("/bin/busybox", dir + "/bin/busybox", fs::copy_options::overwrite_existing);
    FILE* list = ::popen("/bin/busybox --list", "re");
    if (!list)
        die_errno("Failed to run '/bin/busybox --list'");
    char line[256];
    while (std::fgets(line, sizeof line, list)) {
        std::string name(line);
        while (!name.empty() && (name.back() == '\n' || name.back() == '\r'))
            name.pop_back();
        // Relative links: the host path of busybox does not exist inside a sandbox.
        std::error_code ec;
        if (!name.empty() && name.find('/') == std::string::npos && name != "busybox")
            fs::create_symlink("busybox", dir + "/bin/" + name, ec);
    }
    ::pclose(list);
    std::ofstream(dir + "/etc/passwd") << "root:x:0:0:root:/root:/bin/sh\n";
    ::chmod(dir.c_str(), 0755);
    if (!fs::exists(dir + "/bin/true"))
        die("busybox has no 'true' applet: " + dir + "/bin/true is missing");
    return dir;
}

}  // namespace bench_spawn
