// SPDX-License-Identifier: Apache-2.0
// The default seccomp allowlist compiled for each architecture we ship
// (x86-64, arm64, 32-bit ARM) makes the same decisions: the same refusals,
// the same argument rules for clone, clone3 and socket, and death for a
// system call made through another architecture's ABI. The programs are
// run here by a small classic-BPF evaluator on seccomp_data the kernel would
// pass, so every architecture is checked on any build machine; the real
// kernels check the same in the privileged suites (natively, and in the
// emulated arm64 machine of tests/vm).
#include <doctest/doctest.h>

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <seccomp.h>

#include "nps/sandbox/seccomp.hpp"

namespace {

struct Architecture {
    const char* name;        // libseccomp's
    std::uint32_t audit;     // AUDIT_ARCH_*, what seccomp_data.arch holds
    bool is_64bit;
};

constexpr Architecture kArchitectures[] = {
    {"x86_64", AUDIT_ARCH_X86_64, true},
    {"aarch64", AUDIT_ARCH_AARCH64, true},
    {"arm", AUDIT_ARCH_ARM, false},
};

// Evaluates a classic BPF seccomp program as the kernel does; nullopt for an
// instruction libseccomp is not expected to emit (the test then fails).
std::optional<std::uint32_t> evaluate(const sock_fprog& program, const seccomp_data& data)
{
    std::uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {};
    auto word_at = [&](std::uint32_t offset) -> std::optional<std::uint32_t> {
        if (offset % 4 != 0 || offset + 4 > sizeof data)
            return std::nullopt;
        std::uint32_t w;
        std::memcpy(&w, reinterpret_cast<const unsigned char*>(&data) + offset, 4);
        return w;
    };
    for (unsigned pc = 0; pc < program.len; ++pc) {
        const sock_filter& in = program.filter[pc];
        switch (in.code) {
        case BPF_LD | BPF_W | BPF_ABS: {
            auto w = word_at(in.k);
            if (!w)
                return std::nullopt;
            a = *w;
            break;
        }
        case BPF_LD | BPF_MEM: a = mem[in.k % BPF_MEMWORDS]; break;
        case BPF_LDX | BPF_MEM: x = mem[in.k % BPF_MEMWORDS]; break;
        case BPF_ST: mem[in.k % BPF_MEMWORDS] = a; break;
        case BPF_STX: mem[in.k % BPF_MEMWORDS] = x; break;
        case BPF_ALU | BPF_AND | BPF_K: a &= in.k; break;
        case BPF_ALU | BPF_OR | BPF_K: a |= in.k; break;
        case BPF_MISC | BPF_TAX: x = a; break;
        case BPF_MISC | BPF_TXA: a = x; break;
        case BPF_JMP | BPF_JA: pc += in.k; break;
        case BPF_JMP | BPF_JEQ | BPF_K: pc += (a == in.k) ? in.jt : in.jf; break;
        case BPF_JMP | BPF_JGT | BPF_K: pc += (a > in.k) ? in.jt : in.jf; break;
        case BPF_JMP | BPF_JGE | BPF_K: pc += (a >= in.k) ? in.jt : in.jf; break;
        case BPF_JMP | BPF_JSET | BPF_K: pc += (a & in.k) ? in.jt : in.jf; break;
        case BPF_RET | BPF_K: return in.k;
        case BPF_RET | BPF_A: return a;
        default: return std::nullopt;
        }
    }
    return std::nullopt;  // fell off the end: not a valid program
}

class Filter {
public:
    explicit Filter(const Architecture& arch) : arch_(arch)
    {
        auto compiled = nps::sandbox::SeccompProgram::compile_for_architecture(arch.name);
        REQUIRE_MESSAGE(compiled.has_value(), (compiled ? std::string() : compiled.error().describe()));
        program_ = *compiled;
        token_ = ::seccomp_arch_resolve_name(arch.name);
        REQUIRE(token_ != 0);
    }

    // This architecture's number for `name`, or nullopt if it has no such call.
    std::optional<int> number(const char* name) const
    {
        int nr = ::seccomp_syscall_resolve_name_arch(token_, name);
        if (nr < 0)
            return std::nullopt;
        return nr;
    }

