// SPDX-License-Identifier: Apache-2.0
// The steps the sandbox child runs between clone3 and execve. Internal to
// src/sandbox: they run in the cloned child, which may share a heap with
// other threads' locks, so they neither allocate nor throw. Each returns 0 or
// a negative errno; `*step` names what failed.
#pragma once

#include <linux/filter.h>
#include <sys/capability.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/unique_fd.hpp"
#include "nps/sandbox/seccomp.hpp"
#include "nps/sandbox/spawner.hpp"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

namespace nps::sandbox::detail {

// The empty capability set a parent makes with cap_init() for the child's
// drop_privileges(), freed with cap_free().
struct CapFree {
    void operator()(void* caps) const { ::cap_free(caps); }
};
using EmptyCaps = std::unique_ptr<void, CapFree>;

// What a failed step reports to the parent.
enum class Step : int {
    none = 0,
    sync,
    join_cgroup,
    new_session,
    cgroup_namespace,
    mount_namespace,
    network_namespace,
    make_private,
    bind_rootfs,
    idmap_rootfs,
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
    join_userns,
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
    // The writable space (SandboxSpec::writable): a host directory holding
    // "tmp" and "shm", or nullptr for a fresh tmpfs with these options.
    const char* space_dir;
    const char* space_options;
    // >= 0: the rootfs is bound idmapped through this user namespace.
    int idmap_fd;
    // A scratch buffer of PATH_MAX bytes for joining paths in the child.
    char* scratch;
    std::size_t scratch_size;
};

// The most v1 hierarchies a worker's cgroup spans (memory, cpu/cpuacct,
// pids, freezer and a few more, mounted apart or together).
inline constexpr std::size_t kMaxCgroupTasks = 8;

// Everything the child reads between clone3 and execve, flat: the strings
// and arrays it points to live in the parent's heap (a direct spawn: the
// child has a copy) or in a shared arena (a pooled spawn, spawn_pool.cpp).
struct ChildPlan {
    MountPlan mounts;
    char* const* argv;
    char* const* envp;
    const char* path;  // PATH for a bare argv[0]
    const char* cwd;
    const char* hostname;
    std::size_t hostname_size;
    Network network;
    int netns_fd;              // >= 0: join it (Network::none); pooled: as userns_fd
    bool unshare_mount;        // the mount namespace is made by the child (pooled)
    bool unshare_net;          // ... and a private network namespace
    // >= 0: joined (setns) after everything made as the host's root, right
    // before the privileges are dropped; a pooled child receives it as an fd
    // and the parent writes the SCM_RIGHTS index here (spawn_pool.cpp).
    int userns_fd;
    const Rlimit* rlimits;
    std::size_t rlimit_count;
    uid_t uid;
    gid_t gid;
    const sock_fprog* seccomp;
    cap_t empty_caps;
    int stdin_fd;
    int stdout_fd;
    int stderr_fd;
    bool controlling_terminal;  // stdin is a terminal: made the new session's controlling one
    // Failure reports on a stream socket; CLOEXEC, so EOF means execve
    // succeeded. A held child also reads its release from it.
    int error_fd;
    // Report "held" (a Failure of Step::none) after the seccomp filter and
    // wait for the release before the execve (SandboxSpec::hold_before_exec).
    bool hold_before_exec;
    // The worker cgroup's v1 `tasks` files (WorkerCgroup::open_tasks_outside_clone):
    // the child's first step writes "0" to each, placing itself; a shared
    // plan holds their indexes until bind_plan_fds.
    int cgroup_tasks_fds[kMaxCgroupTasks];
    std::size_t cgroup_tasks_count;
};

// Signal dispositions and mask back to the defaults (the parent's choices
// would survive execve).
void reset_signals();

// The first steps of a child that has its plan: signals back to their
// defaults, death with its parent (PR_SET_PDEATHSIG), then run_child().
// Never returns.
[[noreturn]] void start_child(const ChildPlan& plan, int sync_fd);

// The rest of the child's life: its v1 cgroups (cgroup_tasks_fds),
// namespaces it still has to make, setup_mounts, hostname, network,
// rlimits — then, when sync_fd >= 0, the parent's go byte —, its cgroup
// namespace, user namespace, cwd, stdio, privileges, seccomp, execve. Never
// returns: failures go to plan.error_fd.
[[noreturn]] void run_child(const ChildPlan& plan, int sync_fd = -1);

// Writes a Failure to plan.error_fd and _exits.
[[noreturn]] void report(const ChildPlan& plan, Step step, int err);

// --- Parent side (may allocate) ---

// The kernel's struct clone_args, version 2 (with `cgroup`).
struct CloneArgs {
    std::uint64_t flags;
    std::uint64_t pidfd;
    std::uint64_t child_tid;
    std::uint64_t parent_tid;
    std::uint64_t exit_signal;
    std::uint64_t stack;
    std::uint64_t stack_size;
    std::uint64_t tls;
    std::uint64_t set_tid;
    std::uint64_t set_tid_size;
    std::uint64_t cgroup;
};

// What both spawns, direct (spawner.cpp) and pooled (spawn_pool.cpp), check
// and prepare before a child may run (spawn_parent.cpp).
struct ParentPrep {
    std::string rootfs;         // spec.rootfs, resolved
    std::string space_options;  // a fresh writable space's tmpfs options (owned by the namespace's root)
    std::shared_ptr<const SeccompProgram> default_seccomp;  // held when spec.seccomp is null
    const SeccompProgram* seccomp = nullptr;                // the program the child loads
    // A socketpair: the child's Failure reports (EOF without one: it
    // exec'd), and a held child's release the other way.
    UniqueFd error_read;   // the parent's end
    UniqueFd error_write;  // the child's end (CLOEXEC); the parent closes its copy once the child has it
    // spec.cgroup's v1 `tasks` files, for ChildPlan::cgroup_tasks_fds; held
    // until the child has its copies.
    std::vector<UniqueFd> cgroup_tasks;
};

// cgroup.open_tasks_outside_clone(), refused beyond kMaxCgroupTasks (the
// child's plan holds that many): the files a child places itself with.
Result<std::vector<UniqueFd>> open_cgroup_tasks(const cgroup::WorkerCgroup& cgroup);

// Checks the spec — a program and a rootfs given, a fresh space's size within
// limits (tmpfs takes size=0 as "half of RAM"), a user namespace that maps no
// host root and holds spec.uid and spec.gid — and prepares the above.
Result<ParentPrep> prepare_parent(const SandboxSpec& spec);

// The index of env's PATH entry (the last if several), if any.
std::optional<std::size_t> path_entry(const std::vector<std::string>& env);

// Waits until `child` has exec'd or reported a failed step on
// prep.error_read; a failed child is reaped and its step worded as
// "Failed to <step> <object>". With spec.hold_before_exec, waits until it
// is held instead, and hands it prep.error_read to be released through.
Result<void> await_exec(ParentPrep& prep, Child& child, const SandboxSpec& spec);

// --- Child side ---

// Private propagation, rootfs bind, /proc, /dev, /tmp and /dev/shm, read-only root,
// pivot_root and detach of the old root. Ends with cwd "/".
Failure setup_mounts(const MountPlan& plan);

// Bring "lo" up in the current (fresh) network namespace.
int bring_up_loopback();

// Drops the bounding and ambient sets, sets groups/gid/uid and clears all
// capability sets (to `empty_caps`, made by the parent with cap_init()),
// then sets no_new_privs.
Failure drop_privileges(unsigned uid, unsigned gid, cap_t empty_caps);

}  // namespace nps::sandbox::detail
