// SPDX-License-Identifier: Apache-2.0
#include "json_document.hpp"

#include "nps/base/limits.hpp"
#include "nps/proto/json_reader.hpp"
#include "nps/proto/json_to_value.hpp"

namespace nps::image::detail {

bool has_nul(std::string_view s)
{
    return s.find('\0') != std::string_view::npos;
}

Result<nlohmann::json> parse_json_document(std::string_view text, std::size_t max_bytes, std::string_view what,
                                           TopLevel top)
{
    const std::string name(what);
    if (text.size() > max_bytes)
        return internal_error("Refusing " + name + ": " + std::to_string(text.size()) + " bytes, more than the limit of " +
                              std::to_string(max_bytes));
    // simdjson reads (it checks UTF-8); nlohmann holds the value.
    simdjson::dom::parser parser;  // per call: no buffer kept for the thread's life
    const auto root = proto::json::parse_document(parser, text, name);
    if (!root)
        return internal_error("Failed to parse " + root.error().message);
    auto held = proto::json::to_value(*root, limits::kMaxImageJsonDepth);
    if (!held)
        return internal_error("Refusing " + name + ": JSON nested deeper than " +
                              std::to_string(limits::kMaxImageJsonDepth) + " levels");
    if (held->is_object() || (top == TopLevel::object_or_array && held->is_array()))
        return std::move(*held);
    return internal_error("Invalid " + name + ": the document is not a JSON " +
                          (top == TopLevel::object ? "object" : "object or array"));
}

const nlohmann::json* Fields::find(const char* key) const
{
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null())
        return nullptr;
    return &*it;
}

Error Fields::fail(const std::string& key, const std::string& why) const
{
    return internal_error("Invalid " + what_ + ": " + prefix_ + key + " " + why);
}

Result<std::optional<std::string>> Fields::string(const char* key, std::size_t max_bytes) const
{
    const nlohmann::json* v = find(key);
    if (!v)
        return std::optional<std::string>{};
    if (!v->is_string())
        return fail(key, "must be a string");
    const auto& s = v->get_ref<const std::string&>();
    if (s.size() > max_bytes)
        return fail(key, "is longer than " + std::to_string(max_bytes) + " bytes");
    if (has_nul(s))
        return fail(key, "contains a NUL character");
    return std::optional<std::string>{s};
}

Result<std::string> Fields::required_string(const char* key, std::size_t max_bytes) const
{
    auto v = NPS_TRY(string(key, max_bytes));
    if (!v)
        return fail(key, "is missing");
    return std::move(*v);
}

Result<std::optional<std::int64_t>> Fields::integer(const char* key) const
{
    const nlohmann::json* v = find(key);
    if (!v)
        return std::optional<std::int64_t>{};
    if (v->is_number_unsigned()) {
        const auto u = v->get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(INT64_MAX))
            return fail(key, "is too large");
        return std::optional<std::int64_t>{static_cast<std::int64_t>(u)};
    }
    if (v->is_number_integer())
        return fail(key, "must not be negative");
    return fail(key, "must be a non-negative integer");
}

Result<std::optional<std::vector<std::string>>> Fields::strings(const char* key, std::size_t max_items,
                                                                std::size_t max_bytes) const
{
    using Out = std::optional<std::vector<std::string>>;
    const nlohmann::json* v = find(key);
    if (!v)
        return Out{};
    if (!v->is_array())
        return fail(key, "must be an array of strings");
    if (v->size() > max_items)
        return fail(key, "has more than " + std::to_string(max_items) + " entries");
    std::vector<std::string> out;
    out.reserve(v->size());
    for (const auto& item : *v) {
        if (!item.is_string())
            return fail(key, "must be an array of strings");
        const auto& s = item.get_ref<const std::string&>();
        if (s.size() > max_bytes)
            return fail(key, "has an entry longer than " + std::to_string(max_bytes) + " bytes");
        if (has_nul(s))
            return fail(key, "has an entry containing a NUL character");
        out.push_back(s);
    }
    return Out{std::move(out)};
}

Result<const nlohmann::json*> Fields::object(const char* key) const
{
    const nlohmann::json* v = find(key);
    if (v && !v->is_object())
        return fail(key, "must be an object");
    return v;
}

Result<const nlohmann::json*> Fields::array(const char* key, std::size_t max_items) const
{
    const nlohmann::json* v = find(key);
    if (!v)
        return v;
    if (!v->is_array())
        return fail(key, "must be an array");
    if (v->size() > max_items)
        return fail(key, "has more than " + std::to_string(max_items) + " entries");
    return v;
}

}  // namespace nps::image::detail
