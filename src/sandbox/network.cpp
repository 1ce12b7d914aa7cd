// SPDX-License-Identifier: Apache-2.0
// Network "none": the child sits in a fresh network namespace whose only
// interface is loopback, which the kernel creates down.
#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "setup.hpp"

namespace nps::sandbox::detail {

int bring_up_loopback()
{
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    ifreq request{};
    ::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
    int rc = ::ioctl(fd, SIOCGIFFLAGS, &request);
    if (rc == 0) {
        request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
        rc = ::ioctl(fd, SIOCSIFFLAGS, &request);
    }
    int err = errno;
    ::close(fd);
    return rc < 0 ? -err : 0;
}

}  // namespace nps::sandbox::detail
