#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/dag: submit → COMPLETED latency of a 3-node linear DAG with trivial
sandboxed workers (DESIGN.md §5: median ≤ 10 ms and ≥ 2.5x faster than three
cold `crun run`; it was ≤ 25 ms before issue 20), through the real daemon.

nps-runner: a `serve` on a scratch state directory (SQLite synchronous=FULL,
the default), the demo worker image, three agents (emit → double → report).
Each task is deposited over HTTP and its event feed followed until its end
(client figure; --wait poll instead polls GET /v1/tasks/{id} every 0.5 ms, as
the figures before 7 Dec did: ~2,000 requests a second the daemon serves
beside the task); the server figure is inbox:deposited → task:completed from
the event log.

Peer, in the same run: the same three workers as three cold `crun run`
containers of the same image, one after the other, each fed its DelegateFrame
on stdin — what a runner that starts a container per node pays, without any
store or scheduling.

    python3 bench/dag/bench_dag.py [--runner build/nps-runner] [--tasks 40] [--spawn-pool N] [--gap-ms MS]
                                   [--no-spawn-server] [--no-hold-ahead] [--wait events|poll]

--spawn-pool N writes `[workers] spawn_pool = N` to the daemon's config (0: every
worker spawned directly, as before the pool; unset: the daemon's default). The
run prints how the workers were started (nps_worker_spawns_total of /metrics).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
from bench_daemon import ROOT, Daemon, import_demo_image, unmount_under  # noqa: E402
from crun_peer import run_peer_script, unpack_bundle, worker_config  # noqa: E402

INBOX = "urn:nps:agent:bench.local:pipeline"
AGENTS = {
    "fetch": ["emit", '{"value":2}'],
    "double": ["double"],
    "report": ["report"],
}


def frame(task_id):
    return {
        "task_id": task_id,
        "dag": {
            "nodes": [
                {"id": "fetch", "action": "nwp://bench.local/fetch", "agent": "urn:nps:agent:bench.local:fetch"},
                {"id": "double", "action": "nwp://bench.local/double", "agent": "urn:nps:agent:bench.local:double",
                 "input_from": ["fetch"], "input_mapping": {"value": "$.fetch.value"}},
                {"id": "report", "action": "nwp://bench.local/report", "agent": "urn:nps:agent:bench.local:report",
                 "input_from": ["double"], "input_mapping": {"answer": "$.double.value"}},
            ],
            "edges": [{"from": "fetch", "to": "double"}, {"from": "double", "to": "report"}],
        },
    }


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def rfc3339_ms(text):
    # 2026-11-29T14:25:28.209Z
    t = time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")
    return (time.mktime(t) - time.timezone) * 1000 + int(text[20:23])


def spawn_counts(url):
    """{path: (workers, mean spawn ms)} from /metrics, and the mean worker start (dispatch → exec) in ms."""
    req = urllib.request.Request(f"{url}/metrics")
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read().decode()
    counts = {m.group(1): int(m.group(2))
              for m in re.finditer(r'^nps_worker_spawns_total\{path="(\w+)"\} (\d+)$', text, re.M)}
    secs = {m.group(1): float(m.group(2))
            for m in re.finditer(r'^nps_worker_spawn_seconds_total\{path="(\w+)"\} ([0-9.]+)$', text, re.M)}
    spawns = {k: (n, secs.get(k, 0) * 1000 / n if n else 0) for k, n in counts.items()}
    start_sum = re.search(r'^nps_worker_start_seconds_sum ([0-9.e+-]+)$', text, re.M)
    start_count = re.search(r'^nps_worker_start_seconds_count (\d+)$', text, re.M)
    start = (float(start_sum.group(1)) * 1000 / int(start_count.group(1))
             if start_sum and start_count and int(start_count.group(1)) else None)
    return spawns, start


BREAKDOWN = ["claim"] + [f"{n}:{k}" for n in ("fetch", "double", "report") for k in ("gap", "run", "rec")] + ["end"]


