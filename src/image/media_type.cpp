// SPDX-License-Identifier: Apache-2.0
#include <string>

#include "nps/image/layer_unpack.hpp"

namespace nps::image {

Result<Compression> compression_for_media_type(std::string_view media_type)
{
    if (auto compression = media_type::layer_compression(media_type))
        return *compression;
    return internal_error("Unsupported layer media type '" + std::string(media_type) + "'");
}

}  // namespace nps::image
