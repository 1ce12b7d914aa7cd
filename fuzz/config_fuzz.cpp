// SPDX-License-Identifier: Apache-2.0
// Fuzzes the configuration reader: any text must give a Config or an error
// naming what is wrong, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nps/config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::string text(reinterpret_cast<const char*>(data), size);
    auto config = nps::config::parse_config(text, "fuzz.toml");
    if (!config)
        (void)config.error().describe();
    return 0;
}
