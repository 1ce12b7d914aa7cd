// SPDX-License-Identifier: Apache-2.0
// Layer digests as they appear in image configs: "sha256:<64 lowercase hex>".
#pragma once

#include <string>
#include <string_view>

#include "nps/base/result.hpp"

namespace nps::image::detail {

// The hex part of a well-formed sha256 digest; any other algorithm or form
// is an error naming the digest.
Result<std::string> sha256_hex_of(std::string_view digest);

}  // namespace nps::image::detail