    // The filter's answer to `name` with `args`, made through `audit_arch`
    // (default: this architecture's own ABI).
    std::uint32_t decide(const char* name, std::vector<std::uint64_t> args = {},
                         std::optional<std::uint32_t> audit_arch = {}) const
    {
        auto nr = number(name);
        REQUIRE_MESSAGE(nr.has_value(), arch_.name << " has no system call " << name);
        seccomp_data data{};
        data.nr = *nr;
        data.arch = audit_arch.value_or(arch_.audit);
        for (std::size_t i = 0; i < args.size() && i < 6; ++i)
            data.args[i] = args[i];
        auto verdict = evaluate(*program_->program(), data);
        REQUIRE_MESSAGE(verdict.has_value(), "the " << arch_.name << " program has an unexpected instruction");
        return *verdict;
    }

    const Architecture& arch() const { return arch_; }

private:
    Architecture arch_;
    std::shared_ptr<const nps::sandbox::SeccompProgram> program_;
    std::uint32_t token_ = 0;
};

constexpr std::uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr std::uint32_t eperm() { return SECCOMP_RET_ERRNO | EPERM; }
constexpr std::uint32_t enosys() { return SECCOMP_RET_ERRNO | ENOSYS; }
bool kills(std::uint32_t verdict)
{
    std::uint32_t action = verdict & SECCOMP_RET_ACTION_FULL;
    return action == SECCOMP_RET_KILL_PROCESS || action == SECCOMP_RET_KILL_THREAD || action == SECCOMP_RET_TRAP;
}

// Refused on every architecture (each name exists on all three).
constexpr const char* kRefused[] = {
    "mount", "umount2", "pivot_root", "unshare", "setns", "ptrace", "kexec_load", "init_module", "finit_module",
    "delete_module", "bpf", "keyctl", "add_key", "request_key", "open_by_handle_at", "perf_event_open", "reboot",
    "swapon", "swapoff", "settimeofday", "clock_settime", "io_uring_setup", "io_uring_enter", "fsopen", "fsmount",
    "move_mount", "open_tree", "userfaultfd", "process_vm_readv", "process_vm_writev", "kcmp", "acct", "quotactl",
    "syslog", "vhangup", "personality", "lookup_dcookie", "name_to_handle_at", "nfsservctl" /* arm/x86 only */,
};

// Allowed on every architecture: what any worker's libc starts with.
constexpr const char* kAllowedEverywhere[] = {
    "read", "write", "openat", "close", "execve", "exit_group", "futex", "rt_sigaction", "rt_sigprocmask",
    "getpid", "brk", "mprotect", "munmap", "set_tid_address", "set_robust_list", "rseq", "prlimit64", "getrandom",
    "newfstatat" /* not on arm: skipped below */, "statx", "wait4", "pipe2", "dup3", "socketpair", "epoll_pwait",
};

}  // namespace

TEST_CASE("the default allowlist compiles for every shipped architecture, and an unknown one is an error")
{
    for (const auto& arch : kArchitectures) {
        CAPTURE(arch.name);
        auto program = nps::sandbox::SeccompProgram::compile_for_architecture(arch.name);
        REQUIRE_MESSAGE(program.has_value(), (program ? std::string() : program.error().describe()));
        CHECK((*program)->program()->len > 50);
        CHECK((*program)->program()->len <= BPF_MAXINSNS);
    }
    auto bad = nps::sandbox::SeccompProgram::compile_for_architecture("pdp11");
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().describe().find("'pdp11'") != std::string::npos);
}

TEST_CASE("every architecture refuses the same dangerous system calls with EPERM")
{
    for (const auto& arch : kArchitectures) {
        Filter filter(arch);
        for (const char* name : kRefused) {
            if (!filter.number(name))
                continue;  // e.g. nfsservctl is not an arm64 call
            CAPTURE(arch.name);
            CAPTURE(name);
            CHECK(filter.decide(name) == eperm());
        }
    }
}

TEST_CASE("every architecture allows what a libc needs to start and run")
{
    for (const auto& arch : kArchitectures) {
        Filter filter(arch);
        for (const char* name : kAllowedEverywhere) {
            if (!filter.number(name))
                continue;
            CAPTURE(arch.name);
            CAPTURE(name);
            CHECK(filter.decide(name) == kAllow);
        }
    }
}

