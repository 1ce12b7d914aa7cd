// SPDX-License-Identifier: Apache-2.0
// Fuzzes what `image pull` parses from the operator and from registries:
// pull references, WWW-Authenticate challenges and token answers. Any bytes
// must give a value or an error, never a crash; a parsed reference's
// default name must be a valid store name.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nps/image/reference.hpp"
#include "nps/image/registry_auth.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    if (auto ref = nps::image::parse_image_reference(text)) {
        if (!nps::image::parse_image_name(ref->default_name()))
            __builtin_trap();
        if (ref->manifest_reference().empty())
            __builtin_trap();
    }
    if (auto challenges = nps::image::parse_www_authenticate(text)) {
        for (const auto& c : *challenges)
            if (c.scheme.empty())
                __builtin_trap();
    }
    (void)nps::image::parse_token_response(text, "fuzz");
    return 0;
}
