// SPDX-License-Identifier: Apache-2.0
// Text from workers (results, errors, messages, logs, node ids) made safe to
// write to a terminal: every byte or character a terminal could act on is
// replaced by a visible escape, so nothing is lost and nothing is obeyed.
//
// Escaped: C0 controls (U+0000–U+001F) except those `keep` lets through,
// DEL (\x7f), C1 controls (U+0080–U+009F, among them U+009B, the one-byte
// CSI) as \u0080…\u009f, the bidirectional overrides and isolates
// (U+202A–U+202E, U+2066–U+2069) as \u202e etc., and every byte that is not
// part of valid UTF-8 (a lone 0x9b is CSI to an 8-bit terminal) as \xNN.
// C0 and DEL are written \xNN (\x1b for ESC). Printable text, valid UTF-8
// included, passes unchanged; a backslash is not escaped, so a literal
// "\x1b" in the input reads the same as an escaped ESC (use --raw or --json
// for the exact bytes).
#pragma once

#include <string>
#include <string_view>

namespace nps {

enum class KeepControls {
    none,              // one-line fields: \n and \t are escaped too
    newline_and_tab,   // multi-line text (logs): \n and \t pass
};

std::string escape_terminal(std::string_view text, KeepControls keep = KeepControls::none);

}  // namespace nps
