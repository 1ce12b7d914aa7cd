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
// The filter is compiled once in the parent and exported as classic BPF;
// the child only hands the program to prctl().
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <vector>

#include <seccomp.h>

#include "setup.hpp"

namespace nps::sandbox::detail {

namespace {

// Names unknown to this architecture or libseccomp are skipped.
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

struct Program {
    std::vector<sock_filter> code;
    sock_fprog fprog{};
    const char* error = nullptr;
    int err = 0;
};

void build(Program& out)
{
    scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (!ctx) {
        out.error = "create the seccomp filter";
        out.err = ENOMEM;
        return;
    }
    int rc = 0;
    for (const char* name : kAllowed) {
        int nr = ::seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR)
            continue;
        if ((rc = ::seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0)) < 0)
            break;
    }
    for (scmp_datum_t family : kSocketFamilies) {
        if (rc == 0)
            rc = ::seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, family));
    }
    if (rc == 0)
        rc = ::seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                SCMP_A0(SCMP_CMP_MASKED_EQ, kNamespaceFlags, 0));
    if (rc == 0)
        rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    if (rc < 0) {
        ::seccomp_release(ctx);
        out.error = "add a seccomp rule";
        out.err = -rc;
        return;
    }
    // Export through a memfd: libseccomp only writes BPF to a file descriptor.
    int fd = ::memfd_create("nps-seccomp", MFD_CLOEXEC);
    if (fd < 0) {
        ::seccomp_release(ctx);
        out.error = "create a memfd for the seccomp filter";
        out.err = errno;
        return;
    }
    rc = ::seccomp_export_bpf(ctx, fd);
    ::seccomp_release(ctx);
    off_t size = rc < 0 ? -1 : ::lseek(fd, 0, SEEK_END);
    if (rc < 0 || size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) {
        ::close(fd);
        out.error = "export the seccomp filter";
        out.err = rc < 0 ? -rc : EINVAL;
        return;
    }
    out.code.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
    ssize_t n = ::pread(fd, out.code.data(), static_cast<std::size_t>(size), 0);
    int read_err = errno;
    ::close(fd);
    if (n != size) {
        out.error = "read back the seccomp filter";
        out.err = n < 0 ? read_err : EIO;
        out.code.clear();
        return;
    }
    out.fprog.len = static_cast<unsigned short>(out.code.size());
    out.fprog.filter = out.code.data();
}

}  // namespace

const sock_fprog* default_seccomp_program(const char** error, int* err)
{
    static Program program;
    static std::once_flag once;
    std::call_once(once, [] { build(program); });
    if (program.error) {
        *error = program.error;
        *err = program.err;
        return nullptr;
    }
    return &program.fprog;
}

}  // namespace nps::sandbox::detail
