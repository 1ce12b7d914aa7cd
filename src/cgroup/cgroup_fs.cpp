// SPDX-License-Identifier: Apache-2.0
#include "nps/cgroup/cgroup_fs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "nps/base/unique_fd.hpp"

namespace nps::cgroup {

Result<std::string> read_file(const std::string& path)
{
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!fd)
        return system_error_errno("Failed to open '" + path + "'");
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return system_error_errno("Failed to read '" + path + "'");
        }
        if (n == 0)
            break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

Result<void> write_file(const std::string& path, std::string_view value)
{
    auto fail = [&] {
        return system_error_errno("Failed to write '" + std::string(value) + "' to '" + path + "'");
    };
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY));
    if (!fd)
        return fail();
    ssize_t n;
    do
        n = ::write(fd.get(), value.data(), value.size());
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return fail();
    if (static_cast<std::size_t>(n) != value.size())
        return system_error("Short write of '" + std::string(value) + "' to '" + path + "'", EIO);
    return {};
}

bool file_exists(const std::string& path)
{
    return ::access(path.c_str(), F_OK) == 0;
}

Result<std::vector<int>> read_pids(const std::string& procs_path)
{
    std::string text = NPS_TRY(read_file(procs_path));
    std::vector<int> pids;
    std::string_view rest = text;
    while (!rest.empty()) {
        auto nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
        if (line.empty())
            continue;
        int pid = 0;
        auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), pid);
        if (ec != std::errc{} || p != line.data() + line.size() || pid <= 0)
            return internal_error("Unexpected line '" + std::string(line) + "' in '" + procs_path + "'");
        pids.push_back(pid);
    }
    return pids;
}

Result<std::int64_t> read_keyed(const std::string& path, std::string_view key)
{
    std::string text = NPS_TRY(read_file(path));
    std::string_view rest = text;
    while (!rest.empty()) {
        auto nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
        if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ' ')
            continue;
        std::string_view v = line.substr(key.size() + 1);
        std::int64_t value = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
        if (ec != std::errc{} || p != v.data() + v.size())
            return internal_error("Unexpected value of '" + std::string(key) + "' in '" + path + "'");
        return value;
    }
    return internal_error("No '" + std::string(key) + "' in '" + path + "'");
}

}  // namespace nps::cgroup
