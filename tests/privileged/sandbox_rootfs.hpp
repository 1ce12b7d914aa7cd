// SPDX-License-Identifier: Apache-2.0
// Test support for the privileged suite: a busybox root filesystem, built
// once per test binary, and a `nps-runner run` helper over it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "runner_process.hpp"

namespace nps::test {

// Why the sandbox tests cannot run here (not root, no namespaces, no
// busybox), or "" when they can.
std::string sandbox_unavailable_reason();

// Why sandboxes cannot have a user namespace here (the probe `run` and the
// daemon use, with the default id range and a directory rootfs), or "".
// The cases that need one are in TEST_SUITE("userns"); sandbox_main.cpp
// leaves them out, saying why, where this is not "".
std::string user_namespace_unavailable_reason();

// The rootfs directory (bin/ with busybox and its applets, proc, dev, tmp, etc).
const std::string& busybox_rootfs();

// Copies the host file `source` to `path` (relative, e.g. "bin/probe")
// inside busybox_rootfs(), owned by root with exactly `mode` (setuid bits
// included). Replaces an existing file.
void install_in_rootfs(const std::string& source, const std::string& path, mode_t mode);

// nps-runner run --rootfs <busybox> [extra...] -- /bin/sh -c <script>
CommandResult run_sh(const std::string& script, const std::vector<std::string>& extra = {});

}  // namespace nps::test
