// SPDX-License-Identifier: Apache-2.0
// The default seccomp filter: an allowlist in the spirit of the usual
// container default. Everything not listed fails with EPERM, among them
// mount, umount2, pivot_root, unshare, setns, ptrace, the kexec and module
// calls, bpf, the keyring calls, open_by_handle_at, perf_event_open, reboot,
// swapon/swapoff, clock setting, io_uring and the new mount API. clone is
// allowed only without namespace flags; clone3 fails with ENOSYS so libc
// falls back to clone, whose flags the filter can inspect. socket is allowed
// only for the address families a worker needs (kSocketFamilies).
//
// The allowlist is written once, by name, for every architecture:
// libseccomp resolves each name for the architecture a filter is compiled
// for, and names an architecture lacks (arm64 has no open or fork; x86-64
// no mmap2 or set_tls) are skipped. A filter admits only its own
// architecture: a system call made through another ABI (i386 or x32 on an
// x86-64 kernel, 32-bit ARM on an arm64 one) kills the process.
//
// The filter is compiled in the parent and exported as classic BPF; the
// child only hands the program to prctl(). The default program (no extras)
// is compiled at build time, for the target architecture also in a cross
// build (seccomp_generate.cpp): running libseccomp costs each
// `nps-runner run` ~0.5 ms.
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <seccomp.h>

#include "nps/base/unique_fd.hpp"
#include "nps/sandbox/seccomp.hpp"
#include "seccomp_default.hpp"

