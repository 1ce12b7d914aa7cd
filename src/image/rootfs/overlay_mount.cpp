// SPDX-License-Identifier: Apache-2.0
#include "overlay_mount.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>

#include "nps/base/unique_fd.hpp"

namespace nps::image::detail {

namespace {

// Every directory goes to the kernel as "/proc/self/fd/<n>" of an fd we
// hold: short whatever the real path (fsconfig() strings stop at 256 bytes,
// the legacy option page at 4 KiB), free of the ':' and ',' overlayfs would
// split on, and naming exactly the directory we opened.
std::string fd_path(int fd)
{
    return "/proc/self/fd/" + std::to_string(fd);
}

Result<UniqueFd> open_dir(const std::string& path)
{
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd)
        return system_error_errno("Failed to open overlay layer '" + path + "'");
    return fd;
}

// The messages the filesystem left in its fs_context ("e overlayfs: ...").
std::string kernel_messages(int fs_fd)
{
    std::string all;
    char buf[512];
    for (;;) {
        ssize_t n = ::read(fs_fd, buf, sizeof buf - 1);
        if (n <= 0)
            break;
        if (!all.empty())
            all += "; ";
        all.append(buf, static_cast<std::size_t>(n));
        while (!all.empty() && all.back() == '\n')
            all.pop_back();
    }
    return all;
}

Error mount_error(const OverlayMount& m, int err, const std::string& detail)
{
    std::string message = "Failed to mount overlay on '" + m.target + "'";
    if (!detail.empty())
        message += " (" + detail + ")";
    return system_error(std::move(message), err);
}

enum class LowerBy {
    fd,    // FSCONFIG_SET_FD (kernel >= 6.13)
    path,  // FSCONFIG_SET_STRING (kernel >= 6.8)
};

// legacy_context: overlay has no fs_context of its own (kernels before 6.5,
// e.g. Debian 12's 6.1): fsconfig() refuses FSCONFIG_SET_FD with EOPNOTSUPP
// and would pass a "lowerdir+" string through to mount(2)'s option parser,
// which refuses it only at FSCONFIG_CMD_CREATE. Only mount(2) can work then.
enum class Outcome { mounted, unsupported, legacy_context };

// The new mount API, one "lowerdir+" per layer. `unsupported` when the
// kernel refuses the first "lowerdir+" in this form (or has no fsopen());
// what it said then goes to *refusal, in case the refusal had another cause.
// `lower_fds`, when given, are the layers (by == fd), held by the caller.
Result<Outcome> mount_with_fsconfig(const OverlayMount& m, LowerBy by, int upper_fd, int work_fd,
                                    std::string* refusal, const std::vector<int>* lower_fds = nullptr)
{
    UniqueFd fs(::fsopen("overlay", FSOPEN_CLOEXEC));
    if (!fs) {
        if (errno == ENOSYS)
            return Outcome::unsupported;
        return mount_error(m, errno, "fsopen");
    }
    for (std::size_t i = 0; i < m.lower_dirs.size(); ++i) {
        UniqueFd opened;
        if (lower_fds == nullptr)
            opened = NPS_TRY(open_dir(m.lower_dirs[i]));
        const int lower = lower_fds != nullptr ? (*lower_fds)[i] : opened.get();
        int r = by == LowerBy::fd ? ::fsconfig(fs.get(), FSCONFIG_SET_FD, "lowerdir+", nullptr, lower)
                                  : ::fsconfig(fs.get(), FSCONFIG_SET_STRING, "lowerdir+", fd_path(lower).c_str(), 0);
        if (r < 0) {
            int err = errno;
            if (i == 0 && err == EOPNOTSUPP) {
                if (refusal != nullptr && refusal->empty())
                    *refusal = "the kernel's overlay takes only mount(2) options (before 6.5)";
                return Outcome::legacy_context;
            }
            if (i == 0 && err == EINVAL) {
                if (refusal != nullptr && refusal->empty())
                    *refusal = kernel_messages(fs.get());
                return Outcome::unsupported;
            }
            return mount_error(m, err, "layer '" + m.lower_dirs[i] + "': " + kernel_messages(fs.get()));
        }
        // The fs context holds its own reference now; the fd can go, so a
        // long chain never needs hundreds of descriptors at once.
    }
    if (::fsconfig(fs.get(), FSCONFIG_SET_STRING, "upperdir", fd_path(upper_fd).c_str(), 0) < 0 ||
        ::fsconfig(fs.get(), FSCONFIG_SET_STRING, "workdir", fd_path(work_fd).c_str(), 0) < 0 ||
        ::fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0) {
        int err = errno;
        return mount_error(m, err, kernel_messages(fs.get()));
    }
    UniqueFd mnt(::fsmount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV));
    if (!mnt)
        return mount_error(m, errno, "fsmount");
    if (::move_mount(mnt.get(), "", AT_FDCWD, m.target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return mount_error(m, errno, "move_mount");
    return Outcome::mounted;
}

Result<void> mount_legacy(const OverlayMount& m, int upper_fd, int work_fd)
{
    std::vector<UniqueFd> lowers;
    lowers.reserve(m.lower_dirs.size());
    std::string options = "lowerdir=";
    for (const std::string& dir : m.lower_dirs) {
        lowers.push_back(NPS_TRY(open_dir(dir)));
        if (lowers.size() > 1)
            options += ':';
        options += fd_path(lowers.back().get());
    }
    options += ",upperdir=" + fd_path(upper_fd) + ",workdir=" + fd_path(work_fd);
    if (options.size() > kLegacyOverlayOptionBytes)
        return internal_error("Failed to mount overlay on '" + m.target + "': " +
                              std::to_string(m.lower_dirs.size()) + " layers need " + std::to_string(options.size()) +
                              " bytes of mount options, more than the " +
                              std::to_string(kLegacyOverlayOptionBytes) +
                              " mount(2) takes (kernels from 6.8 mount any chain with \"lowerdir+\")");
    if (::mount("overlay", m.target.c_str(), "overlay", MS_NODEV, options.c_str()) < 0)
        return mount_error(m, errno, "mount(2)");
    return {};
}

}  // namespace

Result<void> mount_overlay(const OverlayMount& m)
{
    UniqueFd upper = NPS_TRY(open_dir(m.upper_dir));
    UniqueFd work = NPS_TRY(open_dir(m.work_dir));
    std::string refusal;
    auto only = [&](LowerBy by) -> Result<void> {
        Outcome outcome = NPS_TRY(mount_with_fsconfig(m, by, upper.get(), work.get(), &refusal));
        if (outcome != Outcome::mounted)
            return system_error("Failed to mount overlay on '" + m.target + "' (\"lowerdir+\" refused: " +
                                    refusal + ")",
                                EINVAL);
        return {};
    };
    switch (m.api) {
    case OverlayMountApi::lowerdir_by_fd: return only(LowerBy::fd);
    case OverlayMountApi::lowerdir_by_path: return only(LowerBy::path);
    case OverlayMountApi::legacy: return mount_legacy(m, upper.get(), work.get());
    case OverlayMountApi::automatic: break;
    }
    for (LowerBy by : {LowerBy::fd, LowerBy::path}) {
        Outcome outcome = NPS_TRY(mount_with_fsconfig(m, by, upper.get(), work.get(), &refusal));
        if (outcome == Outcome::mounted)
            return {};
        if (outcome == Outcome::legacy_context)
            break;
    }
    Result<void> legacy = mount_legacy(m, upper.get(), work.get());
    if (!legacy && !refusal.empty()) {
        // The first refusal may have been about the layer, not the API.
        Error e = std::move(legacy).error();
        e.message += "; the new mount API said: " + refusal;
        return e;
    }
    return legacy;
}

Result<bool> mount_overlay_from_fds(const OverlayMount& m, const std::vector<int>& lower_fds)
{
    if (lower_fds.size() != m.lower_dirs.size())
        return internal_error("Failed to mount overlay on '" + m.target + "': " + std::to_string(lower_fds.size()) +
                              " layer descriptors for " + std::to_string(m.lower_dirs.size()) + " layers");
    if (m.api != OverlayMountApi::automatic && m.api != OverlayMountApi::lowerdir_by_fd)
        return false;
    UniqueFd upper = NPS_TRY(open_dir(m.upper_dir));
    UniqueFd work = NPS_TRY(open_dir(m.work_dir));
    std::string refusal;
    Outcome outcome = NPS_TRY(mount_with_fsconfig(m, LowerBy::fd, upper.get(), work.get(), &refusal, &lower_fds));
    if (outcome == Outcome::mounted)
        return true;
    if (m.api == OverlayMountApi::lowerdir_by_fd)
        return system_error("Failed to mount overlay on '" + m.target + "' (\"lowerdir+\" by descriptor refused: " +
                                refusal + ")",
                            EINVAL);
    return false;
}

}  // namespace nps::image::detail
