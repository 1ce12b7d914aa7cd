// SPDX-License-Identifier: Apache-2.0
// The record of a passed idmap probe (see the header).
#include "idmap_probe_record.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstdint>
#include <optional>

#include "nps/base/unique_fd.hpp"

namespace nps::sandbox::detail {

namespace {

constexpr std::size_t kMaxRecordBytes = 512;
// STATX_MNT_ID_UNIQUE (Linux 6.8): a mount id never reused in this boot.
constexpr unsigned kStatxMountIdUnique = 0x4000;

// Whether `st` is owned by this process's effective user and writable by
// nobody else.
bool owned_and_private(const struct stat& st)
{
    return st.st_uid == ::geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

std::optional<std::string> boot_id()
{
    UniqueFd fd(::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC));
    char buffer[64];
    const ssize_t n = fd ? ::read(fd.get(), buffer, sizeof buffer) : -1;
    if (n <= 0)
        return std::nullopt;
    std::string id(buffer, static_cast<std::size_t>(n));
    while (!id.empty() && id.back() == '\n')
        id.pop_back();
    return id.empty() ? std::nullopt : std::optional(id);
}

struct MountKey {
    std::string file;  // the record's name
    std::string line;  // its content
};

// The record's name and line for `scratch_dir`'s mount now; nullopt when
// that cannot be told.
std::optional<MountKey> mount_key(const std::string& scratch_dir, RootfsKind rootfs)
{
    struct statx stx {};
    struct statfs fs {};
    if (::statx(AT_FDCWD, scratch_dir.c_str(), 0, kStatxMountIdUnique, &stx) < 0 ||
        ::statfs(scratch_dir.c_str(), &fs) < 0)
        return std::nullopt;
    // Before Linux 6.8 a mount id (and an anonymous device) is reused once
    // freed: a new mount of the same file-system type may then inherit the
    // record, which is still right, idmapping being a file-system type's
    // feature (FS_ALLOW_IDMAP).
    std::string mount_id = "u" + std::to_string(stx.stx_mnt_id);
    if (!(stx.stx_mask & kStatxMountIdUnique)) {
        if (::statx(AT_FDCWD, scratch_dir.c_str(), 0, STATX_MNT_ID, &stx) < 0)
            return std::nullopt;
        mount_id = (stx.stx_mask & STATX_MNT_ID) ? std::to_string(stx.stx_mnt_id) : "0";
    }
    const auto boot = boot_id();
    if (!boot)
        return std::nullopt;
    const char* kind = rootfs == RootfsKind::overlay ? "overlay" : "directory";
    const std::string device = std::to_string(stx.stx_dev_major) + ":" + std::to_string(stx.stx_dev_minor);
    MountKey key;
    key.file = std::string("idmap-probe-") + kind + "-" + mount_id + "-" +
               std::to_string(stx.stx_dev_major) + "." + std::to_string(stx.stx_dev_minor);
    key.line = "boot=" + *boot + " device=" + device + " mount=" + mount_id +
               " fstype=" + std::to_string(static_cast<unsigned long>(fs.f_type)) + " kind=" + kind + "\n";
    return key;
}

bool trusted_dir(const std::string& dir)
{
    struct stat st {};
    return ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && owned_and_private(st);
}

}  // namespace

bool idmap_probe_recorded(const std::string& record_dir, const std::string& scratch_dir, RootfsKind rootfs)
{
    const auto key = mount_key(scratch_dir, rootfs);
    if (!key || !trusted_dir(record_dir))
        return false;
    UniqueFd fd(::open((record_dir + "/" + key->file).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode) || !owned_and_private(st))
        return false;
    char buffer[kMaxRecordBytes];
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    return n > 0 && std::string(buffer, static_cast<std::size_t>(n)) == key->line;
}

void record_idmap_probe(const std::string& record_dir, const std::string& scratch_dir, RootfsKind rootfs)
{
    const auto key = mount_key(scratch_dir, rootfs);
    if (!key || key->line.size() > kMaxRecordBytes || !trusted_dir(record_dir))
        return;
    const std::string path = record_dir + "/" + key->file;
    const std::string aside = path + ".new-" + std::to_string(::getpid());
    UniqueFd fd(::open(aside.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd)
        return;
    const bool written = ::write(fd.get(), key->line.data(), key->line.size()) ==
                         static_cast<ssize_t>(key->line.size());
    fd.reset();
    if (!written || ::rename(aside.c_str(), path.c_str()) < 0)
        ::unlink(aside.c_str());
}

}  // namespace nps::sandbox::detail
