#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Retention through the real daemon (docs/retention.md, issue 18):

 1. result_ttl_seconds: after it, GET /v1/tasks/{id} and the SDK route answer
    404 NOP-TASK-RESULT-EXPIRED with the task's state, which the task list
    still shows; a task with the default TTL keeps its results.
 2. `task rm` and `task prune --older-than` through the CLI.
 3. The bound: 20,000 tasks with 4 KiB frames (about 100 MB of history)
    deposited, claimed, reported and completed over HTTP by 4 clients,
    400 tasks a second in all, through a daemon with task_retention_hours = 0.0005 (1.8 s); runner.db
    with its WAL stays under 28 MiB the whole time, and the live tasks (never
    claimed, held under a lease, finished within the retention) keep every
    byte.

The tasks are run by the test as a remote runner would (claims endpoint,
node PATCH, lease complete), so no sandbox is needed; the retention sweep is
the daemon's own."""

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
from serve_daemon import start_serve  # noqa: E402

INBOX = "urn:nps:agent:example.test:retention"
RUNNER = "urn:nps:node:example.test:remote-runner"
BOUND_BYTES = 28 * 1024 * 1024
TASKS = 20_000
CLIENTS = 4
RATE = 400  # tasks a second, all clients together


class Api:
    """One keep-alive connection to the daemon."""

    def __init__(self, base, token):
        self.host, port = base.removeprefix("http://").split(":")
        self.port = int(port)
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(self, method, path, body=None):
        data = None if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
        try:
            self.conn.request(method, path, body=data, headers=self.headers)
            response = self.conn.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            # The daemon closes a connection idle past its timeout: open another.
            self.conn.close()
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
            self.conn.request(method, path, body=data, headers=self.headers)
            response = self.conn.getresponse()
        raw = response.read()
        return response.status, (json.loads(raw) if raw.strip() else None)


def frame(task_id, result_ttl=None, pad=0):
    f = {"task_id": task_id,
         "dag": {"nodes": [{"id": "n1", "action": "nwp://example.test/step/invoke",
                            "agent": "urn:nps:agent:example.test:worker",
                            "input_mapping": {"pad": "x" * pad}}]}}
    if result_ttl is not None:
        f["result_ttl_seconds"] = result_ttl
    return f


def run_task(api, task_id, result_ttl=None, pad=0):
    """Deposit, claim, report n1 and complete: one task through the API."""
    status, deposited = api.call("POST", f"/v1/inbox/{INBOX}", frame(task_id, result_ttl, pad))
    assert status == 201, (status, deposited)
    status, lease = api.call("POST", f"/v1/inbox/{INBOX}/claims",
                             {"runner_nid": RUNNER, "lease_seconds": 60, "task_id": task_id})
    assert status == 200, (status, lease)
    status, body = api.call("PATCH", f"/v1/tasks/{task_id}/nodes/n1",
                            {"dedup_key": deposited["dedup_key"], "state": "COMPLETED", "attempts": 1,
                             "runner_nid": RUNNER, "result": {"answer": task_id}})
    assert status in (200, 201), (status, body)
    status, body = api.call("POST", f"/v1/leases/{task_id}/complete",
                            {"runner_nid": RUNNER, "state": "COMPLETED", "aggregate": {"n1": {"answer": task_id}}})
    assert status == 200, (status, body)
    return deposited


def cli(runner, base, token, *args):
    return subprocess.run([runner, *args, "--server", base, "--token", token],
                          capture_output=True, text=True, timeout=60)


class Failures:
    def __init__(self):
        self.count = 0

    def check(self, ok, what):
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            self.count += 1


def result_ttl_expiry(api, t):
    run_task(api, "ttl-short", result_ttl=1)
    run_task(api, "ttl-default")
    status, body = api.call("GET", "/v1/tasks/ttl-short")
    t.check(status == 200 and body["aggregate"] == {"n1": {"answer": "ttl-short"}}, "results readable within the TTL")
    time.sleep(1.3)
    status, body = api.call("GET", "/v1/tasks/ttl-short")
    t.check(status == 404 and body["error"] == "NOP-TASK-RESULT-EXPIRED" and body["status"] == "NPS-CLIENT-NOT-FOUND",
            f"after result_ttl_seconds: 404 NOP-TASK-RESULT-EXPIRED ({status} {body})")
    t.check(body.get("task", {}).get("state") == "COMPLETED", "the expired answer still names the state")
    status, body = api.call("GET", f"/v1/inbox/{INBOX}/task/ttl-short")
    t.check(status == 404 and body["error"] == "NOP-TASK-RESULT-EXPIRED", f"the SDK route agrees ({status})")
    status, listing = api.call("GET", "/v1/tasks?limit=10")
    states = {x["task_id"]: (x["state"], x["results_expired"]) for x in listing["tasks"]}
    t.check(states.get("ttl-short") == ("COMPLETED", True), f"the list shows the state ({states.get('ttl-short')})")
    status, body = api.call("GET", "/v1/tasks/ttl-default")
    t.check(status == 200 and body["nodes"]["n1"]["result"] == {"answer": "ttl-default"},
            "a task with the default TTL (3600 s) keeps its results")
    status, body = api.call("POST", f"/v1/inbox/{INBOX}", frame("ttl-short", result_ttl=1))
    t.check(status == 200 and body["duplicate"] is True, "the same frame again is still a replay, not a new task")


