// SPDX-License-Identifier: Apache-2.0
// Kubernetes resource quantities, parsed strictly.
//
// Grammar: <digits>[.<digits>] followed by at most one of
//   binary suffixes  Ki Mi Gi Ti Pi Ei        (powers of 1024)
//   decimal suffixes n u m k M G T P E         (powers of 1000)
//   an exponent      e<int> | E<int>           (power of ten)
// No sign, no spaces, no empty mantissa ("." or ".5" with no integer digits
// is refused, as is "5."). The result must be a whole number of the target
// unit (millicores, bytes) and fit in int64; otherwise an error names the
// text ("Invalid memory quantity '1.5': not a whole number of bytes").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "nps/base/result.hpp"

namespace nps::spawn {

// "500m" → 500, "1" → 1000, "0.5" → 500, "2.5k" → 2'500'000.
Result<std::int64_t> parse_cpu_millicores(std::string_view text);

// "512Mi" → 536870912, "1G" → 10^9, "1e3" → 1000, "129M" → 129'000'000.
Result<std::int64_t> parse_memory_bytes(std::string_view text);

// The shortest exact spelling: 1500 → "1500m", 2000 → "2".
std::string format_cpu_quantity(std::int64_t millicores);
// In the largest exact binary unit: 536870912 → "512Mi"; else bytes ("1000").
std::string format_memory_quantity(std::int64_t bytes);

}  // namespace nps::spawn
