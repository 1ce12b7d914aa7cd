// SPDX-License-Identifier: Apache-2.0
// ASCII case folding for protocol tokens (header names, media types, host
// names, state names): locale-independent, bytes >= 0x80 unchanged.
#pragma once

#include <string>
#include <string_view>

namespace nps {

std::string ascii_lower(std::string_view text);
constexpr char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
std::string ascii_upper(std::string_view text);
constexpr char ascii_upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

}  // namespace nps
