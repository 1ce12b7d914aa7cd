// SPDX-License-Identifier: Apache-2.0
// Random identifiers from getrandom(2).
#pragma once

#include <cstddef>
#include <string>

#include "nps/base/result.hpp"

namespace nps {

// A random (version 4) UUID in its canonical lower-case text form, e.g.
// "3f2c8a4e-9b1d-4c7e-8f00-1a2b3c4d5e6f": what `submit` and `invoke` give a
// TaskFrame that names no task_id.
Result<std::string> random_uuid();

// `bytes` random bytes as 2×bytes lower-case hex digits: secrets (API
// tokens, dashboard login codes and sessions). `what` names the secret in
// the error.
Result<std::string> random_hex(std::size_t bytes, const std::string& what);

}  // namespace nps
