// SPDX-License-Identifier: Apache-2.0
// sandbox-probe: tries one thing a sandboxed process must not be able to do
// (or, for a few, must still be able to do) and says what happened.
//
//   sandbox-probe CHECK [ARGS...]
//
// stdout gets exactly one line, "CHECK: refused REASON" or "CHECK: ALLOWED",
// where REASON is the errno name (EPERM), the signal that killed the attempt
// (SIGSYS), or "unprivileged" for `privs`. Details go to stderr. The info
// commands (pid, procs, hostname, ids) print "NAME: VALUE" instead.
//
// Exit status: 0 when the outcome is what the sandbox promises (refused, or
// ALLOWED for fork/thread/"clone none"), 1 when it is not, 2 on a usage or
// set-up error. Every attempt uses harmless arguments, so that the probe run
// as root on the host (the tests' control) changes nothing that outlives it:
// kexec, reboot, pivot_root and umount get arguments the kernel rejects right
// after its permission check, and nothing is ever mounted outside a target
// the caller names.
//
// Linked statically: the test rootfs holds busybox and nothing else.
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/if_alg.h>
#include <linux/io_uring.h>
#include <linux/kexec.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <linux/vm_sockets.h>
#include <net/ethernet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif

namespace {

enum class Expect { refused, allowed };

struct Outcome {
    bool allowed = false;
    std::string reason;  // when refused
};

struct UsageError {
    std::string message;
};

Outcome allowed()
{
    return {true, ""};
}

Outcome refused_errno(int err)
{
    const char* name = ::strerrorname_np(err);
    return {false, name ? name : "E" + std::to_string(err)};
}

Outcome refused_signal(int sig)
{
    const char* name = ::sigabbrev_np(sig);
    return {false, name ? std::string("SIG") + name : "SIG" + std::to_string(sig)};
}

// For a call returning -1/errno: allowed when it returned >= 0.
Outcome from_result(long rc)
{
    return rc >= 0 ? allowed() : refused_errno(errno);
}

void detail(const std::string& text)
{
    ::dprintf(2, "sandbox-probe: %s\n", text.c_str());
}

long parse_long(const std::string& text, const char* what)
{
    char* end = nullptr;
    errno = 0;
    long value = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end || errno)
        throw UsageError{std::string("bad ") + what + " '" + text + "'"};
    return value;
}

