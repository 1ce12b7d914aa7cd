#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/throughput: one-node tasks through the real daemon from concurrent
HTTP clients (issue 20: deposits ≥ 5,000/s durable, end to end ≥ 400 tasks/s).

Phase "deposit" (a daemon that claims nothing; the deposits stay queued):
  - one client, one deposit at a time: the latency of a lone deposit (group
    commit must not add to it);
  - CLIENTS concurrent clients (default 16), each with its own inbox,
    DEPOSITS deposits: the rate, with
    every 201 committed (synchronous=FULL, the default) and the mean number of
    deposits per commit (nps_inbox_deposit_commits_total);
  - peer, same run: the same deposits through Store::deposit in one thread,
    a transaction (and fsync) each — the store without HTTP or group commit.
Phase "e2e" (a daemon claiming the inbox, the demo worker as a sandboxed
one-node task with the hardened defaults): TASKS tasks deposited by
TASK_CLIENTS clients; the rate at which they are all COMPLETED.
  - peer, same run: the same worker as sequential cold `crun run` containers.

The load comes from deposit-load (bench/throughput/deposit_load.cpp, libcurl).

    python3 bench/throughput/bench_throughput.py [--runner build/nps-runner]
        [--phase deposit|e2e|both] [--deposits 20000] [--clients 16] [--tasks 2000] [--task-clients 8]
        [--store-url postgresql://…]

--store-url runs the e2e phase on that store (docs/scale-out.md) instead of the
state directory's runner.db: give each run a database of its own (the bench's
task ids repeat), e.g. CREATE DATABASE on a scripts/pg-scratch server.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
from bench_daemon import ROOT, Daemon, import_demo_image, unmount_under  # noqa: E402
from crun_peer import run_peer_script, unpack_bundle, worker_config  # noqa: E402

# The deposit phase's inboxes, one per client (each stays below the default
# [inbox] max_depth of 10,000).
def parked(clients):
    return ",".join(f"urn:nps:agent:bench.local:parked-{c}" for c in range(clients))

INBOX = "urn:nps:agent:bench.local:throughput"
AGENT = "urn:nps:agent:bench.local:fetch"
WORKER = ["emit", '{"value":2}']