TEST_CASE("clone is allowed without namespace flags only, and clone3 answers ENOSYS, on every architecture")
{
    const std::uint64_t thread_flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                                       CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
    for (const auto& arch : kArchitectures) {
        Filter filter(arch);
        CAPTURE(arch.name);
        CHECK(filter.decide("clone", {SIGCHLD}) == kAllow);
        CHECK(filter.decide("clone", {thread_flags}) == kAllow);
        for (std::uint64_t ns : {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                                 CLONE_NEWCGROUP, CLONE_NEWTIME}) {
            CAPTURE(ns);
            CHECK(filter.decide("clone", {ns | SIGCHLD}) == eperm());
        }
        CHECK(filter.decide("clone3", {0, 88}) == enosys());
    }
}

TEST_CASE("socket is allowed for the listed families only, on every architecture")
{
    for (const auto& arch : kArchitectures) {
        Filter filter(arch);
        CAPTURE(arch.name);
        for (std::uint64_t family : {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET})
            CHECK(filter.decide("socket", {family, SOCK_STREAM, 0}) == kAllow);
        for (std::uint64_t family : {AF_VSOCK, AF_ALG, AF_BLUETOOTH, AF_KEY, AF_CAN})
            CHECK(filter.decide("socket", {family, SOCK_STREAM, 0}) == eperm());
        if (arch.is_64bit)  // junk in the upper half cannot pass a family off as an allowed one
            CHECK(filter.decide("socket", {(1ull << 32) | AF_INET, SOCK_STREAM, 0}) == eperm());
    }
}

TEST_CASE("a system call made through another architecture's ABI kills the process")
{
    const std::uint32_t foreign[] = {AUDIT_ARCH_I386, AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64, AUDIT_ARCH_ARM};
    for (const auto& arch : kArchitectures) {
        Filter filter(arch);
        for (std::uint32_t other : foreign) {
            if (other == arch.audit)
                continue;
            CAPTURE(arch.name);
            CAPTURE(other);
            CHECK(kills(filter.decide("read", {}, other)));
        }
    }
}

TEST_CASE("x86-64 refuses the x32 ABI, which shares its audit architecture")
{
    Filter filter(kArchitectures[0]);
    auto read = filter.number("read");
    REQUIRE(read.has_value());
    seccomp_data data{};
    data.nr = *read | 0x40000000;  // __X32_SYSCALL_BIT
    data.arch = AUDIT_ARCH_X86_64;
    auto program = nps::sandbox::SeccompProgram::compile_for_architecture("x86_64");
    REQUIRE(program.has_value());
    auto verdict = evaluate(*(*program)->program(), data);
    REQUIRE(verdict.has_value());
    CHECK(*verdict != kAllow);
}

TEST_CASE("32-bit ARM allows the calls its glibc makes instead of the 64-bit ones")
{
    Filter filter(kArchitectures[2]);
    // TLS set-up at every program start, 64-bit time (glibc tries these first
    // and falls back only on ENOSYS), large files, 32-bit uid calls.
    for (const char* name : {"set_tls", "cacheflush", "clock_gettime64", "clock_nanosleep_time64", "futex_time64",
                             "ppoll_time64", "pselect6_time64", "utimensat_time64", "timerfd_settime64", "mmap2",
                             "_llseek", "fstat64", "fstatat64", "fcntl64", "ftruncate64", "getuid32", "setresuid32",
                             "ugetrlimit", "sigreturn", "arm_fadvise64_64", "recv", "send"}) {
        CAPTURE(name);
        CHECK(filter.decide(name) == kAllow);
    }
}

TEST_CASE("arm64 has none of the legacy calls, and its *at replacements are allowed")
{
    Filter filter(kArchitectures[1]);
    for (const char* name : {"open", "fork", "dup2", "stat", "pipe", "poll", "select"})
        CHECK_MESSAGE(!filter.number(name).has_value(), name << " unexpectedly exists on arm64");
    for (const char* name : {"openat", "clone", "dup3", "newfstatat", "pipe2", "ppoll", "pselect6"}) {
        CAPTURE(name);
        if (std::string(name) == "clone")
            continue;  // argument rule, checked above
        CHECK(filter.decide(name) == kAllow);
    }
}
