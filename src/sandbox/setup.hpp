// SPDX-License-Identifier: Apache-2.0
// The steps the sandbox child runs between clone3 and execve. Internal to
// src/sandbox: they run in the cloned child, which may share a heap with
// other threads' locks, so they neither allocate nor throw. Each returns 0 or
// a negative errno; `*step` names what failed.
#pragma once

#include <sys/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>

namespace nps::sandbox::detail {

// What a failed step reports to the parent.
enum class Step : int {
    none = 0,
    sync,
    user_namespace_root,
    new_session,
    cgroup_namespace,
    make_private,
    bind_rootfs,
    mount_proc,
    mask_proc,
    read_only_proc,
    mount_dev,
    populate_dev,
    mount_devpts,
    mount_shm,
    mount_tmp,
    read_only_root,
    pivot_root,
    detach_old_root,
    hostname,
    join_netns,
    loopback,
    rlimit,
    cwd,
    stdio,
    drop_bounding,
    clear_ambient,
    set_groups,
    set_gid,
    set_uid,
    drop_caps,
    no_new_privs,
    seccomp,
    exec,
};

// Credential changes as bare system calls. glibc's setresuid() & co. change
// the ids of every thread of the process, signalling each thread it
// believes exists and waiting for it: in a child cloned from a
// multi-threaded runner those are the parent's threads, and one caught
// starting or exiting at clone time is waited for forever. The child is a
// single thread, so the per-thread system call is exactly what it needs.
inline int raw_setresuid(unsigned uid) { return static_cast<int>(::syscall(SYS_setresuid, uid, uid, uid)); }
inline int raw_setresgid(unsigned gid) { return static_cast<int>(::syscall(SYS_setresgid, gid, gid, gid)); }
inline int raw_clear_groups() { return static_cast<int>(::syscall(SYS_setgroups, 0, nullptr)); }

// The parent turns a Step into "Failed to <step> <object>".

struct Failure {
    Step step = Step::none;
    int err = 0;
};

// Host paths prepared by the parent: rootfs and rootfs + "/proc" etc.
struct MountPlan {
    const char* rootfs;
    const char* proc;
    const char* dev;
    const char* tmp;
    bool read_only_root;
    // A scratch buffer of PATH_MAX bytes for joining paths in the child.
    char* scratch;
    std::size_t scratch_size;
};

// Private propagation, rootfs bind, /proc, /dev, /tmp, read-only root,
// pivot_root and detach of the old root. Ends with cwd "/".
Failure setup_mounts(const MountPlan& plan);

// Bring "lo" up in the current (fresh) network namespace.
int bring_up_loopback();

// Drops the bounding and ambient sets, sets groups/gid/uid and clears all
// capability sets (to `empty_caps`, made by the parent with cap_init()),
// then sets no_new_privs.
Failure drop_privileges(unsigned uid, unsigned gid, cap_t empty_caps);

}  // namespace nps::sandbox::detail
