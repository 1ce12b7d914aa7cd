// SPDX-License-Identifier: Apache-2.0
// The parent's side of a spawn that the direct spawn (spawner.cpp) and the
// pooled one (spawn_pool.cpp) share: the checks of the spec, the resolved
// rootfs, the seccomp program, the report socket, and reading the child's
// report once it runs.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

#include "nps/base/limits.hpp"
#include "nps/sandbox/writable_space.hpp"
#include "setup.hpp"

namespace nps::sandbox::detail {

namespace {

std::string quoted(const std::string& s)
{
    return "'" + s + "'";
}

Result<void> validate_writable(const SandboxSpec& spec)
{
    const std::uint64_t bytes = spec.writable.bytes;
    if (spec.writable.host_dir.empty() && (bytes < limits::kMinWorkerDiskBytes || bytes > limits::kMaxWorkerDiskBytes))
        return internal_error("Failed to spawn a sandbox: its writable space of " + std::to_string(bytes) +
                              " bytes lies outside " + std::to_string(limits::kMinWorkerDiskBytes) + ".." +
                              std::to_string(limits::kMaxWorkerDiskBytes));
    return {};
}

Result<void> validate_user_namespace(const SandboxSpec& spec)
{
    const UserNamespace& ns = *spec.user_namespace;
    if (ns.host_uid == 0 || ns.host_gid == 0)
        return internal_error("Failed to spawn a sandbox: its user namespace would map the sandbox's ids onto the "
                              "host's root (host uid/gid 0)");
    if (ns.count == 0 || spec.uid >= ns.count || spec.gid >= ns.count)
        return internal_error("Failed to spawn a sandbox: uid " + std::to_string(spec.uid) + " / gid " +
                              std::to_string(spec.gid) + " lie outside its user namespace's " +
                              std::to_string(ns.count) + " mapped ids");
    if (ns.host_uid > UINT32_MAX - ns.count || ns.host_gid > UINT32_MAX - ns.count)
        return internal_error("Failed to spawn a sandbox: its user namespace's id range overflows");
    return {};
}

std::string tmpfs_owner_options(const UserNamespace& ns)
{
    return ",uid=" + std::to_string(ns.host_uid) + ",gid=" + std::to_string(ns.host_gid);
}

std::string failure_message(const SandboxSpec& spec, const std::string& rootfs, Step step)
{
    std::string object;
    switch (step) {
    case Step::sync: return "Failed to synchronise with the sandbox child";
    case Step::join_cgroup: return "Failed to move the sandbox child into its v1 cgroups";
    case Step::new_session: return "Failed to start a new session for the sandbox";
    case Step::cgroup_namespace: return "Failed to create the sandbox's cgroup namespace";
    case Step::mount_namespace: return "Failed to create the sandbox's mount namespace";
    case Step::network_namespace: return "Failed to create the sandbox's network namespace";
    case Step::make_private: return "Failed to make the sandbox's mounts private";
    case Step::bind_rootfs: return "Failed to bind-mount the rootfs " + quoted(rootfs);
    case Step::idmap_rootfs:
        return "Failed to idmap the rootfs " + quoted(rootfs) + " for the sandbox's user namespace";
    case Step::mount_proc: return "Failed to mount proc on " + quoted(rootfs + "/proc");
    case Step::mask_proc: return "Failed to mask files in " + quoted(rootfs + "/proc");
    case Step::read_only_proc: return "Failed to make directories in " + quoted(rootfs + "/proc") + " read-only";
    case Step::mount_dev: return "Failed to mount tmpfs on " + quoted(rootfs + "/dev");
    case Step::populate_dev: return "Failed to populate " + quoted(rootfs + "/dev");
    case Step::mount_devpts: return "Failed to mount devpts on " + quoted(rootfs + "/dev/pts");
    case Step::mount_shm: return "Failed to mount tmpfs on " + quoted(rootfs + "/dev/shm");
    case Step::mount_tmp: return "Failed to mount tmpfs on " + quoted(rootfs + "/tmp");
    case Step::read_only_root: return "Failed to remount the rootfs " + quoted(rootfs) + " read-only";
    case Step::pivot_root: return "Failed to pivot_root into " + quoted(rootfs);
    case Step::detach_old_root: return "Failed to detach the old root from " + quoted(rootfs);
    case Step::hostname: return "Failed to set the hostname " + quoted(spec.hostname);
    case Step::join_netns: return "Failed to join the sandbox's loopback network namespace";
    case Step::join_userns: return "Failed to join the sandbox's user namespace";
    case Step::loopback: return "Failed to bring up 'lo' in the sandbox's network namespace";
    case Step::rlimit: return "Failed to set a resource limit in the sandbox";
    case Step::cwd: return "Failed to change directory to " + quoted(spec.cwd) + " in the sandbox";
    case Step::stdio: return "Failed to set up the sandbox's standard input/output";
    case Step::drop_bounding: return "Failed to drop the capability bounding set";
    case Step::clear_ambient: return "Failed to clear the ambient capabilities";
    case Step::set_groups: return "Failed to clear the supplementary groups";
    case Step::set_gid: return "Failed to set gid " + std::to_string(spec.gid);
    case Step::set_uid: return "Failed to set uid " + std::to_string(spec.uid);
    case Step::drop_caps: return "Failed to drop all capabilities";
    case Step::no_new_privs: return "Failed to set no_new_privs";
    case Step::seccomp: return "Failed to load the seccomp filter";
    case Step::exec: return "Failed to execute " + quoted(spec.argv.front()) + " in the sandbox";
    case Step::none: break;
    }
    return "Failed to set up the sandbox (unknown step " + std::to_string(static_cast<int>(step)) + ")";
}

}  // namespace

Result<ParentPrep> prepare_parent(const SandboxSpec& spec)
{
    if (spec.argv.empty() || spec.argv.front().empty())
        return internal_error("Failed to spawn a sandbox: no program given");
    if (spec.rootfs.empty())
        return internal_error("Failed to spawn a sandbox: no rootfs given");
    if (spec.user_namespace)
        NPS_TRY_VOID(validate_user_namespace(spec));
    NPS_TRY_VOID(validate_writable(spec));
    if (spec.hold_before_exec && spec.env.size() > limits::kMaxHeldEnvEntries - limits::kMaxReleaseEnvEntries)
        return internal_error("Failed to spawn a held sandbox: its " + std::to_string(spec.env.size()) +
                              " environment entries leave no room for its release's");
    ParentPrep prep;
    char resolved[PATH_MAX];
    if (!::realpath(spec.rootfs.c_str(), resolved))
        return system_error_errno("Failed to resolve the rootfs " + quoted(spec.rootfs));
    prep.rootfs = resolved;
    prep.space_options = space_tmpfs_options(spec.writable.bytes) +
                         (spec.user_namespace ? tmpfs_owner_options(*spec.user_namespace) : std::string());
    prep.seccomp = spec.seccomp;
    if (!prep.seccomp) {
        prep.default_seccomp = NPS_TRY(SeccompProgram::default_program());
        prep.seccomp = prep.default_seccomp.get();
    }
    int error_pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, error_pair) < 0)
        return system_error_errno("Failed to create the sandbox's report socket");
    prep.error_read = UniqueFd(error_pair[0]);
    prep.error_write = UniqueFd(error_pair[1]);
    if (spec.cgroup)
        prep.cgroup_tasks = NPS_TRY(open_cgroup_tasks(*spec.cgroup));
    return prep;
}

