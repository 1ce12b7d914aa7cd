// SPDX-License-Identifier: Apache-2.0
// ImageStore::import: plan from the source's metadata, copy the blobs the
// store lacks (verifying each), then record manifests and names in one
// transaction. Nothing is unpacked here.
#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <vector>

#include "../store/image_db.hpp"
#include "import_plan.hpp"
#include "import_source.hpp"
#include "nps/image/blob_store.hpp"
#include "nps/image/content_digest.hpp"
#include "nps/image/image_store.hpp"
#include "nps/image/media_types.hpp"
#include "nps/image/store_lock.hpp"

namespace nps::image {

namespace {

using detail::ByteReader;
using detail::ImportSource;
using detail::PlannedImage;
using detail::PlannedLayer;

constexpr std::size_t kCopyChunk = 1 << 20;

struct CopiedBlob {
    std::string digest;
    std::string media_type;
    std::int64_t size = 0;
};

class Copier {
public:
    Copier(const BlobStore& blobs, ImportSource& source, const ProgressFn& progress)
        : blobs_(blobs), source_(source), progress_(progress) {}

    // A verified blob already in the store, if there is one.
    Result<std::optional<std::int64_t>> present(const std::string& digest)
    {
        if (auto it = verified_.find(digest); it != verified_.end())
            return std::optional<std::int64_t>{it->second};
        auto size = NPS_TRY(detail::verified_blob_size(blobs_, digest, progress_));
        if (size)
            verified_[digest] = *size;
        return size;
    }

    // Decides for each layer whether the store has it; returns the source
    // members to copy.
    Result<std::set<std::string>> needed(std::vector<PlannedImage>& images)
    {
        std::set<std::string> paths;
        for (auto& image : images) {
            for (auto& layer : image.layers) {
                // docker-archive layers: an uncompressed copy (digest = diff_id) will do.
                const std::string known = layer.expected_digest ? *layer.expected_digest
                                          : layer.sniff        ? layer.diff_id
                                                               : std::string();
                if (!known.empty()) {
                    if (auto size = NPS_TRY(present(known))) {
                        if (layer.sniff)
                            layer.media_type = NPS_TRY(sniffed_type(known));
                        layer.digest = known;
                        layer.size = *size;
                        continue;
                    }
                }
                if (layer.source_path.empty())
                    return internal_error(source_.describe() + " has no blobs/sha256/" +
                                          std::string(digest_hex(layer.digest)) + " (a layer of the image)");
                paths.insert(layer.source_path);
            }
        }
        return paths;
    }

    Result<void> copy(std::vector<PlannedImage>& images, const std::set<std::string>& paths)
    {
        // Expectations per member: the first layer naming it (duplicates are the same content).
        std::map<std::string, const PlannedLayer*> first;
        for (const auto& image : images)
            for (const auto& layer : image.layers)
                if (paths.count(layer.source_path))
                    first.emplace(layer.source_path, &layer);
        NPS_TRY_VOID(source_.stream(paths, [&](const std::string& path, ByteReader& reader) -> Result<void> {
            copied_[path] = NPS_TRY(copy_one(*first.at(path), path, reader));
            return {};
        }));
        for (auto& image : images)
            for (auto& layer : image.layers) {
                auto it = copied_.find(layer.source_path);
                if (layer.digest.empty() && it == copied_.end())
                    return internal_error("Layer " + layer.source_path + " of " + source_.describe() + " was not copied");
                if (it != copied_.end() && paths.count(layer.source_path)) {
                    layer.digest = it->second.digest;
                    layer.size = it->second.size;
                    if (layer.sniff)
                        layer.media_type = it->second.media_type;
                }
            }
        return {};
    }

