// SPDX-License-Identifier: Apache-2.0
// Internal: quoting untrusted text inside error messages.
#pragma once

#include <string>
#include <string_view>

#include "nps/base/quote.hpp"

namespace nps::proto::detail {

// Untrusted text in a message: nps::quote_text (base/quote.hpp).
using nps::quote_text;

// "parent.key" (or "key" when parent is empty); a key that is not a plain
// identifier is written as parent['key'].
std::string member_path(std::string_view parent, std::string_view key);
// "parent[index]".
std::string index_path(std::string_view parent, std::size_t index);

}  // namespace nps::proto::detail
