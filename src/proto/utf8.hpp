// SPDX-License-Identifier: Apache-2.0
// Internal: UTF-8 decoding helpers shared by JCS (key order) and the
// TaskFrame decoder (length limits counted in characters).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace nps::proto::detail {

// UTF-16 code units of well-formed UTF-8; nullopt on malformed input,
// overlong forms, surrogate code points or values above U+10FFFF.
std::optional<std::u16string> utf8_to_utf16(std::string_view text);

// Number of Unicode code points in well-formed UTF-8; nullopt if malformed.
std::optional<std::size_t> utf8_length(std::string_view text);

}  // namespace nps::proto::detail
