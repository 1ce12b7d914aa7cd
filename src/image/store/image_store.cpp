// SPDX-License-Identifier: Apache-2.0
// ImageStore: opening, name resolution, listing, pinning.
#include "nps/image/image_store.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <map>

#include "image_db.hpp"
#include "nps/base/limits.hpp"
#include "nps/image/blob_store.hpp"
#include "nps/image/content_digest.hpp"
#include "nps/image/image_config.hpp"
#include "nps/image/reference.hpp"
#include "nps/image/store_lock.hpp"

namespace nps::image {

namespace {

constexpr std::size_t kMinDigestPrefix = 12;

bool all_hex(std::string_view s)
{
    return !s.empty() && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

}  // namespace

ImageStore::ImageStore(StoreLayout layout, std::unique_ptr<detail::ImageDb> db, const Clock& clock)
    : layout_(std::move(layout)), db_(std::move(db)), clock_(clock)
{
}

ImageStore::~ImageStore() = default;

Result<std::unique_ptr<ImageStore>> ImageStore::open(const OpenImageStore& options)
{
    if (options.state_dir.empty())
        return internal_error("Failed to open the image store: no state directory given");
    StoreLayout layout{options.state_dir};
    std::error_code ec;
    std::filesystem::create_directories(layout.images_dir(), ec);
    if (ec)
        return system_error("Failed to create the image store '" + layout.images_dir() + "'", ec.value());
    const Clock& clock = options.clock ? *options.clock : SystemClock::instance();
    auto db = NPS_TRY(detail::ImageDb::open(layout.database(), clock));
    return std::unique_ptr<ImageStore>(new ImageStore(std::move(layout), std::move(db), clock));
}

Result<std::string> ImageStore::find_manifest(const std::string& ref, std::string* name)
{
    if (ref.rfind(kSha256Prefix, 0) == 0) {
        NPS_TRY_VOID(check_digest(ref, "the image reference"));
        if (!NPS_TRY(db_->manifest(ref)))
            return internal_error("No image " + ref + " in the image store");
        *name = ref;
        return ref;
    }
    if (auto parsed = parse_image_name(ref)) {
        if (auto digest = NPS_TRY(db_->ref(parsed->to_string()))) {
            *name = parsed->to_string();
            return *digest;
        }
    } else if (!all_hex(ref)) {
        return std::move(parsed).error();
    }
    if (all_hex(ref) && ref.size() >= kMinDigestPrefix && ref.size() <= 64) {
        const auto matches = NPS_TRY(db_->manifests_with_prefix(ref));
        if (matches.size() == 1) {
            *name = matches[0];
            return matches[0];
        }
        if (matches.size() > 1)
            return internal_error("'" + ref + "' is the start of " + std::to_string(matches.size()) +
                                  " image digests; give more digits");
    }
    return internal_error("No image named '" + ref + "' in the image store");
}

Result<ResolvedImage> ImageStore::load(const std::string& manifest_digest, const std::string& name)
{
    auto record = NPS_TRY(db_->manifest(manifest_digest));
    if (!record)
        return internal_error("No image " + manifest_digest + " in the image store");
    auto blobs = NPS_TRY(BlobStore::open(layout_.blobs_dir()));
    const std::string text = NPS_TRY(blobs.read_verified(record->config_digest, limits::kMaxImageConfigBytes));
    auto parsed = NPS_TRY(parse_image_config(text, "image config " + record->config_digest));
    return ResolvedImage{.name = name,
                         .manifest_digest = record->digest,
                         .config_digest = record->config_digest,
                         .layers = std::move(record->layers),
                         .config = std::move(parsed.config)};
}

Result<ResolvedImage> ImageStore::resolve(const std::string& ref)
{
    std::string name;
    const std::string digest = NPS_TRY(find_manifest(ref, &name));
    return load(digest, name);
}

Result<PinnedImage> ImageStore::pin(const std::string& ref, const std::string& holder)
{
    // Shared: no gc or rm sweep can run between finding the manifest and pinning it.
    auto lock = NPS_TRY(StoreLock::acquire(layout_.lock_file(), LockMode::shared));
    std::string name;
    const std::string digest = NPS_TRY(find_manifest(ref, &name));
    auto pin = NPS_TRY(ImagePin::create(layout_.pins_dir(), digest, holder));
    NPS_TRY_VOID(db_->touch(digest));
    auto image = NPS_TRY(load(digest, name));
    return PinnedImage{std::move(image), std::move(pin)};
}

Result<VerifiedBlob> ImageStore::open_blob(const std::string& digest)
{
    auto blobs = NPS_TRY(BlobStore::open(layout_.blobs_dir()));
    return blobs.open_verified(digest);
}

Result<std::vector<ImageSummary>> ImageStore::list()
{
    const auto refs = NPS_TRY(db_->refs());
    const auto manifests = NPS_TRY(db_->manifests());
    const auto pins = NPS_TRY(scan_pins(layout_.pins_dir(), PinCleanup::keep_stale));
    std::map<std::string, const detail::ManifestRecord*> by_digest;
    for (const auto& m : manifests)
        by_digest[m.digest] = &m;
    std::vector<ImageSummary> out;
    const auto summary = [&](const std::string& name, const detail::ManifestRecord& m) {
        ImageSummary s{.name = name,
                       .manifest_digest = m.digest,
                       .platform = m.platform,
                       .size = static_cast<std::uint64_t>(m.size + m.config_size),
                       .layers = m.layers.size(),
                       .imported_at_ms = m.imported_at_ms,
                       .last_used_at_ms = m.last_used_at_ms,
                       .pins = pins.live.count(m.digest)};
        for (const auto& layer : m.layers)
            s.size += static_cast<std::uint64_t>(layer.size);
        return s;
    };
    std::set<std::string> named;
    for (const auto& r : refs) {
        auto it = by_digest.find(r.manifest_digest);
        if (it == by_digest.end())
            continue;  // the foreign key forbids it; be robust anyway
        out.push_back(summary(r.name, *it->second));
        named.insert(r.manifest_digest);
    }
    // Unnamed images still recorded (pinned, or awaiting gc) show with an empty name.
    for (const auto& m : manifests)
        if (!named.count(m.digest))
            out.push_back(summary("", m));
    return out;
}

Result<std::vector<BlobUsage>> ImageStore::blobs()
{
    const auto rows = NPS_TRY(db_->blobs());
    const auto pins = NPS_TRY(scan_pins(layout_.pins_dir(), PinCleanup::keep_stale));
    auto store = NPS_TRY(BlobStore::open(layout_.blobs_dir()));
    std::vector<BlobUsage> out;
    for (const auto& row : rows) {
        BlobUsage u{.digest = row.digest, .kind = row.kind, .size = static_cast<std::uint64_t>(row.size),
                    .refs = static_cast<std::size_t>(row.refs)};
        for (const auto& m : row.manifests)
            u.pins += pins.live.count(m);
        u.present = NPS_TRY(store.stat(row.digest)).has_value();
        out.push_back(std::move(u));
    }
    return out;
}

}  // namespace nps::image
