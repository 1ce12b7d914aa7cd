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

}  // namespace nps::supervisor::detail
