// SPDX-License-Identifier: Apache-2.0
#include "nps/image/worker_space.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "nps/base/limits.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/sandbox/writable_space.hpp"

namespace nps::image {

namespace {

struct SpaceDir {
    const char* name;
    mode_t mode;
    bool owned;  // by the sandbox's root
};

constexpr SpaceDir kSpaceDirs[] = {{"upper", 0755, true}, {"work", 0700, false}, {"tmp", 01777, true},
                                   {"shm", 01777, true}};

}  // namespace

Result<WorkerSpace> WorkerSpace::mount(const WorkerSpaceOptions& options)
{
    if (options.bytes < limits::kMinWorkerDiskBytes || options.bytes > limits::kMaxWorkerDiskBytes)
        return internal_error("Failed to make the writable space '" + options.dir + "': " +
                              std::to_string(options.bytes) + " bytes lie outside " +
                              std::to_string(limits::kMinWorkerDiskBytes) + ".." +
                              std::to_string(limits::kMaxWorkerDiskBytes));
    if (::mkdir(options.dir.c_str(), 0700) < 0) {
        if (errno == EEXIST)
            return system_error("Failed to create the writable space '" + options.dir +
                                    "': it exists (a previous worker of this name was not cleaned up)",
                                EEXIST);
        return system_error_errno("Failed to create the writable space '" + options.dir + "'");
    }
    WorkerSpace space;
    space.dir_ = options.dir;
    space.active_ = true;  // from here on the destructor undoes what was made
    const std::string tmpfs_options = sandbox::space_tmpfs_options(options.bytes, "0700");
    if (::mount(sandbox::kSpaceMountSource, options.dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                tmpfs_options.c_str()) < 0)
        return system_error_errno("Failed to mount tmpfs (" + tmpfs_options + ") on '" + options.dir + "'");
    space.mounted_ = true;
    UniqueFd root(::open(options.dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!root)
        return system_error_errno("Failed to open the writable space '" + options.dir + "'");
    for (const SpaceDir& d : kSpaceDirs) {
        const std::string path = options.dir + "/" + d.name;
        // mkdirat() applies the umask and drops the sticky bit: fchmodat after.
        if (::mkdirat(root.get(), d.name, d.mode) < 0 || ::fchmodat(root.get(), d.name, d.mode, 0) < 0)
            return system_error_errno("Failed to create '" + path + "'");
        if (d.owned && (options.owner_uid != 0 || options.owner_gid != 0) &&
            ::fchownat(root.get(), d.name, options.owner_uid, options.owner_gid, AT_SYMLINK_NOFOLLOW) < 0)
            return system_error_errno("Failed to give '" + path + "' to " + std::to_string(options.owner_uid) + ":" +
                                      std::to_string(options.owner_gid));
    }
    return space;
}

WorkerSpace::WorkerSpace(WorkerSpace&& other) noexcept
    : dir_(std::move(other.dir_)),
      mounted_(std::exchange(other.mounted_, false)),
      active_(std::exchange(other.active_, false))
{
}

WorkerSpace& WorkerSpace::operator=(WorkerSpace&& other) noexcept
{
    if (this != &other) {
        (void)release();
        dir_ = std::move(other.dir_);
        mounted_ = std::exchange(other.mounted_, false);
        active_ = std::exchange(other.active_, false);
    }
    return *this;
}

WorkerSpace::~WorkerSpace()
{
    (void)release();
}

Result<void> WorkerSpace::release()
{
    if (!active_)
        return {};
    if (mounted_) {
        if (::umount2(dir_.c_str(), UMOUNT_NOFOLLOW) < 0 &&
            (errno != EBUSY || ::umount2(dir_.c_str(), UMOUNT_NOFOLLOW | MNT_DETACH) < 0))
            // Still mounted: the directory stays for a later attempt (or
            // crash recovery).
            return system_error_errno("Failed to unmount the writable space '" + dir_ + "'");
        mounted_ = false;
    }
    active_ = false;
    if (::rmdir(dir_.c_str()) < 0 && errno != ENOENT)
        return system_error_errno("Failed to remove '" + dir_ + "'");
    return {};
}

}  // namespace nps::image
