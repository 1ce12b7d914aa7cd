// SPDX-License-Identifier: Apache-2.0
#include "layer_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace nps::image::detail {

Result<LayerLock> LayerLock::acquire(int dir_fd, std::string name)
{
    for (;;) {
        UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!fd)
            return system_error_errno("Failed to open lock file '" + name + "'");
        int r;
        do {
            r = ::flock(fd.get(), LOCK_EX);
        } while (r < 0 && errno == EINTR);
        if (r < 0)
            return system_error_errno("Failed to lock '" + name + "'");
        struct stat held {};
        struct stat now {};
        if (::fstat(fd.get(), &held) < 0)
            return system_error_errno("Failed to inspect lock file '" + name + "'");
        if (::fstatat(dir_fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == held.st_dev &&
            now.st_ino == held.st_ino)
            return LayerLock(dir_fd, std::move(name), std::move(fd));
        // The previous holder unlinked it while we waited: try again.
    }
}

LayerLock::~LayerLock()
{
    if (fd_)
        ::unlinkat(dir_fd_, name_.c_str(), 0);
}

}  // namespace nps::image::detail
