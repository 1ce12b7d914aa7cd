// SPDX-License-Identifier: Apache-2.0
// Fuzzes the parsers of an image's JSON documents (manifest, index, config):
// any bytes must give a value or an error naming what is wrong, never a
// crash; what parses must serialize and parse back.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nps/image/image_config.hpp"
#include "nps/image/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    (void)nps::image::document_kind(text, "", "fuzz");
    if (auto m = nps::image::parse_manifest(text, "", "fuzz")) {
        auto again = nps::image::parse_manifest(nps::image::serialize_manifest(*m), m->media_type, "fuzz");
        if (!again)
            __builtin_trap();
    }
    (void)nps::image::parse_index(text, "", "fuzz");
    (void)nps::image::parse_image_config(text, "fuzz");
    return 0;
}