def load(tool, *args):
    out = subprocess.run([tool, *map(str, args)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"deposit-load {args[0]} failed: {out.stdout}{out.stderr}")
    return json.loads(out.stdout)


def metric(text, name):
    m = re.search(rf"^{name} ([0-9.e+-]+)$", text, re.M)
    return float(m.group(1)) if m else None


def deposit_phase(args, work):
    state = os.path.join(work, "deposit-state")
    os.makedirs(state)
    with Daemon(args.runner, state, inboxes=[]) as d:
        load(args.load, "http", d.url, d.token, parked(args.clients), AGENT, "warm", 200, args.clients)
        lone = load(args.load, "http", d.url, d.token, parked(args.clients), AGENT, "lone", 500, 1)
        before = d.metrics()
        many = load(args.load, "http", d.url, d.token, parked(args.clients), AGENT, "many", args.deposits, args.clients)
        after = d.metrics()
    commits = None
    c0, c1 = metric(before, "nps_inbox_deposit_commits_total"), metric(after, "nps_inbox_deposit_commits_total")
    if c0 is not None and c1 is not None and c1 > c0:
        commits = c1 - c0
    peer_tasks = min(args.deposits, 5000)
    peer = load(args.load, "store", os.path.join(work, "peer.db"), peer_tasks)
    return lone, many, commits, peer, peer_tasks


def overview_counts(d):
    return d.http("GET", "/v1/overview")["tasks"]


def e2e_phase(args, work):
    state = os.path.join(work, "e2e-state")
    os.makedirs(state)
    image = import_demo_image(args.runner, state, work)
    config = "" if args.spawn_server else "[workers]\nspawn_server = false\n"
    if args.store_url:
        config += f"[store]\nurl = {json.dumps(args.store_url)}\n"
    with Daemon(args.runner, state, inboxes=[INBOX], config=config) as d:
        d.announce(AGENT, WORKER)
        load(args.load, "http", d.url, d.token, INBOX, AGENT, "warm", 20, 4)
        while sum(overview_counts(d)[s] for s in ("COMPLETED", "FAILED", "CANCELLED")) < 20:
            time.sleep(0.05)
        t0 = time.perf_counter()
        deposits = load(args.load, "http", d.url, d.token, INBOX, AGENT, "task", args.tasks, args.task_clients)
        while True:
            counts = overview_counts(d)
            ended = sum(counts[s] for s in ("COMPLETED", "FAILED", "CANCELLED"))
            if ended >= args.tasks + 20:
                break
            if time.perf_counter() - t0 > 600:
                sys.exit(f"e2e: not all tasks ended within 600 s: {counts}")
            time.sleep(0.02)
        seconds = time.perf_counter() - t0
        spawns = re.findall(r'^nps_worker_spawns_total\{path="(\w+)"\} (\d+)$', d.metrics(), re.M)
    if counts["FAILED"] or counts["CANCELLED"]:
        sys.exit(f"e2e: tasks did not complete: {counts} (see {state}/serve.log)")
    peer = crun_peer_rate(image, work, args.crun_tasks)
    return deposits, seconds, spawns, peer


def crun_peer_rate(image, work, tasks):
    if not shutil.which("crun"):
        return None
    bundle = os.path.join(work, "bundle")
    config = worker_config(unpack_bundle(image, bundle), "fetch", WORKER)
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(config, f)
    return run_peer_script(__file__, "--crun-peer", bundle, tasks)


def crun_peer(bundle, tasks):
    crun = shutil.which("crun")
    line = json.dumps({"node_id": "fetch", "params": {}}) + "\n"
    t0 = time.perf_counter()
    for i in range(tasks):
        out = subprocess.run([crun, "run", "--bundle", bundle, f"bench-{os.getpid()}-{i}"],
                             input=line.encode(), capture_output=True, check=True)
        if b'"is_final":true' not in out.stdout:
            sys.exit(f"crun worker: {out.stdout!r} {out.stderr!r}")
    print(json.dumps({"tasks": tasks, "per_second": tasks / (time.perf_counter() - t0)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", default=os.path.join(ROOT, "build", "nps-runner"))
    parser.add_argument("--load", default=os.path.join(ROOT, "build", "bench", "throughput", "deposit-load"))
    parser.add_argument("--phase", choices=["deposit", "e2e", "both"], default="both")
    parser.add_argument("--deposits", type=int, default=20000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--task-clients", type=int, default=8)
    parser.add_argument("--crun-tasks", type=int, default=60)
    parser.add_argument("--no-spawn-server", dest="spawn_server", action="store_false",
                        help="e2e: [workers] spawn_server = false (workers cloned from the daemon itself)")
    parser.add_argument("--store-url", metavar="URL",
                        help="e2e: the daemon's [store] url, e.g. a postgresql:// database of its own on "
                             "a scratch server (scripts/pg-scratch); the bench's task ids repeat from run to run")
    parser.add_argument("--crun-peer", nargs=2, metavar=("BUNDLE", "TASKS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.crun_peer:
        crun_peer(args.crun_peer[0], int(args.crun_peer[1]))
        return 0
    if os.geteuid() != 0:
        print("bench-throughput: needs root (sandboxes, cgroups, overlay mounts)")
        return 77
    for tool in (args.runner, args.load):
        if not os.access(tool, os.X_OK):
            sys.exit(f"bench-throughput: {tool} is not built (ninja -C build nps-runner bench/throughput/deposit-load)")
    print(f"bench-throughput: {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f} at the start")
    with tempfile.TemporaryDirectory(prefix="nps-bench-throughput-") as work:
        try:
            if args.phase in ("deposit", "both"):
                lone, many, commits, peer, peer_tasks = deposit_phase(args, work)
                lat = many["latency_ms"]
                print("deposits (synchronous=FULL, every 201 committed):")
                print(f"  1 client, 500 deposits: latency p50 {lone['latency_ms']['p50']:.2f} ms  "
                      f"p99 {lone['latency_ms']['p99']:.2f} ms  ({lone['per_second']:.0f}/s)")
                print(f"  {args.clients} clients, {args.deposits} deposits: {many['per_second']:.0f}/s  "
                      f"latency p50 {lat['p50']:.2f} ms  p99 {lat['p99']:.2f} ms  statuses {many['statuses']}"
                      + (f"  {args.deposits / commits:.1f} deposits per commit" if commits else ""))
                if "first_error" in many:
                    print(f"  first error: {many['first_error']}")
                print(f"  peer: Store::deposit in one thread, a commit each, {peer_tasks} deposits: "
                      f"{peer['per_second']:.0f}/s  latency p50 {peer['latency_ms']['p50']:.2f} ms")
                print(f"  ratio HTTP ÷ store peer: {many['per_second'] / peer['per_second']:.2f}x   "
                      f"target ≥ 5,000/s: {'MET' if many['per_second'] >= 5000 else 'MISSED'}")
            if args.phase in ("e2e", "both"):
                deposits, seconds, spawns, peer = e2e_phase(args, work)
                rate = args.tasks / seconds
                print(f"one-node tasks of the demo worker, sandboxed (hardened defaults), {args.tasks} tasks "
                      f"from {args.task_clients} clients:")
                print(f"  deposited at {deposits['per_second']:.0f}/s; all COMPLETED after {seconds:.2f} s: "
                      f"{rate:.0f} tasks/s   (workers started: "
                      + ", ".join(f"{k} {n}" for k, n in spawns) + ")")
                if peer:
                    print(f"  peer: {peer['tasks']} sequential cold `crun run` of the same worker: "
                          f"{peer['per_second']:.1f} tasks/s   ratio {rate / peer['per_second']:.1f}x")
                else:
                    print("  peer: crun not installed (apt install crun)")
                print(f"  target ≥ 400 tasks/s: {'MET' if rate >= 400 else 'MISSED'}")
        finally:
            unmount_under(work)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
