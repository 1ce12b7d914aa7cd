// SPDX-License-Identifier: Apache-2.0
#include "nps/base/terminal_text.hpp"

#include <cstdint>
#include <cstdio>

namespace nps {

namespace {

void append_byte_escape(std::string& out, unsigned char byte)
{
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "\\x%02x", byte);
    out += buffer;
}

void append_code_point_escape(std::string& out, std::uint32_t cp)
{
    char buffer[12];
    std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(cp));
    out += buffer;
}

// The length of the valid UTF-8 sequence at text[i] and its code point, or 0
// when the bytes there are not one (overlong, surrogate, past U+10FFFF, cut).
std::size_t decode_utf8(std::string_view text, std::size_t i, std::uint32_t& cp)
{
    const auto b0 = static_cast<unsigned char>(text[i]);
    std::size_t n = 0;
    std::uint32_t min = 0;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
        n = 2, cp = b0 & 0x1fu, min = 0x80;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
        n = 3, cp = b0 & 0x0fu, min = 0x800;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        n = 4, cp = b0 & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if (i + n > text.size())
        return 0;
    for (std::size_t k = 1; k < n; ++k) {
        const auto b = static_cast<unsigned char>(text[i + k]);
        if ((b & 0xc0u) != 0x80u)
            return 0;
        cp = (cp << 6) | (b & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

bool is_bidi_control(std::uint32_t cp)
{
    return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string escape_terminal(std::string_view text, KeepControls keep)
{
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if (byte < 0x80) {
            const bool kept = keep == KeepControls::newline_and_tab && (byte == '\n' || byte == '\t');
            if ((byte < 0x20 && !kept) || byte == 0x7f)
                append_byte_escape(out, byte);
            else
                out += static_cast<char>(byte);
            ++i;
            continue;
        }
        std::uint32_t cp = 0;
        const std::size_t n = decode_utf8(text, i, cp);
        if (n == 0) {
            append_byte_escape(out, byte);
            ++i;
            continue;
        }
        if (cp <= 0x9f || is_bidi_control(cp))
            append_code_point_escape(out, cp);
        else
            out.append(text.substr(i, n));
        i += n;
    }
    return out;
}

}  // namespace nps
