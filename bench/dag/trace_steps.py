#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/dag/trace_steps: where one 3-node task's time goes, in microseconds.

The event log stamps whole milliseconds; this traces bench_dag's workload with
`perf record` instead: the kernel's sched_process_exec / sched_process_exit of
each worker, and uprobes on four functions of the runner binary (so it needs a
binary with its symbols, as meson's release build keeps them):

    deposit   nps::api::Api::deposit                  the HTTP deposit reaches the loop
    on_exit   nps::supervisor::Supervisor::on_exit    the loop hears of a worker's exit
    finish    nps::supervisor::Supervisor::finish     the worker's outcome is delivered
    release   nps::supervisor::Supervisor::release_held  the next worker's held process is let go

and prints the medians (and means) of: deposit → first worker's exec, each
worker's run, the gaps between one worker's exit and the next one's exec, and
inside those gaps exit → on_exit → finish → release → exec.

    python3 bench/dag/trace_steps.py --runner build-release/nps-runner [--tasks 60] [--pause-ms 0]

--pause-ms waits that long between tasks (0: one after the other, as
bench_dag does; the previous task's clean-up and the warm workers' preparation
then share the CPUs with the next task's start). Probes are removed at the end.
Needs root and perf with uprobe support; exits 77 without them.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
sys.path.insert(0, HERE)
from bench_daemon import ROOT, Daemon, import_demo_image, unmount_under  # noqa: E402
import bench_dag  # noqa: E402

PROBES = {
    "deposit": "_ZN3nps3api3Api7depositE",
    "on_exit": "_ZN3nps10supervisor10Supervisor7on_exitERNS1_6WorkerE",
    "finish": "_ZN3nps10supervisor10Supervisor6finishEmNS0_13WorkerOutcomeE",
    "release": "_ZN3nps10supervisor10Supervisor12release_heldEm",
}
GROUP = "nps_steps"


def add_probes(runner):
    symbols = subprocess.run(["nm", runner], capture_output=True, text=True, check=True).stdout.split("\n")
    for name, prefix in PROBES.items():
        address = next((line.split()[0] for line in symbols
                        if len(line.split()) == 3 and line.split()[2].startswith(prefix)), None)
        if address is None:
            sys.exit(f"{runner} has no symbol {prefix}… (a stripped binary?)")
        subprocess.run(["perf", "probe", "-q", "-x", runner, "-a", f"{GROUP}:{name}=0x{address}"], check=True)


def remove_probes():
    subprocess.run(["perf", "probe", "-q", "-d", f"{GROUP}:*"], stderr=subprocess.DEVNULL)


def steps(data):
    """Per task (from one deposit to the next), the times of interest."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,time,event"],
                         capture_output=True, text=True, check=True).stdout
    tasks, current = [], None
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        comm, stamp, event = parts[0], float(parts[1].rstrip(":")) * 1e3, parts[2].rstrip(":").split(":")[-1]
        if event == "deposit":
            current = []
            tasks.append(current)
        elif current is None or (event.startswith("sched_process") and comm != "worker"):
            continue
        current.append((stamp, event))
    figures = {k: [] for k in ("deposit → exec 1", "run", "  run 1", "  run 2", "  run 3", "gap (exit → next exec)",
                                "  exit → on_exit", "  on_exit → finish", "  finish → release", "  release → exec",
                                "exit 3 → next deposit", "deposit → next deposit")}
    for number, task in enumerate(tasks):
        execs = [t for t, e in task if e == "sched_process_exec"]
        exits = [t for t, e in task if e == "sched_process_exit"]
        if len(execs) != 3 or len(exits) != 3:
            continue
        figures["deposit → exec 1"].append(execs[0] - task[0][0])
        for i in range(3):
            figures["run"].append(exits[i] - execs[i])
            figures[f"  run {i + 1}"].append(exits[i] - execs[i])
        if number + 1 < len(tasks) and tasks[number + 1]:
            # The client's part (it learns of the end, submits again) and the pause.
            figures["exit 3 → next deposit"].append(tasks[number + 1][0][0] - exits[2])
            figures["deposit → next deposit"].append(tasks[number + 1][0][0] - task[0][0])
        for i in range(2):
            figures["gap (exit → next exec)"].append(execs[i + 1] - exits[i])
            window = [(t, e) for t, e in task if exits[i] <= t <= execs[i + 1]]
            first = {}
            for t, e in window:
                first.setdefault(e, t)
            chain = [exits[i], first.get("on_exit"), first.get("finish"), first.get("release"), execs[i + 1]]
            if None in chain:
                continue
            for key, a, b in zip(("  exit → on_exit", "  on_exit → finish", "  finish → release", "  release → exec"),
                                 chain, chain[1:]):
                figures[key].append(b - a)
    return len([t for t in tasks if t]), figures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", default=os.path.join(ROOT, "build-release", "nps-runner"))
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--pause-ms", type=int, default=0)
    args = parser.parse_args()
    if os.geteuid() != 0 or not shutil.which("perf"):
        print("trace_steps: needs root and perf", file=sys.stderr)
        sys.exit(77)
    runner = os.path.abspath(args.runner)
    remove_probes()
    add_probes(runner)
    work = tempfile.mkdtemp(prefix="nps-trace-steps-")
    data = os.path.join(work, "perf.data")
    try:
        state = os.path.join(work, "state")
        os.makedirs(state)
        import_demo_image(runner, state, work)
        with Daemon(runner, state, inboxes=[bench_dag.INBOX]) as daemon:
            for node, command in bench_dag.AGENTS.items():
                daemon.announce("urn:nps:agent:bench.local:" + node, command)

            def one(i):
                task_id = f"trace-{i}"
                daemon.http("POST", f"/v1/inbox/{bench_dag.INBOX}", bench_dag.frame(task_id))
                daemon.wait_end(task_id)
                time.sleep(args.pause_ms / 1000)

            for i in range(8):  # warm-up: the warm workers, the page cache
                one(i)
            perf = subprocess.Popen(["perf", "record", "-a", "-q", "-o", data, "-e", "sched:sched_process_exec",
                                     "-e", "sched:sched_process_exit", "-e", f"{GROUP}:*"], stderr=subprocess.DEVNULL)
            time.sleep(1.5)
            for i in range(8, 8 + args.tasks):
                one(i)
            time.sleep(0.3)
            perf.send_signal(2)
            perf.wait()
        traced, figures = steps(data)
        print(f"{runner}: {traced} tasks traced, pause {args.pause_ms} ms, load average {os.getloadavg()[0]:.2f}")
        for key, values in figures.items():
            if values:
                print(f"  {key:<26} median {statistics.median(values):6.3f} ms  mean {statistics.mean(values):6.3f}"
                      f"  (n={len(values)})")
    finally:
        remove_probes()
        unmount_under(work)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
