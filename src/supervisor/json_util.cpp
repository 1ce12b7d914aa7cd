// SPDX-License-Identifier: Apache-2.0
#include "json_util.hpp"

#include "nps/proto/jcs.hpp"

namespace nps::supervisor::detail {

bool parse_json(simdjson::dom::parser& parser, std::string_view text, simdjson::dom::element& out)
{
    if (parser.parse(text.data(), text.size()).get(out) == simdjson::SUCCESS)
        return true;
    // Only a number simdjson cannot hold makes the canonical form parse
    // where the text did not; everything else fails both ways.
    auto canonical = proto::jcs_canonicalize(text);
    if (!canonical)
        return false;
    return parser.parse(canonical->data(), canonical->size()).get(out) == simdjson::SUCCESS;
}

void append_json_string(std::string& out, std::string_view s)
{
    static constexpr char kHex[] = "0123456789abcdef";
    out.push_back('"');
    for (unsigned char c : s) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (c < 0x20) {
                out += "\\u00";
                out.push_back(kHex[c >> 4]);
                out.push_back(kHex[c & 0xf]);
            } else {
                out.push_back(static_cast<char>(c));
            }
        }
    }
    out.push_back('"');
}

}  // namespace nps::supervisor::detail
