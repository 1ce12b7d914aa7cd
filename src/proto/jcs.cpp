// SPDX-License-Identifier: Apache-2.0
// RFC 8785 serializer over simdjson's DOM (see nps/proto/jcs.hpp).
#include "nps/proto/jcs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <new>
#include <vector>

#include "jcs_dom.hpp"
#include "message_text.hpp"
#include "nps/base/json_string.hpp"
#include "nps/base/limits.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/json_reader.hpp"
#include "utf8.hpp"

namespace nps::proto {

namespace detail {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr std::string_view kMalformed = code::kNwpHttpFrameBodyMalformed;

// One step from the canonicalized value down to the current one, kept so an
// error names where it happened without building paths on the happy path.
struct PathStep {
    std::string_view key;
    std::size_t index = 0;
    bool is_index = false;
};

class Writer {
public:
    Writer(std::string& out, std::string_view root_path) : out_(out), root_path_(root_path) {}

    Result<void> value(element e, std::size_t depth, std::string_view omit_member)
    {
        switch (e.type()) {
        case element_type::OBJECT:
            return object(e, depth, omit_member);
        case element_type::ARRAY:
            return array(e, depth);
        case element_type::STRING: {
            std::string_view s;
            if (e.get(s) != simdjson::SUCCESS)
                return fail("unreadable string");
            string(s);
            return {};
        }
        case element_type::INT64: {
            std::int64_t v = 0;
            if (e.get(v) != simdjson::SUCCESS)
                return fail("unreadable integer");
            out_ += jcs_format_number(static_cast<double>(v));
            return {};
        }
        case element_type::UINT64: {
            std::uint64_t v = 0;
            if (e.get(v) != simdjson::SUCCESS)
                return fail("unreadable integer");
            out_ += jcs_format_number(static_cast<double>(v));
            return {};
        }
        case element_type::DOUBLE: {
            double v = 0;
            if (e.get(v) != simdjson::SUCCESS || !std::isfinite(v))
                return fail("number is not a finite IEEE-754 double");
            out_ += jcs_format_number(v);
            return {};
        }
        case element_type::BOOL: {
            bool v = false;
            if (e.get(v) != simdjson::SUCCESS)
                return fail("unreadable boolean");
            out_ += v ? "true" : "false";
            return {};
        }
        case element_type::NULL_VALUE:
            out_ += "null";
            return {};
        }
        return fail("unknown JSON value type");
    }

private:
    struct Member {
        std::u16string sort_key;
        std::string_view key;
        element value;
    };

    Result<void> enter(std::size_t depth)
    {
        if (depth > limits::kMaxJsonDepth)
            return fail("nesting deeper than " + std::to_string(limits::kMaxJsonDepth) + " levels");
        return {};
    }

    Result<void> object(element e, std::size_t depth, std::string_view omit_member)
    {
        NPS_TRY_VOID(enter(depth));
        simdjson::dom::object obj;
        if (e.get(obj) != simdjson::SUCCESS)
            return fail("unreadable object");
        std::vector<Member> members;
        bool omitted = false;
        for (auto field : obj) {
            if (!omit_member.empty() && field.key == omit_member) {
                // Left out of the output, but still a key that must be unique.
                if (omitted)
                    return fail("duplicate object key " + quote_text(field.key));
                omitted = true;
                continue;
            }
            auto utf16 = utf8_to_utf16(field.key);
            if (!utf16)
                return fail("object key is not valid UTF-8");
            members.push_back(Member{std::move(*utf16), field.key, field.value});
        }
        std::sort(members.begin(), members.end(),
                  [](const Member& a, const Member& b) { return a.sort_key < b.sort_key; });
        for (std::size_t i = 1; i < members.size(); ++i)
            if (members[i].sort_key == members[i - 1].sort_key)
                return fail("duplicate object key " + quote_text(members[i].key));

        out_ += '{';
        for (std::size_t i = 0; i < members.size(); ++i) {
            if (i > 0)
                out_ += ',';
            string(members[i].key);
            out_ += ':';
            path_.push_back(PathStep{members[i].key});
            NPS_TRY_VOID(value(members[i].value, depth + 1, {}));
            path_.pop_back();
        }
        out_ += '}';
        return {};
    }

    Result<void> array(element e, std::size_t depth)
    {
        NPS_TRY_VOID(enter(depth));
        simdjson::dom::array arr;
        if (e.get(arr) != simdjson::SUCCESS)
            return fail("unreadable array");
        out_ += '[';
        std::size_t index = 0;
        for (element item : arr) {
            if (index > 0)
                out_ += ',';
            path_.push_back(PathStep{{}, index, true});
            NPS_TRY_VOID(value(item, depth + 1, {}));
            path_.pop_back();
            ++index;
        }
        out_ += ']';
        return {};
    }

    // RFC 8785 §3.2.2.2: only '"', '\\' and controls are escaped; the short
    // forms where JSON has them, \u00xx (lowercase) otherwise.
    void string(std::string_view s) { append_json_string(out_, s); }

    Error fail(std::string problem) const
    {
        std::string where(root_path_);
        for (const PathStep& step : path_)
            where = step.is_index ? index_path(where, step.index) : member_path(where, step.key);
        if (where.empty())
            where = "JSON document";
        return protocol_error(std::string(kMalformed), where + ": " + problem);
    }

    std::string& out_;
    std::string_view root_path_;
    std::vector<PathStep> path_;
};

}  // namespace

Result<void> jcs_append(simdjson::dom::element value, std::string& out, std::string_view path,
                        std::string_view omit_member)
{
    Writer writer(out, path);
    return writer.value(value, 1, omit_member);
}

Result<std::string> jcs_of(simdjson::dom::element value, std::string_view path)
{
    std::string out;
    NPS_TRY_VOID(jcs_append(value, out, path));
    return out;
}

}  // namespace detail

Result<std::string> jcs_canonicalize(std::string_view json_text)
{
    try {
        simdjson::dom::parser parser;
        const auto root = NPS_TRY(json::parse_document(parser, json_text, "JSON document"));
        return detail::jcs_of(root);
    } catch (const std::bad_alloc&) {
        return internal_error("JCS canonicalization: out of memory");
    }
}

}  // namespace nps::proto
