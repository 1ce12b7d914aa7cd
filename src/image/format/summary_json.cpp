// SPDX-License-Identifier: Apache-2.0
#include "nps/image/summary_json.hpp"

#include "nps/base/time_format.hpp"

namespace nps::image {

nlohmann::json summary_json(const ImageSummary& i)
{
    using Json = nlohmann::json;
    return {{"name", i.name.empty() ? Json(nullptr) : Json(i.name)},
            {"digest", i.manifest_digest},
            {"platform", i.platform},
            {"size", i.size},
            {"layers", i.layers},
            {"imported_at", format_rfc3339_ms(i.imported_at_ms)},
            {"last_used_at", format_rfc3339_ms(i.last_used_at_ms)},
            {"pins", i.pins}};
}

}  // namespace nps::image
