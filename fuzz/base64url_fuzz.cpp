// SPDX-License-Identifier: Apache-2.0
// Fuzzes the strict base64url decoder: what it accepts is canonical (encoding
// the result gives the input back, without padding), and every byte string
// survives encode → decode.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nps/base/digest.hpp"
#include "nps/spawn/spec_ref.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    if (auto decoded = nps::spawn::decode_base64url_strict(text)) {
        std::string unpadded = text;
        while (!unpadded.empty() && unpadded.back() == '=')
            unpadded.pop_back();
        if (nps::base64url_encode(*decoded) != unpadded)
            __builtin_trap();
    }
    const std::string encoded = nps::base64url_encode(text);
    if (!text.empty()) {  // the grammar needs at least one byte of payload
        auto round = nps::spawn::decode_base64url_strict(encoded);
        if (!round || *round != text)
            __builtin_trap();
    }
    return 0;
}
