// SPDX-License-Identifier: Apache-2.0
// The condition language: every operator, precedence, literals, paths, the
// null rules, `in`, and every kind of error with its message.
#include <doctest/doctest.h>

#include <string>

#include "nps/nop/condition.hpp"

using nps::nop::Condition;
using nps::nop::Json;
using nps::nop::Snapshot;

namespace {

const Snapshot& results()
{
    static const Snapshot snapshot = {
        {"seed", Json::parse(R"({"score": 0.4, "count": 3, "name": "alpha", "ok": true, "none": null,
                                 "tags": ["a", "b"], "empty": "", "zero": 0, "list": [], "obj": {"k": 1},
                                 "deep": {"a": {"b": {"c": {"d": {"e": {"f": 7}}}}}}})")},
        {"fetch", Json::parse(R"({"value": 2, "label": "b\u00e9ta"})")},
        {"scalar", Json(5)},
    };
    return snapshot;
}

bool eval(const std::string& text)
{
    auto condition = Condition::parse(text);
    REQUIRE_MESSAGE(condition.has_value(), text << " → " << (condition ? "" : condition.error().message));
    auto value = condition->evaluate(results());
    REQUIRE_MESSAGE(value.has_value(), text << " → " << (value ? "" : value.error().message));
    return *value;
}

std::string parse_error(const std::string& text)
{
    auto condition = Condition::parse(text);
    REQUIRE_MESSAGE(!condition.has_value(), text);
    CHECK(condition.error().code == "NOP-CONDITION-EVAL-ERROR");
    return condition.error().message;
}

std::string eval_error(const std::string& text)
{
    auto condition = Condition::parse(text);
    REQUIRE_MESSAGE(condition.has_value(), text << " → " << (condition ? "" : condition.error().message));
    auto value = condition->evaluate(results());
    REQUIRE_MESSAGE(!value.has_value(), text);
    CHECK(value.error().code == "NOP-CONDITION-EVAL-ERROR");
    return value.error().message;
}

}  // namespace

TEST_CASE("condition: the vector's comparison")
{
    CHECK_FALSE(eval("$.seed.score > 0.7"));
    CHECK(eval("$.seed.score > 0.3"));
}

TEST_CASE("condition: numeric comparisons")
{
    CHECK(eval("$.seed.count == 3"));
    CHECK(eval("$.seed.count == 3.0"));
    CHECK(eval("$.seed.count != 4"));
    CHECK(eval("$.seed.count < 4"));
    CHECK_FALSE(eval("$.seed.count < 3"));
    CHECK(eval("$.seed.count <= 3"));
    CHECK_FALSE(eval("$.seed.count <= 2.99"));
    CHECK(eval("$.seed.count > -1"));
    CHECK(eval("$.seed.count >= 3"));
    CHECK_FALSE(eval("$.seed.count >= 3.5"));
    CHECK(eval("-0.5 < 0"));
    CHECK(eval("1e3 == 1000"));
    CHECK(eval("2.5E-1 == 0.25"));
}

TEST_CASE("condition: strings, booleans, null")
{
    CHECK(eval("$.seed.name == \"alpha\""));
    CHECK(eval("$.seed.name == 'alpha'"));
    CHECK(eval("$.seed.name < \"beta\""));
    CHECK(eval("\"B\" < \"a\""));  // code point order
    CHECK(eval("$.fetch.label == \"b\\u00e9ta\""));
    CHECK(eval("$.fetch.label == 'b\u00e9ta'"));
    CHECK(eval("$.fetch.label > \"bz\""));  // é (U+00E9) sorts after z
    CHECK(eval("'it\\'s' == \"it's\""));
    CHECK(eval("\"\\ud83d\\ude00\" == '\U0001F600'"));
    CHECK(eval("$.seed.ok == true"));
    CHECK(eval("$.seed.ok != false"));
    CHECK_FALSE(eval("$.seed.ok == 1"));  // bool ≠ number
    CHECK_FALSE(eval("true == 1"));
    CHECK(eval("$.seed.tags == [\"a\", \"b\"]"));
    CHECK(eval("$.seed.obj == $.seed.obj"));
}

TEST_CASE("condition: null rules and missing paths")
{
    CHECK(eval("$.seed.none == null"));
    CHECK(eval("$.seed.missing == null"));
    CHECK(eval("$.ghost.value == null"));  // unknown node: null, not an error
    CHECK(eval("$.seed.name.sub == null"));  // a step through a string
    CHECK(eval("$.scalar.x == null"));
    CHECK_FALSE(eval("$.seed.none != null"));
    CHECK(eval("null == null"));
    CHECK_FALSE(eval("null == 0"));
    CHECK_FALSE(eval("null == false"));
    // Every ordering comparison with null is false, either side.
    for (const char* op : {"<", "<=", ">", ">="}) {
        CHECK_FALSE(eval(std::string("$.seed.missing ") + op + " 1"));
        CHECK_FALSE(eval(std::string("1 ") + op + " $.seed.missing"));
        CHECK_FALSE(eval(std::string("null ") + op + " null"));
    }
    CHECK(eval("!($.seed.missing > 1)"));
}

