// SPDX-License-Identifier: Apache-2.0
// User namespaces made ahead of time, per-slot host id ranges and the
// start-up probe (see the header; its record: idmap_probe_record.hpp).
#include "nps/sandbox/userns.hpp"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "nps/base/limits.hpp"
#include "nps/sandbox/child.hpp"
#include "idmap_probe_record.hpp"
#include "setup.hpp"

namespace nps::sandbox {

namespace {

Result<void> write_map(pid_t pid, const char* name, std::uint32_t host, std::uint32_t count)
{
    const std::string path = "/proc/" + std::to_string(pid) + "/" + name;
    const std::string text = "0 " + std::to_string(host) + " " + std::to_string(count);
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        return system_error_errno("Failed to write the user namespace's " + std::string(name) + " '" + path + "'");
    return {};
}

std::string errno_text(int err)
{
    return ::strerrordesc_np(err) ? ::strerrordesc_np(err) : std::to_string(err);
}

// Whether [first, first + total) meets an id of `path` ("name:x:ID:..." for
// passwd/group, "name:START:COUNT" for subuid/subgid); "" when not.
std::string id_conflict(const std::string& path, bool ranges, std::uint64_t first, std::uint64_t total)
{
    std::ifstream in(path);
    std::string line;
    for (unsigned number = 1; std::getline(in, line); ++number) {
        std::vector<std::string> fields;
        std::size_t at = 0;
        for (;;) {
            std::size_t colon = line.find(':', at);
            fields.push_back(line.substr(at, colon == std::string::npos ? std::string::npos : colon - at));
            if (colon == std::string::npos)
                break;
            at = colon + 1;
        }
        std::uint64_t start = 0, count = 1;
        try {
            if (ranges && fields.size() >= 3) {
                start = std::stoull(fields[1]);
                count = std::stoull(fields[2]);
            } else if (!ranges && fields.size() >= 3) {
                start = std::stoull(fields[2]);
            } else {
                continue;
            }
        } catch (const std::exception&) {
            continue;
        }
        if (start < first + total && first < start + count)
            return path + " line " + std::to_string(number) + " ('" + fields[0] + "', ids " + std::to_string(start) +
                   (count > 1 ? ".." + std::to_string(start + count - 1) : "") + ") overlaps the workers' host ids " +
                   std::to_string(first) + ".." + std::to_string(first + total - 1);
    }
    return "";
}

// In a private mount namespace (of a short-lived thread), tries what a
// worker's rootfs needs; "" when that works:
// - overlay: an overlay of one idmapped layer (image/idmapped_layers.hpp):
//   a clone of a directory of `scratch_dir`, idmapped and attached;
// - directory: an idmapped clone of a directory of `scratch_dir`.
// So `scratch_dir` should be on the file system the layers or the rootfs
// directories live on.
std::string idmapped_rootfs_problem(int userns_fd, const std::string& scratch_dir, bool overlay)
{
    std::string problem;
    std::error_code ignored;
    std::filesystem::create_directories(scratch_dir, ignored);
    std::string base = scratch_dir + "/userns-probe-XXXXXX";
    if (!::mkdtemp(base.data()))
        return "Failed to make a probe directory in '" + scratch_dir + "': " + errno_text(errno);
    std::thread prober([&] {
        auto step = [&](const char* what) {
            problem = std::string(what) + ": " + errno_text(errno);
            return false;
        };
        (void)([&] {
            if (::unshare(CLONE_NEWNS) < 0)
                return step("unshare a mount namespace");
            if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0)
                return step("make the probe's mounts private");
            for (const char* dir : {"/lower", "/mapped", "/upper", "/work", "/merged"}) {
                if (::mkdir((base + dir).c_str(), 0755) < 0)
                    return step("make the probe's directories");
            }
            UniqueFd tree(static_cast<int>(
                ::open_tree(AT_FDCWD, (base + "/lower").c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
            if (!tree)
                return step("clone a directory's mount (open_tree)");
            mount_attr attr{};
            attr.attr_set = MOUNT_ATTR_IDMAP;
            attr.userns_fd = static_cast<std::uint64_t>(userns_fd);
            if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return step("idmap a directory's mount (mount_setattr MOUNT_ATTR_IDMAP)");
            if (!overlay)
                return true;
            if (::move_mount(tree.get(), "", AT_FDCWD, (base + "/mapped").c_str(), MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return step("attach an idmapped mount (move_mount)");
            const std::string options =
                "lowerdir=" + base + "/mapped,upperdir=" + base + "/upper,workdir=" + base + "/work";
            if (::mount("overlay", (base + "/merged").c_str(), "overlay", 0, options.c_str()) < 0)
                return step("mount an overlay of an idmapped layer");
            return true;
        })();
        // The namespace (and its mounts) goes with the thread.
    });
    prober.join();
    std::filesystem::remove_all(base, ignored);
    return problem;
}

}  // namespace

const char* to_string(UsernsMode mode)
{
    switch (mode) {
    case UsernsMode::on: return "on";
    case UsernsMode::off: return "off";
    case UsernsMode::automatic: break;
    }
    return "auto";
}

namespace {

// The holder's whole life, on a stack of its own in its maker's memory
// (CLONE_VM): raw system calls only — no libc state, no cancellation
// point, nothing that writes memory the maker uses. Every signal but
// SIGKILL is blocked (the maker's mask, inherited), so it waits in ppoll()
// until killed: by its maker once it has the namespace's fd, or at its
// maker's death.
int hold_user_namespace(void*)
{
    ::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    for (;;)
        ::syscall(SYS_ppoll, nullptr, 0, nullptr, nullptr, 0);
}

constexpr std::size_t kHolderStackBytes = 16 * 1024;

}  // namespace

Result<UserNamespaceFd> UserNamespaceFd::create(uid_t host_uid, gid_t host_gid, std::uint32_t count)
{
    if (host_uid == 0 || host_gid == 0)
        return internal_error("Failed to create a user namespace: it would map ids onto the host's root");
    // CLONE_VM: the holder shares this process's memory, so making it
    // copies no page tables and leaves this process no copy-on-write faults
    // to take afterwards (for `run`, 60 page faults fewer). Its
    // stack outlives it: declared first, it goes after the holder is killed
    // and reaped.
    auto stack = std::make_unique<std::byte[]>(kHolderStackBytes);
    sigset_t all;
    sigset_t previous;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &previous);
    int pidfd = -1;
    const int pid = ::clone(hold_user_namespace, stack.get() + kHolderStackBytes,
                            CLONE_NEWUSER | CLONE_VM | CLONE_PIDFD | SIGCHLD, nullptr, &pidfd);
    const int clone_errno = errno;
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (pid < 0) {
        errno = clone_errno;
        return system_error_errno("Failed to create a user namespace (clone CLONE_NEWUSER)");
    }
    Child holder(static_cast<pid_t>(pid), UniqueFd(pidfd));  // killed and reaped on every path
    NPS_TRY_VOID(write_map(holder.pid(), "uid_map", host_uid, count));
    NPS_TRY_VOID(write_map(holder.pid(), "gid_map", host_gid, count));
    const std::string path = "/proc/" + std::to_string(holder.pid()) + "/ns/user";
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
        return system_error_errno("Failed to open the user namespace '" + path + "'");
    return UserNamespaceFd(std::move(fd));
}

// --- slots ---

struct UsernsSlots::State {
    std::mutex mutex;
    std::vector<bool> leased;
    std::vector<std::optional<UserNamespaceFd>> namespaces;
};

UsernsLease::UsernsLease(UsernsSlots* owner, std::uint32_t slot, UniqueFd lock, UserNamespace spec)
    : owner_(owner), slot_(slot), lock_(std::move(lock)), spec_(spec)
{
}

UsernsLease::UsernsLease(UsernsLease&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), slot_(other.slot_), lock_(std::move(other.lock_)),
      spec_(other.spec_)
{
}

UsernsLease& UsernsLease::operator=(UsernsLease&& other) noexcept
{
    if (this != &other) {
        if (owner_)
            owner_->release(slot_);
        owner_ = std::exchange(other.owner_, nullptr);
        slot_ = other.slot_;
        lock_ = std::move(other.lock_);
        spec_ = other.spec_;
    }
    return *this;
}

UsernsLease::~UsernsLease()
{
    if (owner_)
        owner_->release(slot_);
}

std::uint32_t userns_slot_capacity(std::uint32_t first_host_id, std::uint32_t count)
{
    if (count == 0 || first_host_id == 0)
        return 0;
    const std::uint64_t room = (std::uint64_t{UINT32_MAX} - first_host_id) / count;
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(room, limits::kUsernsMaxSlots));
}

UsernsSlotsOptions userns_slots_options(std::uint32_t first_host_id, std::uint32_t count, std::string lock_dir)
{
    return {.first_host_id = first_host_id,
            .count = count,
            .slots = std::max<std::uint32_t>(userns_slot_capacity(first_host_id, count), 1),
            .lock_dir = std::move(lock_dir)};
}

UsernsSlots::UsernsSlots(UsernsSlotsOptions options) : options_(std::move(options)), state_(std::make_unique<State>())
{
    state_->leased.assign(options_.slots, false);
    state_->namespaces.resize(options_.slots);
}

UsernsSlots::~UsernsSlots() = default;

Result<std::unique_ptr<UsernsSlots>> UsernsSlots::create(UsernsSlotsOptions options,
                                                         std::optional<UserNamespaceFd> first_slots)
{
    if (options.slots == 0 || options.slots > userns_slot_capacity(options.first_host_id, options.count))
        return internal_error("Failed to set up user namespace slots: " + std::to_string(options.slots) +
                              " slot(s) of " + std::to_string(options.count) + " ids from host id " +
                              std::to_string(options.first_host_id) + " do not fit (at most " +
                              std::to_string(limits::kUsernsMaxSlots) + " slots, ids below 2^32)");
    if (options.lock_dir.empty())
        return internal_error("Failed to set up user namespace slots: no lock directory given");
    std::error_code error;
    std::filesystem::create_directories(options.lock_dir, error);
    if (error)
        return internal_error("Failed to create the user namespace lock directory '" + options.lock_dir +
                              "': " + error.message());
    std::unique_ptr<UsernsSlots> slots(new UsernsSlots(std::move(options)));
    slots->state_->namespaces[0] = std::move(first_slots);
    return slots;
}

std::size_t UsernsSlots::leased() const
{
    std::lock_guard lock(state_->mutex);
    return static_cast<std::size_t>(std::count(state_->leased.begin(), state_->leased.end(), true));
}

void UsernsSlots::release(std::uint32_t slot)
{
    std::lock_guard lock(state_->mutex);
    state_->leased[slot] = false;
}

Result<UsernsLease> UsernsSlots::acquire()
{
    std::lock_guard lock(state_->mutex);
    for (std::uint32_t i = 0; i < options_.slots; ++i) {
        if (state_->leased[i])
            continue;
        const std::string path = options_.lock_dir + "/" + std::to_string(i) + ".lock";
        UniqueFd file(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (!file)
            return system_error_errno("Failed to open the user namespace slot lock '" + path + "'");
        if (::flock(file.get(), LOCK_EX | LOCK_NB) < 0) {
            if (errno == EWOULDBLOCK)
                continue;  // another process's worker has it
            return system_error_errno("Failed to lock the user namespace slot '" + path + "'");
        }
        const std::uint32_t host = options_.first_host_id + i * options_.count;
        if (!state_->namespaces[i])
            state_->namespaces[i] = NPS_TRY(UserNamespaceFd::create(host, host, options_.count));
        state_->leased[i] = true;
        UserNamespace spec{.host_uid = host, .host_gid = host, .count = options_.count,
                           .fd = state_->namespaces[i]->fd()};
        return UsernsLease(this, i, std::move(file), spec);
    }
    return internal_error("Failed to find a free user namespace slot: all " + std::to_string(options_.slots) +
                          " are in use");
}

// --- probe ---

namespace {

enum class ProbeRecord { ignore, use };

// user_namespace_unavailable_reason(); with ProbeRecord::use, a record of a
// passed idmap probe stands for the probe, and a passed probe is recorded
// (idmap_probe_record.hpp). The id ranges and the namespace are checked
// each time: accounts and the kernel's user namespace limit may change.
// The namespace it makes maps slot 0's range: kept in `*made` when given.
std::string unavailable_reason(const UsernsSlotsOptions& range, const std::string& scratch_dir, RootfsKind rootfs,
                               ProbeRecord record, std::optional<UserNamespaceFd>* made = nullptr)
{
    const std::uint64_t total = std::uint64_t{range.slots} * range.count;
    for (const auto& [path, ranges] : {std::pair{"/etc/passwd", false}, std::pair{"/etc/group", false},
                                       std::pair{"/etc/subuid", true}, std::pair{"/etc/subgid", true}}) {
        if (auto conflict = id_conflict(path, ranges, range.first_host_id, total); !conflict.empty())
            return conflict;
    }
    auto ns = UserNamespaceFd::create(range.first_host_id, range.first_host_id, range.count);
    if (!ns)
        return "user namespaces are not available: " + ns.error().describe();
    const bool use_record = record == ProbeRecord::use && !range.lock_dir.empty();
    if (!use_record || !detail::idmap_probe_recorded(range.lock_dir, scratch_dir, rootfs)) {
        const bool overlay = rootfs == RootfsKind::overlay;
        if (auto problem = idmapped_rootfs_problem(ns->fd(), scratch_dir, overlay); !problem.empty())
            return std::string(overlay ? "an image's overlay of idmapped layers" : "a rootfs directory") +
                   " cannot be mounted here (in " + scratch_dir + "): " + problem;
        if (use_record) {
            std::error_code ignored;
            std::filesystem::create_directories(range.lock_dir, ignored);
            detail::record_idmap_probe(range.lock_dir, scratch_dir, rootfs);
        }
    }
    if (made)
        made->emplace(std::move(*ns));
    return "";
}

}  // namespace

std::string user_namespace_unavailable_reason(const UsernsSlotsOptions& range, const std::string& scratch_dir,
                                             RootfsKind rootfs)
{
    return unavailable_reason(range, scratch_dir, rootfs, ProbeRecord::ignore);
}

Result<UsernsDecision> decide_user_namespace(UsernsMode mode, const UsernsSlotsOptions& range,
                                             const std::string& scratch_dir, RootfsKind rootfs)
{
    UsernsDecision decision;
    if (mode == UsernsMode::off) {
        decision.reason = "configured off";
        return decision;
    }
    std::optional<UserNamespaceFd> first_slots;
    const std::string why_not = unavailable_reason(range, scratch_dir, rootfs, ProbeRecord::use, &first_slots);
    if (!why_not.empty()) {
        if (mode == UsernsMode::on)
            return internal_error("sandbox.user_namespace is on, but " + why_not);
        decision.reason = "auto: off, " + why_not;
        return decision;
    }
    decision.slots = NPS_TRY(UsernsSlots::create(range, std::move(first_slots)));
    decision.enabled = true;
    decision.reason = mode == UsernsMode::on ? "configured on" : "auto: on, the kernel allows it";
    return decision;
}

}  // namespace nps::sandbox
