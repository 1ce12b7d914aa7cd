// SPDX-License-Identifier: Apache-2.0
// Fuzzes spawn_spec_ref handling without a network: classification, the
// announce syntax check and the spawnspec: data URI decoder, on the input as
// given and as a spawnspec: payload. A decoded payload re-encodes to the
// canonical (unpadded) form of the input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nps/base/limits.hpp"
#include "nps/spawn/spawn_spec.hpp"
#include "nps/spawn/spec_ref.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    (void)nps::spawn::classify_spawn_spec_ref(text);
    (void)nps::spawn::check_spawn_spec_ref_syntax(text);
    (void)nps::spawn::decode_spawnspec_uri(text, nps::limits::kDefaultSpawnSpecBytes);

    const std::string ref = "spawnspec:" + text;
    auto json = nps::spawn::decode_spawnspec_uri(ref, nps::limits::kDefaultSpawnSpecBytes);
    if (!json)
        return 0;
    std::string canonical = text;
    while (!canonical.empty() && canonical.back() == '=')
        canonical.pop_back();
    if (nps::spawn::encode_spawnspec_uri(*json) != "spawnspec:" + canonical)
        __builtin_trap();
    (void)nps::spawn::parse_spawn_spec(*json, nps::limits::kDefaultSpawnSpecBytes);
    return 0;
}
