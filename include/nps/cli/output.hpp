// SPDX-License-Identifier: Apache-2.0
// How the client verbs print what came from the daemon. Strings that may
// hold worker-supplied text (results, errors, messages, logs, node ids) go
// through escape_terminal (nps/base/terminal_text.hpp) unless the user asked
// for --raw; that holds whether or not stdout is a terminal, since output
// piped to a file or pager often ends on one all the same. --json output is
// printed with every non-ASCII character as \uXXXX (valid JSON, same value),
// so C1 controls and bidi overrides never reach the terminal either.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "nps/base/terminal_text.hpp"

namespace nps::cli {

struct Output {
    bool raw = false;  // --raw: print the bytes as they came

    // One-line text: every control character escaped.
    std::string text(std::string_view value) const;
    // A JSON value as one line: a string as its text, null as "-", anything
    // else as compact JSON.
    std::string field(const nlohmann::json& value) const;
    // Multi-line text (a log): newlines and tabs kept.
    void write_text(std::string_view value) const;
    // The value as indented JSON and a newline.
    void print_json(const nlohmann::json& value) const;
};

}  // namespace nps::cli