struct NamespaceFlag {
    const char* name;
    int flag;
};
constexpr NamespaceFlag kNamespaces[] = {
    {"user", CLONE_NEWUSER}, {"mnt", CLONE_NEWNS}, {"net", CLONE_NEWNET},       {"pid", CLONE_NEWPID},
    {"uts", CLONE_NEWUTS},   {"ipc", CLONE_NEWIPC}, {"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME},
};

int namespace_flag(const std::string& name)
{
    if (name == "none")
        return 0;
    for (const auto& ns : kNamespaces) {
        if (name == ns.name)
            return ns.flag;
    }
    throw UsageError{"unknown namespace '" + name + "' (user mnt net pid uts ipc cgroup time none)"};
}

// Runs `attempt` in a forked child and maps its end: exit 0 = allowed,
// exit N = errno N, killed = the signal. For attempts that may kill the
// caller (a seccomp kill) or that leave it changed (a clone).
template <typename F>
Outcome in_child(F attempt)
{
    pid_t pid = ::fork();
    if (pid < 0)
        return refused_errno(errno);
    if (pid == 0)
        ::_exit(attempt());
    int status = 0;
    if (::waitpid(pid, &status, 0) < 0)
        throw UsageError{std::string("waitpid: ") + ::strerror(errno)};
    if (WIFSIGNALED(status))
        return refused_signal(WTERMSIG(status));
    return WEXITSTATUS(status) == 0 ? allowed() : refused_errno(WEXITSTATUS(status));
}

// The exit code in_child() expects from a raw syscall result.
int child_code(long rc)
{
    if (rc >= 0)
        return 0;
    return errno > 0 && errno < 256 ? errno : 255;
}

// A child that only waits to be killed, for ptrace and process_vm_readv.
struct Sleeper {
    pid_t pid = -1;
    Sleeper()
    {
        pid = ::fork();
        if (pid < 0)
            throw UsageError{std::string("fork: ") + ::strerror(errno)};
        if (pid == 0) {
            for (;;)
                ::pause();
        }
    }
    ~Sleeper()
    {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    Sleeper(const Sleeper&) = delete;
    Sleeper& operator=(const Sleeper&) = delete;
};

// --- the mount family -------------------------------------------------------

Outcome check_mount(const std::string& target)
{
    long rc = ::mount("nps-probe", target.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=16k");
    Outcome outcome = from_result(rc);
    if (rc == 0)
        ::umount2(target.c_str(), MNT_DETACH);
    return outcome;
}

// A target that does not exist: the kernel checks the capability first.
constexpr const char* kMissingPath = "/nonexistent-nps-sandbox-probe";

Outcome check_umount()
{
    return from_result(::umount2(kMissingPath, MNT_DETACH));
}

Outcome check_pivot_root()
{
    return from_result(::syscall(SYS_pivot_root, kMissingPath, kMissingPath));
}

Outcome check_fsopen()
{
    long fd = ::syscall(SYS_fsopen, "tmpfs", 1 /* FSOPEN_CLOEXEC */);
    Outcome outcome = from_result(fd);
    if (fd >= 0)
        ::close(static_cast<int>(fd));
    return outcome;
}

Outcome check_chroot()
{
    // chroot("/") changes nothing even where it is allowed.
    return from_result(::chroot("/"));
}

// --- namespaces ----------------------------------------------------------------

Outcome check_unshare(const std::string& ns)
{
    int flag = namespace_flag(ns);
    return in_child([flag] { return child_code(::unshare(flag)); });
}

Outcome check_clone(const std::string& ns)
{
    unsigned long flags = static_cast<unsigned long>(namespace_flag(ns)) | SIGCHLD;
    return in_child([flags] {
        // The raw system call, fork-like (no new stack): libc's clone()
        // wrapper would hide which call was made.
        long pid = ::syscall(SYS_clone, flags, nullptr, nullptr, nullptr, 0);
        if (pid == 0)
            ::syscall(SYS_exit_group, 0);
        if (pid < 0)
            return child_code(pid);
        int status = 0;
        ::waitpid(static_cast<pid_t>(pid), &status, 0);
        return 0;
    });
}

// The kernel's struct clone_args, version 0.
struct CloneArgs {
    std::uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

Outcome check_clone3(const std::string& ns)
{
    std::uint64_t flags = static_cast<std::uint64_t>(namespace_flag(ns));
    return in_child([flags] {
        CloneArgs args{};
        args.flags = flags;
        args.exit_signal = SIGCHLD;
        long pid = ::syscall(SYS_clone3, &args, sizeof args);
        if (pid == 0)
            ::syscall(SYS_exit_group, 0);
        if (pid < 0)
            return child_code(pid);
        int status = 0;
        ::waitpid(static_cast<pid_t>(pid), &status, 0);
        return 0;
    });
}

Outcome check_setns(const std::string& ns)
{
    std::string path = "/proc/self/ns/" + ns;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw UsageError{"open " + path + ": " + ::strerror(errno)};
    // Joining the namespace one is already in is harmless where allowed.
    Outcome outcome = in_child([fd] { return child_code(::setns(fd, 0)); });
    ::close(fd);
    return outcome;
}

Outcome check_fork()
{
    return in_child([] { return 0; });
}

Outcome check_thread()
{
    pthread_t thread;
    int value = 0;
    int rc = ::pthread_create(
        &thread, nullptr,
        [](void* arg) -> void* {
            *static_cast<int*>(arg) = 42;
            return nullptr;
        },
        &value);
    if (rc != 0)
        return refused_errno(rc);
    ::pthread_join(thread, nullptr);
    if (value != 42)
        throw UsageError{"the thread did not run"};
    return allowed();
}

// --- other processes -----------------------------------------------------------

Outcome check_ptrace()
{
    Sleeper sleeper;
    long rc = ::ptrace(PTRACE_ATTACH, sleeper.pid, nullptr, nullptr);
    Outcome outcome = from_result(rc);
    if (rc == 0) {
        ::waitpid(sleeper.pid, nullptr, __WALL);
        ::ptrace(PTRACE_DETACH, sleeper.pid, nullptr, nullptr);
    }
    return outcome;
}

int g_secret = 0x4e5053;

Outcome check_process_vm_readv()
{
    Sleeper sleeper;
    int copy = 0;
    iovec local{&copy, sizeof copy};
    iovec remote{&g_secret, sizeof g_secret};
    long n = ::syscall(SYS_process_vm_readv, sleeper.pid, &local, 1, &remote, 1, 0);
    return from_result(n);
}

Outcome check_kill(const std::string& pid_text, const std::string& signal_text)
{
    long pid = parse_long(pid_text, "pid");
    int sig = signal_text.empty() ? SIGURG : static_cast<int>(parse_long(signal_text, "signal"));
    // kill(-1) as the host's root would reach everything: only ever run it
    // inside a pid namespace, which `kill -1` checks for itself.
    if (pid == -1 && ::getpid() != 1)
        throw UsageError{"refusing kill(-1) outside a pid namespace (not pid 1)"};
    return from_result(::kill(static_cast<pid_t>(pid), sig));
}

// --- kernel surfaces -------------------------------------------------------------

Outcome check_init_module()
{
    static const char image[16] = {};
    return from_result(::syscall(SYS_init_module, image, sizeof image, ""));
}

Outcome check_finit_module()
{
    int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw UsageError{std::string("open /dev/null: ") + ::strerror(errno)};
    Outcome outcome = from_result(::syscall(SYS_finit_module, fd, "", 0));
    ::close(fd);
    return outcome;
}

Outcome check_kexec_load()
{
    // Zero segments would unload a loaded image: a foreign architecture in
    // the flags makes the kernel refuse (EINVAL) once permission is granted.
#if defined(__x86_64__)
    unsigned long foreign_arch = KEXEC_ARCH_ARM;
#else
    unsigned long foreign_arch = KEXEC_ARCH_X86_64;
#endif
    return from_result(::syscall(SYS_kexec_load, 0UL, 0UL, nullptr, foreign_arch));
}

Outcome check_kexec_file_load()
{
    // An unknown flag bit: EINVAL once permission is granted.
    return from_result(::syscall(SYS_kexec_file_load, -1, -1, 0UL, "", 0x80000000UL));
}

Outcome check_reboot()
{
    // Wrong magic numbers: EINVAL once permission is granted.
    return from_result(::syscall(SYS_reboot, 0, 0, LINUX_REBOOT_CMD_CAD_OFF, nullptr));
}

Outcome check_bpf()
{
    bpf_attr attr{};
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = 4;
    attr.max_entries = 1;
    long fd = ::syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
    Outcome outcome = from_result(fd);
    if (fd >= 0)
        ::close(static_cast<int>(fd));
    return outcome;
}

Outcome check_perf_event_open()
{
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    long fd = ::syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0UL);
    Outcome outcome = from_result(fd);
    if (fd >= 0)
        ::close(static_cast<int>(fd));
    return outcome;
}

Outcome check_io_uring_setup()
{
    io_uring_params params{};
    long fd = ::syscall(SYS_io_uring_setup, 1, &params);
    Outcome outcome = from_result(fd);
    if (fd >= 0)
        ::close(static_cast<int>(fd));
    return outcome;
}

Outcome check_add_key()
{
    // The process keyring dies with the probe.
    return from_result(::syscall(SYS_add_key, "user", "nps-sandbox-probe", "x", 1UL, KEY_SPEC_PROCESS_KEYRING));
}

Outcome check_keyctl()
{
    return from_result(::syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
}

Outcome check_request_key()
{
    // No callout: the kernel only searches (ENOKEY where allowed).
    return from_result(::syscall(SYS_request_key, "user", "nps-sandbox-probe-absent", nullptr, 0));
}

Outcome check_open_by_handle_at()
{
    // Inode 2 is the root directory of ext2/3/4: the handle that, on the
    // filesystem under the rootfs, would open the host's real root.
    alignas(file_handle) unsigned char buffer[sizeof(file_handle) + 2 * sizeof(std::uint32_t)] = {};
    auto* handle = reinterpret_cast<file_handle*>(buffer);
    handle->handle_bytes = 2 * sizeof(std::uint32_t);
    handle->handle_type = 1;  // FILEID_INO32_GEN: {inode, generation}
    const std::uint32_t ino_gen[2] = {2, 0};
    ::memcpy(buffer + sizeof(file_handle), ino_gen, sizeof ino_gen);
    int mount_fd = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (mount_fd < 0)
        throw UsageError{std::string("open /: ") + ::strerror(errno)};
    long fd = ::syscall(SYS_open_by_handle_at, mount_fd, handle, O_RDONLY | O_CLOEXEC);
    Outcome outcome = from_result(fd);
    if (fd >= 0)
        ::close(static_cast<int>(fd));
    ::close(mount_fd);
    return outcome;
}

Outcome check_mknod(const std::string& path)
{
    // A block device for the first SCSI disk: whoever may create it can read
    // the host's disk.
    long rc = ::mknod(path.c_str(), S_IFBLK | 0600, makedev(8, 0));
    Outcome outcome = from_result(rc);
    if (rc == 0)
        ::unlink(path.c_str());
    return outcome;
}

// The i386 entry point (int 0x80) with unshare(CLONE_NEWUSER): a filter
// written for x86_64 numbers only would let it through.
Outcome check_ia32_unshare()
{
#if defined(__x86_64__)
    return in_child([] {
        long ret = 310;  // __NR_unshare in the i386 table
        long flags = CLONE_NEWUSER;
        asm volatile("int $0x80" : "+a"(ret) : "b"(flags) : "memory", "r8", "r9", "r10", "r11");
        if (ret >= 0)
            return 0;
        return -ret < 256 ? static_cast<int>(-ret) : 255;
    });
#else
    throw UsageError{"ia32-unshare is x86_64 only"};
#endif
}

// The x32 ABI: the same number with __X32_SYSCALL_BIT set.
Outcome check_x32_unshare()
{
#if defined(__x86_64__)
    return in_child([] { return child_code(::syscall(__X32_SYSCALL_BIT | SYS_unshare, CLONE_NEWUSER)); });
#else
    throw UsageError{"x32-unshare is x86_64 only"};
#endif
}

// --- network -------------------------------------------------------------------------

Outcome check_connect(const std::string& address, const std::string& port_text)
{
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(parse_long(port_text, "port")));
    if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1)
        throw UsageError{"bad IPv4 address '" + address + "'"};
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return refused_errno(errno);
    Outcome outcome;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        outcome = allowed();
    } else if (errno != EINPROGRESS) {
        outcome = refused_errno(errno);
    } else {
        pollfd pfd{fd, POLLOUT, 0};
        int ready = ::poll(&pfd, 1, 3000);
        int err = 0;
        socklen_t len = sizeof err;
        if (ready == 0)
            outcome = refused_errno(ETIMEDOUT);
        else if (ready < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            outcome = refused_errno(errno);
        else
            outcome = err == 0 ? allowed() : refused_errno(err);
    }
    ::close(fd);
    return outcome;
}

// Creating the socket is the whole check: the probe never connects it.
Outcome check_socket(int domain, int type, int protocol)
{
    int fd = ::socket(domain, type | SOCK_CLOEXEC, protocol);
    Outcome outcome = from_result(fd);
    if (fd >= 0)
        ::close(fd);
    return outcome;
}

// socket(AF_VSOCK) with junk in the register's upper half, which the kernel
// ignores (the family is an int): a filter comparing all 64 bits for
// "not AF_VSOCK" would let it through.
Outcome check_vsock_wide()
{
    unsigned long family = (1UL << 32) | AF_VSOCK;
    long fd = ::syscall(SYS_socket, family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    Outcome outcome = from_result(fd);
    if (fd >= 0)
        ::close(static_cast<int>(fd));
    return outcome;
}

// --- files ---------------------------------------------------------------------------------

Outcome check_write(const std::string& path)
{
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return refused_errno(errno);
    Outcome outcome = ::write(fd, "nps\n", 4) == 4 ? allowed() : refused_errno(errno);
    ::close(fd);
    return outcome;
}

// Writes back the value the file holds, so that where it is allowed nothing
// changes.
Outcome check_sysctl_write(const std::string& path)
{
    char value[256];
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw UsageError{"open " + path + ": " + ::strerror(errno)};
    ssize_t n = ::read(fd, value, sizeof value);
    ::close(fd);
    if (n <= 0)
        throw UsageError{"read " + path + ": " + (n < 0 ? ::strerror(errno) : "empty")};
    fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return refused_errno(errno);
    Outcome outcome = ::write(fd, value, static_cast<std::size_t>(n)) == n ? allowed() : refused_errno(errno);
    ::close(fd);
    return outcome;
}

// Reads what a host path gives away: ALLOWED when a file yields a byte or
// a directory lists an entry; refused ERRNO when it does not open or read,
// refused EMPTY when it reads empty (a /dev/null or empty tmpfs cover).
// Non-blocking, so /proc/kmsg with nothing queued does not hang.
Outcome check_read(const std::string& path)
{
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return refused_errno(errno);
    struct stat st {};
    Outcome outcome;
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        DIR* dir = ::fdopendir(fd);
        if (!dir) {
            ::close(fd);
            return refused_errno(errno);
        }
        outcome = Outcome{.allowed = false, .reason = "EMPTY"};
        while (dirent* entry = ::readdir(dir)) {
            if (::strcmp(entry->d_name, ".") != 0 && ::strcmp(entry->d_name, "..") != 0) {
                outcome = allowed();
                break;
            }
        }
        ::closedir(dir);
        return outcome;
    }
    char byte[64];
    ssize_t n = ::read(fd, byte, sizeof byte);
    if (n > 0)
        outcome = allowed();
    else if (n == 0)
        outcome = Outcome{.allowed = false, .reason = "EMPTY"};
    else
        outcome = refused_errno(errno);
    ::close(fd);
    return outcome;
}

Outcome check_stat(const std::string& path)
{
    struct stat st {};
    return from_result(::stat(path.c_str(), &st));
}

// TIOCSTI pushes bytes into a terminal's input queue: on the terminal the
// sandbox shares with its caller, that is typing into the caller's shell.
// Tried on stdin when it is a terminal and on /dev/tty (the controlling
// terminal) when that opens; ALLOWED if either push worked, else refused
// with the first attempt's errno.
Outcome check_tiocsti()
{
    const char space = ' ';
    Outcome outcome;
    bool tried = false;
    if (::isatty(0)) {
        tried = true;
        outcome = from_result(::ioctl(0, TIOCSTI, &space));
        detail("TIOCSTI on stdin: " + (outcome.allowed ? std::string("pushed") : outcome.reason));
    }
    int fd = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        detail("open /dev/tty: " + refused_errno(errno).reason);
    } else {
        Outcome via_tty = from_result(::ioctl(fd, TIOCSTI, &space));
        detail("TIOCSTI on /dev/tty: " + (via_tty.allowed ? std::string("pushed") : via_tty.reason));
        ::close(fd);
        if (!tried || via_tty.allowed)
            outcome = via_tty;
        tried = true;
    }
    if (!tried)
        throw UsageError{"no terminal: stdin is not one and /dev/tty does not open"};
    return outcome;
}

// --- identity --------------------------------------------------------------------------------

// The value of a "Name:\tvalue" line of /proc/self/status.
std::string status_field(const char* name)
{
    FILE* file = ::fopen("/proc/self/status", "re");
    if (!file)
        throw UsageError{std::string("open /proc/self/status: ") + ::strerror(errno)};
    char line[512];
    std::string value;
    std::size_t len = ::strlen(name);
    while (::fgets(line, sizeof line, file)) {
        if (::strncmp(line, name, len) == 0 && line[len] == ':') {
            value = line + len + 1;
            value.erase(0, value.find_first_not_of(" \t"));
            value.erase(value.find_last_not_of(" \t\n") + 1);
            break;
        }
    }
    ::fclose(file);
    return value;
}

std::string ids_line()
{
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    ::getresuid(&ruid, &euid, &suid);
    ::getresgid(&rgid, &egid, &sgid);
    char text[512];
    ::snprintf(text, sizeof text, "uid=%u euid=%u suid=%u gid=%u egid=%u CapPrm=%s CapEff=%s CapBnd=%s NoNewPrivs=%s",
               ruid, euid, suid, rgid, egid, status_field("CapPrm").c_str(), status_field("CapEff").c_str(),
               status_field("CapBnd").c_str(), status_field("NoNewPrivs").c_str());
    return text;
}

// Run as a setuid-root binary by a non-root user: did the exec give us root
// or capabilities?
Outcome check_privs()
{
    detail(ids_line());
    bool no_caps = std::strtoull(status_field("CapPrm").c_str(), nullptr, 16) == 0 &&
                   std::strtoull(status_field("CapEff").c_str(), nullptr, 16) == 0;
    if (::geteuid() != 0 && no_caps)
        return {false, "unprivileged"};
    return allowed();
}

std::string procs_line()
{
    DIR* dir = ::opendir("/proc");
    if (!dir)
        throw UsageError{std::string("open /proc: ") + ::strerror(errno)};
    std::string pids;
    while (dirent* entry = ::readdir(dir)) {
        if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9' &&
            ::strspn(entry->d_name, "0123456789") == ::strlen(entry->d_name))
            pids += (pids.empty() ? "" : " ") + std::string(entry->d_name);
    }
    ::closedir(dir);
    return pids;
}

