// SPDX-License-Identifier: Apache-2.0
// Test support: a fresh directory under /tmp, removed with everything in it,
// mounts included: a test that kills a daemon (kill -9, or RunnerProcess's
// destructor) while a worker runs leaves that worker's rootfs overlay and
// writable space mounted beneath the state directory. Left on the host, they
// would make every later mount namespace copy them (bench/RESULTS.md). Tests
// that are about leftovers check the mount table before this runs.
#pragma once

#include <stdlib.h>
#include <sys/mount.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace nps::test {

// Mount points at or beneath `dir`, deepest first (/proc/self/mountinfo).
inline std::vector<std::string> mounts_beneath(const std::string& dir)
{
    std::vector<std::string> found;
    std::ifstream mountinfo("/proc/self/mountinfo");
    const std::string prefix = dir + "/";
    for (std::string line; std::getline(mountinfo, line);) {
        std::istringstream fields(line);
        std::string id, parent, device, root, point;
        if (fields >> id >> parent >> device >> root >> point && (point == dir || point.starts_with(prefix)))
            found.push_back(point);
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
    return found;
}

class TempDir {
public:
    explicit TempDir(std::string_view prefix = "nps-test")
    {
        std::string pattern = "/tmp/" + std::string(prefix) + "-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr)
            throw std::runtime_error("mkdtemp(" + pattern + ") failed");
        path_ = pattern;
    }
    ~TempDir()
    {
        for (const std::string& point : mounts_beneath(path_))
            ::umount2(point.c_str(), MNT_DETACH);  // as root; otherwise nothing could be mounted here
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::string file(const std::string& name) const { return path_ + "/" + name; }
    std::string operator/(const std::string& name) const { return file(name); }

private:
    std::string path_;
};

}  // namespace nps::test
