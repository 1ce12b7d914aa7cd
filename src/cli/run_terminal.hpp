// SPDX-License-Identifier: Apache-2.0
// `run -t`: a pseudo-terminal of the sandbox's own. The command gets the pty's
// slave side as stdin, stdout, stderr and controlling terminal; we relay our
// stdin to the master and the master to our stdout. While it exists, our own
// terminal (when stdin is one) is in raw mode, so keys such as ^C reach the
// command's terminal, which turns them into signals; the window size follows
// ours (SIGWINCH). The destructor restores our terminal.
#pragma once

#include <termios.h>

#include <optional>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::cli {

class RunTerminal {
public:
    static Result<RunTerminal> open();
    RunTerminal(RunTerminal&&) noexcept;
    RunTerminal& operator=(RunTerminal&&) = delete;
    ~RunTerminal();

    int master() const { return master_.get(); }
    int slave() const { return slave_.get(); }
    // After the spawn: only the command holds the slave side.
    void close_slave() { slave_.reset(); }
    // The master's window size from our terminal's (no-op without one).
    void copy_window_size() const;

private:
    RunTerminal() = default;

    UniqueFd master_, slave_;
    std::optional<termios> saved_;  // our terminal's mode, restored at the end
};

}  // namespace nps::cli
