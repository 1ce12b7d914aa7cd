// SPDX-License-Identifier: Apache-2.0
// Internal: quoting untrusted text inside error messages.
#pragma once

#include <string>
#include <string_view>

namespace nps::proto::detail {

// 'text' in single quotes, control bytes and quotes escaped as \xNN, cut
// after 64 bytes with "..." so an error message stays one short log line.
std::string quoted(std::string_view text);

// "parent.key" (or "key" when parent is empty); a key that is not a plain
// identifier is written as parent['key'].
std::string member_path(std::string_view parent, std::string_view key);
// "parent[index]".
std::string index_path(std::string_view parent, std::size_t index);

}  // namespace nps::proto::detail
