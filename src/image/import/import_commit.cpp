// SPDX-License-Identifier: Apache-2.0
// The last step shared by import and pull: small blobs in, records in one
// transaction. Kept in one place so that an imported and a pulled image
// are recorded identically.
#include "../store/image_db.hpp"
#include "import_plan.hpp"
#include "nps/image/content_digest.hpp"

namespace nps::image::detail {

Result<std::optional<std::int64_t>> verified_blob_size(const BlobStore& blobs, const std::string& digest,
                                                       const ProgressFn& progress)
{
    const auto report = [&](const ImportProgress& p) {
        if (progress)
            progress(p);
    };
    auto size = NPS_TRY(blobs.stat(digest));
    if (!size)
        return std::optional<std::int64_t>{};
    report({ImportProgress::Phase::checking_existing, digest, 0, *size});
    // A damaged copy is replaced rather than trusted.
    if (!blobs.verify(digest))
        return std::optional<std::int64_t>{};
    report({ImportProgress::Phase::already_present, digest, *size, *size});
    return std::optional<std::int64_t>{static_cast<std::int64_t>(*size)};
}

Result<std::vector<ImportedImage>> commit_images(const BlobStore& blobs, ImageDb& db,
                                                 const std::vector<PlannedImage>& images, const std::string& origin)
{
    std::vector<NamedManifest> records;
    std::vector<ImportedImage> imported;
    for (const auto& image : images) {
        NPS_TRY(blobs.put(image.config_bytes, {.expected_digest = image.config_digest, .source = origin}));
        const std::string manifest_digest = digest_of(image.manifest_bytes);
        NPS_TRY(blobs.put(image.manifest_bytes, {.expected_digest = manifest_digest, .source = origin}));

        NamedManifest record;
        record.manifest = {.digest = manifest_digest,
                           .media_type = image.manifest_media_type,
                           .size = static_cast<std::int64_t>(image.manifest_bytes.size()),
                           .platform = image.platform.to_string(),
                           .config_digest = image.config_digest,
                           .config_media_type = image.config_media_type,
                           .config_size = static_cast<std::int64_t>(image.config_bytes.size())};
        std::uint64_t size = image.manifest_bytes.size() + image.config_bytes.size();
        for (const auto& layer : image.layers) {
            record.manifest.layers.push_back(
                {.digest = layer.digest, .media_type = layer.media_type, .size = layer.size, .diff_id = layer.diff_id});
            size += static_cast<std::uint64_t>(layer.size);
        }
        record.names = image.names;
        for (const auto& name : image.names)
            imported.push_back({.name = name, .manifest_digest = manifest_digest, .platform = image.platform, .size = size});
        records.push_back(std::move(record));
    }
    const auto previous = NPS_TRY(db.record(records));
    for (std::size_t i = 0; i < imported.size() && i < previous.size(); ++i)
        imported[i].replaced = previous[i];
    return imported;
}

}  // namespace nps::image::detail
