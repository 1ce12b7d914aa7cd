// SPDX-License-Identifier: Apache-2.0
#include "nps/base/unique_fd.hpp"

#include <unistd.h>

namespace nps {

void UniqueFd::reset(int fd) noexcept
{
    if (fd_ >= 0)
        ::close(fd_);  // close() errors are not actionable on Linux: the fd is gone.
    fd_ = fd;
}

}  // namespace nps