TEST_CASE("condition: logic, truthiness and precedence")
{
    CHECK(eval("$.seed.ok && $.seed.count"));
    CHECK_FALSE(eval("$.seed.ok && $.seed.zero"));
    CHECK(eval("$.seed.zero || $.seed.name"));
    CHECK_FALSE(eval("$.seed.empty || $.seed.list || $.seed.none || $.seed.missing"));
    CHECK(eval("!$.seed.empty"));
    CHECK(eval("!!$.seed.tags"));
    CHECK_FALSE(eval("!$.seed.obj"));
    CHECK(eval("$.seed"));
    CHECK(eval("$.scalar"));
    CHECK_FALSE(eval("$.ghost"));
    // && binds tighter than ||.
    CHECK(eval("true || false && false"));
    CHECK_FALSE(eval("(true || false) && false"));
    // ! binds tighter than comparisons: (!count) == false.
    CHECK(eval("!$.seed.count == false"));
    CHECK(eval("1 < 2 && 3 > 2 || false"));
    CHECK(eval("((($.seed.count == 3)))"));
    // Short-circuit: the erroneous right side is not evaluated.
    CHECK(eval("true || $.seed.tags < 1"));
    CHECK_FALSE(eval("false && $.seed.tags < 1"));
}

TEST_CASE("condition: in")
{
    CHECK(eval("$.seed.name in [\"alpha\", \"beta\"]"));
    CHECK_FALSE(eval("$.seed.name in [\"gamma\"]"));
    CHECK(eval("3 in [1, 2, 3.0]"));
    CHECK(eval("\"a\" in $.seed.tags"));
    CHECK_FALSE(eval("\"z\" in $.seed.tags"));
    CHECK_FALSE(eval("1 in []"));
    CHECK(eval("null in [1, null]"));
    CHECK_FALSE(eval("\"a\" in $.seed.missing"));  // null on the right: false
    CHECK(eval("\"k\" in $.seed.obj"));
    CHECK_FALSE(eval("\"x\" in $.seed.obj"));
    CHECK(eval("[1, 2] in [[1, 2], [3]]"));
    CHECK(eval("$.fetch.value in [$.seed.count, 2]"));
    CHECK(eval("!(\"z\" in $.seed.tags)"));
}

TEST_CASE("condition: empty is true")
{
    CHECK(eval(""));
    CHECK(eval("   \t\n"));
    CHECK(Condition::parse("")->always_true());
    CHECK_FALSE(Condition::parse("true")->always_true());
    CHECK(eval("true"));
    CHECK_FALSE(eval("false"));
    CHECK_FALSE(eval("null"));
    CHECK_FALSE(eval("0"));
    CHECK(eval("'x'"));
    CHECK_FALSE(eval("[]"));
}

TEST_CASE("condition: the 512-character limit")
{
    // 512 characters pass (a number literal padded with spaces), 513 do not.
    std::string ok = "1" + std::string(511, ' ');
    CHECK(eval(ok));
    CHECK(parse_error(ok + " ") == "condition: 513 characters, the limit is 512");
    // Characters, not bytes: 255 two-byte characters in a string plus the rest.
    std::string wide = "'" + std::string() ;
    for (int i = 0; i < 500; ++i)
        wide += "\u00e9";
    wide += "' == 'x'";  // 500 + 10 = 510 characters, 1010 bytes
    CHECK_FALSE(eval(wide));
    CHECK(parse_error("'\xff'") == "condition: not valid UTF-8");
    CHECK(parse_error("'\xc3'") == "condition: not valid UTF-8");
    CHECK(parse_error("'\xed\xa0\x80'") == "condition: not valid UTF-8");  // an encoded surrogate
}

