// SPDX-License-Identifier: Apache-2.0
#include "nps/sandbox/loopback_netns.hpp"

#include <fcntl.h>
#include <sched.h>

#include <cerrno>
#include <thread>

#include "setup.hpp"

namespace nps::sandbox {

Result<LoopbackNetns> LoopbackNetns::create()
{
    int fd = -1;
    int err = 0;
    const char* step = nullptr;
    std::thread maker([&] {
        if (::unshare(CLONE_NEWNET) < 0) {
            err = errno;
            step = "create";
        } else if (int rc = detail::bring_up_loopback(); rc < 0) {
            err = -rc;
            step = "bring up 'lo' in";
        } else if ((fd = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) < 0) {
            err = errno;
            step = "open";
        }
    });
    maker.join();
    if (step)
        return system_error(std::string("Failed to ") + step + " the shared loopback network namespace", err);
    return LoopbackNetns(UniqueFd(fd));
}

}  // namespace nps::sandbox
