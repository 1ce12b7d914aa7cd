// SPDX-License-Identifier: Apache-2.0
// An image of the store as `image ls --json` and GET /v1/images show it.
#pragma once

#include <nlohmann/json.hpp>

#include "nps/image/image_store.hpp"

namespace nps::image {

// {name|null, digest, platform, size, layers, imported_at, last_used_at, pins}
nlohmann::json summary_json(const ImageSummary& image);

}  // namespace nps::image
