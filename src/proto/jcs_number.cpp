// SPDX-License-Identifier: Apache-2.0
// ECMAScript Number::toString (ECMA-262 §6.1.6.1.20) for RFC 8785 §3.2.2.3.
#include "nps/proto/jcs.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace nps::proto {

std::string jcs_format_number(double value)
{
    if (value == 0)
        return "0";  // also -0
    if (!std::isfinite(value))
        return "null";

    // Shortest round-trip digits in scientific form: [-]d[.ddd]e(+|-)xx.
    char buf[64];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
    if (ec != std::errc{})
        return "null";  // unreachable: 64 bytes always suffice for a double
    const std::string_view text(buf, static_cast<std::size_t>(end - buf));

    const bool negative = text.front() == '-';
    const std::size_t e_pos = text.find('e');
    std::string digits;
    for (char c : text.substr(negative ? 1 : 0, e_pos - (negative ? 1 : 0)))
        if (c != '.')
            digits.push_back(c);
    int exponent = 0;
    std::from_chars(text.data() + e_pos + 1 + (text[e_pos + 1] == '+' ? 1 : 0), text.data() + text.size(),
                    exponent);

    // value = 0.d1d2…dk × 10^n in ECMAScript's terms.
    const int k = static_cast<int>(digits.size());
    const int n = exponent + 1;
    std::string out = negative ? "-" : "";
    if (k <= n && n <= 21) {
        out += digits;
        out.append(static_cast<std::size_t>(n - k), '0');
    } else if (0 < n && n <= 21) {
        out += digits.substr(0, static_cast<std::size_t>(n));
        out += '.';
        out += digits.substr(static_cast<std::size_t>(n));
    } else if (-6 < n && n <= 0) {
        out += "0.";
        out.append(static_cast<std::size_t>(-n), '0');
        out += digits;
    } else {
        out += digits.front();
        if (k > 1) {
            out += '.';
            out += digits.substr(1);
        }
        out += 'e';
        out += (n - 1 >= 0) ? '+' : '-';
        out += std::to_string(std::abs(n - 1));
    }
    return out;
}

}  // namespace nps::proto
