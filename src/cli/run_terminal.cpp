// SPDX-License-Identifier: Apache-2.0
#include "run_terminal.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>

namespace nps::cli {

Result<RunTerminal> RunTerminal::open()
{
    RunTerminal t;
    t.master_ = UniqueFd(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!t.master_)
        return system_error_errno("Failed to open a pseudo-terminal (posix_openpt)");
    if (::grantpt(t.master_.get()) < 0 || ::unlockpt(t.master_.get()) < 0)
        return system_error_errno("Failed to unlock the pseudo-terminal");
    char name[128];
    if (::ptsname_r(t.master_.get(), name, sizeof name) != 0)
        return system_error_errno("Failed to name the pseudo-terminal");
    t.slave_ = UniqueFd(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!t.slave_)
        return system_error_errno(std::string("Failed to open '") + name + "'");
    t.copy_window_size();
    if (::isatty(STDIN_FILENO)) {
        termios mode{};
        if (::tcgetattr(STDIN_FILENO, &mode) == 0) {
            t.saved_ = mode;
            ::cfmakeraw(&mode);
            ::tcsetattr(STDIN_FILENO, TCSANOW, &mode);
        }
    }
    return t;
}

RunTerminal::RunTerminal(RunTerminal&& other) noexcept
    : master_(std::move(other.master_)),
      slave_(std::move(other.slave_)),
      saved_(std::exchange(other.saved_, std::nullopt))
{
}

RunTerminal::~RunTerminal()
{
    if (saved_)
        ::tcsetattr(STDIN_FILENO, TCSADRAIN, &*saved_);
}

void RunTerminal::copy_window_size() const
{
    winsize size{};
    for (int fd : {STDIN_FILENO, STDOUT_FILENO}) {
        if (::ioctl(fd, TIOCGWINSZ, &size) == 0) {
            ::ioctl(master_.get(), TIOCSWINSZ, &size);
            return;
        }
    }
}

}  // namespace nps::cli
