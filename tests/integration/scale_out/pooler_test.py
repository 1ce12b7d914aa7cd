#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runners on two hosts reach one PostgreSQL store through PgBouncer in
transaction mode (docs/scale-out.md "Poolers"). The test starts a PgBouncer
of its own (Debian's pgbouncer, a unix socket in a temporary directory, no
TCP) with `pool_mode = transaction` and `default_pool_size = 2`, in front of
a fresh database on the test server of NPS_TEST_PG_URL: two daemons, each
with about five store connections, share two server sessions, so a
statement prepared by name in one session would be run by other clients in
sessions that do not know it, and a session SET would leak between them.
Both daemons have `[store] pooler = "transaction"`.

 1. Both daemons start through the pooler (the schema migrated through it).
 2. 16 three-node DAGs, deposited alternately through both APIs, all
    COMPLETED, each claimed once and completed once, its three nodes
    COMPLETED; both hosts ran some.
 3. Neither daemon logged a store failure (no "prepared statement", no
    "Failed to"), both answer /healthz 200, nps_store_degraded 0, and no
    deposit listener exists (nps_store_listener_connected is not exported:
    LISTEN cannot work through a pooler in transaction mode).
 4. `nps-runner config show` says `store.pooler` transaction and
    `store.notify` false; `[store] notify = true` with the pooler is refused
    at start, naming both keys.

A PostgreSQL-only test: through tests/support/on_postgres.sh (skips, 77,
without the test server). Needs root, pgbouncer, umoci, busybox-static and
psql (else 77, saying so)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
import pg_scratch  # noqa: E402
from checks import Checks, check_equal  # noqa: E402
import runner_api  # noqa: E402
from runner_api import Api, enc  # noqa: E402
from serve_daemon import start_serve  # noqa: E402
from test_entry import runner_test_args  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
IMAGE = "nps-demo-worker:1"
INBOX = "urn:nps:agent:pooler.test:shared"
RUNNER_A = "urn:nps:node:host-a.pooler.test:nps-runner"
RUNNER_B = "urn:nps:node:host-b.pooler.test:nps-runner"
POOLER_PORT = 6499  # names the socket file only (no TCP listener)
TASKS = 16


def spawnspec(*command):
    return runner_api.spawnspec(IMAGE, command, idle_timeout_seconds=30, max_runtime_seconds=60)


def dag(task_id):
    return {"task_id": task_id, "dag": {"nodes": [
        {"id": "fetch", "action": "nwp://pooler.test/fetch/invoke", "agent": "urn:nps:agent:pooler.test:fetch"},
        {"id": "double", "action": "nwp://pooler.test/double/invoke", "agent": "urn:nps:agent:pooler.test:double",
         "input_from": ["fetch"], "input_mapping": {"value": "$.fetch.value"}},
        {"id": "report", "action": "nwp://pooler.test/report/invoke", "agent": "urn:nps:agent:pooler.test:report",
         "input_from": ["double"], "input_mapping": {"answer": "$.double.value"}}],
        "edges": [{"from": "fetch", "to": "double"}, {"from": "double", "to": "report"}]}}


def unavailable_reason():
    if not pg_scratch.on_postgres():
        return "a PostgreSQL pass only (run through tests/support/on_postgres.sh with NPS_TEST_PG_URL)"
    if os.geteuid() != 0:
        return "needs root (sandboxed workers; PgBouncer started as the postgres user)"
    for tool in ("pgbouncer", "umoci", "busybox", "psql"):
        if shutil.which(tool) is None and not os.access("/usr/sbin/" + tool, os.X_OK):
            return f"needs {tool} (scripts/install-deps)"
    return ""