def cli_rm_and_prune(api, runner, base, token, t):
    for i in range(3):
        run_task(api, f"rm-{i}")
    api.call("POST", f"/v1/inbox/{INBOX}", frame("rm-live"))
    done = cli(runner, base, token, "task", "rm", "rm-0", "rm-1")
    t.check(done.returncode == 0 and "rm-0 removed" in done.stdout, f"task rm: {done.returncode} {done.stdout!r}")
    status, body = api.call("GET", "/v1/tasks/rm-0")
    t.check(status == 404 and body["error"] == "NOP-TASK-NOT-FOUND", "a removed task is gone")
    live = cli(runner, base, token, "task", "rm", "rm-live")
    t.check(live.returncode == 1 and "NOP-TASK-NOT-FINISHED" in live.stderr,
            f"task rm refuses a pending task: {live.returncode} {live.stderr!r}")
    status, body = api.call("GET", "/v1/tasks/rm-live")
    t.check(status == 200 and body["state"] == "PENDING", "and leaves it as it was")
    unknown = cli(runner, base, token, "task", "rm", "no-such-task")
    t.check(unknown.returncode != 0 and "NOP-TASK-NOT-FOUND" in unknown.stderr, "task rm of an unknown id fails")

    bad = cli(runner, base, token, "task", "prune", "--older-than", "soon")
    t.check(bad.returncode == 2 and "not a duration" in bad.stderr, f"task prune with a bad duration: {bad.stderr!r}")
    wrong_state = cli(runner, base, token, "task", "prune", "--older-than", "0", "--state", "RUNNING")
    t.check(wrong_state.returncode != 0 and "NWP-HTTP-PARAM-INVALID" in wrong_state.stderr,
            f"task prune --state RUNNING is refused: {wrong_state.stderr!r}")
    kept = cli(runner, base, token, "task", "prune", "--older-than", "1h")
    t.check(kept.returncode == 0 and kept.stdout.startswith("0 "), f"nothing is an hour old: {kept.stdout!r}")
    time.sleep(1.1)
    pruned = cli(runner, base, token, "task", "prune", "--older-than", "1s", "--json")
    removed = json.loads(pruned.stdout)["removed"] if pruned.returncode == 0 else -1
    t.check(removed == 1, f"task prune --older-than 1s removed the finished task left, rm-2 ({removed})")
    status, body = api.call("GET", "/v1/tasks/rm-2")
    t.check(status == 404 and body["error"] == "NOP-TASK-NOT-FOUND", "rm-2 is gone")
    status, body = api.call("GET", "/v1/tasks/rm-live")
    t.check(status == 200 and body["state"] == "PENDING", "prune never touches a live task")
    status, body = api.call("DELETE", "/v1/tasks")
    t.check(status == 400 and body["error"] == "NWP-HTTP-PARAM-INVALID", "DELETE /v1/tasks needs older_than_seconds")


def database_bytes(state):
    return sum(os.path.getsize(p) for p in (f"{state}/runner.db", f"{state}/runner.db-wal") if os.path.exists(p))


