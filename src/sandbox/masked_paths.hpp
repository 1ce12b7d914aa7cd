// SPDX-License-Identifier: Apache-2.0
// The one list of what the sandbox hides or freezes in its fresh /proc
// (docs/security.md "Masked host information"). Names are relative to
// /proc; a name the host's kernel does not have is skipped. There is no
// /sys in the sandbox, so the runtimes' /sys entries (/sys/firmware,
// /sys/devices/virtual/powercap) need none.
#pragma once

namespace nps::sandbox::detail {

// Files covered with /dev/null: they read empty and take no writes.
//   The container runtimes' defaults (crun, runc, moby): kcore (kernel
//   memory), keys, timer_list, timer_stats, sched_debug, latency_stats,
//   interrupts (an interrupt-timing side channel), sysrq-trigger (read-only
//   there; covered here).
//   Ours besides: kpageflags, kpagecount, kpagecgroup (every physical
//   page's state, owner count and memory cgroup: a side channel on other
//   tenants and an aid to Rowhammer-style attacks), slabinfo (kernel heap
//   layout, the classic aid to heap exploits), vmallocinfo and pagetypeinfo
//   (kernel addresses and allocator state; reading pagetypeinfo holds a
//   zone lock, a denial of service), kallsyms, kmsg, config.gz.
inline constexpr const char* kMaskedProcFiles[] = {
    "kcore",       "keys",          "timer_list", "timer_stats", "sched_debug", "latency_stats",
    "interrupts",  "sysrq-trigger", "kpageflags", "kpagecount",  "kpagecgroup", "slabinfo",
    "vmallocinfo", "pagetypeinfo",  "kallsyms",   "kmsg",        "config.gz",
};

// Directories covered with an empty read-only tmpfs, as the runtimes do:
// firmware tables (acpi), sound and SCSI devices of the host.
inline constexpr const char* kMaskedProcDirs[] = {"acpi", "asound", "scsi"};

// Directories that stay visible but read-only: kernel knobs (sys), bus and
// filesystem settings, interrupt affinity.
inline constexpr const char* kReadOnlyProcDirs[] = {"sys", "bus", "fs", "irq"};

}  // namespace nps::sandbox::detail
