// SPDX-License-Identifier: Apache-2.0
// spawn(): start one process in a fresh sandbox (see docs/sandbox.md).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/cgroup/worker_cgroup.hpp"
#include "nps/sandbox/child.hpp"
#include "nps/sandbox/seccomp.hpp"
#include "nps/sandbox/writable_space.hpp"

namespace nps::sandbox {

enum class Network {
    none,  // a new network namespace holding only loopback (up)
    host,  // the caller's network namespace
};

enum class RootAccess {
    read_only,
    writable,
};

struct Rlimit {
    int resource;  // RLIMIT_*
    rlim_t soft;
    rlim_t hard;

    bool operator==(const Rlimit&) const = default;
};

// An optional user namespace: ids 0..count-1 inside are host ids
// host_uid..host_uid+count-1 (gids likewise), so the sandbox's root is an
// unprivileged host user. host_uid and host_gid must not be 0.
//
// The child joins it last (after its mounts, hostname, network namespace
// and rlimits, made as the host's root), so every namespace but this one is
// owned by the host's user namespace: the sandbox can join a network
// namespace the host made, and the rootfs is bound before rights are lost.
// The rootfs is bound as an idmapped mount (MOUNT_ATTR_IDMAP) through this
// namespace, so its files keep their owners inside; /tmp and /dev/shm are
// owned by the sandbox's root.
struct UserNamespace {
    uid_t host_uid;
    gid_t host_gid;
    std::uint32_t count;
    // A namespace with exactly these maps (a UserNamespaceFd, userns.hpp),
    // not consumed; -1: spawn() makes one for this sandbox (SpawnPool needs one).
    int fd = -1;
    // The rootfs already shows the ids as this namespace sees them (an image
    // overlay of idmapped layers, image/rootfs.hpp): it is bound as it is,
    // not idmapped again (needs `fd`).
    bool rootfs_idmapped = false;

    bool operator==(const UserNamespace&) const = default;
};

// Everything a sandbox needs. The rootfs must contain the directories
// /proc, /dev and /tmp (mount points); /sys is left unmounted.
// The PATH of a process whose environment sets none: for the search of a
// program name without '/' (spawn), and what `run` and an image without
// PATH in its config give (Docker's default).
inline constexpr char kDefaultPathEnv[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
inline constexpr const char* kDefaultPath = kDefaultPathEnv + 5;  // the value alone

struct SandboxSpec {
    std::string rootfs;                  // host path, required
    std::vector<std::string> argv;       // argv[0] is the program; searched in PATH (from env) when it has no '/'
    std::vector<std::string> env;        // "K=V", the complete environment
    std::string cwd = "/";               // inside the sandbox
    std::string hostname = "nps-sandbox";
    Network network = Network::none;
    // With Network::none: >= 0 joins this namespace (a LoopbackNetns, e.g.
    // the task's) instead of creating one. Not consumed; also with a user
    // namespace (joined after it).
    int netns_fd = -1;
    // With a value, a new user namespace; uid and gid below are ids inside it.
    std::optional<UserNamespace> user_namespace;
    uid_t uid = 0;                       // all capabilities are dropped whatever the uid
    gid_t gid = 0;
    // No core dumps (they would land in the worker's root or its cwd) and a
    // conventional open-file limit; callers replace or extend the list.
    std::vector<Rlimit> rlimits = {{RLIMIT_CORE, 0, 0}, {RLIMIT_NOFILE, 1024, 4096}};
    RootAccess root = RootAccess::read_only;
    // /tmp and /dev/shm: one bounded space (writable_space.hpp), by default
    // a fresh tmpfs of limits::kDefaultWorkerDiskBytes.
    WritableSpace writable;
    // The worker's cgroup (not owned): the child is cloned into its v2 group
    // (CLONE_INTO_CGROUP) and added to its v1 groups before it runs setup.
    cgroup::WorkerCgroup* cgroup = nullptr;
    const SeccompProgram* seccomp = nullptr;  // not owned; nullptr: the default program
    int stdin_fd = 0;                    // become the sandbox's 0, 1, 2 (not consumed)
    int stdout_fd = 1;
    int stderr_fd = 2;
    // stdin is a terminal of the sandbox's own (a pty `run -t` made): it
    // becomes the controlling terminal of the command's new session, so a
    // shell gets job control and ^C. Never the caller's terminal: through
    // its controlling terminal a process can type into that session
    // (TIOCSTI). sandbox::spawn only; pooled spawns ignore it.
    bool controlling_terminal = false;
    // Stop short of the program: the child sets everything up — its
    // namespaces, mounts, cgroups, privileges and seccomp filter — and
    // waits right before its execve. The spawn returns a held Child
    // (Child::held); Child::release() lets it exec, with environment
    // entries that were not known yet appended. Not with the spawn pool.
    bool hold_before_exec = false;

    bool operator==(const SandboxSpec&) const = default;
};

// Starts spec.argv in new pid, mount, uts, ipc and cgroup namespaces (and a
// new net namespace for Network::none) behind pivot_root, with no
// capabilities, no_new_privs and the default seccomp filter.
//
// Returns once the program has been executed (or, with hold_before_exec,
// once the child waits before its execve). A failure in any setup step
// before execve (including execve itself) is reported as an Error naming the
// step and its object, e.g. "Failed to execute '/bin/x' in the sandbox: No
// such file or directory"; the half-made child is reaped by then.
Result<Child> spawn(const SandboxSpec& spec);

}  // namespace nps::sandbox
