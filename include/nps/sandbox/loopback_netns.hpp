// SPDX-License-Identifier: Apache-2.0
// LoopbackNetns: one network namespace whose only interface is loopback (up),
// made once and joined by every Network::none sandbox that is given its fd.
//
// Why shared: a namespace per worker costs its creation and, worse, a
// synchronize_net() in the kernel's cleanup when the last process leaves it.
// The price: workers in the shared namespace can reach each other's
// loopback listeners (they still reach nothing else). Spawns that must not
// share (and `nps-runner run`, which spawns once) use a private namespace
// instead (SandboxSpec::netns_fd = -1). docs/sandbox.md discusses it.
#pragma once

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::sandbox {

class LoopbackNetns {
public:
    // Creates the namespace from a short-lived thread (unshare affects only
    // the calling thread), brings lo up there and keeps it alive by an fd.
    static Result<LoopbackNetns> create();

    // An fd of /proc/<tid>/ns/net for setns(2).
    int fd() const { return fd_.get(); }

private:
    explicit LoopbackNetns(UniqueFd fd) : fd_(std::move(fd)) {}
    UniqueFd fd_;
};

}  // namespace nps::sandbox
