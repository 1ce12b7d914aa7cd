// SPDX-License-Identifier: Apache-2.0
// SpawnSpec (NPS-CR-0007 §5, NPS-5 §8.2): what a runner needs to start an
// ephemeral worker. parse_spawn_spec() reads one from untrusted JSON and
// validates every field; docs/spawnspec.md records each decision.
//
// Accepted document (a JSON object; explicit null = absent):
//   image                 string, required: an OCI reference
//                         "name[:tag][@sha256:<64 hex>]" (image/reference.hpp
//                         names; a host may carry a port)
//   command               array of 1..kMaxSpawnSpecArgs strings, no NUL
//   env                   object name → string; names [A-Za-z_][A-Za-z0-9_]*,
//                         not starting with "NPS_" (the runner's own), values
//                         without NUL; at most kMaxSpawnSpecEnv entries
//   resource_limits       object:
//     cpu                 string, Kubernetes quantity ≥ 10m (quantity.hpp)
//     memory              string, Kubernetes quantity ≥ 1 MiB
//     cgn_budget          integer ≥ 0
//   idle_timeout_seconds  integer 1..2^31-1
//   max_runtime_seconds   integer 1..2^31-1, and ≥ idle_timeout_seconds
//   "x-…" members         (top level or in resource_limits) kept as extensions
//                         and otherwise ignored
// NDP §3.1.2 aliases, normalised: `oci_image` for image;
// resource_limits.`cpu_millicores` (integer ≥ 10) for cpu and
// resource_limits.`memory_mb` (integer MiB ≥ 1) for memory. Giving both a
// field and its alias is an error. Any other member is an error, as are
// duplicate keys, non-UTF-8 text and nesting deeper than
// kMaxSpawnSpecJsonDepth.
//
// Every failure is NOP-SPAWN-SPEC-INVALID with a message naming the field:
// "resource_limits.memory: Invalid memory quantity '1.5': not a whole number of bytes".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/proto/error_codes.hpp"

namespace nps::spawn {

inline constexpr const char* kSpawnSpecInvalid = proto::code::kNopSpawnSpecInvalid;

struct SpawnSpec {
    std::string image;                          // OCI reference, as written
    std::vector<std::string> command{};         // empty: the image's entrypoint and cmd
    std::map<std::string, std::string> env{};   // added to the worker's environment
    std::optional<std::int64_t> cpu_millicores{};
    std::optional<std::int64_t> memory_bytes{};
    std::optional<std::int64_t> cgn_budget{};   // exported as NPS_CGN_BUDGET
    std::optional<std::uint32_t> idle_timeout_seconds{};  // absent: runner policy
    std::optional<std::uint32_t> max_runtime_seconds{};   // absent: runner policy
    // "x-…" members: name → compact JSON text. Kept for tooling; the runner
    // does not act on them. Names from resource_limits are prefixed
    // "resource_limits.".
    std::map<std::string, std::string> extensions{};

    bool operator==(const SpawnSpec&) const = default;
};

// Parses and validates a SpawnSpec JSON document of at most max_bytes bytes.
Result<SpawnSpec> parse_spawn_spec(std::string_view json_text, std::size_t max_bytes);

// Validates a SpawnSpec built in code (the same field rules as the parser).
Result<void> validate_spawn_spec(const SpawnSpec& spec);

// The normalised document, in CR-0007 names only: aliases replaced, absent
// fields omitted, cpu written as "<n>" cores or "<n>m", memory in its largest
// exact binary unit ("512Mi", else bytes), extensions at their place.
// parse_spawn_spec() of the result gives back an equal SpawnSpec (numbers
// inside extensions may be re-formatted, e.g. 1e2 as 100.0).
std::string spawn_spec_to_json(const SpawnSpec& spec);

// True for "name[:tag][@sha256:hex]" as described above.
bool is_valid_image_reference(std::string_view reference);

}  // namespace nps::spawn
