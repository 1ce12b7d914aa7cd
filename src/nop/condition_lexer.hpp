// SPDX-License-Identifier: Apache-2.0
// Internal: the tokens of a condition (condition.hpp has the grammar).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/nop/json_value.hpp"

namespace nps::nop::detail {

enum class Tok {
    end,
    lparen,
    rparen,
    lbracket,
    rbracket,
    comma,
    bang,
    and_,
    or_,
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
    in,
    number,
    string,
    path,
    true_,
    false_,
    null_,
};

struct Token {
    Tok kind = Tok::end;
    std::size_t column = 0;  // 1-based, in characters
    std::string text;        // as written (for messages; the path text for Tok::path)
    Json value;              // number and string literals
};

// The whole condition as tokens, ending with Tok::end. The text has been
// checked to be valid UTF-8 of at most kMaxConditionChars characters.
Result<std::vector<Token>> lex_condition(std::string_view text);

// At most max_bytes of text (cut at a character boundary, "..." appended).
std::string cut_text(std::string_view text, std::size_t max_bytes);

// "condition: <problem>" as NOP-CONDITION-EVAL-ERROR.
Error condition_error(const std::string& problem);

// How a token reads in a message: 'x' for a symbol, the literal for the rest,
// "the end of the condition" for Tok::end.
std::string describe_token(const Token& token);

}  // namespace nps::nop::detail
