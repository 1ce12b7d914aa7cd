// SPDX-License-Identifier: Apache-2.0
// Tokens of the condition language.
#include "condition_lexer.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>

#include "nps/proto/error_codes.hpp"

namespace nps::nop::detail {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Characters that end a path token: whitespace and everything that starts
// another token.
bool ends_path(char c)
{
    return is_space(c) || c == '(' || c == ')' || c == '[' || c == ']' || c == ',' || c == '!' || c == '=' ||
           c == '<' || c == '>' || c == '&' || c == '|' || c == '"' || c == '\'';
}

std::optional<int> hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return std::nullopt;
}

void append_utf8(std::string& out, std::uint32_t cp)
{
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

class Lexer {
public:
    explicit Lexer(std::string_view text) : text_(text) {}

    Result<std::vector<Token>> run()
    {
        std::vector<Token> tokens;
        while (true) {
            while (pos_ < text_.size() && is_space(text_[pos_]))
                ++pos_;
            Token token = NPS_TRY(next());
            const bool done = token.kind == Tok::end;
            tokens.push_back(std::move(token));
            if (done)
                return tokens;
        }
    }

private:
    // 1-based character column of byte offset `at` (continuation bytes of
    // UTF-8 sequences do not count).
    std::size_t column(std::size_t at) const
    {
        std::size_t col = 1;
        for (std::size_t i = 0; i < at && i < text_.size(); ++i)
            if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80)
                ++col;
        return col;
    }

    Error error_at(std::size_t at, const std::string& problem) const
    {
        return condition_error(problem + " at column " + std::to_string(column(at)));
    }

    Token make(Tok kind, std::size_t start, std::size_t length)
    {
        pos_ = start + length;
        Token token;
        token.kind = kind;
        token.column = column(start);
        token.text = std::string(text_.substr(start, length));
        return token;
    }

    bool peek_is(std::size_t offset, char c) const
    {
        return pos_ + offset < text_.size() && text_[pos_ + offset] == c;
    }

    Result<Token> next()
    {
        if (pos_ >= text_.size())
            return make(Tok::end, text_.size(), 0);
        const std::size_t start = pos_;
        const char c = text_[pos_];
        switch (c) {
        case '(': return make(Tok::lparen, start, 1);
        case ')': return make(Tok::rparen, start, 1);
        case '[': return make(Tok::lbracket, start, 1);
        case ']': return make(Tok::rbracket, start, 1);
        case ',': return make(Tok::comma, start, 1);
        case '!': return peek_is(1, '=') ? make(Tok::ne, start, 2) : make(Tok::bang, start, 1);
        case '<': return peek_is(1, '=') ? make(Tok::le, start, 2) : make(Tok::lt, start, 1);
        case '>': return peek_is(1, '=') ? make(Tok::ge, start, 2) : make(Tok::gt, start, 1);
        case '=':
            if (peek_is(1, '='))
                return make(Tok::eq, start, 2);
            return error_at(start, "'=' is not an operator (use '==')");
        case '&':
            if (peek_is(1, '&'))
                return make(Tok::and_, start, 2);
            return error_at(start, "'&' is not an operator (use '&&')");
        case '|':
            if (peek_is(1, '|'))
                return make(Tok::or_, start, 2);
            return error_at(start, "'|' is not an operator (use '||')");
        case '"':
        case '\'':
            return string_literal(c);
        case '$':
            return path();
        default:
            break;
        }
        if (is_digit(c) || (c == '-' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1])))
            return number();
        if (is_alpha(c))
            return word();
        const auto byte = static_cast<unsigned char>(c);
        const std::string shown = byte < 0x20 ? "control character"
                                  : byte >= 0x80 ? "non-ASCII character"
                                                 : "'" + std::string(1, c) + "'";
        return error_at(start, "unexpected " + shown);
    }

    Result<Token> number()
    {
        const std::size_t start = pos_;
        std::size_t at = pos_;
        if (text_[at] == '-')
            ++at;
        while (at < text_.size() && is_digit(text_[at]))
            ++at;
        if (at < text_.size() && text_[at] == '.') {
            ++at;
            if (at >= text_.size() || !is_digit(text_[at]))
                return error_at(start, "malformed number '" + std::string(text_.substr(start, at - start)) + "'");
            while (at < text_.size() && is_digit(text_[at]))
                ++at;
        }
        if (at < text_.size() && (text_[at] == 'e' || text_[at] == 'E')) {
            std::size_t exp = at + 1;
            if (exp < text_.size() && (text_[exp] == '+' || text_[exp] == '-'))
                ++exp;
            if (exp >= text_.size() || !is_digit(text_[exp]))
                return error_at(start, "malformed number '" + std::string(text_.substr(start, exp - start)) + "'");
            while (exp < text_.size() && is_digit(text_[exp]))
                ++exp;
            at = exp;
        }
        if (at < text_.size() && (is_alpha(text_[at]) || text_[at] == '.' || text_[at] == '$'))
            return error_at(start, "malformed number '" + std::string(text_.substr(start, at + 1 - start)) + "'");
        const std::string_view digits = text_.substr(start, at - start);
        double value = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (ec != std::errc() || end != digits.data() + digits.size() || !std::isfinite(value))
            return error_at(start, "number '" + std::string(digits) + "' is out of range");
        Token token = make(Tok::number, start, at - start);
        token.value = value;
        return token;
    }

    Result<Token> word()
    {
        const std::size_t start = pos_;
        std::size_t at = pos_;
        while (at < text_.size() && (is_alpha(text_[at]) || is_digit(text_[at])))
            ++at;
        const std::string_view name = text_.substr(start, at - start);
        if (name == "true")
            return make(Tok::true_, start, at - start);
        if (name == "false")
            return make(Tok::false_, start, at - start);
        if (name == "null")
            return make(Tok::null_, start, at - start);
        if (name == "in")
            return make(Tok::in, start, at - start);
        return error_at(start, "unknown name '" + cut_text(name, 32) + "' (expected true, false, null, in or a $. path)");
    }

    Result<Token> path()
    {
        const std::size_t start = pos_;
        std::size_t at = pos_ + 1;
        while (at < text_.size() && !ends_path(text_[at]))
            ++at;
        return make(Tok::path, start, at - start);
    }

    // \uXXXX at `at` (pointing at the 'u'); the code unit, or an error.
    Result<std::uint32_t> unicode_unit(std::size_t at, std::size_t start) const
    {
        if (at + 4 >= text_.size())
            return error_at(start, "truncated \\u escape in string");
        std::uint32_t unit = 0;
        for (std::size_t i = 1; i <= 4; ++i) {
            const auto digit = hex_value(text_[at + i]);
            if (!digit)
                return error_at(start, "malformed \\u escape in string");
            unit = unit * 16 + static_cast<std::uint32_t>(*digit);
        }
        return unit;
    }

    Result<Token> string_literal(char quote)
    {
        const std::size_t start = pos_;
        std::string value;
        std::size_t at = pos_ + 1;
        while (true) {
            if (at >= text_.size())
                return error_at(start, "unterminated string");
            const char c = text_[at];
            if (c == quote)
                break;
            if (static_cast<unsigned char>(c) < 0x20)
                return error_at(start, "control character in string");
            if (c != '\\') {
                value += c;
                ++at;
                continue;
            }
            if (at + 1 >= text_.size())
                return error_at(start, "unterminated string");
            const char e = text_[at + 1];
            switch (e) {
            case '"': value += '"'; break;
            case '\'': value += '\''; break;
            case '\\': value += '\\'; break;
            case '/': value += '/'; break;
            case 'b': value += '\b'; break;
            case 'f': value += '\f'; break;
            case 'n': value += '\n'; break;
            case 'r': value += '\r'; break;
            case 't': value += '\t'; break;
            case 'u': {
                std::uint32_t cp = NPS_TRY(unicode_unit(at + 1, start));
                std::size_t consumed = 6;
                if (cp >= 0xDC00 && cp <= 0xDFFF)
                    return error_at(start, "lone surrogate in string");
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (at + 7 >= text_.size() || text_[at + 6] != '\\' || text_[at + 7] != 'u')
                        return error_at(start, "lone surrogate in string");
                    const std::uint32_t low = NPS_TRY(unicode_unit(at + 7, start));
                    if (low < 0xDC00 || low > 0xDFFF)
                        return error_at(start, "lone surrogate in string");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    consumed = 12;
                }
                append_utf8(value, cp);
                at += consumed;
                continue;
            }
            default:
                return error_at(start, "unknown escape '\\" + std::string(1, e) + "' in string");
            }
            at += 2;
        }
        Token token = make(Tok::string, start, at + 1 - start);
        token.value = std::move(value);
        return token;
    }

    std::string_view text_;
    std::size_t pos_ = 0;
};

}  // namespace

std::string cut_text(std::string_view text, std::size_t max_bytes)
{
    if (text.size() <= max_bytes)
        return std::string(text);
    std::size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut;  // never split a UTF-8 sequence
    return std::string(text.substr(0, cut)) + "...";
}

Error condition_error(const std::string& problem)
{
    return protocol_error(proto::code::kNopConditionEvalError, "condition: " + problem);
}

std::string describe_token(const Token& token)
{
    if (token.kind == Tok::end)
        return "the end of the condition";
    return "'" + cut_text(token.text, 32) + "' at column " + std::to_string(token.column);
}

Result<std::vector<Token>> lex_condition(std::string_view text)
{
    return Lexer(text).run();
}

}  // namespace nps::nop::detail
