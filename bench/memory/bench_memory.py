#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/memory: what the daemon costs in memory (issue 20: PSS of the daemon
and its own children together ≤ 12 MB), idle and with WORKERS sleeping
sandboxed workers, read from /proc/PID/smaps_rollup.

The daemon's own processes are the serve process and every descendant still
running its binary (the spawn pool's parked children, launch helpers); the
workers (the demo image's busybox `worker sleep S`) are counted apart. PSS
shares each page among the processes that map it, so the sum over processes
is what they cost together; RSS counts shared pages once per process.

    python3 bench/memory/bench_memory.py [--runner build/nps-runner] [--workers 500] [--breakdown]

An installed host has the group `nps-runner` (the packages create it), which
the daemon looks up at start. Where it is missing, the lookup falls through
/etc/nsswitch.conf to libnss_systemd, mapped for good (~0.3 MB of PSS). So
that the figure is an installed host's, the daemon then runs in a mount
namespace of its own where /etc/group is a copy with the group added (the
host's file is not changed); --host-groups measures with the host's as is.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
from bench_daemon import ROOT, Daemon, import_demo_image, unmount_under  # noqa: E402

INBOX = "urn:nps:agent:bench.local:memory"
AGENT = "urn:nps:agent:bench.local:sleeper"


def rollup(pid):
    """{field: kB} of /proc/PID/smaps_rollup (Pss, Rss, Pss_Anon, …), {} if gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return {}
    out = {}
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and parts[0].endswith(":"):
            out[parts[0][:-1]] = int(parts[1])
    return out


def descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def by_mapping(pid, top):
    """The `top` largest [(Pss kB, mapping)] of /proc/PID/smaps: files by path, anonymous memory as one."""
    pss, name = {}, None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                fields = line.split()
                if "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
                    name = fields[5] if len(fields) > 5 else "[anonymous]"
                elif fields[0] == "Pss:":
                    pss[name] = pss.get(name, 0) + int(fields[1])
    except OSError:
        return []
    return sorted(((kb, n) for n, kb in pss.items()), reverse=True)[:top]


def exe(pid):
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def measure(daemon_pid):
    """(own processes, their Pss kB, Pss_Anon kB, Rss kB; workers' processes, Pss kB; daemon alone Pss, Rss)."""
    daemon_exe = exe(daemon_pid)
    own, workers = [], []
    for pid in descendants(daemon_pid):
        (own if exe(pid) == daemon_exe else workers).append(rollup(pid))
    total = lambda rows, key: sum(r.get(key, 0) for r in rows)
    alone = rollup(daemon_pid)
    return {
        "own": len(own), "own_pss": total(own, "Pss"), "own_anon": total(own, "Pss_Anon"),
        "own_rss": total(own, "Rss"), "workers": len(workers), "workers_pss": total(workers, "Pss"),
        "daemon_pss": alone.get("Pss", 0), "daemon_rss": alone.get("Rss", 0),
    }


def group_view_prefix(work):
    """A command prefix that shows the daemon an /etc/group with `nps-runner`
    in it, or () when the host has the group or another NSS source is used."""
    with open("/etc/group") as f:
        text = f.read()
    if any(line.split(":", 1)[0] == "nps-runner" for line in text.splitlines()):
        return ()
    taken = {int(line.split(":")[2]) for line in text.splitlines() if line.count(":") >= 3}
    gid = next(g for g in range(999, 100, -1) if g not in taken)
    view = os.path.join(work, "group")
    with open(view, "w") as f:
        f.write(text + ("" if text.endswith("\n") else "\n") + f"nps-runner:x:{gid}:\n")
    print(f"  the group nps-runner is absent here: the daemon sees /etc/group with it (gid {gid}), "
          "bind-mounted in a mount namespace of its own, as on an installed host")
    return ("unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind "$0" /etc/group && exec "$@"', view)


def show(label, m):
    mb = lambda kb: kb / 1024
    print(f"  {label}: daemon alone PSS {mb(m['daemon_pss']):.1f} MB (RSS {mb(m['daemon_rss']):.1f} MB); "
          f"daemon + {m['own'] - 1} own children PSS {mb(m['own_pss']):.1f} MB "
          f"(anonymous {mb(m['own_anon']):.1f} MB, RSS summed {mb(m['own_rss']):.1f} MB)"
          + (f"; {m['workers']} worker processes PSS {mb(m['workers_pss']):.1f} MB" if m["workers"] else ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", default=os.path.join(ROOT, "build", "nps-runner"))
    parser.add_argument("--load", default=os.path.join(ROOT, "build", "bench", "throughput", "deposit-load"))
    parser.add_argument("--workers", type=int, default=500)
    parser.add_argument("--sleep", type=int, default=60, help="seconds each worker sleeps")
    parser.add_argument("--no-spawn-server", dest="spawn_server", action="store_false",
                        help="[workers] spawn_server = false (workers cloned from the daemon itself)")
    parser.add_argument("--spawn-pool", type=int, help="[workers] spawn_pool for the daemon (default: the daemon's)")
    parser.add_argument("--breakdown", action="store_true", help="print the idle daemon's largest mappings")
    parser.add_argument("--host-groups", action="store_true",
                        help="do not add the group nps-runner where the host lacks it (see above)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench-memory: needs root (sandboxes, cgroups, overlay mounts)")
        return 77
    print(f"bench-memory: {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}, runner {args.runner}")
    with tempfile.TemporaryDirectory(prefix="nps-bench-memory-") as work:
        state = os.path.join(work, "state")
        os.makedirs(state)
        import_demo_image(args.runner, state, work)
        config = (f"[workers]\nmax_concurrent = {args.workers}\n" + ("" if args.spawn_server else "spawn_server = false\n")
                  + ("" if args.spawn_pool is None else f"spawn_pool = {args.spawn_pool}\n")
                  + "[runner]\nshutdown_grace_seconds = 0\n")
        try:
            prefix = () if args.host_groups else group_view_prefix(work)
            with Daemon(args.runner, state, inboxes=[INBOX], config=config, prefix=prefix) as d:
                d.announce(AGENT, ["sleep", str(args.sleep)])
                time.sleep(3)  # the pool parks its children
                show("idle", measure(d.process.pid))
                if args.breakdown:
                    print("  the idle daemon's largest mappings, PSS: " +
                          ", ".join(f"{os.path.basename(n)} {kb} kB" for kb, n in by_mapping(d.process.pid, 12)))
                out = subprocess.run([args.load, "http", d.url, d.token, INBOX, AGENT, "sleep", str(args.workers), "8"],
                                     capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit("deposit-load failed: " + out.stdout + out.stderr)
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    running = d.http("GET", "/v1/overview")["workers_running"]
                    if running >= args.workers:
                        break
                    time.sleep(0.5)
                time.sleep(2)
                print(f"  {running} workers running")
                show(f"{running} sleeping workers", measure(d.process.pid))
        finally:
            unmount_under(work)
    print("  target: daemon + own children PSS ≤ 12 MB (the .NET reference runner: 60–100 MB, not runnable here)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
