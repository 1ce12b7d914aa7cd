// SPDX-License-Identifier: Apache-2.0
#include "nps/image/store_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>

namespace nps::image {

Result<StoreLock> StoreLock::acquire(const std::string& lock_file, LockMode mode)
{
    UniqueFd fd(::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd)
        return system_error_errno("Failed to open the image store lock '" + lock_file + "'");
    const int op = mode == LockMode::shared ? LOCK_SH : LOCK_EX;
    while (::flock(fd.get(), op) != 0) {
        if (errno != EINTR)
            return system_error_errno("Failed to lock the image store ('" + lock_file + "')");
    }
    return StoreLock(std::move(fd));
}

}  // namespace nps::image
