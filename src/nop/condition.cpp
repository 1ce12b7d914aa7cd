// SPDX-License-Identifier: Apache-2.0
// The condition language: a recursive-descent parser over the tokens of
// condition_lexer.cpp into a flat expression table, and its evaluator.
#include "nps/nop/condition.hpp"

#include <exception>

#include "condition_lexer.hpp"
#include "nps/base/limits.hpp"
#include "nps/nop/json_path.hpp"

namespace nps::nop {

namespace detail {
enum class Op { literal, path, list, negate, all_of, any_of, eq, ne, lt, le, gt, ge, in };
struct ConditionExpr;
}  // namespace detail

namespace {

using detail::condition_error;
using detail::Op;
using Expr = detail::ConditionExpr;
using detail::describe_token;
using detail::Tok;
using detail::Token;

// Characters (code points) of valid UTF-8 text, or nullopt when it is not.
std::optional<std::size_t> utf8_chars(std::string_view text)
{
    std::size_t chars = 0;
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        std::size_t len = 0;
        std::uint32_t cp = 0;
        if (c < 0x80) {
            len = 1;
            cp = c;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return std::nullopt;
        }
        if (i + len > text.size())
            return std::nullopt;
        for (std::size_t k = 1; k < len; ++k) {
            const auto cc = static_cast<unsigned char>(text[i + k]);
            if ((cc & 0xC0) != 0x80)
                return std::nullopt;
            cp = (cp << 6) | (cc & 0x3F);
        }
        // Overlong forms, surrogates and code points beyond U+10FFFF.
        static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return std::nullopt;
        i += len;
        ++chars;
    }
    return chars;
}

std::string_view op_symbol(Op op)
{
    switch (op) {
    case Op::eq: return "==";
    case Op::ne: return "!=";
    case Op::lt: return "<";
    case Op::le: return "<=";
    case Op::gt: return ">";
    case Op::ge: return ">=";
    case Op::in: return "in";
    default: return "?";
    }
}

std::optional<Op> relation_op(Tok kind)
{
    switch (kind) {
    case Tok::eq: return Op::eq;
    case Tok::ne: return Op::ne;
    case Tok::lt: return Op::lt;
    case Tok::le: return Op::le;
    case Tok::gt: return Op::gt;
    case Tok::ge: return Op::ge;
    case Tok::in: return Op::in;
    default: return std::nullopt;
    }
}

}  // namespace

namespace detail {

// One node of a parsed condition; children are indexes into Program::exprs.
struct ConditionExpr {
    Op op = Op::literal;
    std::size_t column = 0;
    Json literal;
    JsonPath path;
    std::vector<std::size_t> children;
};

}  // namespace detail

struct Condition::Program {
    std::vector<detail::ConditionExpr> exprs;
    std::size_t root = 0;
    bool empty = true;
};

namespace {

class Parser {
public:
    Parser(std::vector<Token> tokens, Condition::Program& program) : tokens_(std::move(tokens)), program_(program) {}

    Result<std::size_t> parse_all()
    {
        const std::size_t root = NPS_TRY(expression(0));
        if (peek().kind != Tok::end)
            return condition_error("unexpected " + describe_token(peek()) + " after a complete expression");
        return root;
    }

private:
    const Token& peek() const { return tokens_[pos_]; }
    const Token& take() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }

    std::size_t add(Expr expr)
    {
        program_.exprs.push_back(std::move(expr));
        return program_.exprs.size() - 1;
    }

    Result<void> enter(std::size_t depth, const Token& at) const
    {
        if (depth >= limits::kMaxConditionNesting)
            return condition_error("nesting deeper than " + std::to_string(limits::kMaxConditionNesting) + " at " +
                                   describe_token(at));
        return {};
    }

    // A run of operands joined by one logical operator becomes one node.
    Result<std::size_t> logical(std::size_t depth, Tok joiner, Op op)
    {
        const Token& first = peek();
        std::size_t operand = NPS_TRY(joiner == Tok::or_ ? logical(depth, Tok::and_, Op::all_of) : relation(depth));
        if (peek().kind != joiner)
            return operand;
        Expr node{.op = op, .column = first.column};
        node.children.push_back(operand);
        while (peek().kind == joiner) {
            take();
            operand = NPS_TRY(joiner == Tok::or_ ? logical(depth, Tok::and_, Op::all_of) : relation(depth));
            node.children.push_back(operand);
        }
        return add(std::move(node));
    }

    Result<std::size_t> expression(std::size_t depth) { return logical(depth, Tok::or_, Op::any_of); }