namespace nps::sandbox::detail {

namespace {

// Names unknown to the target architecture or libseccomp are skipped. The
// 32-bit ARM names are those its glibc calls where 64-bit architectures have
// one call: the *64 and *32 variants, and with a 64-bit time_t the *_time64
// calls, which glibc tries first and falls back from only on ENOSYS (an
// EPERM here would break every clock and timeout). set_tls is how glibc on
// ARM sets up thread-local storage at start, cacheflush what JITs call after
// writing code.
constexpr const char* kAllowed[] = {
    "accept", "accept4", "access", "alarm", "arch_prctl", "bind", "brk", "capget", "capset", "chdir", "chmod",
    "chown", "chown32", "clock_getres", "clock_getres_time64", "clock_gettime", "clock_gettime64",
    "clock_nanosleep", "clock_nanosleep_time64", "close", "close_range", "connect", "copy_file_range", "creat",
    "dup", "dup2", "dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2",
    "epoll_wait", "eventfd", "eventfd2", "execve", "execveat", "exit", "exit_group", "faccessat", "faccessat2",
    "fadvise64", "fallocate", "fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchown", "fchownat", "fcntl",
    "fdatasync", "fgetxattr", "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstatfs",
    "fsync", "ftruncate", "futex", "futex_time64", "futex_waitv", "futimesat", "getcpu", "getcwd", "getdents",
    "getdents64", "getegid", "geteuid", "getgid", "getgroups", "getitimer", "getpeername", "getpgid", "getpgrp",
    "getpid", "getppid", "getpriority", "getrandom", "getresgid", "getresuid", "getrlimit", "get_robust_list",
    "getrusage", "getsid", "getsockname", "getsockopt", "get_thread_area", "gettid", "gettimeofday", "getuid",
    "getxattr", "inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch", "io_cancel", "ioctl",
    "io_destroy", "io_getevents", "io_pgetevents", "ioprio_get", "ioprio_set", "io_setup", "io_submit", "kill",
    "landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self", "lchown", "lgetxattr", "link",
    "linkat", "listen", "listxattr", "llistxattr", "lremovexattr", "lseek", "lsetxattr", "lstat", "madvise",
    "membarrier", "memfd_create", "mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock", "mlock2",
    "mlockall", "mmap", "mprotect", "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive", "mq_timedsend",
    "mq_unlink", "mremap", "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap",
    "nanosleep", "newfstatat", "open", "openat", "openat2", "pause", "pidfd_getfd", "pidfd_open",
    "pidfd_send_signal", "pipe", "pipe2", "poll", "ppoll", "prctl", "pread64", "preadv", "preadv2", "prlimit64",
    "pselect6", "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat", "readv",
    "recvfrom", "recvmmsg", "recvmsg", "remap_file_pages", "removexattr", "rename", "renameat", "renameat2",
    "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo",
    "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo", "sched_getaffinity",
    "sched_getattr", "sched_getparam", "sched_get_priority_max", "sched_get_priority_min", "sched_getscheduler",
    "sched_rr_get_interval", "sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler",
    "sched_yield", "select", "semctl", "semget", "semop", "semtimedop", "send", "sendfile", "sendmmsg", "sendmsg",
    "sendto", "setfsgid", "setfsuid", "setgid", "setgroups", "setitimer", "setpgid", "setpriority", "setregid",
    "setresgid", "setresuid", "setreuid", "setrlimit", "set_robust_list", "setsid", "setsockopt",
    "set_thread_area", "set_tid_address", "setuid", "setxattr", "shmat", "shmctl", "shmdt", "shmget", "shutdown",
    "sigaltstack", "signalfd", "signalfd4", "socketpair", "splice", "stat", "statfs", "statx",
    "symlink", "symlinkat", "sync", "sync_file_range", "syncfs", "sysinfo", "tee", "tgkill", "time",
    "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime", "timer_settime", "timerfd_create",
    "timerfd_gettime", "timerfd_settime", "times", "tkill", "truncate", "umask", "uname", "unlink", "unlinkat",
    "utime", "utimensat", "utimes", "vfork", "wait4", "waitid", "write", "writev",
    // 32-bit architectures (armhf)
    "_llseek", "_newselect", "arm_fadvise64_64", "arm_sync_file_range", "cacheflush", "fadvise64_64",
    "fchown32", "fcntl64", "fstat64", "fstatat64", "fstatfs64", "ftruncate64", "getegid32", "geteuid32", "getgid32",
    "getgroups32", "getresgid32", "getresuid32", "getuid32", "io_pgetevents_time64", "lchown32", "lstat64", "mmap2",
    "mq_timedreceive_time64", "mq_timedsend_time64", "ppoll_time64", "pselect6_time64", "recv",
    "recvmmsg_time64", "rt_sigtimedwait_time64", "sched_rr_get_interval_time64", "semtimedop_time64", "sendfile64",
    "set_tls", "setfsgid32", "setfsuid32", "setgid32", "setgroups32", "setregid32", "setresgid32", "setresuid32",
    "setreuid32", "setuid32", "sigreturn", "stat64", "statfs64", "sync_file_range2", "timer_gettime64",
    "timer_settime64", "timerfd_gettime64", "timerfd_settime64", "truncate64", "ugetrlimit", "utimensat_time64",
};

// Any of these in clone's flags would create or join a namespace.
constexpr scmp_datum_t kNamespaceFlags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                                         CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME;

// The families socket() may create. Left out on purpose: AF_VSOCK, which no
// network namespace confines (it reaches the hypervisor and other VMs even
// under Network::none), and AF_ALG (kernel crypto, a recurrent source of
// kernel bugs). Each is its own rule with an exact 64-bit comparison, so
// that junk in the upper half of the register cannot slip a family past the
// filter (the kernel reads only the lower half); a "not equal" rule could
// not guarantee that. AF_PACKET stays: it needs CAP_NET_RAW anyway.
constexpr scmp_datum_t kSocketFamilies[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET};

// System calls whose rules look at arguments; the operator cannot replace
// them with an unconditional allow.
bool has_builtin_rule(const std::string& name)
{
    return name == "clone" || name == "clone3" || name == "socket";
}

// Exports a filter as classic BPF (libseccomp writes it only to an fd).
Result<std::vector<sock_filter>> export_bpf(scmp_filter_ctx ctx)
{
    UniqueFd fd(::memfd_create("nps-seccomp", MFD_CLOEXEC));
    if (!fd)
        return system_error_errno("Failed to create a memfd for the seccomp filter");
    if (int rc = ::seccomp_export_bpf(ctx, fd.get()); rc < 0)
        return system_error("Failed to export the seccomp filter", -rc);
    off_t size = ::lseek(fd.get(), 0, SEEK_END);
    if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0)
        return internal_error("Failed to export the seccomp filter: odd size " + std::to_string(size));
    std::vector<sock_filter> code(static_cast<std::size_t>(size) / sizeof(sock_filter));
    ssize_t n = ::pread(fd.get(), code.data(), static_cast<std::size_t>(size), 0);
    if (n != size)
        return system_error("Failed to read back the seccomp filter", n < 0 ? errno : EIO);
    return code;
}

struct FilterContext {
    scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_ERRNO(EPERM));
    ~FilterContext()
    {
        if (ctx)
            ::seccomp_release(ctx);
    }
};

// Makes `arch` (a libseccomp architecture token) the filter's only one.
Result<void> target_architecture(scmp_filter_ctx ctx, uint32_t arch)
{
    if (arch == ::seccomp_arch_native())
        return {};
    if (int rc = ::seccomp_arch_add(ctx, arch); rc < 0)
        return system_error("Failed to add the architecture to the seccomp filter", -rc);
    if (int rc = ::seccomp_arch_remove(ctx, SCMP_ARCH_NATIVE); rc < 0)
        return system_error("Failed to remove the build machine's architecture from the seccomp filter", -rc);
    return {};
}

