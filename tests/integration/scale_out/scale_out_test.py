#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Several hosts on one PostgreSQL task store (docs/scale-out.md), simulated
by two `serve` processes with state directories of their own (each its own
image store, workers and runner.db) and one schema of the test server:

 1. DAGs deposited through both hosts' APIs run on both hosts: every task
    COMPLETED once (one lease:granted, one task:completed), its three nodes
    COMPLETED, and each host ran some of them.
 2. An agent announced through one host resolves on the other (the NDP
    registry is shared).
 3. A deposit through host A into an inbox only host B claims wakes B at
    once (LISTEN/NOTIFY), not at its next poll (claim_interval_ms is 5 s):
    the delay from inbox:deposited to lease:granted is measured and printed
    (never asserted: machines are noisy), and must be below the poll
    interval for at least one of the tries.
 4. kill -9 of the host running a DAG after its first node finished: the
    other reclaims the task once the lease ran out, skips the finished node
    (its record keeps the first host's runner_nid, attempts 1) and
    completes.
 5. The killed host, started again on its state directory, removes what
    its predecessor left mounted (its workers' rootfs overlays and
    writable spaces) before it says ready.

A PostgreSQL-only test: through tests/support/on_postgres.sh (skips, 77,
without the test server). Needs root, umoci and busybox-static for the demo
worker image (else 77, saying so)."""

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
import pg_scratch  # noqa: E402
from checks import Checks, check_equal  # noqa: E402
import runner_api  # noqa: E402
from runner_api import Api, enc, parse_time  # noqa: E402
from serve_daemon import start_serve  # noqa: E402
from test_entry import runner_test_args  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
IMAGE = "nps-demo-worker:1"
SHARED = "urn:nps:agent:scale.test:shared"
ONLY_A = "urn:nps:agent:scale.test:only-a"
ONLY_B = "urn:nps:agent:scale.test:only-b"
RUNNER_A = "urn:nps:node:host-a.scale.test:nps-runner"
RUNNER_B = "urn:nps:node:host-b.scale.test:nps-runner"


def spawnspec(*command):
    return runner_api.spawnspec(IMAGE, command, idle_timeout_seconds=30, max_runtime_seconds=60)


def dag(task_id, middle=("double",)):
    return {"task_id": task_id, "dag": {"nodes": [
        {"id": "fetch", "action": "nwp://scale.test/fetch/invoke", "agent": "urn:nps:agent:scale.test:fetch"},
        {"id": "middle", "action": "nwp://scale.test/middle/invoke",
         "agent": "urn:nps:agent:scale.test:" + middle[0], "input_from": ["fetch"],
         "input_mapping": {"value": "$.fetch.value"}},
        {"id": "report", "action": "nwp://scale.test/report/invoke", "agent": "urn:nps:agent:scale.test:report",
         "input_from": ["middle"],
         # the slow worker answers {}: nothing to map from it
         **({"input_mapping": {"answer": "$.middle.value"}} if middle[0] != "slow" else {})}],
        "edges": [{"from": "fetch", "to": "middle"}, {"from": "middle", "to": "report"}]}}


def mounts_under(path):
    """Mount points at or below `path`, deepest first (/proc/self/mountinfo)."""
    prefix = os.path.realpath(path) + "/"
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True)


def unavailable_reason():
    if not pg_scratch.on_postgres():
        return "a PostgreSQL pass only (run through tests/support/on_postgres.sh with NPS_TEST_PG_URL)"
    if os.geteuid() != 0:
        return "needs root (sandboxed workers)"
    for tool in ("umoci", "busybox", "psql"):
        if shutil.which(tool) is None:
            return f"needs {tool} (scripts/install-deps)"
    return ""


def main():
    args = runner_test_args(unavailable_reason)
    checks = Checks()
    work = Path(tempfile.mkdtemp(prefix="nps-scale-out-"))
    daemons = {}
    try:
        store_url = pg_scratch.scratch_store_url()
        subprocess.run([str(ROOT / "demo/make-image"), str(work / "image")], check=True, capture_output=True)
        apis = {}
        for host, runner, own in (("a", RUNNER_A, ONLY_A), ("b", RUNNER_B, ONLY_B)):
            state = work / host
            state.mkdir()
            (state / "config.toml").write_text(
                f'[runner]\ninboxes = ["{SHARED}", "{own}"]\nlease_seconds = 10\nclaim_interval_ms = 5000\n'
                'shutdown_grace_seconds = 2\n')
            subprocess.run([args.runner, "image", "import", str(work / "image/oci"), "--name", IMAGE,
                            "--state-dir", str(state), "--config", str(state / "config.toml")],
                           check=True, capture_output=True)
            proc, base, token = start_serve(args.runner, str(state),
                                            ("--store", store_url, "--runner-nid", runner))
            daemons[host] = proc
            apis[host] = Api(base, token)
        a, b = apis["a"], apis["b"]

        # 2. One registry: agents announced through A, resolved through B.
        for agent, command in (("fetch", ("emit", '{"value":2}')), ("double", ("double",)),
                               ("slow", ("sleep", "6")), ("report", ("report",))):
            status, _ = a.call("PUT", "/v1/ndp/announces/" + enc("urn:nps:agent:scale.test:" + agent),
                               {"nid": "urn:nps:agent:scale.test:" + agent, "activation_mode": "ephemeral",
                                "spawn_spec_ref": spawnspec(*command), "ttl": 3600})
            check_equal(checks, status, 200, f"announce {agent} through host A")
        status, body = b.call("GET", "/v1/ndp/resolve?nid=" + enc("urn:nps:agent:scale.test:report"))
        check_equal(checks, status, 200, "host B resolves an agent announced through host A")

        # 1. DAGs through both APIs, run on both hosts.
        task_ids = [f"dag-{i}" for i in range(12)]
        for i, task_id in enumerate(task_ids):
            status, _ = (a if i % 2 == 0 else b).call("POST", f"/v1/inbox/{enc(SHARED)}", dag(task_id))
            check_equal(checks, status, 201, f"deposit {task_id}")
        ran_on = {}
        for task_id in task_ids:
            task = a.wait_state(task_id, ("COMPLETED", "FAILED", "CANCELLED"), 120)
            check_equal(checks, task and task["state"], "COMPLETED", f"{task_id} completed")
            if not task:
                continue
            names = [e["event"] for e in task["events"]]
            check_equal(checks, names.count("lease:granted"), 1, f"{task_id}: claimed once")
            check_equal(checks, names.count("task:completed"), 1, f"{task_id}: completed once")
            check_equal(checks, sorted(n["state"] for n in task["nodes"].values()), ["COMPLETED"] * 3,
                         f"{task_id}: three nodes completed")
            granted = [e for e in task["events"] if e["event"] == "lease:granted"]
            if granted:
                ran_on[task_id] = granted[0]["detail"]["runner_nid"]
        hosts = set(ran_on.values())
        print(f"tasks per host: A {list(ran_on.values()).count(RUNNER_A)}, B {list(ran_on.values()).count(RUNNER_B)}")
        check_equal(checks, hosts, {RUNNER_A, RUNNER_B}, "both hosts ran DAGs")

        # 3. A deposit through A wakes B's claim across hosts.
        delays = []
        for i in range(5):
            task_id = f"wake-{i}"
            status, _ = a.call("POST", f"/v1/inbox/{enc(ONLY_B)}", dag(task_id))
            check_equal(checks, status, 201, f"deposit {task_id} through A for B")
            task = b.wait_state(task_id, ("COMPLETED", "FAILED"), 60)
            if not task:
                checks(False, f"{task_id} found")
                continue
            events = {e["event"]: e for e in task["events"]}
            check_equal(checks, events.get("lease:granted", {}).get("detail", {}).get("runner_nid"), RUNNER_B,
                         f"{task_id} claimed by host B")
            if "lease:granted" in events:
                delays.append(1000 * (parse_time(events["lease:granted"]["at"]) -
                                      parse_time(events["inbox:deposited"]["at"])))
            time.sleep(0.2)
        if delays:
            print("cross-host wake-up, deposit on A to claim on B (ms): " +
                  ", ".join(f"{d:.0f}" for d in delays) + f"; median {statistics.median(delays):.0f} "
                  "(claim poll: 5000)")
            checks(min(delays) < 2500, "a deposit through host A woke host B before its poll")

        # 4. kill -9 of the host running a DAG: the other reclaims and completes.
        status, _ = b.call("POST", f"/v1/inbox/{enc(SHARED)}", dag("crash-1", middle=("slow",)))
        check_equal(checks, status, 201, "deposit crash-1")
        deadline = time.monotonic() + 60
        first = None
        while time.monotonic() < deadline:
            task = a.task("crash-1")
            if task and task["nodes"].get("fetch", {}).get("state") == "COMPLETED" and \
                    task["nodes"].get("middle", {}).get("state") == "RUNNING":
                first = task
                break
            time.sleep(0.05)
        checks(first is not None, "crash-1: its slow node started")
        if first:
            holder = [e for e in first["events"] if e["event"] == "lease:granted"][0]["detail"]["runner_nid"]
            victim = "a" if holder == RUNNER_A else "b"
            survivor = apis["b" if victim == "a" else "a"]
            daemons[victim].send_signal(signal.SIGKILL)
            daemons[victim].wait()
            task = survivor.wait_state("crash-1", ("COMPLETED", "FAILED"), 90)
            check_equal(checks, task and task["state"], "COMPLETED", "crash-1 completed by the other host")
            if task:
                names = [e["event"] for e in task["events"]]
                check_equal(checks, names.count("lease:reclaimed"), 1, "crash-1 reclaimed once")
                reclaimed = [e for e in task["events"] if e["event"] == "lease:reclaimed"]
                checks(reclaimed and reclaimed[0]["detail"]["runner_nid"] != holder,
                            "crash-1 reclaimed by the other host")
                check_equal(checks, task["nodes"]["fetch"]["runner_nid"], holder,
                             "crash-1: the finished node was not run again")
                check_equal(checks, task["nodes"]["fetch"]["attempts"], 1, "crash-1: fetch ran once")

            # 5. The killed host, restarted, unmounts what its predecessor left.
            left = mounts_under(work / victim)
            checks(left, f"host {victim} killed mid-DAG left its workers' mounts (the case step 5 is about)")
            daemons[victim], _, _ = start_serve(
                args.runner, str(work / victim), ("--store", store_url, "--runner-nid", holder))
            check_equal(checks, mounts_under(work / victim), [],
                        f"host {victim} restarted: the {len(left)} mounts its predecessor left are gone")
    finally:
        for proc in daemons.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if checks.count:
            for host in ("a", "b"):
                log = work / host / "serve.log"
                if log.exists():
                    print(f"---- host {host} log (tail)\n" + log.read_text(errors="replace")[-4000:])
        for point in mounts_under(work):  # only after a failure above
            subprocess.run(["umount", "-l", point], check=False)
        shutil.rmtree(work, ignore_errors=True)
    return checks.exit_status()


if __name__ == "__main__":
    sys.exit(main())
