// SPDX-License-Identifier: Apache-2.0
// The `serve` daemon: opens the store, starts the HTTP API on TCP and the
// unix socket, and runs the main event loop (epoll over a signalfd and a
// housekeeping timerfd) until SIGTERM/SIGINT.
//
// Startup refuses, with a message saying why: a non-loopback TCP listener
// without api.token, an unusable state directory, a store whose schema is
// newer than this binary.
#pragma once

#include "nps/base/result.hpp"
#include "nps/config/config.hpp"

namespace nps::daemon {

// Runs until a termination signal; returns an error if startup fails.
Result<void> run(const config::Config& config);

}  // namespace nps::daemon
