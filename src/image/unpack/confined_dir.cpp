// SPDX-License-Identifier: Apache-2.0
#include "confined_dir.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace nps::image::detail {

int open_beneath(int dirfd, const char* path, int flags)
{
    open_how how{};
    how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC | O_NOFOLLOW);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    // EAGAIN: a concurrent rename elsewhere on the system made the kernel's
    // confined lookup unsafe to finish; the man page says to retry.
    constexpr int kAttempts = 64;
    long fd = -1;
    for (int i = 0; i < kAttempts; ++i) {
        fd = ::syscall(SYS_openat2, dirfd, path, &how, sizeof how);
        if (fd >= 0 || errno != EAGAIN)
            break;
    }
    return static_cast<int>(fd);
}

Result<ConfinedDir> ConfinedDir::create_new(const std::string& path)
{
    if (::mkdir(path.c_str(), 0755) < 0)
        return system_error_errno("Failed to create layer directory '" + path + "'");
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd)
        return system_error_errno("Failed to open layer directory '" + path + "'");
    return ConfinedDir(path, std::move(fd));
}

void ConfinedDir::forget()
{
    cached_.reset();
    cached_rel_.clear();
}

void ConfinedDir::forget_beneath(std::string_view rel)
{
    std::string_view cached = cached_rel_;
    if (cached.substr(0, rel.size()) == rel && (cached.size() == rel.size() || cached[rel.size()] == '/'))
        forget();
}

Result<int> ConfinedDir::directory(std::string_view rel, std::string_view entry)
{
    if (rel.empty())
        return root_.get();
    if (cached_ && cached_rel_ == rel)
        return cached_.get();
    forget();
    cached_ = NPS_TRY(walk(rel, entry));
    cached_rel_ = rel;
    return cached_.get();
}

// Which component of `rel` stops a directory lookup, and why, for the
// error message (the failing openat2 reports ELOOP or ENOTDIR alike for a
// symlink). Only runs on the error path.
Error ConfinedDir::blocked(std::string_view rel, int err, std::string_view entry) const
{
    std::string head = "Refusing layer entry '" + std::string(entry) + "': '";
    std::size_t end = 0;
    while (end < rel.size()) {
        end = rel.find('/', end + 1);
        if (end == std::string_view::npos)
            end = rel.size();
        std::string prefix(rel.substr(0, end));
        // O_PATH | O_NOFOLLOW yields the final symlink itself, even under
        // RESOLVE_NO_SYMLINKS.
        UniqueFd fd(open_beneath(root_.get(), prefix.c_str(), O_PATH));
        struct stat st {};
        if (!fd || ::fstat(fd.get(), &st) < 0)
            break;
        if (S_ISLNK(st.st_mode))
            return internal_error(head + prefix + "' is a symbolic link");
        if (!S_ISDIR(st.st_mode))
            return internal_error(head + prefix + "' is not a directory");
    }
    switch (err) {
    case ELOOP: return internal_error(head + std::string(rel) + "' passes through a symbolic link");
    case ENOTDIR: return internal_error(head + std::string(rel) + "' passes through a non-directory");
    case EXDEV: return internal_error(head + std::string(rel) + "' leads out of the layer");
    case ENOENT: return internal_error(head + std::string(rel) + "' is not in the layer");
    default: return system_error("Failed to open '" + std::string(rel) + "' in layer directory '" + path_ + "'", err);
    }
}

Result<UniqueFd> ConfinedDir::walk(std::string_view rel, std::string_view entry)
{
    // The whole path at once: the common case, where it exists.
    std::string rel_str(rel);
    UniqueFd fd(open_beneath(root_.get(), rel_str.c_str(), O_RDONLY | O_DIRECTORY));
    if (fd)
        return fd;
    if (errno != ENOENT)
        return blocked(rel, errno, entry);

    // Component by component, making what is missing.
    UniqueFd dir;
    std::size_t start = 0;
    while (start < rel.size()) {
        std::size_t end = rel.find('/', start);
        if (end == std::string_view::npos)
            end = rel.size();
        std::string name(rel.substr(start, end - start));
        int at = dir ? dir.get() : root_.get();
        UniqueFd next(open_beneath(at, name.c_str(), O_RDONLY | O_DIRECTORY));
        if (!next && errno == ENOENT) {
            if (::mkdirat(at, name.c_str(), 0755) < 0 && errno != EEXIST)
                return system_error_errno("Failed to create directory '" + std::string(rel.substr(0, end)) +
                                          "' in layer directory '" + path_ + "'");
            next = UniqueFd(open_beneath(at, name.c_str(), O_RDONLY | O_DIRECTORY));
        }
        if (!next)
            return blocked(rel.substr(0, end), errno, entry);
        dir = std::move(next);
        start = end + 1;
    }
    return dir;
}

}  // namespace nps::image::detail