    Result<std::size_t> relation(std::size_t depth)
    {
        const std::size_t left = NPS_TRY(unary(depth));
        const auto op = relation_op(peek().kind);
        if (!op)
            return left;
        const Token& op_token = take();
        const std::size_t right = NPS_TRY(unary(depth));
        if (relation_op(peek().kind))
            return condition_error("comparison operators do not chain (" + describe_token(peek()) + ")");
        Expr node{.op = *op, .column = op_token.column};
        node.children = {left, right};
        return add(std::move(node));
    }

    Result<std::size_t> unary(std::size_t depth)
    {
        if (peek().kind != Tok::bang)
            return primary(depth);
        const Token& bang = take();
        NPS_TRY_VOID(enter(depth, bang));
        const std::size_t operand = NPS_TRY(unary(depth + 1));
        Expr node{.op = Op::negate, .column = bang.column};
        node.children.push_back(operand);
        return add(std::move(node));
    }

    Result<std::size_t> primary(std::size_t depth)
    {
        const Token& token = take();
        switch (token.kind) {
        case Tok::number:
        case Tok::string:
            return add(Expr{.op = Op::literal, .column = token.column, .literal = token.value});
        case Tok::true_:
            return add(Expr{.op = Op::literal, .column = token.column, .literal = true});
        case Tok::false_:
            return add(Expr{.op = Op::literal, .column = token.column, .literal = false});
        case Tok::null_:
            return add(Expr{.op = Op::literal, .column = token.column, .literal = nullptr});
        case Tok::path: {
            auto path = parse_json_path(token.text);
            if (!path)
                return condition_error(path.error().message + " at column " + std::to_string(token.column));
            return add(Expr{.op = Op::path, .column = token.column, .path = std::move(path).value()});
        }
        case Tok::lparen: {
            NPS_TRY_VOID(enter(depth, token));
            const std::size_t inner = NPS_TRY(expression(depth + 1));
            if (peek().kind != Tok::rparen)
                return condition_error("expected ')' to close '(' at column " + std::to_string(token.column) +
                                       ", got " + describe_token(peek()));
            take();
            return inner;
        }
        case Tok::lbracket:
            NPS_TRY_VOID(enter(depth, token));
            return list(depth + 1, token);
        default:
            return condition_error("expected a value, got " + describe_token(token));
        }
    }

    Result<std::size_t> list(std::size_t depth, const Token& open)
    {
        Expr node{.op = Op::list, .column = open.column};
        if (peek().kind == Tok::rbracket) {
            take();
            return add(std::move(node));
        }
        while (true) {
            node.children.push_back(NPS_TRY(expression(depth)));
            const Token& next = take();
            if (next.kind == Tok::rbracket)
                break;
            if (next.kind != Tok::comma)
                return condition_error("expected ',' or ']' in the list opened at column " +
                                       std::to_string(open.column) + ", got " + describe_token(next));
        }
        return add(std::move(node));
    }

    std::vector<Token> tokens_;
    std::size_t pos_ = 0;
    Condition::Program& program_;
};

bool truthy(const Json& value)
{
    switch (value.type()) {
    case Json::value_t::null: return false;
    case Json::value_t::boolean: return value.get<bool>();
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return value.get<double>() != 0.0;
    case Json::value_t::string: return !value.get_ref<const std::string&>().empty();
    case Json::value_t::array:
    case Json::value_t::object: return !value.empty();
    default: return false;
    }
}

bool deep_equal(const Json& a, const Json& b)
{
    if (a.is_number() && b.is_number())
        return a.get<double>() == b.get<double>();
    if (a.type() != b.type())
        return false;
    if (a.is_array()) {
        if (a.size() != b.size())
            return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!deep_equal(a[i], b[i]))
                return false;
        return true;
    }
    if (a.is_object()) {
        if (a.size() != b.size())
            return false;
        for (auto it = a.begin(); it != a.end(); ++it) {
            const auto other = b.find(it.key());
            if (other == b.end() || !deep_equal(it.value(), *other))
                return false;
        }
        return true;
    }
    return a == b;
}

// A value during evaluation: a reference into the snapshot or the program, or
// one the evaluator made.
class Value {
public:
    explicit Value(const Json* ref) : ref_(ref) {}
    explicit Value(Json owned) : owned_(std::move(owned)) {}
    const Json& get() const { return ref_ ? *ref_ : owned_; }

private:
    const Json* ref_ = nullptr;
    Json owned_;
};

class Evaluator {
public:
    Evaluator(const Condition::Program& program, const Snapshot& results) : program_(program), results_(results) {}