// --- dispatch ---------------------------------------------------------------------------------

struct Args {
    int count;
    char** values;
    std::string at(int i, const char* fallback = nullptr) const
    {
        if (i < count)
            return values[i];
        if (fallback)
            return fallback;
        throw UsageError{std::string("missing argument ") + std::to_string(i)};
    }
};

int report(const std::string& name, const Outcome& outcome, Expect expect)
{
    if (outcome.allowed)
        ::dprintf(1, "%s: ALLOWED\n", name.c_str());
    else
        ::dprintf(1, "%s: refused %s\n", name.c_str(), outcome.reason.c_str());
    return outcome.allowed == (expect == Expect::allowed) ? 0 : 1;
}

constexpr const char* kUsage =
    "usage: sandbox-probe CHECK [ARGS...]\n"
    "info:   pid | procs | hostname | ids\n"
    "checks: mount TARGET | umount | pivot_root | fsopen | chroot\n"
    "        unshare NS | clone NS | clone3 NS | setns NS   (NS: user mnt net pid uts ipc cgroup time none)\n"
    "        fork | thread | ptrace | process_vm_readv | kill PID [SIGNAL]\n"
    "        init_module | finit_module | kexec_load | kexec_file_load | reboot | bpf | perf_event_open\n"
    "        io_uring_setup | add_key | keyctl | request_key | open_by_handle_at | mknod PATH\n"
    "        ia32-unshare | x32-unshare\n"
    "        connect IPV4 PORT | vsock | vsock-wide | alg | packet\n"
    "        write PATH | sysctl-write PATH | stat PATH | read PATH | tiocsti | privs\n";

