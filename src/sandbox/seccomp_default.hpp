// SPDX-License-Identifier: Apache-2.0
// The default seccomp program, compiled at build time by seccomp-generate
// (seccomp_generate.cpp) for the target architecture from the same allowlist
// SeccompProgram::compile uses; absent (NPS_SECCOMP_PREBUILT undefined) in
// the generator itself, where default_program() compiles it at run time.
#pragma once

#include <linux/filter.h>

#include <cstddef>

namespace nps::sandbox::detail {

extern const sock_filter kDefaultSeccompFilter[];
extern const std::size_t kDefaultSeccompFilterLength;

}  // namespace nps::sandbox::detail
