// SPDX-License-Identifier: Apache-2.0
// ImageStore::remove and ImageStore::gc: under the exclusive store lock,
// drop stale pins, delete unreferenced and unpinned manifests from
// runner.db, then the blobs and unpacked layers nothing recorded uses any
// more. Layer directories are renamed into trash/ under the lock (fast) and
// deleted after it is released, so pins and imports wait only briefly.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>

#include "disk_usage.hpp"
#include "image_db.hpp"
#include "nps/base/digest.hpp"
#include "nps/image/blob_store.hpp"
#include "nps/image/content_digest.hpp"
#include "nps/image/image_store.hpp"
#include "nps/image/store_lock.hpp"

namespace nps::image {

namespace {

struct LayerDir {
    std::string diff_id;
    std::uint64_t disk_bytes = 0;
};

// Unpacked layer directories: names that are the hex of a diff_id. Anything
// else in layers/ (the unpacker's temp dirs and lock files) is not ours.
Result<std::vector<std::string>> list_layer_dirs(const StoreLayout& layout)
{
    std::vector<std::string> out;
    std::error_code ec;
    std::filesystem::directory_iterator it(layout.layers_dir(), ec);
    if (ec) {
        if (ec == std::errc::no_such_file_or_directory)
            return out;
        return system_error("Failed to list '" + layout.layers_dir() + "'", ec.value());
    }
    for (const auto& entry : it) {
        const std::string name = entry.path().filename().string();
        std::error_code type_ec;
        if (is_sha256_hex(name) && entry.is_directory(type_ec) && !entry.is_symlink(type_ec))
            out.push_back(sha256_digest_of_hex(name));
    }
    return out;
}

std::string random_suffix()
{
    std::random_device device;
    const std::uint64_t v = (static_cast<std::uint64_t>(device()) << 32) | device();
    return to_hex(std::string_view(reinterpret_cast<const char*>(&v), sizeof v));
}

class Sweep {
public:
    Sweep(const StoreLayout& layout, detail::ImageDb& db, const BlobStore& blobs, CollectReport& report)
        : layout_(layout), db_(db), blobs_(blobs), report_(report) {}

    Result<void> run(const std::optional<std::set<std::string>>& candidates)
    {
        const auto pins = NPS_TRY(scan_pins(layout_.pins_dir(), PinCleanup::remove_stale));
        report_.stale_pins = pins.stale_removed;
        pinned_.insert(pins.live.begin(), pins.live.end());

        // What the candidates are made of, read before their rows go.
        std::map<std::string, detail::ManifestRecord> before;
        if (candidates)
            for (const auto& digest : *candidates)
                if (auto record = NPS_TRY(db_.manifest(digest)))
                    before.emplace(digest, std::move(*record));

        const detail::Collection kept = NPS_TRY(db_.collect(candidates, pinned_));
        report_.removed_manifests = kept.removed_manifests;
        live_diff_ids_ = kept.live_diff_ids;
        NPS_TRY_VOID(note_kept_pinned(candidates));

        if (candidates) {
            for (const auto& digest : kept.removed_manifests) {
                const auto& m = before.at(digest);
                NPS_TRY_VOID(remove_blob_unless_live(m.digest, kept.live_blobs));
                NPS_TRY_VOID(remove_blob_unless_live(m.config_digest, kept.live_blobs));
                for (const auto& layer : m.layers) {
                    NPS_TRY_VOID(remove_blob_unless_live(layer.digest, kept.live_blobs));
                    if (!live_diff_ids_.count(layer.diff_id))
                        NPS_TRY_VOID(trash_layer(layer.diff_id, report_.removed_layers));
                }
            }
            return {};
        }
        for (const auto& blob : NPS_TRY(blobs_.list()))
            NPS_TRY_VOID(remove_blob_unless_live(blob.digest, kept.live_blobs));
        // Under the exclusive lock no writer is alive: every temp file is a dead writer's.
        for (const auto& name : NPS_TRY(blobs_.temp_files())) {
            NPS_TRY_VOID(blobs_.remove_temp(name));
            ++report_.temp_files;
        }
        for (const auto& diff_id : NPS_TRY(list_layer_dirs(layout_)))
            if (!live_diff_ids_.count(diff_id))
                NPS_TRY_VOID(trash_layer(diff_id, report_.removed_layers));
        return {};
    }