int run(const std::string& check, const Args& args)
{
    auto info = [&](const std::string& value) {
        ::dprintf(1, "%s: %s\n", check.c_str(), value.c_str());
        return 0;
    };
    if (check == "pid")
        return info(std::to_string(::getpid()));
    if (check == "procs")
        return info(procs_line());
    if (check == "hostname") {
        char name[256] = {};
        ::gethostname(name, sizeof name - 1);
        return info(name);
    }
    if (check == "ids")
        return info(ids_line());

    Expect refused = Expect::refused;
    if (check == "mount")
        return report(check, check_mount(args.at(0)), refused);
    if (check == "umount")
        return report(check, check_umount(), refused);
    if (check == "pivot_root")
        return report(check, check_pivot_root(), refused);
    if (check == "fsopen")
        return report(check, check_fsopen(), refused);
    if (check == "chroot")
        return report(check, check_chroot(), refused);
    if (check == "unshare")
        return report(check + " " + args.at(0), check_unshare(args.at(0)), refused);
    if (check == "clone") {
        // A clone without namespace flags (a fork) must keep working.
        Expect expect = args.at(0) == "none" ? Expect::allowed : refused;
        return report(check + " " + args.at(0), check_clone(args.at(0)), expect);
    }
    if (check == "clone3")
        return report(check + " " + args.at(0), check_clone3(args.at(0)), refused);
    if (check == "setns")
        return report(check + " " + args.at(0), check_setns(args.at(0)), refused);
    if (check == "fork")
        return report(check, check_fork(), Expect::allowed);
    if (check == "thread")
        return report(check, check_thread(), Expect::allowed);
    if (check == "ptrace")
        return report(check, check_ptrace(), refused);
    if (check == "process_vm_readv")
        return report(check, check_process_vm_readv(), refused);
    if (check == "kill")
        return report(check, check_kill(args.at(0), args.at(1, "")), refused);
    if (check == "init_module")
        return report(check, check_init_module(), refused);
    if (check == "finit_module")
        return report(check, check_finit_module(), refused);
    if (check == "kexec_load")
        return report(check, check_kexec_load(), refused);
    if (check == "kexec_file_load")
        return report(check, check_kexec_file_load(), refused);
    if (check == "reboot")
        return report(check, check_reboot(), refused);
    if (check == "bpf")
        return report(check, check_bpf(), refused);
    if (check == "perf_event_open")
        return report(check, check_perf_event_open(), refused);
    if (check == "io_uring_setup")
        return report(check, check_io_uring_setup(), refused);
    if (check == "add_key")
        return report(check, check_add_key(), refused);
    if (check == "keyctl")
        return report(check, check_keyctl(), refused);
    if (check == "request_key")
        return report(check, check_request_key(), refused);
    if (check == "open_by_handle_at")
        return report(check, check_open_by_handle_at(), refused);
    if (check == "mknod")
        return report(check, check_mknod(args.at(0)), refused);
    if (check == "ia32-unshare")
        return report(check, check_ia32_unshare(), refused);
    if (check == "x32-unshare")
        return report(check, check_x32_unshare(), refused);
    if (check == "connect")
        return report(check, check_connect(args.at(0), args.at(1)), refused);
    if (check == "vsock")
        return report(check, check_socket(AF_VSOCK, SOCK_STREAM, 0), refused);
    if (check == "vsock-wide")
        return report(check, check_vsock_wide(), refused);
    if (check == "alg")
        return report(check, check_socket(AF_ALG, SOCK_SEQPACKET, 0), refused);
    if (check == "packet")
        return report(check, check_socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)), refused);
    if (check == "write")
        return report(check, check_write(args.at(0)), refused);
    if (check == "sysctl-write")
        return report(check, check_sysctl_write(args.at(0)), refused);
    if (check == "stat")
        return report(check, check_stat(args.at(0)), refused);
    if (check == "read")
        return report(check + " " + args.at(0), check_read(args.at(0)), refused);
    if (check == "tiocsti")
        return report(check, check_tiocsti(), refused);
    if (check == "privs")
        return report(check, check_privs(), refused);
    throw UsageError{"unknown check '" + check + "'"};
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        ::dprintf(2, "%s", kUsage);
        return 2;
    }
    try {
        return run(argv[1], Args{argc - 2, argv + 2});
    } catch (const UsageError& error) {
        detail(error.message);
        ::dprintf(2, "%s", kUsage);
        return 2;
    }
}
