// SPDX-License-Identifier: Apache-2.0
#include "idmapped_layers.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "nps/base/unique_fd.hpp"

namespace nps::image::detail {

namespace {

Result<void> attach_one(const std::string& source, const std::string& target, int userns_fd)
{
    UniqueFd tree(static_cast<int>(::open_tree(AT_FDCWD, source.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
    if (!tree)
        return system_error_errno("Failed to clone the mount of layer '" + source + "' (open_tree)");
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_IDMAP;
    attr.userns_fd = static_cast<std::uint64_t>(userns_fd);
    if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
        return system_error_errno("Failed to idmap layer '" + source +
                                  "' for the worker's user namespace (mount_setattr MOUNT_ATTR_IDMAP)");
    if (::mkdir(target.c_str(), 0700) < 0)
        return system_error_errno("Failed to create '" + target + "'");
    if (::move_mount(tree.get(), "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) < 0) {
        int err = errno;
        ::rmdir(target.c_str());
        return system_error("Failed to attach the idmapped layer '" + source + "' at '" + target + "'", err);
    }
    return {};
}

}  // namespace

Result<IdmappedLayers> IdmappedLayers::attach(const std::vector<std::string>& lower_dirs, const std::string& dir,
                                              int userns_fd)
{
    if (::mkdir(dir.c_str(), 0700) < 0)
        return system_error_errno("Failed to create '" + dir + "'");
    IdmappedLayers layers(dir);  // from here on the destructor undoes
    layers.paths_.reserve(lower_dirs.size());
    for (std::size_t i = 0; i < lower_dirs.size(); ++i) {
        std::string target = dir + "/" + std::to_string(i);
        NPS_TRY_VOID(attach_one(lower_dirs[i], target, userns_fd));
        layers.paths_.push_back(std::move(target));
    }
    return layers;
}

IdmappedLayers::IdmappedLayers(IdmappedLayers&& other) noexcept
    : dir_(std::exchange(other.dir_, std::string())), paths_(std::exchange(other.paths_, {}))
{
}

IdmappedLayers::~IdmappedLayers()
{
    if (dir_.empty())
        return;
    for (const std::string& path : paths_) {
        ::umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
        ::rmdir(path.c_str());
    }
    ::rmdir(dir_.c_str());
}

}  // namespace nps::image::detail
