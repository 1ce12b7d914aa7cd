// SPDX-License-Identifier: Apache-2.0
// ImageStore::pull: reference → manifest (through an index for this
// platform) → config → layers the store lacks, each streamed through a
// BlobWriter that checks size and digest as the bytes arrive → the same
// commit as import.
#include <algorithm>
#include <optional>
#include <set>

#include "../store/image_db.hpp"
#include "../import/import_plan.hpp"
#include "nps/base/limits.hpp"
#include "nps/image/content_digest.hpp"
#include "nps/image/image_store.hpp"
#include "nps/image/media_types.hpp"
#include "nps/image/store_lock.hpp"
#include "registry_client.hpp"

namespace nps::image {

namespace {

using detail::FetchedManifest;
using detail::RegistryClient;

// A manifest's descriptor in an index, with the platform it runs on.
struct Candidate {
    Descriptor descriptor;
    std::optional<Platform> platform;
};

// The media type a response's Content-Type gives, when it is one of ours.
std::string hint_of(const FetchedManifest& m)
{
    return media_type::is_manifest(m.media_type) || media_type::is_index(m.media_type) ? m.media_type : std::string();
}

class Puller {
public:
    Puller(RegistryClient& client, const BlobStore* blobs, const ProgressFn& progress)
        : client_(client), blobs_(blobs), progress_(progress) {}

    void set_blobs(const BlobStore* blobs) { blobs_ = blobs; }

    // A manifest (or index) named by a descriptor: digest and size checked.
    Result<FetchedManifest> described(const Descriptor& d, std::size_t max_bytes)
    {
        if (d.size > static_cast<std::int64_t>(max_bytes))
            return internal_error("Refusing manifest " + d.digest + " of " + client_.describe() + ": its descriptor declares " +
                                  std::to_string(d.size) + " bytes, more than the limit of " + std::to_string(max_bytes));
        FetchedManifest m = NPS_TRY(client_.manifest(d.digest, max_bytes));
        if (static_cast<std::int64_t>(m.bytes.size()) != d.size)
            return internal_error("Manifest " + d.digest + " of " + client_.describe() + " has " +
                                  std::to_string(m.bytes.size()) + " bytes, its descriptor declares " +
                                  std::to_string(d.size));
        m.media_type = d.media_type;  // what parse_* checks the document's own mediaType against
        return m;
    }

    Result<void> collect(const ImageIndex& index, std::size_t depth, std::vector<Candidate>& out)
    {
        for (const auto& entry : index.manifests) {
            if (media_type::is_index(entry.media_type)) {
                if (depth >= limits::kMaxIndexNesting)
                    return internal_error("Refusing the image index of " + client_.describe() + ": indexes nested more than " +
                                          std::to_string(limits::kMaxIndexNesting) + " deep");
                const FetchedManifest nested = NPS_TRY(described(entry, limits::kMaxImageIndexBytes));
                const ImageIndex parsed = NPS_TRY(
                    parse_index(nested.bytes, entry.media_type, "image index " + entry.digest + " of " + client_.describe()));
                NPS_TRY_VOID(collect(parsed, depth + 1, out));
            } else if (media_type::is_manifest(entry.media_type)) {
                if (out.size() >= limits::kMaxIndexManifests)
                    return internal_error("Refusing the image index of " + client_.describe() + ": more than " +
                                          std::to_string(limits::kMaxIndexManifests) + " manifests");
                out.push_back({entry, entry.platform});
            }
            // Signatures, attestations and other artifacts are not images to run.
        }
        return {};
    }

    // The platform of a manifest whose index entry does not say: its config's.
    Result<Platform> learn_platform(const Descriptor& d)
    {
        const FetchedManifest m = NPS_TRY(described(d, limits::kMaxImageManifestBytes));
        const ImageManifest manifest =
            NPS_TRY(parse_manifest(m.bytes, d.media_type, "manifest " + d.digest + " of " + client_.describe()));
        const std::string text =
            NPS_TRY(client_.small_blob(manifest.config.digest, manifest.config.size, limits::kMaxImageConfigBytes));
        const auto config = NPS_TRY(parse_image_config(text, "image config " + manifest.config.digest));
        return config.platform;
    }

    Result<Descriptor> choose(const ImageIndex& index, const std::string& label, const Platform& wanted)
    {
        std::vector<Candidate> candidates;
        NPS_TRY_VOID(collect(index, 0, candidates));
        if (candidates.empty())
            return internal_error("The image index " + label + " of " + client_.describe() + " lists no image manifest");
        std::vector<std::optional<Platform>> known;
        for (const auto& c : candidates)
            known.push_back(c.platform);
        const auto choice = NPS_TRY(choose_platform(
            known, wanted, [&](std::size_t i) { return learn_platform(candidates[i].descriptor); }));
        if (choice.chosen)
            return candidates[*choice.chosen].descriptor;
        std::string message = "The image " + label + " of " + client_.describe() + " has no image for " +
                              wanted.to_string();
        if (!choice.available.empty())
            message += " (it has: " + choice.available + "; choose one with --platform)";
        if (choice.learn_error)
            message += "; " + choice.learn_error->message;
        return internal_error(message);
    }

