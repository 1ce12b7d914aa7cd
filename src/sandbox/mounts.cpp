// SPDX-License-Identifier: Apache-2.0
// The sandbox's filesystem view: a bind of the rootfs (read-only by default)
// with a fresh /proc whose sensitive files are masked (masked_paths.hpp), a
// minimal /dev on tmpfs, /tmp and /dev/shm on the worker's bounded writable
// space, and no /sys. Runs in the cloned child: no allocation.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "masked_paths.hpp"
#include "nps/sandbox/writable_space.hpp"
#include "setup.hpp"

namespace nps::sandbox::detail {

namespace {

// Host device nodes bind-mounted into the sandbox's /dev.
constexpr const char* kDevices[] = {"null", "zero", "full", "random", "urandom", "tty"};

constexpr unsigned long kReadOnlyRemount = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;

// dir + "/" + name + tail into the scratch buffer; false when it does not fit.
bool join(const MountPlan& plan, const char* dir, const char* name, const char* tail = "")
{
    int n = ::snprintf(plan.scratch, plan.scratch_size, "%s/%s%s", dir, name, tail);
    return n > 0 && static_cast<std::size_t>(n) < plan.scratch_size;
}

Failure fail(Step step, int err = errno)
{
    return {step, err};
}

// The /proc entries are masked without an lstat() of each first (each is a
// procfs lookup, 24 per spawn): the mount's own lookup finds an entry this
// kernel lacks. A file that is absent fails with ENOENT (the other ENOENT,
// a host without /dev/null, fails setup_dev's bind of it); a directory's
// path ends in "/", so an entry that is absent or not a directory fails
// with ENOENT or ENOTDIR. Those are skipped; any other failure is the spawn's.
bool absent_dir(int err)
{
    return err == ENOENT || err == ENOTDIR;
}

Failure setup_proc(const MountPlan& plan)
{
    if (::mount("proc", plan.proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) < 0)
        return fail(Step::mount_proc);
    for (const char* name : kMaskedProcFiles) {
        if (!join(plan, plan.proc, name))
            return fail(Step::mask_proc, ENAMETOOLONG);
        if (::mount("/dev/null", plan.scratch, nullptr, MS_BIND, nullptr) < 0 && errno != ENOENT)
            return fail(Step::mask_proc);
    }
    for (const char* name : kMaskedProcDirs) {
        if (!join(plan, plan.proc, name, "/"))
            return fail(Step::mask_proc, ENAMETOOLONG);
        if (::mount("tmpfs", plan.scratch, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                    "size=4k,nr_inodes=1,mode=0555") < 0 &&
            !absent_dir(errno))
            return fail(Step::mask_proc);
    }
    for (const char* name : kReadOnlyProcDirs) {
        if (!join(plan, plan.proc, name, "/"))
            return fail(Step::read_only_proc, ENAMETOOLONG);
        if (::mount(plan.scratch, plan.scratch, nullptr, MS_BIND | MS_REC, nullptr) < 0) {
            if (absent_dir(errno))
                continue;
            return fail(Step::read_only_proc);
        }
        if (::mount(nullptr, plan.scratch, nullptr, kReadOnlyRemount, nullptr) < 0)
            return fail(Step::read_only_proc);
    }
    return {};
}

Failure setup_dev(const MountPlan& plan)
{
    if (::mount("tmpfs", plan.dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=64k") < 0)
        return fail(Step::mount_dev);
    char host[32];
    for (const char* name : kDevices) {
        if (!join(plan, plan.dev, name))
            return fail(Step::populate_dev, ENAMETOOLONG);
        int fd = ::open(plan.scratch, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0)
            return fail(Step::populate_dev);
        ::close(fd);
        ::snprintf(host, sizeof host, "/dev/%s", name);
        if (::mount(host, plan.scratch, nullptr, MS_BIND, nullptr) < 0)
            return fail(Step::populate_dev);
    }
    struct Link {
        const char* name;
        const char* target;
    };
    constexpr Link kLinks[] = {{"fd", "/proc/self/fd"},       {"stdin", "/proc/self/fd/0"},
                               {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"},
                               {"ptmx", "pts/ptmx"},          {"core", "/proc/kcore"}};
    for (const Link& link : kLinks) {
        if (!join(plan, plan.dev, link.name) || ::symlink(link.target, plan.scratch) < 0)
            return fail(Step::populate_dev);
    }
    if (!join(plan, plan.dev, "pts") || ::mkdir(plan.scratch, 0755) < 0)
        return fail(Step::populate_dev);
    if (::mount("devpts", plan.scratch, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") < 0)
        return fail(Step::mount_devpts);
    // The mount point of the writable space's "shm" (setup_space).
    if (!join(plan, plan.dev, "shm") || ::mkdir(plan.scratch, 01777) < 0)
        return fail(Step::populate_dev);
    return {};
}

// /tmp and /dev/shm from one bounded space: the host's (bound from
// plan.space_dir) or a fresh tmpfs on /tmp whose root holds "tmp" and "shm",
// each bound over its place; the fresh tmpfs's own root stays covered by
// its "tmp" at /tmp. (Detaching it instead would wait for an RCU grace
// period on every spawn.) Paths relative to the space's root (the cwd here)
// leave the one scratch buffer for the other end of each bind.
Failure setup_space(const MountPlan& plan)
{
    if (plan.space_dir != nullptr) {
        if (::chdir(plan.space_dir) < 0)
            return fail(Step::mount_tmp);
    } else {
        if (::mount(kSpaceMountSource, plan.tmp, "tmpfs", MS_NOSUID | MS_NODEV, plan.space_options) < 0 ||
            ::chdir(plan.tmp) < 0)
            return fail(Step::mount_tmp);
        // The tmpfs's root belongs to the sandbox's root (its uid=/gid=
        // options, with a user namespace); so do "tmp" and "shm".
        struct stat root{};
        if (::stat(".", &root) < 0)
            return fail(Step::mount_tmp);
        for (const char* name : {"tmp", "shm"}) {
            // mkdir() applies the umask and may drop the sticky bit.
            if (::mkdir(name, 01777) < 0 || ::chmod(name, 01777) < 0 ||
                ((root.st_uid != 0 || root.st_gid != 0) && ::chown(name, root.st_uid, root.st_gid) < 0))
                return fail(Step::mount_tmp);
        }
    }
    if (!join(plan, plan.dev, "shm") || ::mount("shm", plan.scratch, nullptr, MS_BIND, nullptr) < 0 ||
        ::mount(nullptr, plan.scratch, nullptr, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) < 0)
        return fail(Step::mount_shm);
    // A bind keeps its source's nosuid,nodev.
    if (::mount("tmp", plan.tmp, nullptr, MS_BIND, nullptr) < 0)
        return fail(Step::mount_tmp);
    return {};
}

// With a user namespace: the rootfs bound as an idmapped mount, so on-disk
// owner 0 is the sandbox's root (and 1000 its 1000), not the host's.
Failure bind_idmapped(const MountPlan& plan)
{
    int tree = static_cast<int>(
        ::open_tree(AT_FDCWD, plan.rootfs, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE));
    if (tree < 0)
        return fail(Step::bind_rootfs);
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_IDMAP;
    attr.userns_fd = static_cast<std::uint64_t>(plan.idmap_fd);
    if (::mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) {
        int err = errno;
        ::close(tree);
        return fail(Step::idmap_rootfs, err);
    }
    int rc = ::move_mount(tree, "", AT_FDCWD, plan.rootfs, MOVE_MOUNT_F_EMPTY_PATH);
    int err = errno;
    ::close(tree);
    return rc < 0 ? fail(Step::bind_rootfs, err) : Failure{};
}

}  // namespace

Failure setup_mounts(const MountPlan& plan)
{
    // Nothing we mount may propagate back to the host.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0)
        return fail(Step::make_private);
    // pivot_root needs the new root to be a mount point.
    if (plan.idmap_fd < 0 && ::mount(plan.rootfs, plan.rootfs, nullptr, MS_BIND | MS_REC, nullptr) < 0)
        return fail(Step::bind_rootfs);
    if (plan.idmap_fd >= 0) {
        if (Failure f = bind_idmapped(plan); f.step != Step::none)
            return f;
    }
    if (Failure f = setup_proc(plan); f.step != Step::none)
        return f;
    if (Failure f = setup_dev(plan); f.step != Step::none)
        return f;
    if (Failure f = setup_space(plan); f.step != Step::none)
        return f;
    // Only the root mount itself turns read-only; /proc, /dev and /tmp keep
    // their own flags.
    if (plan.read_only_root && ::mount(nullptr, plan.rootfs, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) < 0)
        return fail(Step::read_only_root);
    // pivot_root(".", ".") stacks the old root on the new one, so no
    // put_old directory is needed in a read-only rootfs; detaching "." then
    // drops the old root.
    if (::chdir(plan.rootfs) < 0 || ::syscall(SYS_pivot_root, ".", ".") < 0)
        return fail(Step::pivot_root);
    if (::umount2(".", MNT_DETACH) < 0 || ::chdir("/") < 0)
        return fail(Step::detach_old_root);
    return {};
}

}  // namespace nps::sandbox::detail
