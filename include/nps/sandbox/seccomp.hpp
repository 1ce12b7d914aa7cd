// SPDX-License-Identifier: Apache-2.0
// The sandbox's seccomp filter, compiled once and shared by every spawn.
//
// The default is an allowlist in the spirit of the usual container default
// (docs/sandbox.md lists what it refuses): anything not allowed fails with
// EPERM; clone is allowed only without namespace flags; clone3 answers ENOSYS
// so libc falls back to clone, whose flags a filter can inspect; socket is
// allowed for unix, inet, inet6, netlink and packet only. The operator may
// allow more system calls by name (config: sandbox.seccomp_allow); clone,
// clone3 and socket keep their rules whatever the configuration says.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nps/base/result.hpp"

namespace nps::sandbox {

class SeccompProgram {
public:
    // Compiles the default allowlist plus `extra_allowed` (system call names
    // for this architecture). An unknown name, or clone/clone3/socket, is an error.
    static Result<std::shared_ptr<const SeccompProgram>> compile(const std::vector<std::string>& extra_allowed);

    // The default allowlist compiled for `arch`, a libseccomp architecture
    // name ("x86_64", "aarch64", "arm", ...): what the build-time generator
    // writes for the target of a (cross) build and what the per-architecture
    // tests evaluate. The program admits only that architecture's system calls.
    static Result<std::shared_ptr<const SeccompProgram>> compile_for_architecture(const std::string& arch);

    // The default program (no extras): built in at build time, or compiled
    // on first use; thread-safe.
    static Result<std::shared_ptr<const SeccompProgram>> default_program();

    // The classic BPF program for prctl(PR_SET_SECCOMP); valid while *this is.
    const sock_fprog* program() const { return &fprog_; }

private:
    SeccompProgram() = default;
    // `arch` is a libseccomp architecture token (SCMP_ARCH_*).
    static Result<std::shared_ptr<const SeccompProgram>> compile(const std::vector<std::string>& extra_allowed,
                                                                 std::uint32_t arch);

    std::vector<sock_filter> code_;
    sock_fprog fprog_{};
};

}  // namespace nps::sandbox
