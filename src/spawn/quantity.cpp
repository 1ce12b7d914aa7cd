// SPDX-License-Identifier: Apache-2.0
#include "nps/spawn/quantity.hpp"

#include <cstdint>
#include <limits>
#include <string>

namespace nps::spawn {
namespace {

// The digit accumulator: an unsigned 128-bit integer made of two 64-bit
// halves (32-bit targets have no unsigned __int128), with only what the
// parser needs. Arithmetic wraps like an unsigned type's.
class Wide {
public:
    explicit Wide(std::uint64_t low = 0) : lo_(low) {}

    // *this = *this * m + add, for m and add below 2^32.
    void multiply_add(std::uint32_t m, std::uint32_t add)
    {
        const std::uint64_t low = (lo_ & 0xffffffffu) * m + add;
        const std::uint64_t high = (lo_ >> 32) * m + (low >> 32);
        lo_ = (high << 32) | (low & 0xffffffffu);
        hi_ = hi_ * m + (high >> 32);
    }

    // *this /= d (d > 0); returns the remainder.
    std::uint32_t divide(std::uint32_t d)
    {
        std::uint64_t parts[4] = {hi_ >> 32, hi_ & 0xffffffffu, lo_ >> 32, lo_ & 0xffffffffu};
        std::uint64_t remainder = 0;
        for (auto& part : parts) {
            const std::uint64_t current = (remainder << 32) | part;
            part = current / d;
            remainder = current % d;
        }
        hi_ = (parts[0] << 32) | parts[1];
        lo_ = (parts[2] << 32) | parts[3];
        return static_cast<std::uint32_t>(remainder);
    }

    bool above(std::uint64_t max) const { return hi_ != 0 || lo_ > max; }
    bool is_zero() const { return hi_ == 0 && lo_ == 0; }
    std::uint64_t low() const { return lo_; }

private:
    std::uint64_t hi_ = 0;
    std::uint64_t lo_ = 0;
};

// Longer inputs are not quantities anybody means; the bound also keeps the
// digit accumulator far from overflow.
constexpr std::size_t kMaxQuantityChars = 64;
constexpr std::uint64_t kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

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
    Wide mantissa;
    int frac_digits = 0;
    std::size_t int_digits = 0;
    for (; i < text.size() && is_digit(text[i]); ++i, ++int_digits)
        mantissa.multiply_add(10, static_cast<std::uint32_t>(text[i] - '0'));
    if (int_digits == 0)
        return fail("expected a number");
    if (i < text.size() && text[i] == '.') {
        ++i;
        std::size_t start = i;
        for (; i < text.size() && is_digit(text[i]); ++i, ++frac_digits)
            mantissa.multiply_add(10, static_cast<std::uint32_t>(text[i] - '0'));
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
    Wide value = mantissa;
    for (int k = 0; k < scale.pow2; ++k) {
        value.multiply_add(2, 0);
        if (value.above(kMax))
            return fail("out of range");
    }
    if (pow10 >= 0) {
        for (int k = 0; k < pow10 && !value.is_zero(); ++k) {
            value.multiply_add(10, 0);
            if (value.above(kMax))
                return fail("out of range");
        }
    } else {
        for (int k = 0; k < -pow10 && !value.is_zero(); ++k) {
            Wide quotient = value;
            if (quotient.divide(10) != 0)
                return fail("not a whole number of " + std::string(unit));
            value = quotient;
        }
    }
    if (value.above(kMax))
        return fail("out of range");
    return static_cast<std::int64_t>(value.low());
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
