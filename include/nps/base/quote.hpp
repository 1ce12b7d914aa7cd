// SPDX-License-Identifier: Apache-2.0
// Untrusted text inside an error message: 'text' in single quotes, control
// bytes, quotes and backslashes escaped as \xNN, cut after 64 bytes with
// "..." so that the message stays one short log line whatever it quotes.
#pragma once

#include <string>
#include <string_view>

namespace nps {

std::string quote_text(std::string_view text);

}  // namespace nps
