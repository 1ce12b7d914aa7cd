// SPDX-License-Identifier: Apache-2.0
// Which locally announced agents would lose their image to an `image rm`.
#pragma once

#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/config/config.hpp"
#include "nps/image/image_store.hpp"

namespace nps::cli {

struct ImageInUse {
    std::string target;  // the REF given to image rm
    std::string nid;     // the announce whose SpawnSpec names it
    std::string image;   // as the SpawnSpec writes it
};

// For each target (a name, a digest or a digest prefix) the announces in
// runner.db whose inline SpawnSpec image it would remove: the same stored
// name, or, for a digest, any name of that manifest. Announces with a remote
// SpawnSpec (https, nwp) are not fetched, and an announce whose image does
// not resolve now uses nothing.
Result<std::vector<ImageInUse>> images_in_use(const config::Config& config, image::ImageStore& images,
                                              const std::vector<std::string>& targets);

}  // namespace nps::cli
