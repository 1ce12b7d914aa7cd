// SPDX-License-Identifier: Apache-2.0
// A DAG node's `condition` (NPS-5 §3.1.5): the CEL subset the SDKs accept,
// parsed once and evaluated against the results of completed nodes.
//
// Grammar (loosest binding first):
//   expr     := and ( "||" and )*
//   and      := relation ( "&&" relation )*
//   relation := unary [ ( "==" | "!=" | "<" | "<=" | ">" | ">=" | "in" ) unary ]
//   unary    := "!" unary | primary
//   primary  := number | string | "true" | "false" | "null" | path
//             | "[" [ expr ( "," expr )* ] "]" | "(" expr ")"
// - number: JSON-style, optionally negative ("-0.5", "2", "1e3").
// - string: "double" or 'single' quoted; escapes \" \' \\ \/ \b \f \n \r \t
//   \uXXXX (surrogate pairs combined, lone surrogates refused).
// - path: "$.<node_id>.<field>…" (json_path.hpp; at most 8 segments). A path
//   that resolves to nothing (unknown node, missing member, a step through a
//   non-object) is null — the SDK rule, not an error (docs/dag-engine.md).
// - Comparisons do not chain ("a < b < c" is a parse error).
//
// Semantics:
// - "==" / "!=": deep equality; numbers compare as doubles whatever their
//   spelling (2 == 2.0); values of different types are unequal (true != 1,
//   null != 0); null == null.
// - "<" "<=" ">" ">=": numbers as doubles, strings by code point (UTF-8
//   bytes). A null on either side makes the comparison false. Any other pair
//   (bool, array, object, mixed types) is an evaluation error.
// - "x in y": y an array → some element == x; y an object → x is a string
//   naming one of its members (a non-string x is an error); y null → false;
//   anything else is an evaluation error.
// - "!", "&&", "||" work on truthiness and give booleans; "&&" / "||"
//   short-circuit left to right, so an error in an operand that is not
//   evaluated is no error. Truthiness: null and false are false; a number is
//   true unless 0; a string, array or object is true unless empty.
// - The whole condition is judged by the truthiness of its value; an empty
//   (or all-whitespace) condition is true.
//
// Errors, at parse or evaluation time, are NOP-CONDITION-EVAL-ERROR with a
// message naming the column (1-based, in characters) and the token, e.g.
// "condition: expected a value, got ')' at column 7". Text longer than
// limits::kMaxConditionChars characters, invalid UTF-8 and nesting of '(',
// '[' and '!' deeper than limits::kMaxConditionNesting are parse errors.
// Nothing throws.
#pragma once

#include <memory>
#include <string_view>

#include "nps/base/result.hpp"
#include "nps/nop/json_value.hpp"

namespace nps::nop {

class Condition {
public:
    static Result<Condition> parse(std::string_view text);

    // `results` maps node ids to results (the completed predecessors the
    // engine exposes); true when the node should run.
    Result<bool> evaluate(const Snapshot& results) const;

    // The empty condition.
    bool always_true() const;

    struct Program;

private:
    explicit Condition(std::shared_ptr<const Program> program) : program_(std::move(program)) {}
    std::shared_ptr<const Program> program_;
};

}  // namespace nps::nop
