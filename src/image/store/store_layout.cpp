// SPDX-License-Identifier: Apache-2.0
#include "nps/image/store_layout.hpp"

#include "nps/image/content_digest.hpp"

namespace nps::image {

std::string StoreLayout::blob_path(std::string_view digest) const
{
    return blobs_dir() + "/" + std::string(digest_hex(digest));
}

std::string StoreLayout::layer_dir(std::string_view diff_id) const
{
    return layers_dir() + "/" + std::string(digest_hex(diff_id));
}

}  // namespace nps::image
