// SPDX-License-Identifier: Apache-2.0
#include "idmapped_layers.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

namespace nps::image::detail {

Result<IdmappedLayers> IdmappedLayers::clone(const std::vector<std::string>& lower_dirs, int userns_fd)
{
    IdmappedLayers layers;
    layers.sources_ = lower_dirs;
    layers.trees_.reserve(lower_dirs.size());
    for (const std::string& source : lower_dirs) {
        UniqueFd tree(static_cast<int>(::open_tree(AT_FDCWD, source.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
        if (!tree)
            return system_error_errno("Failed to clone the mount of layer '" + source + "' (open_tree)");
        mount_attr attr{};
        attr.attr_set = MOUNT_ATTR_IDMAP;
        attr.userns_fd = static_cast<std::uint64_t>(userns_fd);
        if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
            return system_error_errno("Failed to idmap layer '" + source +
                                      "' for the worker's user namespace (mount_setattr MOUNT_ATTR_IDMAP)");
        layers.trees_.push_back(std::move(tree));
    }
    return layers;
}

IdmappedLayers::IdmappedLayers(IdmappedLayers&& other) noexcept
    : sources_(std::move(other.sources_)),
      trees_(std::move(other.trees_)),
      dir_(std::exchange(other.dir_, std::string())),
      paths_(std::exchange(other.paths_, {}))
{
}

IdmappedLayers::~IdmappedLayers()
{
    for (const std::string& path : paths_) {
        ::umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
        ::rmdir(path.c_str());
    }
    if (!dir_.empty())
        ::rmdir(dir_.c_str());
}

std::vector<int> IdmappedLayers::fds() const
{
    std::vector<int> fds;
    fds.reserve(trees_.size());
    for (const UniqueFd& tree : trees_)
        fds.push_back(tree.get());
    return fds;
}

Result<void> IdmappedLayers::attach(const std::string& dir)
{
    if (!dir_.empty())
        return internal_error("The idmapped layers are already attached under '" + dir_ + "'");
    if (::mkdir(dir.c_str(), 0700) < 0)
        return system_error_errno("Failed to create '" + dir + "'");
    dir_ = dir;  // from here on the destructor undoes
    paths_.reserve(trees_.size());
    for (std::size_t i = 0; i < trees_.size(); ++i) {
        std::string target = dir + "/" + std::to_string(i);
        if (::mkdir(target.c_str(), 0700) < 0)
            return system_error_errno("Failed to create '" + target + "'");
        if (::move_mount(trees_[i].get(), "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) < 0) {
            int err = errno;
            ::rmdir(target.c_str());
            return system_error("Failed to attach the idmapped layer '" + sources_[i] + "' at '" + target + "'",
                                err);
        }
        paths_.push_back(std::move(target));
    }
    return {};
}

}  // namespace nps::image::detail
