// SPDX-License-Identifier: Apache-2.0
// bench-spawn: shared pieces of the spawn benchmark (see bench_spawn.cpp).
#pragma once

#include <sys/resource.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench_spawn {

struct Options {
    int iterations = 300;      // measured rounds per part
    int warmup = 20;           // unrecorded rounds before them
    std::string rootfs;        // empty: a busybox rootfs is built in the work directory
    std::string runner;        // the nps-runner binary for the whole-process part
    bool in_process = true;
    bool whole_process = true;
    bool keep = false;         // keep the work directory
};

// What die() throws; main() reports it. Unwinding runs the destructors that
// kill and reap a half-spawned child and remove its cgroup.
struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

[[noreturn]] void die(const std::string& what);
// die() with strerror(errno) appended.
[[noreturn]] void die_errno(const std::string& what);

// Monotonic clock, milliseconds.
double now_ms();

// User + system time of a getrusage/wait4 result, milliseconds.
double cpu_ms(const rusage& usage);

// /proc/loadavg's first three fields.
std::string load_average();

struct Stats {
    std::size_t n = 0;
    double median = 0, p90 = 0, p99 = 0, mean = 0, min = 0, max = 0;
};

// Nearest-rank percentiles of `samples` (milliseconds).
Stats summarise(std::vector<double> samples);

// "  1.234   2.345 ..." : median p90 p99 mean max, each in a 8-wide column.
std::string format_stats(const Stats& s);
// The header line matching format_stats.
std::string stats_header();

// Builds a busybox rootfs in `dir` (created) as the privileged sandbox tests
// do: /bin/busybox copied from the host, relative applet symlinks, the mount
// point directories proc, dev, tmp, sys, and etc/passwd. Returns `dir`.
std::string make_busybox_rootfs(const std::string& dir);

// Part 1: in-process spawn+reap through the library (variants a-d).
void run_in_process(const Options& options, const std::string& rootfs, const std::string& work_dir);

// Part 2: whole processes side by side. `crun_mount_ns` is a mount namespace
// fd in which crun works on this host (tmpfs over /sys/fs/cgroup/unified),
// or -1.
void run_whole_process(const Options& options, const std::string& rootfs, const std::string& work_dir,
                       int crun_mount_ns);

}  // namespace bench_spawn
