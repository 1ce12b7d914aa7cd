// SPDX-License-Identifier: Apache-2.0
#include "nps/image/layer_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "../unpack/diff_id.hpp"
#include "nps/base/digest.hpp"
#include "layer_lock.hpp"
#include "remove_tree.hpp"

namespace nps::image {

namespace {

constexpr std::string_view kTempPrefix = ".tmp-";
constexpr std::string_view kLockPrefix = ".lock-";

bool is_directory_at(int dir_fd, const std::string& name)
{
    struct stat st {};
    return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

Result<std::string> random_suffix()
{
    unsigned char bytes[8];
    if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
        return system_error_errno("Failed to read random bytes");
    return to_hex(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

// Removes what a crashed unpack of this layer left; the caller holds the
// layer's lock, so no live unpack owns any of them.
Result<void> remove_leftovers(const std::string& layers_dir, const std::string& hex)
{
    std::string prefix = std::string(kTempPrefix) + hex + "-";
    std::vector<std::string> stale;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(layers_dir, ec)) {
        std::string name = entry.path().filename().string();
        if (name.compare(0, prefix.size(), prefix) == 0)
            stale.push_back(entry.path().string());
    }
    if (ec)
        return system_error("Failed to list layer directory '" + layers_dir + "'", ec.value());
    for (const std::string& path : stale)
        NPS_TRY_VOID(detail::remove_tree(path));
    return {};
}

}  // namespace

Result<LayerCache> LayerCache::open(LayerCacheOptions options)
{
    std::error_code ec;
    std::filesystem::create_directories(options.layers_dir, ec);
    if (ec)
        return system_error("Failed to create layer directory '" + options.layers_dir + "'", ec.value());
    UniqueFd dir(::open(options.layers_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir)
        return system_error_errno("Failed to open layer directory '" + options.layers_dir + "'");
    // Layers hold whole images; nobody but the runner needs to read them.
    if (::fchmod(dir.get(), 0700) < 0)
        return system_error_errno("Failed to restrict layer directory '" + options.layers_dir + "'");
    return LayerCache(std::move(options), std::move(dir));
}

Result<std::string> LayerCache::path_of(std::string_view diff_id) const
{
    std::string hex = NPS_TRY(detail::sha256_hex_of(diff_id));
    return options_.layers_dir + "/" + hex;
}

bool LayerCache::contains(std::string_view diff_id) const
{
    Result<std::string> hex = detail::sha256_hex_of(diff_id);
    return hex && is_directory_at(dir_.get(), *hex);
}

Result<std::string> LayerCache::ensure(const LayerSource& layer)
{
    std::string hex = NPS_TRY(detail::sha256_hex_of(layer.diff_id));
    std::string final_path = options_.layers_dir + "/" + hex;
    if (is_directory_at(dir_.get(), hex))
        return final_path;

    detail::LayerLock lock = NPS_TRY(detail::LayerLock::acquire(dir_.get(), std::string(kLockPrefix) + hex));
    if (is_directory_at(dir_.get(), hex))
        return final_path;  // another caller unpacked it while we waited
    if (layer.blob_path.empty())
        return internal_error("Layer " + layer.diff_id + " left the layer cache ('" + final_path +
                              "') while an image using it was pinned; import the image again");
    NPS_TRY_VOID(remove_leftovers(options_.layers_dir, hex));

    std::string temp = std::string(kTempPrefix) + hex + "-" + NPS_TRY(random_suffix());
    NPS_TRY(unpack_layer({
        .blob_path = layer.blob_path,
        .media_type = layer.media_type,
        .diff_id = layer.diff_id,
        .target_dir = options_.layers_dir + "/" + temp,
        .limits = options_.limits,
        .device_nodes = options_.device_nodes,
        .durability = options_.durability,
    }));
    if (::renameat2(dir_.get(), temp.c_str(), dir_.get(), hex.c_str(), RENAME_NOREPLACE) < 0) {
        int err = errno;
        (void)detail::remove_tree(options_.layers_dir + "/" + temp);
        return system_error("Failed to publish layer '" + final_path + "'", err);
    }
    if (options_.durability == Durability::sync && ::fsync(dir_.get()) < 0)
        return system_error_errno("Failed to sync layer directory '" + options_.layers_dir + "'");
    return final_path;
}

Result<std::vector<std::string>> LayerCache::ensure_chain(const std::vector<LayerSource>& bottom_first)
{
    std::vector<std::string> top_first(bottom_first.size());
    for (std::size_t i = 0; i < bottom_first.size(); ++i)
        top_first[bottom_first.size() - 1 - i] = NPS_TRY(ensure(bottom_first[i]));
    return top_first;
}

Result<void> LayerCache::remove(std::string_view diff_id)
{
    std::string hex = NPS_TRY(detail::sha256_hex_of(diff_id));
    detail::LayerLock lock = NPS_TRY(detail::LayerLock::acquire(dir_.get(), std::string(kLockPrefix) + hex));
    if (!is_directory_at(dir_.get(), hex))
        return {};
    // Renamed out of the way first, so the layer disappears at once and a
    // crash mid-removal leaves a leftover the next unpack clears, never a
    // half-removed layer under its real name.
    std::string temp = std::string(kTempPrefix) + hex + "-" + NPS_TRY(random_suffix());
    if (::renameat(dir_.get(), hex.c_str(), dir_.get(), temp.c_str()) < 0)
        return system_error_errno("Failed to remove layer '" + options_.layers_dir + "/" + hex + "'");
    return detail::remove_tree(options_.layers_dir + "/" + temp);
}

}  // namespace nps::image
