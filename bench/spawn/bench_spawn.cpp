// SPDX-License-Identifier: Apache-2.0
// bench-spawn: sandboxed spawn+reap latency of /bin/true (DESIGN §5).
//
// Part 1 (in_process.cpp): spawn+reap through the library inside this
// process — fork/exec baseline, namespaces+seccomp+caps, + a cgroup with
// limits, + an overlay root — median/p90/p99/mean; target: the full path
// (d) median ≤ 2.5 ms, p99 ≤ 8 ms.
// Part 2 (whole_process.cpp): `nps-runner run --rootfs R -- /bin/true`
// against crun, bwrap, unshare and plain fork/exec on the same rootfs, in
// one run, as ratios; targets: ≥ 3× faster than crun, faster than bwrap.
//
// Run by hand as root (it mounts and makes cgroups); not a test. The bench
// works in a private mount namespace of its own, so its mounts never reach
// the host. See bench/RESULTS.md.
//
// usage: bench-spawn [--iterations N] [--warmup N] [--rootfs DIR] [--runner PATH]
//                    [--only in-process|whole-process] [--keep]
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "bench_spawn.hpp"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

namespace bench_spawn {
namespace {

void usage(int status)
{
    std::printf(
        "usage: bench-spawn [--iterations N] [--warmup N] [--rootfs DIR] [--runner PATH]\n"
        "                   [--only in-process|whole-process] [--keep]\n"
        "  --iterations N  measured rounds per part (default 300)\n"
        "  --warmup N      unrecorded rounds first (default 20)\n"
        "  --rootfs DIR    use this rootfs (default: a busybox rootfs built in the work directory)\n"
        "  --runner PATH   nps-runner for the whole-process part (default: ../../nps-runner from this binary)\n"
        "  --only PART     run only the in-process or the whole-process part\n"
        "  --keep          keep the work directory /tmp/bench-spawn-*\n"
        "Runs as root. See bench/RESULTS.md.\n");
    std::exit(status);
}

int int_arg(const char* text)
{
    char* end = nullptr;
    long v = std::strtol(text, &end, 10);
    if (!*text || *end || v < 0 || v > 1000000)
        usage(2);
    return static_cast<int>(v);
}

Options parse(int argc, char** argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc)
                usage(2);
            return argv[++i];
        };
        if (a == "--iterations") o.iterations = int_arg(next());
        else if (a == "--warmup") o.warmup = int_arg(next());
        else if (a == "--rootfs") o.rootfs = std::filesystem::absolute(next()).string();
        else if (a == "--runner") o.runner = std::filesystem::absolute(next()).string();
        else if (a == "--keep") o.keep = true;
        else if (a == "--only") {
            std::string what = next();
            if (what == "in-process") o.whole_process = false;
            else if (what == "whole-process") o.in_process = false;
            else usage(2);
        } else if (a == "--help" || a == "-h") usage(0);
        else usage(2);
    }
    if (o.iterations < 1)
        usage(2);
    if (o.runner.empty()) {
        char self[PATH_MAX];
        ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
        if (n > 0) {
            self[n] = '\0';
            o.runner = (std::filesystem::path(self).parent_path() / "../../nps-runner").lexically_normal().string();
        }
    }
    return o;
}

bool is_cgroup2(const char* path)
{
    struct statfs fs {};
    return ::statfs(path, &fs) == 0 && static_cast<unsigned long>(fs.f_type) == CGROUP2_SUPER_MAGIC;
}

int open_own_mount_ns()
{
    int fd = ::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die_errno("Failed to open /proc/self/ns/mnt");
    return fd;
}

void private_mount_namespace()
{
    if (::unshare(CLONE_NEWNS) < 0)
        die_errno("Failed to unshare the mount namespace");
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0)
        die_errno("Failed to make the mounts private");
}

// On a hybrid host (cgroup2 on /sys/fs/cgroup/unified beside v1) crun 1.8
// refuses to run; a mount namespace with a tmpfs over the cgroup2 mount is
// where it works. Made once here; -1 when the host is not hybrid. Then this
// process moves to a private mount namespace of its own (the host's mounts
// otherwise), which every other contender inherits.
int prepare_mount_namespaces()
{
    char cwd[PATH_MAX];
    if (!::getcwd(cwd, sizeof cwd))
        die_errno("getcwd failed");
    int crun_ns = -1;
    if (!is_cgroup2("/sys/fs/cgroup") && is_cgroup2("/sys/fs/cgroup/unified")) {
        int host = open_own_mount_ns();
        private_mount_namespace();
        if (::mount("tmpfs", "/sys/fs/cgroup/unified", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755") < 0)
            die_errno("Failed to mount tmpfs on /sys/fs/cgroup/unified");
        crun_ns = open_own_mount_ns();
        if (::setns(host, CLONE_NEWNS) < 0)
            die_errno("Failed to return to the host's mount namespace");
        ::close(host);
    }
    private_mount_namespace();
    if (::chdir(cwd) < 0)
        die_errno("Failed to return to the working directory");
    return crun_ns;
}

std::string machine_notes()
{
    utsname u{};
    ::uname(&u);
    std::string notes = std::string("kernel ") + u.release + ", " + std::to_string(::sysconf(_SC_NPROCESSORS_ONLN)) +
                        " CPUs";
    return notes;
}

int bench_main(int argc, char** argv)
{
    Options options = parse(argc, argv);
    if (::geteuid() != 0)
        die("run me as root (the bench mounts, makes namespaces and cgroups)");
    if (options.rootfs.empty() && ::access("/bin/busybox", X_OK) != 0)
        die("no /bin/busybox to build the rootfs from (install busybox-static) and no --rootfs");
    if (!options.rootfs.empty() && ::access((options.rootfs + "/bin/true").c_str(), X_OK) != 0)
        die("the rootfs " + options.rootfs + " has no executable /bin/true");

    const std::string load_before = load_average();
    const int crun_ns = prepare_mount_namespaces();

    char work[] = "/tmp/bench-spawn-XXXXXX";
    if (!::mkdtemp(work))
        die_errno("mkdtemp failed");
    ::chmod(work, 0755);
    const std::string work_dir = work;
    const std::string rootfs = options.rootfs.empty() ? make_busybox_rootfs(work_dir + "/rootfs") : options.rootfs;

    std::printf("bench-spawn: %s; rootfs %s%s; work dir %s\n", machine_notes().c_str(), rootfs.c_str(),
                options.rootfs.empty() ? " (busybox, built now)" : "", work_dir.c_str());
    std::printf("load average at start: %s\n", load_before.c_str());
    std::fflush(stdout);

    if (options.in_process)
        run_in_process(options, rootfs, work_dir);
    if (options.whole_process)
        run_whole_process(options, rootfs, work_dir, crun_ns);

    std::printf("\nload average at end: %s\n", load_average().c_str());
    if (!options.keep) {
        std::error_code ec;
        std::filesystem::remove_all(work_dir, ec);
    }
    return 0;
}

}  // namespace
}  // namespace bench_spawn

int main(int argc, char** argv)
{
    try {
        return bench_spawn::bench_main(argc, argv);
    } catch (const std::exception& e) {
        // The work directory stays for a look (its mounts went with our mount namespace).
        std::fflush(stdout);
        std::cerr << "bench-spawn: " << e.what() << "\n";
        return 1;
    }
}