def retention_bound(base, token, state, t):
    setup = Api(base, token)
    # Live work that must come through whole: never claimed, held under a
    # lease, and (below) the most recent finished tasks.
    pending = [f"live-pending-{i}" for i in range(20)]
    for task_id in pending:
        status, _ = setup.call("POST", f"/v1/inbox/{INBOX}", frame(task_id, pad=4096))
        assert status == 201
    held = [f"live-held-{i}" for i in range(5)]
    for task_id in held:
        setup.call("POST", f"/v1/inbox/{INBOX}", frame(task_id, pad=4096))
        status, _ = setup.call("POST", f"/v1/inbox/{INBOX}/claims",
                               {"runner_nid": RUNNER, "lease_seconds": 600, "task_id": task_id})
        assert status == 200

    peak = [0, 0]  # runner.db + WAL, the WAL alone
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], database_bytes(state))
            wal = f"{state}/runner.db-wal"
            peak[1] = max(peak[1], os.path.getsize(wal) if os.path.exists(wal) else 0)
            time.sleep(0.05)

    errors = []

    def client(index):
        # Paced to RATE tasks a second in all, so the bound does not depend
        # on how fast this machine is: what retention keeps is about
        # (retention + one sweep interval) x RATE tasks.
        api = Api(base, token)
        try:
            for k, n in enumerate(range(index, TASKS, CLIENTS)):
                ahead = started + k * CLIENTS / RATE - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
                run_task(api, f"bulk-{n}", pad=4096)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"client {index}: {e!r}")

    watcher = threading.Thread(target=watch)
    watcher.start()
    started = time.monotonic()  # read by the clients
    clients = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    elapsed = time.monotonic() - started
    time.sleep(4)  # two more sweeps
    stop.set()
    watcher.join()
    peak[0] = max(peak[0], database_bytes(state))

    t.check(not errors, f"{TASKS} tasks ran in {elapsed:.0f} s ({TASKS / elapsed:.0f}/s) {errors[:3]}")
    t.check(peak[0] < BOUND_BYTES,
            f"runner.db + WAL peaked at {peak[0] / 1048576:.1f} MiB (the WAL alone {peak[1] / 1048576:.1f} MiB), "
            f"under {BOUND_BYTES / 1048576:.0f} MiB (the history was ~{TASKS * 5 // 1024} MiB)")
    status, listing = setup.call("GET", "/v1/tasks?state=COMPLETED&limit=1000")
    bulk_left = [x for x in listing["tasks"] if x["task_id"].startswith("bulk-")]
    t.check(len(bulk_left) < 2000, f"old finished tasks were deleted ({len(bulk_left)} of {TASKS} left)")
    status, peeked = setup.call("GET", f"/v1/inbox/{INBOX}?batch=100")
    seen = {m["task_id"]: m for m in peeked["messages"]}
    whole = all(task_id in seen and json.loads(__import__("base64").b64decode(seen[task_id]["payload_b64"]))
                == frame(task_id, pad=4096) for task_id in pending)
    t.check(whole, "every never-claimed task is still in the inbox with its frame byte for byte")
    for task_id in held:
        status, body = setup.call("GET", f"/v1/tasks/{task_id}")
        if status != 200 or body["state"] != "RUNNING" or body["lease"]["runner_nid"] != RUNNER:
            t.check(False, f"{task_id} under its lease is whole ({status})")
            break
    else:
        t.check(True, "every task under a live lease is whole")
    status, body = setup.call("POST", f"/v1/leases/{held[0]}/complete",
                              {"runner_nid": RUNNER, "state": "COMPLETED", "aggregate": {"ok": True}})
    t.check(status == 200, "a held task completes after the churn")
    run_task(setup, "recent-finished", pad=4096)
    status, body = setup.call("GET", "/v1/tasks/recent-finished")
    t.check(status == 200 and body["nodes"]["n1"]["result"] == {"answer": "recent-finished"},
            "a task finished within the retention keeps its results")


def with_daemon(runner, config, body):
    """Runs body(base, token, state) against a fresh daemon; returns its log."""
    with tempfile.TemporaryDirectory(prefix="nps-retention-") as state:
        Path(state, "config.toml").write_text(config)
        daemon, base, token = start_serve(runner, state)
        try:
            body(base, token, state)
            alive = daemon.poll() is None
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
        return alive, Path(state, "serve.log").read_text()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--only", choices=["ttl", "cli", "bound"])
    args = parser.parse_args()
    t = Failures()
    fast = "[inbox]\nmax_depth = 100000\n[store]\nsynchronous = \"normal\"\n"
    if args.only in (None, "ttl", "cli"):
        def api_checks(base, token, state):
            api = Api(base, token)
            if args.only in (None, "ttl"):
                result_ttl_expiry(api, t)
            if args.only in (None, "cli"):
                cli_rm_and_prune(api, args.runner, base, token, t)
        alive, _ = with_daemon(args.runner, fast, api_checks)
        t.check(alive, "the daemon is still running")
    if args.only in (None, "bound"):
        alive, log = with_daemon(args.runner, fast + "task_retention_hours = 0.0005\n",
                                 lambda base, token, state: retention_bound(base, token, state, t))
        t.check(alive, "the daemon is still running after the churn")
        t.check("finished task(s) deleted" in log, "the sweep logged what it deleted")
    print(f"{t.count} failure(s)")
    return 1 if t.count else 0


if __name__ == "__main__":
    sys.exit(main())