TEST_CASE("condition: parse errors name the column and the token")
{
    CHECK(parse_error("$.a.b >") == "condition: expected a value, got the end of the condition");
    CHECK(parse_error("$.a.b > )") == "condition: expected a value, got ')' at column 9");
    CHECK(parse_error("$.a.b -1") == "condition: unexpected '-1' at column 7 after a complete expression");
    CHECK(parse_error("($.a.b > 1") == "condition: expected ')' to close '(' at column 1, got the end of the condition");
    CHECK(parse_error("$.a.b > 1)") == "condition: unexpected ')' at column 10 after a complete expression");
    CHECK(parse_error("$.a.b = 1") == "condition: '=' is not an operator (use '==') at column 7");
    CHECK(parse_error("a & b") == "condition: unknown name 'a' (expected true, false, null, in or a $. path) at column 1");
    CHECK(parse_error("true & false") == "condition: '&' is not an operator (use '&&') at column 6");
    CHECK(parse_error("true | false") == "condition: '|' is not an operator (use '||') at column 6");
    CHECK(parse_error("1 < 2 < 3") == "condition: comparison operators do not chain ('<' at column 7)");
    CHECK(parse_error("1 in [1 2]") == "condition: expected ',' or ']' in the list opened at column 6, got '2' at column 9");
    CHECK(parse_error("[1,]") == "condition: expected a value, got ']' at column 4");
    CHECK(parse_error("'abc") == "condition: unterminated string at column 1");
    CHECK(parse_error("'a\\qb'") == "condition: unknown escape '\\q' in string at column 1");
    CHECK(parse_error("'\\ud800'") == "condition: lone surrogate in string at column 1");
    CHECK(parse_error("'\\udc00'") == "condition: lone surrogate in string at column 1");
    CHECK(parse_error("'\\u12zz'") == "condition: malformed \\u escape in string at column 1");
    CHECK(parse_error("'\\u12") == "condition: truncated \\u escape in string at column 1");
    CHECK(parse_error("'a\tb'") == "condition: control character in string at column 1");
    CHECK(parse_error("1.") == "condition: malformed number '1.' at column 1");
    CHECK(parse_error("1e") == "condition: malformed number '1e' at column 1");
    CHECK(parse_error("12abc") == "condition: malformed number '12a' at column 1");
    CHECK(parse_error("1e999") == "condition: number '1e999' is out of range at column 1");
    CHECK(parse_error("\u00e9\u00e9 # 1") == "condition: unexpected non-ASCII character at column 1");
    CHECK(parse_error("'\u00e9\u00e9' # 1") == "condition: unexpected '#' at column 6");
    CHECK(parse_error("- 1") == "condition: unexpected '-' at column 1");
    CHECK(parse_error("$") == "condition: JSONPath \"$\": must start with \"$.\" at column 1");
    CHECK(parse_error("$.a..b == 1") == "condition: JSONPath \"$.a..b\": has an empty segment at column 1");
    CHECK(parse_error("$.a.* == 1") == "condition: JSONPath \"$.a.*\": uses unsupported syntax (only $.a.b.c is supported) at column 1");
    CHECK(parse_error("$.a[0] == 1") == "condition: unexpected '[' at column 4 after a complete expression");
    CHECK(parse_error("in") == "condition: expected a value, got 'in' at column 1");
    CHECK(parse_error("1 == \x01") == "condition: unexpected control character at column 6");
}

TEST_CASE("condition: path depth 8 is the limit")
{
    CHECK(eval("$.seed.deep.a.b.c.d.e.f == 7"));  // 8 segments
    CHECK(parse_error("$.seed.deep.a.b.c.d.e.f.g == 7") ==
          "condition: JSONPath \"$.seed.deep.a.b.c.d.e.f.g\": has more than 8 segments at column 1");
}

TEST_CASE("condition: nesting is bounded")
{
    std::string ok = std::string(31, '(') + "true" + std::string(31, ')');
    CHECK(eval(ok));
    const std::string deep = std::string(33, '(') + "true" + std::string(33, ')');
    CHECK(parse_error(deep) == "condition: nesting deeper than 32 at '(' at column 33");
    CHECK(parse_error(std::string(40, '!') + "true") == "condition: nesting deeper than 32 at '!' at column 33");
    CHECK(eval(std::string(32, '!') + "true"));
}

TEST_CASE("condition: evaluation errors")
{
    CHECK(eval_error("$.seed.name > 1") == "condition: cannot compare a string with a number using '>' at column 13");
    CHECK(eval_error("$.seed.ok < true") == "condition: cannot compare a boolean with a boolean using '<' at column 11");
    CHECK(eval_error("$.seed.tags >= [1]") ==
          "condition: cannot compare an array with an array using '>=' at column 13");
    CHECK(eval_error("1 in $.seed.name") == "condition: 'in' needs an array or an object on the right, got a string at column 3");
    CHECK(eval_error("1 in $.seed.obj") == "condition: 'in' an object needs a string on the left, got a number at column 3");
    CHECK(eval_error("true && $.seed.tags < 1") ==
          "condition: cannot compare an array with a number using '<' at column 21");
}

TEST_CASE("condition: a parsed condition is reused against different snapshots")
{
    auto condition = Condition::parse("$.a.v > 1");
    REQUIRE(condition);
    CHECK(condition->evaluate(Snapshot{{"a", Json::parse(R"({"v": 2})")}}).value());
    CHECK_FALSE(condition->evaluate(Snapshot{{"a", Json::parse(R"({"v": 1})")}}).value());
    CHECK_FALSE(condition->evaluate(Snapshot{}).value());
    const Condition copy = *condition;
    CHECK(copy.evaluate(Snapshot{{"a", Json::parse(R"({"v": 5})")}}).value());
}
