// SPDX-License-Identifier: Apache-2.0
#include "json_text.hpp"

#include <cstddef>

namespace nps::proto::detail {

namespace {

constexpr std::size_t kFirstWideDigitCount = 20;  // 19 digits always fit in uint64

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Skips a string literal starting at text[pos] == '"'; returns the index
// after its closing quote (or text.size() if unterminated).
std::size_t skip_string(std::string_view text, std::size_t pos)
{
    for (++pos; pos < text.size(); ++pos) {
        if (text[pos] == '\\')
            ++pos;
        else if (text[pos] == '"')
            return pos + 1;
    }
    return text.size();
}

struct NumberToken {
    std::size_t end = 0;          // index after the token
    std::size_t int_digits = 0;   // digits before any fraction or exponent
    bool plain_integer = true;    // no fraction, no exponent
};

NumberToken scan_number(std::string_view text, std::size_t pos)
{
    NumberToken token;
    if (text[pos] == '-')
        ++pos;
    while (pos < text.size() && is_digit(text[pos]))
        ++pos, ++token.int_digits;
    if (pos < text.size() && text[pos] == '.') {
        token.plain_integer = false;
        for (++pos; pos < text.size() && is_digit(text[pos]);)
            ++pos;
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
        token.plain_integer = false;
        ++pos;
        if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
            ++pos;
        while (pos < text.size() && is_digit(text[pos]))
            ++pos;
    }
    token.end = pos;
    return token;
}

}  // namespace

std::optional<std::string> widen_big_integers(std::string_view text)
{
    std::optional<std::string> out;
    std::size_t copied = 0;  // text[0, copied) is already in *out
    std::size_t pos = 0;
    while (pos < text.size()) {
        const char c = text[pos];
        if (c == '"') {
            pos = skip_string(text, pos);
        } else if (c == '-' || is_digit(c)) {
            const NumberToken token = scan_number(text, pos);
            // 19 digits fit in uint64 but not always in int64: a negative
            // one below INT64_MIN must be widened too.
            const bool below_int64 = c == '-' && token.int_digits == kFirstWideDigitCount - 1 &&
                                     text.substr(pos + 1, token.int_digits) > "9223372036854775808";
            if (token.plain_integer && (token.int_digits >= kFirstWideDigitCount || below_int64)) {
                if (!out)
                    out.emplace().reserve(text.size() + 16);
                out->append(text.substr(copied, token.end - copied));
                out->append(".0");
                copied = token.end;
            }
            pos = token.end > pos ? token.end : pos + 1;
        } else {
            ++pos;
        }
    }
    if (out)
        out->append(text.substr(copied));
    return out;
}

}  // namespace nps::proto::detail