def task_breakdown(task):
    """Where a task's server time went, ms, from its event log (ms stamps): deposit → lease
    (claim); per node, the previous step → its worker's start (gap: dispatch, rootfs, spawn),
    the worker's run up to its reaping and clean-up (run, the worker event's duration_ms), and
    → its completion record (rec); the last node → task:completed (end)."""
    ev = {e["event"]: e for e in task["events"]}
    at = lambda name: rfc3339_ms(ev[name]["at"])
    prev = at("lease:granted")
    row = [prev - at("inbox:deposited")]
    for node in ("fetch", "double", "report"):
        end = at(node + ":worker")
        run = ev[node + ":worker"]["detail"]["duration_ms"]
        row += [end - run - prev, run, at(node + ":completed") - end]
        prev = at(node + ":completed")
    return row + [at("task:completed") - prev]


def bench_nps(runner, work, state, tasks, spawn_pool=None, gap_ms=0, spawn_server=True, hold_ahead=True, wait="events"):
    import_demo_image(runner, state, work)
    config = "" if spawn_pool is None else f"spawn_pool = {spawn_pool}\n"
    if not spawn_server:
        config += "spawn_server = false\n"
    if not hold_ahead:
        config += "hold_ahead = false\n"
    config = "[workers]\n" + config if config else ""
    with Daemon(runner, state, inboxes=[INBOX], config=config) as d:
        for node, command in AGENTS.items():
            d.announce("urn:nps:agent:bench.local:" + node, command)
        client, server, breakdown = [], [], []
        for i in range(tasks + 3):
            task_id = f"bench-{i}"
            if gap_ms:
                time.sleep(gap_ms / 1000)  # sparse arrivals: the daemon is idle in between
            t0 = time.perf_counter()
            d.http("POST", f"/v1/inbox/{INBOX}", frame(task_id))
            if wait == "events":
                d.wait_end(task_id)
                t1 = time.perf_counter()
                task = d.http("GET", f"/v1/tasks/{task_id}")
            else:
                while True:
                    task = d.http("GET", f"/v1/tasks/{task_id}")
                    if task["state"] in ("COMPLETED", "FAILED", "CANCELLED"):
                        break
                    time.sleep(0.0005)
                t1 = time.perf_counter()
            if task["state"] != "COMPLETED" or task["aggregate"] != {"answer": 4}:
                sys.exit(f"task {task_id} ended {task['state']}: {json.dumps(task)[:2000]}")
            if i < 3:
                continue  # warm-up: first layer unpack, page cache
            events = {e["event"]: e["at"] for e in task["events"]}
            client.append((t1 - t0) * 1000)
            server.append(rfc3339_ms(events["task:completed"]) - rfc3339_ms(events["inbox:deposited"]))
            breakdown.append(task_breakdown(task))
        return client, server, spawn_counts(d.url), breakdown


def bench_crun(image_dir, work, tasks):
    if not shutil.which("crun"):
        return None
    base = unpack_bundle(image_dir, os.path.join(work, "bundle"))
    configs = {node: worker_config(base, node, command) for node, command in AGENTS.items()}
    with open(os.path.join(work, "configs.json"), "w") as f:
        json.dump(configs, f)
    return run_peer_script(__file__, "--crun-peer", work, tasks)