    Result<Value> eval(std::size_t index) const
    {
        const Expr& e = program_.exprs[index];
        switch (e.op) {
        case Op::literal:
            return Value(&e.literal);
        case Op::path:
            return Value(lookup(e.path));
        case Op::list: {
            Json items = Json::array();
            for (std::size_t child : e.children)
                items.push_back(NPS_TRY(eval(child)).get());
            return Value(std::move(items));
        }
        case Op::negate:
            return Value(Json(!truthy(NPS_TRY(eval(e.children[0])).get())));
        case Op::all_of:
            for (std::size_t child : e.children)
                if (!truthy(NPS_TRY(eval(child)).get()))
                    return Value(Json(false));
            return Value(Json(true));
        case Op::any_of:
            for (std::size_t child : e.children)
                if (truthy(NPS_TRY(eval(child)).get()))
                    return Value(Json(true));
            return Value(Json(false));
        default:
            return compare(e);
        }
    }

private:
    const Json* lookup(const JsonPath& path) const
    {
        static const Json kNull = nullptr;
        const auto node = results_.find(path.segments.front());
        if (node == results_.end())
            return &kNull;
        const Json* value = resolve_json_path(node->second, path, 1);
        return value ? value : &kNull;
    }

    Result<Value> compare(const Expr& e) const
    {
        const Value left_value = NPS_TRY(eval(e.children[0]));
        const Value right_value = NPS_TRY(eval(e.children[1]));
        const Json& left = left_value.get();
        const Json& right = right_value.get();
        switch (e.op) {
        case Op::eq: return Value(Json(deep_equal(left, right)));
        case Op::ne: return Value(Json(!deep_equal(left, right)));
        case Op::in: return Value(Json(NPS_TRY(contains(e, left, right))));
        default: break;
        }
        if (left.is_null() || right.is_null())
            return Value(Json(false));
        int order = 0;
        if (left.is_number() && right.is_number()) {
            const double a = left.get<double>();
            const double b = right.get<double>();
            order = a < b ? -1 : (a > b ? 1 : 0);
        } else if (left.is_string() && right.is_string()) {
            const int c = left.get_ref<const std::string&>().compare(right.get_ref<const std::string&>());
            order = c < 0 ? -1 : (c > 0 ? 1 : 0);
        } else {
            return condition_error("cannot compare " + std::string(json_type_name(left)) + " with " +
                                   std::string(json_type_name(right)) + " using '" + std::string(op_symbol(e.op)) +
                                   "' at column " + std::to_string(e.column));
        }
        switch (e.op) {
        case Op::lt: return Value(Json(order < 0));
        case Op::le: return Value(Json(order <= 0));
        case Op::gt: return Value(Json(order > 0));
        case Op::ge: return Value(Json(order >= 0));
        default: return internal_error("condition: unknown operator");
        }
    }

    Result<bool> contains(const Expr& e, const Json& needle, const Json& haystack) const
    {
        if (haystack.is_null())
            return false;
        if (haystack.is_array()) {
            for (const Json& item : haystack)
                if (deep_equal(needle, item))
                    return true;
            return false;
        }
        if (haystack.is_object()) {
            if (!needle.is_string())
                return condition_error("'in' an object needs a string on the left, got " +
                                       std::string(json_type_name(needle)) + " at column " + std::to_string(e.column));
            return haystack.contains(needle.get_ref<const std::string&>());
        }
        return condition_error("'in' needs an array or an object on the right, got " +
                               std::string(json_type_name(haystack)) + " at column " + std::to_string(e.column));
    }

    const Condition::Program& program_;
    const Snapshot& results_;
};

Result<Condition::Program> compile(std::string_view text)
{
    const auto chars = utf8_chars(text);
    if (!chars)
        return condition_error("not valid UTF-8");
    if (*chars > limits::kMaxConditionChars)
        return condition_error(std::to_string(*chars) + " characters, the limit is " +
                               std::to_string(limits::kMaxConditionChars));
    std::vector<Token> tokens = NPS_TRY(detail::lex_condition(text));
    Condition::Program program;
    if (tokens.size() == 1)
        return program;  // empty or all whitespace: always true
    program.empty = false;
    Parser parser(std::move(tokens), program);
    program.root = NPS_TRY(parser.parse_all());
    return program;
}

}  // namespace

Result<Condition> Condition::parse(std::string_view text)
{
    try {
        Program program = NPS_TRY(compile(text));
        return Condition(std::make_shared<const Program>(std::move(program)));
    } catch (const std::exception& e) {
        return internal_error(std::string("condition: ") + e.what());
    }
}

Result<bool> Condition::evaluate(const Snapshot& results) const
{
    if (program_->empty)
        return true;
    try {
        const Evaluator evaluator(*program_, results);
        const Value value = NPS_TRY(evaluator.eval(program_->root));
        return truthy(value.get());
    } catch (const std::exception& e) {
        return internal_error(std::string("condition: ") + e.what());
    }
}

bool Condition::always_true() const
{
    return program_->empty;
}

}  // namespace nps::nop