    // Downloads a layer the store lacks, verifying while it streams.
    Result<void> download(const Descriptor& layer)
    {
        std::optional<BlobWriter> writer;
        const auto restart = [&]() -> Result<void> {
            writer.reset();  // a retry starts over: the partial temp file goes
            writer.emplace(NPS_TRY(blobs_->writer({.expected_digest = layer.digest,
                                                   .expected_size = static_cast<std::uint64_t>(layer.size),
                                                   .source = client_.describe()})));
            report({ImportProgress::Phase::copying, layer.digest, 0, static_cast<std::uint64_t>(layer.size)});
            return {};
        };
        const auto sink = [&](std::string_view chunk) -> Result<void> {
            NPS_TRY_VOID(writer->write(chunk.data(), chunk.size()));
            report({ImportProgress::Phase::copying, layer.digest, writer->bytes_written(),
                    static_cast<std::uint64_t>(layer.size)});
            return {};
        };
        NPS_TRY_VOID(client_.blob(layer.digest, restart, sink));
        const std::uint64_t written = writer->bytes_written();
        NPS_TRY(writer->commit());
        report({ImportProgress::Phase::stored, layer.digest, written, written});
        return {};
    }

private:
    void report(const ImportProgress& p) const
    {
        if (progress_)
            progress_(p);
    }

    RegistryClient& client_;
    const BlobStore* blobs_;
    const ProgressFn& progress_;
};

}  // namespace

Result<ImportedImage> ImageStore::pull(const PullRequest& request, const ProgressFn& progress)
{
    const ImageReference ref = NPS_TRY(parse_image_reference(request.reference));
    const std::string name = request.name ? NPS_TRY(detail::checked_name(*request.name, "--name"))
                                          : NPS_TRY(detail::checked_name(ref.default_name(), "the reference"));
    const Platform wanted = request.platform.value_or(host_platform());
    const RegistryEndpoint endpoint = NPS_TRY(resolve_endpoint(ref, request.settings));
    RegistryClient client = NPS_TRY(RegistryClient::open(endpoint, request.settings, request.notice));
    Puller puller(client, nullptr, progress);

    // The reference's manifest, or its index and then the manifest for this platform.
    const std::string asked = ref.manifest_reference();
    FetchedManifest top = NPS_TRY(client.manifest(asked, std::max(limits::kMaxImageManifestBytes,
                                                                  limits::kMaxImageIndexBytes)));
    const std::string label = "'" + asked + "'";
    const std::string top_what = "manifest " + label + " of " + client.describe();
    FetchedManifest chosen = top;
    if (NPS_TRY(document_kind(top.bytes, hint_of(top), top_what)) == DocumentKind::index) {
        const ImageIndex index = NPS_TRY(parse_index(top.bytes, hint_of(top), "image index " + label + " of " +
                                                                                  client.describe()));
        const Descriptor d = NPS_TRY(puller.choose(index, label, wanted));
        chosen = NPS_TRY(puller.described(d, limits::kMaxImageManifestBytes));
    }
    const std::string what = "manifest " + chosen.digest + " of " + client.describe();
    const ImageManifest manifest = NPS_TRY(parse_manifest(chosen.bytes, hint_of(chosen), what));

    detail::PlannedImage image;
    image.names = {name};
    image.manifest_bytes = chosen.bytes;
    image.manifest_media_type = manifest.media_type;
    const Descriptor& cd = manifest.config;
    std::string config = NPS_TRY(client.small_blob(cd.digest, cd.size, limits::kMaxImageConfigBytes));
    NPS_TRY_VOID(detail::attach_config(image, std::move(config), cd.digest, cd.media_type, manifest.layers.size(),
                                       wanted, "image config " + cd.digest + " of " + client.describe()));

    // Shared: other imports and pulls may run alongside; gc waits until the name is recorded.
    auto lock = NPS_TRY(StoreLock::acquire(layout_.lock_file(), LockMode::shared));
    auto blobs = NPS_TRY(BlobStore::open(layout_.blobs_dir()));
    puller.set_blobs(&blobs);
    std::set<std::string> done;  // a layer listed twice is fetched once
    for (std::size_t i = 0; i < manifest.layers.size(); ++i) {
        const Descriptor& d = manifest.layers[i];
        if (!done.count(d.digest)) {
            const auto present = NPS_TRY(detail::verified_blob_size(blobs, d.digest, progress));
            if (!present || *present != d.size)
                NPS_TRY_VOID(puller.download(d));
            done.insert(d.digest);
        }
        detail::PlannedLayer layer;
        layer.digest = d.digest;
        layer.media_type = d.media_type;
        layer.size = d.size;
        layer.diff_id = image.config.diff_ids[i];
        image.layers.push_back(std::move(layer));
    }
    auto imported = NPS_TRY(detail::commit_images(blobs, *db_, {image}, client.describe()));
    if (imported.size() != 1)
        return internal_error("Recording the pulled image " + name + " gave " + std::to_string(imported.size()) +
                              " records");
    return std::move(imported[0]);
}

}  // namespace nps::image