def server_socket():
    """(socket directory, port, user) of the test server's URL."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(pg_scratch.server_url()).query)
    return query["host"][0], query.get("port", ["5432"])[0], query.get("user", ["postgres"])[0]


def start_pooler(directory, database):
    host, port, user = server_socket()
    (directory / "users.txt").write_text(f'"{user}" ""\n')
    (directory / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"nps = host={host} port={port} dbname={database} user={user}\n"
        "[pgbouncer]\n"
        "listen_addr =\n"
        f"listen_port = {POOLER_PORT}\n"
        f"unix_socket_dir = {directory}\n"
        "auth_type = trust\n"
        f"auth_file = {directory}/users.txt\n"
        "pool_mode = transaction\n"
        "default_pool_size = 2\n"
        "max_client_conn = 100\n"
        f"logfile = {directory}/pgbouncer.log\n"
        f"pidfile = {directory}/pgbouncer.pid\n")
    shutil.chown(directory, "postgres")
    for name in ("users.txt", "pgbouncer.ini"):
        shutil.chown(directory / name, "postgres")
    pooler = subprocess.Popen([shutil.which("pgbouncer") or "/usr/sbin/pgbouncer", "-u", "postgres",
                               str(directory / "pgbouncer.ini")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    socket = directory / f".s.PGSQL.{POOLER_PORT}"
    for _ in range(200):
        if socket.exists():
            return pooler, f"postgresql:///nps?host={directory}&port={POOLER_PORT}&user={user}"
        if pooler.poll() is not None:
            break
        time.sleep(0.05)
    log = directory / "pgbouncer.log"
    raise RuntimeError("PgBouncer did not start: " + (log.read_text() if log.exists() else "(no log)"))


def write_config(state, url, extra=""):
    (state / "config.toml").write_text(
        f'[runner]\ninboxes = ["{INBOX}"]\nshutdown_grace_seconds = 2\n'
        f'[store]\nurl = "{url}"\npooler = "transaction"\n{extra}')


def main():
    args = runner_test_args(unavailable_reason)
    checks = Checks()
    work = Path(tempfile.mkdtemp(prefix="nps-pooler-"))
    pooler_dir = Path(tempfile.mkdtemp(prefix="nps-pooler-sock-"))
    pooler_dir.chmod(0o755)
    database = f"nps_pooler_{os.getpid()}"
    pooler = None
    daemons = {}
    try:
        pg_scratch.psql(f"CREATE DATABASE {database}")
        pooler, url = start_pooler(pooler_dir, database)
        print(f"PgBouncer (transaction mode, 2 server sessions): {url}")
        subprocess.run([str(ROOT / "demo/make-image"), str(work / "image")], check=True, capture_output=True)

        # 4b. notify = true cannot work through the pooler: refused at start.
        refused = work / "refused"
        refused.mkdir()
        write_config(refused, url, "notify = true\n")
        done = subprocess.run([args.runner, "serve", "--config", str(refused / "config.toml"), "--state-dir",
                               str(refused), "--listen", "127.0.0.1:0", "--socket", "none"],
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        checks(done.returncode != 0 and "store.notify" in done.stderr and "pooler" in done.stderr,
               f"notify = true with pooler = \"transaction\" is refused at start (exit {done.returncode}: "
               f"{done.stderr.strip()[:200]})")

        # 1. Two hosts through the pooler.
        apis, states = {}, {}
        for host, nid in (("a", RUNNER_A), ("b", RUNNER_B)):
            state = work / host
            state.mkdir()
            write_config(state, url)
            subprocess.run([args.runner, "image", "import", str(work / "image/oci"), "--name", IMAGE,
                            "--state-dir", str(state), "--config", str(state / "config.toml")],
                           check=True, capture_output=True)
            proc, base, token = start_serve(args.runner, str(state), ("--store", url, "--runner-nid", nid))
            daemons[host] = proc
            apis[host] = Api(base, token)
            states[host] = state
        a, b = apis["a"], apis["b"]
        checks(True, "both daemons started through the pooler")

        for agent, command in (("fetch", ("emit", '{"value":2}')), ("double", ("double",)), ("report", ("report",))):
            status, _ = a.call("PUT", "/v1/ndp/announces/" + enc("urn:nps:agent:pooler.test:" + agent),
                               {"nid": "urn:nps:agent:pooler.test:" + agent, "activation_mode": "ephemeral",
                                "spawn_spec_ref": spawnspec(*command), "ttl": 3600})
            check_equal(checks, status, 200, f"announce {agent}")

        # 2. DAGs through both APIs, run on both hosts.
        task_ids = [f"pooled-{i}" for i in range(TASKS)]
        for i, task_id in enumerate(task_ids):
            status, _ = (a if i % 2 == 0 else b).call("POST", f"/v1/inbox/{enc(INBOX)}", dag(task_id))
            check_equal(checks, status, 201, f"deposit {task_id}")
        ran_on = []
        for task_id in task_ids:
            task = b.wait_state(task_id, ("COMPLETED", "FAILED", "CANCELLED"), 120)
            check_equal(checks, task and task["state"], "COMPLETED", f"{task_id} completed")
            if not task:
                continue
            names = [e["event"] for e in task["events"]]
            check_equal(checks, (names.count("lease:granted"), names.count("lease:reclaimed"),
                                 names.count("task:completed")), (1, 0, 1),
                        f"{task_id}: claimed once, completed once")
            check_equal(checks, sorted(n["state"] for n in task["nodes"].values()), ["COMPLETED"] * 3,
                        f"{task_id}: three nodes completed")
            check_equal(checks, (task["nodes"].get("report") or {}).get("result"), {"answer": 4},
                        f"{task_id}: the result went through every node")
            ran_on += [e["detail"]["runner_nid"] for e in task["events"] if e["event"] == "lease:granted"]
        print(f"tasks per host: A {ran_on.count(RUNNER_A)}, B {ran_on.count(RUNNER_B)}")
        check_equal(checks, set(ran_on), {RUNNER_A, RUNNER_B}, "both hosts ran DAGs")

        # 3. Healthy, no store failure, no listener.
        for host, api in apis.items():
            status, body = api.health()
            check_equal(checks, (status, body and body.get("status")), (200, "ok"), f"host {host}: /healthz ok")
            check_equal(checks, api.metric("nps_store_degraded"), 0.0, f"host {host}: nps_store_degraded 0")
            check_equal(checks, api.metric("nps_store_listener_connected"), None,
                        f"host {host}: no deposit listener (nps_store_listener_connected not exported)")
            log = (states[host] / "serve.log").read_text(errors="replace")
            bad = [line for line in log.splitlines() if "prepared statement" in line or "Failed to" in line]
            check_equal(checks, bad[:3], [], f"host {host}: no store failure in the log")

        # 4a. config check shows what serve runs with.
        shown = subprocess.run([args.runner, "config", "check", "--json", "--config",
                                str(states["a"] / "config.toml")],
                               capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        settings = json.loads(shown.stdout).get("settings", []) if shown.returncode == 0 else []
        values = {s["key"]: s["value"] for s in settings}
        check_equal(checks, (values.get("store.pooler"), values.get("store.notify")), ("transaction", False),
                    f"config check shows store.pooler transaction and store.notify false (exit {shown.returncode})")
    except Exception as e:  # noqa: BLE001
        checks(False, f"the test ran to its end: {e}")
    finally:
        for proc in daemons.values():
            proc.send_signal(signal.SIGTERM)
        for proc in daemons.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if pooler:
            pooler.terminate()
            try:
                pooler.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pooler.kill()
                pooler.wait()
        try:
            pg_scratch.psql(f"DROP DATABASE IF EXISTS {database}")
        except Exception as e:  # noqa: BLE001
            print(f"dropping {database}: {e}")
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(pooler_dir, ignore_errors=True)
    return checks.exit_status()


if __name__ == "__main__":
    sys.exit(main())
