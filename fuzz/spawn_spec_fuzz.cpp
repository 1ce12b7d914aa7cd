// SPDX-License-Identifier: Apache-2.0
// Fuzzes the SpawnSpec parser: any bytes give a SpawnSpec or
// NOP-SPAWN-SPEC-INVALID, never a crash; an accepted spec passes
// validate_spawn_spec and its normalised document parses back to the same
// fields (extensions may reformat numbers, so they are compared by name).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nps/base/limits.hpp"
#include "nps/spawn/spawn_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto spec = nps::spawn::parse_spawn_spec(text, nps::limits::kDefaultSpawnSpecBytes);
    if (!spec) {
        if (spec.error().code != "NOP-SPAWN-SPEC-INVALID" && !spec.error().code.empty())
            __builtin_trap();
        return 0;
    }
    if (!nps::spawn::validate_spawn_spec(*spec))
        __builtin_trap();
    auto again = nps::spawn::parse_spawn_spec(nps::spawn::spawn_spec_to_json(*spec), nps::limits::kMaxSpawnSpecBytes);
    if (!again)
        __builtin_trap();
    auto a = *spec, b = *again;
    if (a.extensions.size() != b.extensions.size())
        __builtin_trap();
    a.extensions.clear();
    b.extensions.clear();
    if (!(a == b))
        __builtin_trap();
    return 0;
}