def crun_peer(work, tasks):
    crun = shutil.which("crun")
    bundle = os.path.join(work, "bundle")
    config_path = os.path.join(bundle, "config.json")
    with open(os.path.join(work, "configs.json")) as f:
        configs = json.load(f)
    params = {"fetch": {}, "double": {"value": 2}, "report": {"answer": 4}}
    times = []
    for i in range(tasks + 3):
        t0 = time.perf_counter()
        for node in ("fetch", "double", "report"):
            with open(config_path, "w") as f:
                json.dump(configs[node], f)
            line = json.dumps({"node_id": node, "params": params[node]}) + "\n"
            out = subprocess.run([crun, "run", "--bundle", bundle, f"bench-{os.getpid()}-{i}-{node}"],
                                 input=line.encode(), capture_output=True, check=True)
            if b'"is_final":true' not in out.stdout:
                sys.exit(f"crun worker {node}: {out.stdout!r} {out.stderr!r}")
        if i >= 3:
            times.append((time.perf_counter() - t0) * 1000)
    print(json.dumps(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", default=os.path.join(ROOT, "build", "nps-runner"))
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--spawn-pool", type=int, help="[workers] spawn_pool for the daemon (0: no pool)")
    parser.add_argument("--no-spawn-server", dest="spawn_server", action="store_false",
                        help="[workers] spawn_server = false: workers cloned from the daemon itself")
    parser.add_argument("--no-hold-ahead", dest="hold_ahead", action="store_false",
                        help="[workers] hold_ahead = false: a node's worker is spawned only at its dispatch")
    parser.add_argument("--gap-ms", type=int, default=0,
                        help="idle time before each task (sparse arrivals; default 0: one after another)")
    parser.add_argument("--wait", choices=("events", "poll"), default="events",
                        help="how the client waits for a task's end: its event feed (default) or polling")
    parser.add_argument("--crun-peer", nargs=2, metavar=("WORK", "TASKS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.crun_peer:
        crun_peer(args.crun_peer[0], int(args.crun_peer[1]))
        return 0
    if os.geteuid() != 0:
        print("bench-dag: needs root (sandboxes, cgroups, overlay mounts)")
        return 77
    with tempfile.TemporaryDirectory(prefix="nps-bench-dag-") as work:
        state = os.path.join(work, "state")
        os.makedirs(state)
        client, server, spawns, breakdown = bench_nps(args.runner, work, state, args.tasks, args.spawn_pool,
                                                     args.gap_ms, args.spawn_server, args.hold_ahead, args.wait)
        crun = bench_crun(os.path.join(work, "oci"), work, max(10, args.tasks // 4))
        unmount_under(work)
    arrival = f"{args.gap_ms} ms apart" if args.gap_ms else "one after another"
    print(f"3-node linear DAG, trivial workers, {args.tasks} tasks {arrival}, client waits by {args.wait} "
          f"(load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cpus)")
    pool = "default" if args.spawn_pool is None else str(args.spawn_pool)
    counts, start = spawns
    print(f"  spawn_pool {pool}, spawn_server {'on' if args.spawn_server else 'off'}, "
          f"hold_ahead {'on' if args.hold_ahead else 'off'}; workers started (warm-up included), mean spawn (on the spawn threads): "
          + (", ".join(f"{k} {n} ({ms:.2f} ms)" for k, (n, ms) in sorted(counts.items()))
             or "no nps_worker_spawns_total metric")
          + ("" if start is None else f"; mean worker start (dispatch → exec) {start:.1f} ms"))
    print(f"  nps-runner submit → COMPLETED (client): median {statistics.median(client):6.1f} ms  "
          f"p90 {pct(client, 90):6.1f} ms  min {min(client):6.1f} ms")
    print(f"  nps-runner deposit → task:completed (server): median {statistics.median(server):6.1f} ms  "
          f"p90 {pct(server, 90):6.1f} ms")
    print("  server breakdown, medians (ms): " +
          " ".join(f"{c}={statistics.median(r[i] for r in breakdown):.0f}" for i, c in enumerate(BREAKDOWN)))
    if crun:
        print(f"  peer: 3 cold `crun run` of the same workers: median {statistics.median(crun):6.1f} ms  "
              f"p90 {pct(crun, 90):6.1f} ms")
        print(f"  ratio crun / nps-runner (medians): {statistics.median(crun) / statistics.median(client):.2f}x")
    else:
        print("  peer: crun not installed (apt install crun)")
    median = statistics.median(client)
    fast_enough = median <= 10 and (not crun or statistics.median(crun) / median >= 2.5)
    print("  target (DESIGN.md §5): median ≤ 10 ms and ≥ 2.5x faster than crun ×3 — " +
          ("MET" if fast_enough else "MISSED") + ("" if crun else " (no crun: its ratio not checked)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
