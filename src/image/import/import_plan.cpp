// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the OCI and docker-archive planners.
#include "import_plan.hpp"

#include "nps/image/content_digest.hpp"
#include "nps/image/reference.hpp"

namespace nps::image::detail {

Result<std::string> read_described_blob(ImportSource& source, const std::string& path, const std::string& digest,
                                        std::optional<std::int64_t> size, std::size_t max_bytes)
{
    if (size && *size > static_cast<std::int64_t>(max_bytes))
        return internal_error("Refusing blob " + digest + " in " + source.describe() + ": its descriptor declares " +
                              std::to_string(*size) + " bytes, more than the limit of " + std::to_string(max_bytes));
    std::string data = NPS_TRY(source.read_small(path, max_bytes));
    if (size && static_cast<std::int64_t>(data.size()) != *size)
        return internal_error("Blob " + digest + " in " + source.describe() + " is corrupt: it has " +
                              std::to_string(data.size()) + " bytes, its descriptor declares " + std::to_string(*size));
    const std::string actual = digest_of(data);
    if (actual != digest)
        return internal_error("Blob " + digest + " in " + source.describe() + " is corrupt: its content hashes to " +
                              actual);
    return data;
}

Result<void> attach_config(PlannedImage& image, std::string bytes, std::string digest, std::string media_type,
                           std::size_t layer_count, const Platform& wanted, const std::string& what)
{
    image.config = NPS_TRY(parse_image_config(bytes, what));
    image.platform = image.config.platform;
    if (platform_match(wanted, image.platform) == 0)
        return internal_error("The " + what + " is for " + image.platform.to_string() + ", not " +
                              wanted.to_string() + " (choose another platform with --platform)");
    if (image.config.diff_ids.size() != layer_count)
        return internal_error("Invalid " + what + ": rootfs.diff_ids lists " +
                              std::to_string(image.config.diff_ids.size()) + " layers, the image has " +
                              std::to_string(layer_count));
    image.config_bytes = std::move(bytes);
    image.config_digest = std::move(digest);
    image.config_media_type = std::move(media_type);
    return {};
}

Result<std::string> checked_name(const std::string& text, const std::string& origin)
{
    auto name = parse_image_name(text);
    if (!name)
        return internal_error(name.error().message + " (" + origin + ")");
    return name->to_string();
}

}  // namespace nps::image::detail
