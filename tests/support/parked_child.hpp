// SPDX-License-Identifier: Apache-2.0
// Spawn-pool slots as the tests see them.
//
// cgroup_procs(dir): the processes of a cgroup directory (cgroup.procs; none
// when it is gone).
//
// is_parked_child(pid, runner_executable): whether a process in a spawn-pool
// slot is still the runner's parked copy, by what it executes. A parked child
// is a clone of the runner (or of its spawn server) that has not executed its
// worker yet, so its executable is the runner's file. Its name ("nps-pool")
// is no test: a child cloned by the spawn server carries the server's name
// until it has run long enough to rename itself.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <fstream>
#include <string>
#include <vector>

namespace nps::test {

inline std::vector<pid_t> cgroup_procs(const std::string& dir)
{
    std::vector<pid_t> pids;
    std::ifstream in(dir + "/cgroup.procs");
    for (pid_t pid; in >> pid;)
        pids.push_back(pid);
    return pids;
}

inline bool is_parked_child(pid_t pid, const std::string& runner_executable)
{
    struct stat child {}, runner {};
    const std::string exe = "/proc/" + std::to_string(pid) + "/exe";
    return ::stat(exe.c_str(), &child) == 0 && ::stat(runner_executable.c_str(), &runner) == 0 &&
           child.st_dev == runner.st_dev && child.st_ino == runner.st_ino;
}

}  // namespace nps::test