    // The layer media type a stored blob's magic bytes announce.
    Result<std::string> sniffed_type(const std::string& digest) const
    {
        UniqueFd fd(::open(blobs_.path(digest).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd)
            return system_error_errno("Failed to open blob " + digest);
        char head[4] = {};
        const ssize_t n = ::pread(fd.get(), head, sizeof head, 0);
        if (n < 0)
            return system_error_errno("Failed to read blob " + digest);
        return std::string(media_type::oci_layer_type(
            media_type::sniff_compression(std::string_view(head, static_cast<std::size_t>(n)))));
    }

    void report(const ImportProgress& p) const
    {
        if (progress_)
            progress_(p);
    }

private:
    Result<CopiedBlob> copy_one(const PlannedLayer& layer, const std::string& path, ByteReader& reader)
    {
        std::vector<char> buf(kCopyChunk);
        std::size_t filled = NPS_TRY(fill(reader, buf));
        CopiedBlob out;
        BlobWriteOptions options{.expected_digest = layer.expected_digest,
                                 .expected_size = layer.expected_size,
                                 .source = source_.describe() + " member " + path};
        if (layer.sniff) {
            const auto compression = media_type::sniff_compression(std::string_view(buf.data(), filled));
            out.media_type = media_type::oci_layer_type(compression);
            // An uncompressed layer is its own diff: it must hash to the config's diff_id.
            if (compression == media_type::Compression::none && !options.expected_digest)
                options.expected_digest = layer.diff_id;
        } else {
            out.media_type = layer.media_type;
        }
        const std::string label = options.expected_digest.value_or(path);
        const std::uint64_t total = layer.expected_size.value_or(0);
        auto writer = NPS_TRY(blobs_.writer(std::move(options)));
        while (filled > 0) {
            NPS_TRY_VOID(writer.write(buf.data(), filled));
            report({ImportProgress::Phase::copying, label, writer.bytes_written(), total});
            filled = NPS_TRY(fill(reader, buf));
        }
        out.size = static_cast<std::int64_t>(writer.bytes_written());
        out.digest = NPS_TRY(writer.commit());
        report({ImportProgress::Phase::stored, out.digest, writer.bytes_written(), writer.bytes_written()});
        verified_[out.digest] = out.size;
        return out;
    }

    // Reads until the buffer is full or the member ends.
    static Result<std::size_t> fill(ByteReader& reader, std::vector<char>& buf)
    {
        std::size_t filled = 0;
        while (filled < buf.size()) {
            const std::size_t n = NPS_TRY(reader.read(buf.data() + filled, buf.size() - filled));
            if (n == 0)
                break;
            filled += n;
        }
        return filled;
    }

    const BlobStore& blobs_;
    ImportSource& source_;
    const ProgressFn& progress_;
    std::map<std::string, std::int64_t> verified_;
    std::map<std::string, CopiedBlob> copied_;
};

// The OCI manifest of a docker-archive image, now that its layers are known.
std::string build_manifest(const PlannedImage& image)
{
    ImageManifest m;
    m.media_type = media_type::kOciManifest;
    m.config = {.media_type = image.config_media_type,
                .digest = image.config_digest,
                .size = static_cast<std::int64_t>(image.config_bytes.size())};
    for (const auto& layer : image.layers)
        m.layers.push_back({.media_type = layer.media_type, .digest = layer.digest, .size = layer.size});
    return serialize_manifest(m);
}

}  // namespace

Result<std::vector<ImportedImage>> ImageStore::import(const ImportRequest& request, const ProgressFn& progress)
{
    const Platform wanted = request.platform.value_or(host_platform());
    auto source = NPS_TRY(detail::open_import_source(request.path));

    std::vector<PlannedImage> images;
    if (NPS_TRY(source->file_size("oci-layout")))
        images = NPS_TRY(detail::plan_oci(*source, request, wanted));
    else if (NPS_TRY(source->file_size("manifest.json")))
        images = NPS_TRY(detail::plan_docker(*source, request, wanted));
    else
        return internal_error("Failed to import " + source->describe() +
                              ": neither an OCI image layout (no oci-layout file) nor a docker-archive (no manifest.json)");

    // Shared: other imports may run alongside; gc waits until we have recorded everything.
    auto lock = NPS_TRY(StoreLock::acquire(layout_.lock_file(), LockMode::shared));
    auto blobs = NPS_TRY(BlobStore::open(layout_.blobs_dir()));
    Copier copier(blobs, *source, progress);
    const std::set<std::string> paths = NPS_TRY(copier.needed(images));
    NPS_TRY_VOID(copier.copy(images, paths));

    for (auto& image : images)
        if (image.synthesize_manifest)
            image.manifest_bytes = build_manifest(image);
    return detail::commit_images(blobs, *db_, images, source->describe());
}

}  // namespace nps::image
