// SPDX-License-Identifier: Apache-2.0
#include "nps/net/http_target.hpp"

namespace nps::net {

namespace {

int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

}  // namespace

std::size_t percent_decode_in_place(char* text, std::size_t size)
{
    std::size_t out = 0;
    for (std::size_t in = 0; in < size; ++in) {
        if (text[in] == '%' && size - in > 2) {
            const int high = hex_value(text[in + 1]);
            const int low = hex_value(text[in + 2]);
            if (high >= 0 && low >= 0) {
                text[out++] = static_cast<char>(high * 16 + low);
                in += 2;
                continue;
            }
        }
        text[out++] = text[in];
    }
    return out;
}

std::string percent_decode(std::string_view text)
{
    std::string out(text);
    out.resize(percent_decode_in_place(out.data(), out.size()));
    return out;
}

bool is_clean_target_text(std::string_view decoded)
{
    std::size_t i = 0;
    while (i < decoded.size()) {
        const auto byte = static_cast<unsigned char>(decoded[i]);
        if (byte < 0x20 || byte == 0x7f)
            return false;
        if (byte < 0x80) {
            ++i;
            continue;
        }
        std::size_t length = 0;
        char32_t code = 0;
        char32_t least = 0;
        if ((byte & 0xe0) == 0xc0) {
            length = 2, code = byte & 0x1f, least = 0x80;
        } else if ((byte & 0xf0) == 0xe0) {
            length = 3, code = byte & 0x0f, least = 0x800;
        } else if ((byte & 0xf8) == 0xf0) {
            length = 4, code = byte & 0x07, least = 0x10000;
        } else {
            return false;  // a continuation byte first, or 0xf8..0xff
        }
        if (decoded.size() - i < length)
            return false;
        for (std::size_t k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(decoded[i + k]);
            if ((next & 0xc0) != 0x80)
                return false;
            code = (code << 6) | (next & 0x3f);
        }
        if (code < least || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
            return false;
        i += length;
    }
    return true;
}

}  // namespace nps::net
