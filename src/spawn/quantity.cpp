// SPDX-License-Identifier: Apache-2.0
#include "nps/spawn/quantity.hpp"

#include <limits>
#include <string>

namespace nps::spawn {
namespace {

using u128 = unsigned __int128;

// Longer inputs are not quantities anybody means; the bound also keeps the
// digit accumulator far from overflow.
constexpr std::size_t kMaxQuantityChars = 64;
constexpr u128 kMax = static_cast<u128>(std::numeric_limits<std::int64_t>::max());

struct Scale {
    int pow10 = 0;
    int pow2 = 0;
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Parses the suffix; false when it is not one of the grammar's.
bool parse_suffix(std::string_view s, Scale& scale)
{
    if (s.empty())
        return true;
    if (s.size() == 2 && s[1] == 'i') {
        static constexpr std::string_view kBinary = "KMGTPE";
        auto pos = kBinary.find(s[0]);
        if (pos == std::string_view::npos)
            return false;
        scale.pow2 = 10 * static_cast<int>(pos + 1);
        return true;
    }
    if (s.size() == 1) {
        switch (s[0]) {
        case 'n': scale.pow10 = -9; return true;
        case 'u': scale.pow10 = -6; return true;
        case 'm': scale.pow10 = -3; return true;
        case 'k': scale.pow10 = 3; return true;
        case 'M': scale.pow10 = 6; return true;
        case 'G': scale.pow10 = 9; return true;
        case 'T': scale.pow10 = 12; return true;
        case 'P': scale.pow10 = 15; return true;
        case 'E': scale.pow10 = 18; return true;
        default: return false;
        }
    }
    if (s[0] != 'e' && s[0] != 'E')
        return false;
    std::string_view exp = s.substr(1);
    bool negative = false;
    if (!exp.empty() && (exp[0] == '+' || exp[0] == '-')) {
        negative = exp[0] == '-';
        exp.remove_prefix(1);
    }
    if (exp.empty() || exp.size() > 3)
        return false;
    int value = 0;
    for (char c : exp) {
        if (!is_digit(c))
            return false;
        value = value * 10 + (c - '0');
    }
    scale.pow10 = negative ? -value : value;
    return true;
}

// Parses `text` and returns its value multiplied by 10^unit_pow10, which
// must be a whole number within int64.
Result<std::int64_t> parse_quantity(std::string_view text, int unit_pow10,
                                    std::string_view kind, std::string_view unit)
{
    auto fail = [&](std::string_view why) {
        return internal_error("Invalid " + std::string(kind) + " quantity '" + std::string(text) +
                              "': " + std::string(why));
    };
    if (text.empty())
        return fail("empty");
    if (text.size() > kMaxQuantityChars)
        return fail("too long");

    std::size_t i = 0;
    u128 mantissa = 0;
    int frac_digits = 0;
    std::size_t int_digits = 0;
    for (; i < text.size() && is_digit(text[i]); ++i, ++int_digits)
        mantissa = mantissa * 10 + static_cast<unsigned>(text[i] - '0');
    if (int_digits == 0)
        return fail("expected a number");
    if (i < text.size() && text[i] == '.') {
        ++i;
        std::size_t start = i;
        for (; i < text.size() && is_digit(text[i]); ++i, ++frac_digits)
            mantissa = mantissa * 10 + static_cast<unsigned>(text[i] - '0');
        if (i == start)
            return fail("expected digits after '.'");
    }
    // 64 chars hold at most 63 digits: trim the accumulator's domain early.
    if (int_digits + static_cast<std::size_t>(frac_digits) > 36)
        return fail("too many digits");

    Scale scale;
    if (!parse_suffix(text.substr(i), scale))
        return fail("unknown suffix '" + std::string(text.substr(i)) + "'");

    int pow10 = scale.pow10 + unit_pow10 - frac_digits;
    u128 value = mantissa;
    for (int k = 0; k < scale.pow2; ++k) {
        value <<= 1;
        if (value > kMax)
            return fail("out of range");
    }
    if (pow10 >= 0) {
        for (int k = 0; k < pow10 && value != 0; ++k) {
            value *= 10;
            if (value > kMax)
                return fail("out of range");
        }
    } else {
        for (int k = 0; k < -pow10 && value != 0; ++k) {
            if (value % 10 != 0)
                return fail("not a whole number of " + std::string(unit));
            value /= 10;
        }
    }
    if (value > kMax)
        return fail("out of range");
    return static_cast<std::int64_t>(value);
}

}  // namespace

Result<std::int64_t> parse_cpu_millicores(std::string_view text)
{
    return parse_quantity(text, 3, "CPU", "millicores");
}

Result<std::int64_t> parse_memory_bytes(std::string_view text)
{
    return parse_quantity(text, 0, "memory", "bytes");
}

std::string format_cpu_quantity(std::int64_t millicores)
{
    if (millicores % 1000 == 0)
        return std::to_string(millicores / 1000);
    return std::to_string(millicores) + "m";
}

std::string format_memory_quantity(std::int64_t bytes)
{
    static constexpr const char* kSuffixes[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
    for (int i = 0; i < 6; ++i) {
        const std::int64_t unit = std::int64_t{1} << (10 * (6 - i));
        if (bytes != 0 && bytes % unit == 0)
            return std::to_string(bytes / unit) + kSuffixes[i];
    }
    return std::to_string(bytes);
}

}  // namespace nps::spawn
