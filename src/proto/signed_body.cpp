// SPDX-License-Identifier: Apache-2.0
#include "signed_body.hpp"

#include <algorithm>

#include "jcs_dom.hpp"
#include "nps/base/json_string.hpp"
#include "nps/proto/jcs.hpp"

namespace nps::proto::detail {

namespace {

bool contains(std::initializer_list<std::string_view> list, std::string_view key)
{
    return std::find(list.begin(), list.end(), key) != list.end();
}

}  // namespace

Result<std::string> signed_body(simdjson::dom::element frame, const SignedBodyRules& rules, std::string_view code,
                                std::string_view what)
{
    simdjson::dom::object obj;
    if (frame.get_object().get(obj) != simdjson::SUCCESS)
        return protocol_error(std::string(code), std::string(what) + ": not a JSON object");
    // Re-assemble the kept members as JSON text, then canonicalize the whole:
    // JCS sorts the keys and finds duplicates among the kept ones.
    std::string text = "{";
    bool first = true;
    auto add = [&](std::string_view key, std::string_view value_text) {
        if (!first)
            text += ',';
        first = false;
        append_json_string(text, key);
        text += ':';
        text += value_text;
    };
    for (auto field : obj) {
        if (contains(rules.excluded, field.key) || (rules.drop_nulls && field.value.is_null()))
            continue;
        add(field.key, NPS_TRY(jcs_of(field.value, field.key)));
    }
    for (const auto& [key, literal] : rules.defaults) {
        simdjson::dom::element present;
        if (obj.at_key(key).get(present) == simdjson::SUCCESS && !present.is_null())
            continue;
        add(key, literal);
    }
    text += '}';
    return jcs_canonicalize(text);
}

}  // namespace nps::proto::detail
