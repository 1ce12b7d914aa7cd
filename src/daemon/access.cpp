// SPDX-License-Identifier: Apache-2.0
#include "access.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "nps/base/digest.hpp"
#include "nps/base/random_id.hpp"
#include "nps/base/small_file.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/config/config.hpp"

namespace nps::daemon {

namespace {

constexpr std::size_t kTokenBytes = 32;       // 256 bits
constexpr std::size_t kMinTokenChars = 16;    // as api.token
constexpr std::size_t kMaxTokenFileBytes = 4096;

// mkdir `path` with `mode`, or strip group/other read and write bits of the
// existing directory. chmod() after mkdir(): the umask must not matter.
Result<void> secure_directory(const std::string& path, mode_t mode)
{
    if (::mkdir(path.c_str(), mode) == 0) {
        if (::chmod(path.c_str(), mode) != 0)
            return system_error_errno("Failed to set the mode of directory '" + path + "'");
        return {};
    }
    if (errno != EEXIST)
        return system_error_errno("Failed to create directory '" + path + "'");
    struct stat st{};
    if (::lstat(path.c_str(), &st) != 0)
        return system_error_errno("Failed to stat directory '" + path + "'");
    if (!S_ISDIR(st.st_mode))
        return system_error("Failed to use directory '" + path + "'", ENOTDIR);
    const mode_t current = st.st_mode & 07777;
    const mode_t wanted = current & ~static_cast<mode_t>(S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH);
    if (wanted != current && ::chmod(path.c_str(), wanted) != 0)
        return system_error_errno("Failed to restrict the mode of directory '" + path + "'");
    return {};
}

// Mode kTokenFileMode and the group on an open token file.
Result<void> restrict_token_file(int fd, const std::string& path, std::optional<gid_t> group)
{
    if (::fchmod(fd, kTokenFileMode) != 0)
        return system_error_errno("Failed to set the mode of '" + path + "'");
    if (group && ::geteuid() == 0 && ::fchown(fd, 0, *group) != 0)
        return system_error_errno("Failed to set the group of '" + path + "'");
    return {};
}

Result<std::string> read_token(const std::string& path, std::optional<gid_t> group)
{
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd)
        return system_error_errno("Failed to open the API token '" + path + "'");
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
        return internal_error("The API token '" + path + "' is not a regular file");
    NPS_TRY_VOID(restrict_token_file(fd.get(), path, group));
    std::string text = NPS_TRY(read_small_file(path, kMaxTokenFileBytes, "API token"));
    text = text.substr(0, text.find('\n'));
    while (!text.empty() && (text.back() == '\r' || text.back() == ' '))
        text.pop_back();
    if (text.size() < kMinTokenChars)
        return internal_error("The API token '" + path + "' holds fewer than " + std::to_string(kMinTokenChars) +
                              " characters (delete it to have a new one generated)");
    return text;
}

Result<std::string> random_token()
{
    return random_hex(kTokenBytes, "the API token");
}

// Writes `token` to a temporary file beside `path` and renames it into
// place, so a reader never sees a partial token.
Result<void> write_token(const std::string& path, const std::string& token, std::optional<gid_t> group)
{
    const std::string temp = path + ".new";
    ::unlink(temp.c_str());
    UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd)
        return system_error_errno("Failed to create the API token '" + temp + "'");
    auto fail = [&temp](Error error) {
        ::unlink(temp.c_str());
        return error;
    };
    if (auto r = restrict_token_file(fd.get(), temp, group); !r)
        return fail(std::move(r).error());
    const std::string line = token + "\n";
    if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) || ::fsync(fd.get()) != 0)
        return fail(system_error_errno("Failed to write the API token '" + temp + "'"));
    if (::rename(temp.c_str(), path.c_str()) != 0)
        return fail(system_error_errno("Failed to rename '" + temp + "' to '" + path + "'"));
    const std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos ? 1 : path.find_last_of('/'));
    if (UniqueFd d(::open(dir.empty() ? "/" : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); d)
        ::fsync(d.get());
    return {};
}

}  // namespace

std::optional<gid_t> runner_group()
{
    std::vector<char> buffer(16384);
    group entry{};
    group* found = nullptr;
    if (::getgrnam_r(config::kRunnerGroup, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr)
        return std::nullopt;
    return found->gr_gid;
}

Result<void> secure_state_dir(const std::string& dir)
{
    // Missing parents as create_directories would make them (0755).
    const auto slash = dir.find_last_of('/');
    if (slash != std::string::npos && slash > 0) {
        std::string parent = dir.substr(0, slash);
        for (std::size_t at = 1; at <= parent.size(); ++at) {
            if (at != parent.size() && parent[at] != '/')
                continue;
            const std::string prefix = parent.substr(0, at);
            if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
                return system_error_errno("Failed to create state directory '" + dir + "' (at '" + prefix + "')");
        }
    }
    NPS_TRY_VOID(secure_directory(dir, kStateDirMode));
    NPS_TRY_VOID(secure_directory(dir + "/workers", kWorkersDirMode));
    NPS_TRY_VOID(secure_directory(dir + "/images", kImagesDirMode));
    NPS_TRY_VOID(secure_directory(dir + "/logs", kLogsDirMode));
    return {};
}

Result<GeneratedToken> ensure_generated_token(const std::string& path, std::optional<gid_t> group)
{
    struct stat st{};
    if (::lstat(path.c_str(), &st) == 0)
        return GeneratedToken{.token = NPS_TRY(read_token(path, group)), .created = false};
    if (errno != ENOENT)
        return system_error_errno("Failed to stat the API token '" + path + "'");
    GeneratedToken out{.token = NPS_TRY(random_token()), .created = true};
    NPS_TRY_VOID(write_token(path, out.token, group));
    return out;
}

}  // namespace nps::daemon
