// SPDX-License-Identifier: Apache-2.0
// WWW-Authenticate parsing and token answers.
#include "nps/image/registry_auth.hpp"

#include <cctype>

#include "../format/json_document.hpp"
#include "nps/base/ascii.hpp"
#include "nps/base/limits.hpp"

namespace nps::image {

namespace {

bool is_tchar(char c)
{
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u))
        return true;
    switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-': case '.':
    case '^': case '_': case '`': case '|': case '~':
        return true;
    default:
        return false;
    }
}

bool is_token68_char(char c)
{
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
}

// A cursor over the header value; errors say where parsing stopped.
class Parser {
public:
    explicit Parser(std::string_view text) : text_(text) {}

    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return at_end() ? '\0' : text_[pos_]; }
    std::size_t pos() const { return pos_; }
    void seek(std::size_t pos) { pos_ = pos; }

    void skip_ows()
    {
        while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t'))
            ++pos_;
    }
    void skip_ows_and_commas()
    {
        while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == ','))
            ++pos_;
    }

    std::string_view token()
    {
        const std::size_t start = pos_;
        while (!at_end() && is_tchar(text_[pos_]))
            ++pos_;
        return text_.substr(start, pos_ - start);
    }

    // token68 = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
    std::string_view token68()
    {
        const std::size_t start = pos_;
        while (!at_end() && is_token68_char(text_[pos_]))
            ++pos_;
        if (pos_ == start)
            return {};
        while (!at_end() && text_[pos_] == '=')
            ++pos_;
        return text_.substr(start, pos_ - start);
    }

    Result<std::string> quoted_string()
    {
        ++pos_;  // the opening quote
        std::string out;
        while (!at_end()) {
            const char c = text_[pos_++];
            if (c == '"')
                return out;
            if (c == '\\') {
                if (at_end())
                    break;
                const char escaped = text_[pos_++];
                if (!visible_or_space(escaped))
                    return fail("a control character in a quoted string");
                out.push_back(escaped);
                continue;
            }
            if (!visible_or_space(c))
                return fail("a control character in a quoted string");
            out.push_back(c);
        }
        return fail("an unterminated quoted string");
    }

    Error fail(const std::string& why) const
    {
        return internal_error("Invalid WWW-Authenticate header at offset " + std::to_string(pos_) + ": " + why);
    }

private:
    static bool visible_or_space(char c)
    {
        const auto u = static_cast<unsigned char>(c);
        return c == '\t' || (u >= 0x20 && u != 0x7f);  // obs-text (>= 0x80) is allowed
    }

    std::string_view text_;
    std::size_t pos_ = 0;
};

}  // namespace

Result<std::vector<AuthChallenge>> parse_www_authenticate(std::string_view value)
{
    if (value.size() > limits::kMaxAuthChallengeChars)
        return internal_error("Invalid WWW-Authenticate header: longer than " +
                              std::to_string(limits::kMaxAuthChallengeChars) + " characters");
    Parser p(value);
    std::vector<AuthChallenge> challenges;
    for (;;) {
        p.skip_ows_and_commas();
        if (p.at_end())
            break;
        const std::string_view scheme = p.token();
        if (scheme.empty())
            return p.fail("expected an authentication scheme");
        if (challenges.size() >= limits::kMaxAuthChallenges)
            return p.fail("more than " + std::to_string(limits::kMaxAuthChallenges) + " challenges");
        AuthChallenge challenge;
        challenge.scheme = ascii_lower(scheme);
        if (!p.at_end() && p.peek() != ' ' && p.peek() != '\t' && p.peek() != ',')
            return p.fail("expected a space after the scheme '" + std::string(scheme) + "'");
        p.skip_ows();

        // A token68 stands alone: followed by the end or a comma. ("x=" followed by the
        // end cannot be a parameter, whose value is never empty, so it is a token68 too.)
        const std::size_t start = p.pos();
        const std::string_view t68 = p.token68();
        p.skip_ows();
        if (!t68.empty() && (p.at_end() || p.peek() == ',')) {
            challenge.token68 = t68;
            challenges.push_back(std::move(challenge));
            continue;
        }
        p.seek(start);

        // auth-params: name BWS "=" BWS ( token / quoted-string ), separated by commas.
        for (;;) {
            p.skip_ows();
            const std::size_t name_start = p.pos();
            const std::string_view name = p.token();
            if (name.empty()) {
                if (p.at_end() || p.peek() == ',')
                    break;
                return p.fail("expected a parameter name");
            }
            p.skip_ows();
            if (p.peek() != '=') {
                // Not a parameter: the next challenge's scheme.
                p.seek(name_start);
                break;
            }
            p.seek(p.pos() + 1);
            p.skip_ows();
            std::string param_value;
            if (p.peek() == '"') {
                param_value = NPS_TRY(p.quoted_string());
            } else {
                const std::string_view v = p.token();
                if (v.empty())
                    return p.fail("parameter '" + std::string(name) + "' has no value");
                param_value = v;
            }
            if (challenge.params.size() >= limits::kMaxAuthParams)
                return p.fail("more than " + std::to_string(limits::kMaxAuthParams) + " parameters in one challenge");
            if (!challenge.params.emplace(ascii_lower(name), std::move(param_value)).second)
                return p.fail("parameter '" + ascii_lower(name) + "' given twice");
            p.skip_ows();
            if (p.at_end())
                break;
            if (p.peek() != ',')
                return p.fail("expected ',' after parameter '" + std::string(name) + "'");
            p.skip_ows_and_commas();
            if (p.at_end())
                break;
        }
        challenges.push_back(std::move(challenge));
    }
    return challenges;
}

Result<std::string> parse_token_response(std::string_view body, std::string_view what)
{
    const std::string where = "the answer of the token service " + std::string(what);
    const auto doc = NPS_TRY(detail::parse_json_document(body, limits::kMaxRegistryTokenResponseBytes, where));
    detail::Fields f(doc, where);
    auto token = NPS_TRY(f.string("token", limits::kMaxRegistryTokenBytes));
    if (!token || token->empty())
        token = NPS_TRY(f.string("access_token", limits::kMaxRegistryTokenBytes));
    if (!token || token->empty())
        return internal_error("Invalid " + where + ": it has neither \"token\" nor \"access_token\"");
    for (char c : *token) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f)
            return internal_error("Invalid " + where + ": the token has characters other than visible ASCII");
    }
    return *token;
}

}  // namespace nps::image
