// SPDX-License-Identifier: Apache-2.0
// Fuzzes the Kubernetes quantity parser: any text is a non-negative value or
// an error naming the text, never a crash or an overflow (UBSan).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nps/spawn/quantity.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    for (auto parse : {&nps::spawn::parse_cpu_millicores, &nps::spawn::parse_memory_bytes}) {
        auto value = parse(text);
        if (value && *value < 0)
            __builtin_trap();
        if (!value && value.error().message.empty())
            __builtin_trap();
    }
    return 0;
}