// System call numbers are given to libseccomp as this machine's (or as its
// pseudo numbers for calls this machine lacks); it translates them, by name,
// for the filter's architecture.
Result<std::vector<sock_filter>> build(const std::vector<std::string>& extra_allowed, uint32_t arch)
{
    FilterContext filter;
    if (!filter.ctx)
        return system_error("Failed to create the seccomp filter", ENOMEM);
    NPS_TRY(target_architecture(filter.ctx, arch));
    // A binary tree of system call numbers rather than a list. The kernel
    // walks the program once per system call number when the filter is
    // attached (the constant-action cache) and at every system call after:
    // with ~300 numbers in a list, attaching took 0.26 ms of each worker's
    // start on this host.
    if (int rc = ::seccomp_attr_set(filter.ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2); rc < 0)
        return system_error("Failed to ask libseccomp for a binary-tree filter", -rc);
    std::vector<int> allowed;
    for (const char* name : kAllowed) {
        int nr = ::seccomp_syscall_resolve_name(name);
        if (nr != __NR_SCMP_ERROR)
            allowed.push_back(nr);
    }
    for (const auto& name : extra_allowed) {
        if (has_builtin_rule(name))
            return internal_error("Failed to extend the seccomp filter: '" + name +
                                  "' keeps its built-in rule and cannot be allowed outright");
        int nr = ::seccomp_syscall_resolve_name(name.c_str());
        if (nr == __NR_SCMP_ERROR)
            return internal_error("Failed to extend the seccomp filter: '" + name +
                                  "' is not a system call on this architecture");
        allowed.push_back(nr);
    }
    for (int nr : allowed) {
        // Adding a name twice (a default also listed by the operator) is harmless.
        if (int rc = ::seccomp_rule_add(filter.ctx, SCMP_ACT_ALLOW, nr, 0); rc < 0 && rc != -EEXIST)
            return system_error("Failed to add a seccomp rule for system call " + std::to_string(nr), -rc);
    }
    for (scmp_datum_t family : kSocketFamilies) {
        if (int rc = ::seccomp_rule_add(filter.ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, family));
            rc < 0)
            return system_error("Failed to add the seccomp rule for socket", -rc);
    }
    if (int rc = ::seccomp_rule_add(filter.ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                    SCMP_A0(SCMP_CMP_MASKED_EQ, kNamespaceFlags, 0));
        rc < 0)
        return system_error("Failed to add the seccomp rule for clone", -rc);
    if (int rc = ::seccomp_rule_add(filter.ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0); rc < 0)
        return system_error("Failed to add the seccomp rule for clone3", -rc);
    return export_bpf(filter.ctx);
}

}  // namespace

}  // namespace nps::sandbox::detail

namespace nps::sandbox {

Result<std::shared_ptr<const SeccompProgram>> SeccompProgram::compile(const std::vector<std::string>& extra_allowed)
{
    return compile(extra_allowed, ::seccomp_arch_native());
}

Result<std::shared_ptr<const SeccompProgram>> SeccompProgram::compile_for_architecture(const std::string& arch)
{
    uint32_t token = ::seccomp_arch_resolve_name(arch.c_str());
    if (token == 0)
        return internal_error("Failed to compile the seccomp filter: libseccomp knows no architecture '" + arch + "'");
    return compile({}, token);
}

Result<std::shared_ptr<const SeccompProgram>> SeccompProgram::compile(const std::vector<std::string>& extra_allowed,
                                                                      uint32_t arch)
{
    std::shared_ptr<SeccompProgram> program(new SeccompProgram);
    program->code_ = NPS_TRY(detail::build(extra_allowed, arch));
    if (program->code_.size() > BPF_MAXINSNS)
        return internal_error("Failed to compile the seccomp filter: " + std::to_string(program->code_.size()) +
                              " instructions exceed the kernel's " + std::to_string(BPF_MAXINSNS));
    program->fprog_.len = static_cast<unsigned short>(program->code_.size());
    program->fprog_.filter = program->code_.data();
    return std::shared_ptr<const SeccompProgram>(std::move(program));
}

Result<std::shared_ptr<const SeccompProgram>> SeccompProgram::default_program()
{
#if defined(NPS_SECCOMP_PREBUILT) && !defined(NPS_SECCOMP_GENERATOR)
    static const std::shared_ptr<const SeccompProgram> prebuilt = [] {
        std::shared_ptr<SeccompProgram> program(new SeccompProgram);
        program->code_.assign(detail::kDefaultSeccompFilter,
                              detail::kDefaultSeccompFilter + detail::kDefaultSeccompFilterLength);
        program->fprog_.len = static_cast<unsigned short>(program->code_.size());
        program->fprog_.filter = program->code_.data();
        return std::shared_ptr<const SeccompProgram>(std::move(program));
    }();
    return prebuilt;
#else
    static const Result<std::shared_ptr<const SeccompProgram>> program = compile({});
    return program;
#endif
}

}  // namespace nps::sandbox
