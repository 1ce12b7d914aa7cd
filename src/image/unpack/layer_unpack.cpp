// SPDX-License-Identifier: Apache-2.0
#include "nps/image/layer_unpack.hpp"

#include <unistd.h>

#include <string>

#include "confined_dir.hpp"
#include "diff_id.hpp"
#include "entry_path.hpp"
#include "entry_writer.hpp"
#include "layer_stream.hpp"
#include "../store/remove_tree.hpp"

namespace nps::image {

namespace {

const char* entry_name(archive_entry* entry)
{
    // Names libarchive could not convert to the locale's charset are still
    // available in the form the archive holds them.
    const char* name = archive_entry_pathname(entry);
    return name != nullptr ? name : archive_entry_pathname_utf8(entry);
}

Result<UnpackStats> extract(const LayerUnpackRequest& request, const std::string& want_hex,
                            detail::LayerStream& stream, detail::ConfinedDir& dir)
{
    UnpackStats stats;
    detail::EntryWriter writer(dir, stats,
                               {.device_nodes = request.device_nodes,
                                .max_file_bytes = request.limits.max_bytes,
                                .durability = request.durability});
    for (;;) {
        archive_entry* entry = NPS_TRY(stream.next_entry());
        if (entry == nullptr)
            break;
        if (++stats.entries > request.limits.max_entries)
            return internal_error("Refusing layer '" + request.blob_path + "': more than " +
                                  std::to_string(request.limits.max_entries) + " entries (the layer entry limit)");
        const char* name = entry_name(entry);
        if (name == nullptr)
            return internal_error("Refusing layer '" + request.blob_path + "': an entry without a path");
        detail::EntryPath path = NPS_TRY(detail::parse_entry_path(name));
        if (path.aufs_meta)
            continue;  // AUFS bookkeeping, meaningless to overlayfs
        NPS_TRY_VOID(writer.write(entry, path, stream));
    }
    Sha256 digest = NPS_TRY(stream.finish());
    stats.tar_bytes = stream.bytes();
    std::string got = to_hex(digest);
    if (got != want_hex)
        return internal_error("Layer '" + request.blob_path + "' does not match its diff_id: expected sha256:" +
                              want_hex + ", got sha256:" + got);
    NPS_TRY_VOID(writer.finish());
    if (request.durability == Durability::sync && ::syncfs(dir.fd()) < 0)
        return system_error_errno("Failed to sync layer directory '" + request.target_dir + "'");
    return stats;
}

}  // namespace

Result<Compression> compression_for_media_type(std::string_view media_type)
{
    if (auto compression = media_type::layer_compression(media_type))
        return *compression;
    return internal_error("Unsupported layer media type '" + std::string(media_type) + "'");
}

Result<UnpackStats> unpack_layer(const LayerUnpackRequest& request)
{
    Compression compression = NPS_TRY(compression_for_media_type(request.media_type));
    std::string want_hex = NPS_TRY(detail::sha256_hex_of(request.diff_id));
    detail::LayerStream stream;
    NPS_TRY_VOID(stream.open(request.blob_path, compression, request.limits.max_bytes));
    detail::ConfinedDir dir = NPS_TRY(detail::ConfinedDir::create_new(request.target_dir));

    Result<UnpackStats> stats = extract(request, want_hex, stream, dir);
    if (!stats) {
        // Nothing of a refused or broken layer stays behind. The primary
        // error is what the caller needs; a failed removal is secondary.
        (void)detail::remove_tree(request.target_dir);
    }
    return stats;
}

}  // namespace nps::image