    // Evicts unpacked layers of images not in use, least recently used first,
    // while the store is over the policy's thresholds.
    Result<void> enforce(const GcPolicy& policy)
    {
        std::uint64_t usage = 0;
        for (const auto& blob : NPS_TRY(blobs_.list()))
            usage += blob.disk_bytes;
        std::vector<LayerDir> layers;
        for (const auto& diff_id : NPS_TRY(list_layer_dirs(layout_))) {
            layers.push_back({diff_id, detail::disk_usage(layout_.layer_dir(diff_id))});
            usage += layers.back().disk_bytes;
        }
        const bool use_disk = policy.max_disk_percent < 100;
        detail::FilesystemUsage fs;
        if (use_disk)
            fs = NPS_TRY(detail::filesystem_usage(layout_.images_dir()));
        std::uint64_t released = 0;  // in trash: freed once it is emptied
        const auto over = [&] {
            if (policy.max_bytes > 0 && usage > policy.max_bytes)
                return true;
            if (use_disk && fs.total_bytes > 0) {
                const std::uint64_t used = fs.used_bytes > released ? fs.used_bytes - released : 0;
                return used * 100 > static_cast<std::uint64_t>(policy.max_disk_percent) * fs.total_bytes;
            }
            return false;
        };

        if (over()) {
            // Last use of each diff_id: the latest of the images that have it.
            std::map<std::string, std::int64_t> last_used;
            std::set<std::string> in_use;
            for (const auto& m : NPS_TRY(db_.manifests()))
                for (const auto& layer : m.layers) {
                    auto& t = last_used[layer.diff_id];
                    t = std::max(t, m.last_used_at_ms);
                    if (pinned_.count(m.digest))
                        in_use.insert(layer.diff_id);
                }
            std::erase_if(layers, [&](const LayerDir& l) { return in_use.count(l.diff_id) != 0; });
            std::stable_sort(layers.begin(), layers.end(), [&](const LayerDir& a, const LayerDir& b) {
                return last_used[a.diff_id] < last_used[b.diff_id];
            });
            for (const auto& layer : layers) {
                if (!over())
                    break;
                NPS_TRY_VOID(trash_layer(layer.diff_id, report_.evicted_layers));
                usage -= std::min(usage, layer.disk_bytes);
                released += layer.disk_bytes;
            }
        }
        report_.over_threshold = over();
        report_.usage_bytes = usage;
        return {};
    }

private:
    Result<void> remove_blob_unless_live(const std::string& digest, const std::set<std::string>& live)
    {
        if (live.count(digest) || !removed_blobs_.insert(digest).second)
            return {};
        const std::uint64_t freed = NPS_TRY(blobs_.remove(digest));
        report_.freed_bytes += freed;
        report_.removed_blobs.push_back(digest);
        return {};
    }

    Result<void> trash_layer(const std::string& diff_id, std::vector<std::string>& list)
    {
        const std::string from = layout_.layer_dir(diff_id);
        struct stat st{};
        if (::lstat(from.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
            return {};
        std::error_code ec;
        std::filesystem::create_directories(layout_.trash_dir(), ec);
        if (ec)
            return system_error("Failed to create '" + layout_.trash_dir() + "'", ec.value());
        const std::uint64_t bytes = detail::disk_usage(from);
        const std::string to = layout_.trash_dir() + "/" + std::string(digest_hex(diff_id)) + "." + random_suffix();
        if (std::rename(from.c_str(), to.c_str()) != 0)
            return system_error_errno("Failed to move the layer directory '" + from + "' to the trash");
        report_.freed_bytes += bytes;
        list.push_back(diff_id);
        return {};
    }

    // Unreferenced manifests the pins keep (among the candidates, for rm).
    Result<void> note_kept_pinned(const std::optional<std::set<std::string>>& candidates)
    {
        std::set<std::string> named;
        for (const auto& r : NPS_TRY(db_.refs()))
            named.insert(r.manifest_digest);
        for (const auto& digest : pinned_)
            if (!named.count(digest) && (!candidates || candidates->count(digest)))
                report_.kept_pinned.push_back(digest);
        return {};
    }

    const StoreLayout& layout_;
    detail::ImageDb& db_;
    const BlobStore& blobs_;
    CollectReport& report_;
    std::set<std::string> pinned_;
    std::set<std::string> live_diff_ids_;
    std::set<std::string> removed_blobs_;
};

// Deletes what sweeps moved to the trash (this one's and any a crashed
// sweep left). Failures leave entries for the next sweep.
void empty_trash(const StoreLayout& layout)
{
    std::error_code ec;
    std::filesystem::directory_iterator it(layout.trash_dir(), ec);
    if (ec)
        return;
    for (const auto& entry : it) {
        std::error_code remove_ec;
        std::filesystem::remove_all(entry.path(), remove_ec);
    }
}

}  // namespace

Result<CollectReport> ImageStore::remove(const std::vector<std::string>& refs)
{
    CollectReport report;
    {
        auto lock = NPS_TRY(StoreLock::acquire(layout_.lock_file(), LockMode::exclusive));
        const auto all_refs = NPS_TRY(db_->refs());
        std::vector<std::string> names;
        std::set<std::string> candidates;
        for (const auto& ref : refs) {
            std::string name;
            const std::string digest = NPS_TRY(find_manifest(ref, &name));
            candidates.insert(digest);
            if (name != digest) {
                names.push_back(name);
                continue;
            }
            for (const auto& r : all_refs)  // by digest: every name of it
                if (r.manifest_digest == digest)
                    names.push_back(r.name);
        }
        std::sort(names.begin(), names.end());
        names.erase(std::unique(names.begin(), names.end()), names.end());
        const auto untagged_from = NPS_TRY(db_->remove_refs(names));
        candidates.insert(untagged_from.begin(), untagged_from.end());
        report.untagged = names;
        auto blobs = NPS_TRY(BlobStore::open(layout_.blobs_dir()));
        Sweep sweep(layout_, *db_, blobs, report);
        NPS_TRY_VOID(sweep.run(candidates));
    }
    empty_trash(layout_);
    return report;
}

Result<CollectReport> ImageStore::gc(const GcPolicy& policy)
{
    CollectReport report;
    {
        auto lock = NPS_TRY(StoreLock::acquire(layout_.lock_file(), LockMode::exclusive));
        auto blobs = NPS_TRY(BlobStore::open(layout_.blobs_dir()));
        Sweep sweep(layout_, *db_, blobs, report);
        NPS_TRY_VOID(sweep.run(std::nullopt));
        NPS_TRY_VOID(sweep.enforce(policy));
    }
    empty_trash(layout_);
    return report;
}

}  // namespace nps::image
