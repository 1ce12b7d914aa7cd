// SPDX-License-Identifier: Apache-2.0
// The `serve` daemon: opens the store, starts the HTTP API on TCP and the
// unix socket, and runs the main event loop (epoll over a signalfd and a
// housekeeping timerfd) until SIGTERM/SIGINT. SIGHUP reloads the
// configuration through `reload` (config/reload.hpp says which keys take
// effect; the rest are logged as needing a restart).
//
// At start the state directory's modes are tightened and, with
// api.require_token (the default) and no api.token, the bearer token is read
// from — or generated into — <state_dir>/api.token (daemon/access.hpp).
//
// Startup refuses, with a message saying why: a non-loopback TCP listener
// without a token, an unusable state directory, a store whose schema is
// newer than this binary.
#pragma once

#include <functional>

#include "nps/base/result.hpp"
#include "nps/config/config.hpp"
#include "nps/executor/executor_options.hpp"
#include "nps/report/deliverer.hpp"

namespace nps::daemon {

// Produces the configuration as `serve` would at start (file, then flags).
using ConfigLoader = std::function<Result<config::Config>()>;

// The executor's options under `config`: [runner], [workers], [sandbox],
// [images] pulls and [spawn].
executor::ExecutorOptions executor_options(const config::Config& config);

// The deliverer's options under `config`: [report], with the task store of
// [store] and leases named after runner.nid (notice_deposited and resolver
// are the caller's).
report::DelivererOptions deliverer_options(const config::Config& config);

// Runs until a termination signal; returns an error if startup fails.
// `reload` may be empty: SIGHUP is then logged and ignored.
Result<void> run(config::Config config, ConfigLoader reload = {});

}  // namespace nps::daemon