Result<std::vector<UniqueFd>> open_cgroup_tasks(const cgroup::WorkerCgroup& cgroup)
{
    std::vector<UniqueFd> tasks = NPS_TRY(cgroup.open_tasks_outside_clone());
    if (tasks.size() > kMaxCgroupTasks)
        return internal_error("Failed to place a sandbox child: its cgroup spans " + std::to_string(tasks.size()) +
                              " v1 hierarchies, at most " + std::to_string(kMaxCgroupTasks) + " are supported");
    return tasks;
}

std::optional<std::size_t> path_entry(const std::vector<std::string>& env)
{
    std::optional<std::size_t> found;
    for (std::size_t i = 0; i < env.size(); ++i)
        if (env[i].rfind("PATH=", 0) == 0)
            found = i;  // the last one wins
    return found;
}

Result<void> await_exec(ParentPrep& prep, Child& child, const SandboxSpec& spec)
{
    Failure failure;
    ssize_t n;
    do {
        n = ::read(prep.error_read.get(), &failure, sizeof failure);
    } while (n < 0 && errno == EINTR);
    if (n == 0 && !spec.hold_before_exec)
        return {};
    const int read_err = errno;
    if (n == static_cast<ssize_t>(sizeof failure) && failure.step == Step::none && spec.hold_before_exec) {
        child.set_held(std::move(prep.error_read), failure_message(spec, prep.rootfs, Step::exec));
        return {};
    }
    (void)child.wait();
    if (n < 0)
        return system_error("Failed to read the sandbox's report socket", read_err);
    if (n == 0)  // held: its end closed without a word
        return internal_error("Failed to set up the sandbox: the child ended before it was held");
    if (n != sizeof failure || failure.step == Step::none)
        return internal_error("Failed to set up the sandbox: short report from the child");
    return system_error(failure_message(spec, prep.rootfs, failure.step), failure.err);
}

}  // namespace nps::sandbox::detail
