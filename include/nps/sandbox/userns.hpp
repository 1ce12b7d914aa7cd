// SPDX-License-Identifier: Apache-2.0
// User namespaces for sandboxes (docs/sandbox.md "users"):
//
// - UserNamespaceFd: a user namespace made ahead of time and held by an fd,
//   with ids 0..count-1 mapped onto host ids first..first+count-1. A sandbox
//   child joins it (setns) as its last privileged step, after its mounts and
//   its network namespace are made as the host's root — so it may join a
//   network namespace the host owns, and the rootfs bind of a 0700 worker
//   directory is made before it loses the host's rights.
// - UsernsSlots: worker slots, each with a namespace of its own: slot i maps
//   0..count-1 onto first + i*count.. . A lease is exclusive across
//   processes (an flock on <lock_dir>/<i>.lock), so no two concurrent
//   workers — of one daemon, of several, or of `nps-runner run` — share a
//   host id. A slot's namespace is made on first use and kept.
// - probe_user_namespaces(): whether the kernel allows the scheme here: a
//   user namespace can be made, the rootfs's mounts can be idmapped
//   (mount_setattr(MOUNT_ATTR_IDMAP); overlayfs of idmapped layers, Linux
//   5.19+), and the id range
//   collides with no account in /etc/passwd, /etc/group, nor a range in
//   /etc/subuid, /etc/subgid.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/sandbox/spawner.hpp"

namespace nps::sandbox {

// Where the slots' locks (and the probe's scratch overlay) live: one place
// for every runner process on the host, so `run` and daemons share slots.
inline constexpr const char* kUsernsLockDir = "/run/nps-runner/userns";

// sandbox.user_namespace: auto resolves to on or off once, at start.
enum class UsernsMode { automatic, on, off };

// "auto", "on", "off".
const char* to_string(UsernsMode mode);

// Worker slot i maps ids 0..count-1 onto first + i*count.. (docs/sandbox.md):
// 0x70000000, above systemd's container and dynamic ranges and any
// /etc/subuid range an installer hands out (checked at start).
inline constexpr std::uint32_t kDefaultUsernsFirstHostId = 0x7000'0000;
inline constexpr std::uint32_t kDefaultUsernsIdCount = 65'536;

class UserNamespaceFd {
public:
    // Clones a short-lived child into a new user namespace (sharing this
    // process's memory: no page tables copied), writes its maps (0 host_uid
    // count / 0 host_gid count; setgroups stays allowed), keeps
    // /proc/<pid>/ns/user open, then kills and reaps the child. The calling
    // thread's signal mask is as it was.
    static Result<UserNamespaceFd> create(uid_t host_uid, gid_t host_gid, std::uint32_t count);

    int fd() const { return fd_.get(); }

private:
    explicit UserNamespaceFd(UniqueFd fd) : fd_(std::move(fd)) {}
    UniqueFd fd_;
};

struct UsernsSlotsOptions {
    std::uint32_t first_host_id = 0;  // > 0
    std::uint32_t count = kDefaultUsernsIdCount;  // ids per slot
    std::uint32_t slots = 1;          // 1..limits::kUsernsMaxSlots, and first + slots*count must fit 32 bits
    std::string lock_dir;             // made (0700) when missing
};

class UsernsSlots;

// One slot, held while its worker runs; released (the lock dropped) when
// destroyed. The namespace's fd stays with the slots.
class UsernsLease {
public:
    UsernsLease(UsernsLease&&) noexcept;
    UsernsLease& operator=(UsernsLease&&) noexcept;
    ~UsernsLease();

    std::uint32_t slot() const { return slot_; }
    // For SandboxSpec::user_namespace.
    UserNamespace spec() const { return spec_; }

private:
    friend class UsernsSlots;
    UsernsLease(UsernsSlots* owner, std::uint32_t slot, UniqueFd lock, UserNamespace spec);
    UsernsSlots* owner_ = nullptr;
    std::uint32_t slot_ = 0;
    UniqueFd lock_;
    UserNamespace spec_{};
};

class UsernsSlots {
public:
    // first_slots: a namespace already made for slot 0's ids (the probe's),
    // kept as slot 0's.
    static Result<std::unique_ptr<UsernsSlots>> create(UsernsSlotsOptions options,
                                                       std::optional<UserNamespaceFd> first_slots = std::nullopt);
    ~UsernsSlots();

    // The lowest slot free here and not locked by another process. Fails
    // when every slot is taken. Thread-safe; outlive every lease.
    Result<UsernsLease> acquire();

    const UsernsSlotsOptions& options() const { return options_; }
    std::size_t leased() const;

private:
    friend class UsernsLease;
    struct State;
    explicit UsernsSlots(UsernsSlotsOptions options);
    void release(std::uint32_t slot);

    UsernsSlotsOptions options_;
    std::unique_ptr<State> state_;
};

// Slots that fit above first_host_id in 32 bits, at most kUsernsMaxSlots.
std::uint32_t userns_slot_capacity(std::uint32_t first_host_id, std::uint32_t count);

// As many slots as fit (at least 1: create() then refuses a range that
// does not fit), locks in lock_dir.
UsernsSlotsOptions userns_slots_options(std::uint32_t first_host_id, std::uint32_t count, std::string lock_dir);

// What the sandboxes' rootfs is, so the probe tries the same mounts: an
// image's overlay is made of idmapped layers (overlayfs does not let its own
// mount be idmapped, image/idmapped_layers.hpp), a directory is bound
// idmapped.
enum class RootfsKind { overlay, directory };

// "" when the kernel and the host allow user-namespaced workers with this
// id range, else why not ("user namespaces are not available: ...", "... cannot
// be mounted here (in DIR): ...", "/etc/subuid line 3 overlaps ..."). The
// probe's short-lived mounts are made in `scratch_dir`, which should be on
// the file system of the image layers (the state directory) or of the
// rootfs directories: whether a mount can be idmapped depends on it. Always
// probes (decide_user_namespace() may use a record instead).
std::string user_namespace_unavailable_reason(const UsernsSlotsOptions& range, const std::string& scratch_dir,
                                             RootfsKind rootfs);

// The mode in force and why, for the start-up log and /healthz.
struct UsernsDecision {
    bool enabled = false;
    std::string reason;  // "configured on", "auto: ...", "configured off"
    std::unique_ptr<UsernsSlots> slots;  // when enabled
};

// Resolves `mode`: auto is on when the probe passes, off with its reason
// when not; on fails with the probe's reason; off probes nothing. A passed
// idmap probe is recorded in range.lock_dir for this boot and scratch_dir's
// mount, and a valid record stands for the probe (the id ranges and the
// user namespace are still checked each time): `nps-runner run` saves the
// probe's mount namespace and mounts, ~2 ms (docs/security.md "User
// namespace by default").
Result<UsernsDecision> decide_user_namespace(UsernsMode mode, const UsernsSlotsOptions& range,
                                             const std::string& scratch_dir, RootfsKind rootfs);

}  // namespace nps::sandbox
