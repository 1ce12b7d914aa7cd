// SPDX-License-Identifier: Apache-2.0
// Internal: the per-field SpawnSpec rules, shared by the JSON decoder and
// validate_spawn_spec(). Each check returns the problem without the field
// path; spec_error() adds it.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "nps/base/quote.hpp"
#include "nps/base/result.hpp"

namespace nps::spawn::detail {

inline constexpr std::int64_t kMaxTimeoutSeconds = std::numeric_limits<std::int32_t>::max();

// NOP-SPAWN-SPEC-INVALID "<path>: <problem>".
Error spec_error(std::string_view path, std::string_view problem);

// Untrusted text in a message (base/quote.hpp).
using nps::quote_text;

Result<void> check_image(std::string_view image);                       // path "image"
Result<void> check_argument(std::string_view argument, bool first);     // path "command[i]"
Result<void> check_env_name(std::string_view name);                     // path "env"
Result<void> check_env_value(std::string_view value);                   // path "env.NAME"
Result<void> check_cpu_millicores(std::int64_t millicores);
Result<void> check_memory_bytes(std::int64_t bytes);
Result<void> check_timeout_seconds(std::int64_t seconds);

// The rules that involve several fields (idle ≤ max).
Result<void> check_timeouts_together(std::int64_t idle_seconds, std::int64_t max_seconds);

}  // namespace nps::spawn::detail
