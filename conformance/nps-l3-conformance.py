#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NPS-Node-L3 conformance runner (TC-N3-*), black-box over the HTTP API.

Runs every TC-N3 case of the NPS-Node-L3 suite (CR-0007 §8) against a running
nps-runner given by URL or unix socket, prints a pass/fail/skip table and
writes a JSON report. Standard library only. See conformance/README.md.
"""

import argparse
import base64
import datetime
import http.client
import http.server
import json
import os
import platform
import socket
import sys
import threading
import time
import traceback
import urllib.parse
import uuid

SUITE = "NPS-Node-L3"
DEFAULT_URL = "http://127.0.0.1:17437"
DEFAULT_IMAGE = "nps-demo-worker:1"
# The file name appended to --spec-base-url for TC-N3-Spawn-02.
SPAWN02_FILE = "spawn-02.json"
# What the Spawn-02 worker emits: the node's result proves the fetched spec ran.
SPAWN02_RESULT = {"spawn": "02"}
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED")


class CaseFailed(Exception):
    """A check of the case did not hold; `evidence` goes into the report."""

    def __init__(self, message, evidence=None):
        super().__init__(message)
        self.evidence = evidence


class CaseSkipped(Exception):
    """The case cannot run for lack of an input."""


# --------------------------------------------------------------------------
# HTTP


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        self.sock = sock


class Reply:
    def __init__(self, status, raw):
        self.status = status
        self.raw = raw
        try:
            self.body = json.loads(raw) if raw else None
        except ValueError:
            self.body = None

    def get(self, key, default=None):
        return self.body.get(key, default) if isinstance(self.body, dict) else default

    def __repr__(self):
        text = self.raw if len(self.raw) <= 600 else self.raw[:600] + "…"
        return "HTTP %d %s" % (self.status, text)


class Client:
    """One connection per request: safe to use from several threads."""

    def __init__(self, url, token=None, unix_socket=None, timeout=60.0):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ValueError("--url must be http:// or https://, not %r" % url)
        self.scheme = parts.scheme
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port
        self.prefix = parts.path.rstrip("/")
        self.token = token
        self.unix_socket = unix_socket
        self.timeout = timeout

    def connection(self):
        if self.unix_socket:
            return UnixHTTPConnection(self.unix_socket, self.timeout)
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def send(self, conn, method, path, body=None, extra_headers=None):
        headers = {"Accept": "application/json", **(extra_headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        conn.request(method, self.prefix + path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read().decode("utf-8", "replace")
        return Reply(response.status, raw)

    def call(self, method, path, body=None, headers=None):
        conn = self.connection()
        try:
            return self.send(conn, method, path, body, headers)
        finally:
            conn.close()


def enc(segment):
    return urllib.parse.quote(segment, safe="")


# --------------------------------------------------------------------------
# Helpers shared by the cases


def spawnspec_ref(spec):
    """spawnspec:<base64url(JSON)>, unpadded (the canonical spelling)."""
    text = json.dumps(spec, separators=(",", ":")).encode("utf-8")
    return "spawnspec:" + base64.urlsafe_b64encode(text).decode("ascii").rstrip("=")


def spawn02_spec(image):
    """The SpawnSpec an operator serves at <--spec-base-url>/spawn-02.json."""
    return {"image": image, "command": ["/bin/worker", "emit", json.dumps(SPAWN02_RESULT, separators=(",", ":"))]}


def nwp_from_https(url):
    """nwp://host:port/path for an https:// URL: what a runner without an nwp
    resolver maps back to https on the same host and port."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname
    if ":" in host:
        host = "[" + host + "]"
    port = parts.port or 443
    return "nwp://%s:%d%s" % (host, port, parts.path)


def parse_time(text):
    """RFC 3339 → seconds since the epoch (float)."""
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    return datetime.datetime.fromisoformat(text).timestamp()


def task_summary(task):
    """The parts of a task document that explain an outcome, on one line."""
    keys = ("state", "error_code", "error_message", "killed_reason")
    nodes = {n: {k: v for k, v in rec.items()
                 if k in keys and v is not None and not (k == "error_message" and v == task.get("error_message"))}
             for n, rec in (task.get("nodes") or {}).items()}
    summary = {"task_id": task.get("task_id"), "state": task.get("state"), "error_code": task.get("error_code"),
               "error_message": task.get("error_message"), "nodes": nodes}
    return json.dumps(summary)


def check(condition, message, evidence=None):
    if condition:
        return
    if isinstance(evidence, Reply):
        message += " — " + repr(evidence)
        evidence = {"status": evidence.status, "body": evidence.body if evidence.body is not None else evidence.raw}
    elif isinstance(evidence, dict) and "task_id" in evidence and "events" in evidence:
        message += " — " + task_summary(evidence)  # the whole task goes into the report
    elif evidence is not None:
        message += " — " + json.dumps(evidence)[:1000]
    raise CaseFailed(message, evidence)


def expect_status(reply, status, what):
    check(reply.status == status, "%s: expected HTTP %d" % (what, status), reply)


def expect_error(reply, status, code, what):
    check(reply.status == status and reply.get("error") == code,
          "%s: expected HTTP %d %s" % (what, status, code), reply)


def event_names(task):
    return [e.get("event") for e in task.get("events", [])]


class TaskStoreRecorder:
    """The orchestrator's task store, as far as a runner reports to it: records
    every PATCH {prefix}/{task_id}/nodes/{node_id} (NPS-5 §3.2 node state
    reports; the runner's [report] task_store_url points here) and answers 204."""

    def __init__(self, listen):
        host, _, port = listen.rpartition(":")
        self.reports = []
        self.lock = threading.Lock()
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_PATCH(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length > 0 else b""
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = None
                with recorder.lock:
                    recorder.reports.append({"path": urllib.parse.unquote(self.path), "body": body,
                                             "idempotency_key": self.headers.get("Idempotency-Key")})
                self.send_response(204)
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer((host or "127.0.0.1", int(port)), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def node_states(self, task_id, timeout=20.0):
        """{node_id: [reported states, in order]} for `task_id`, once no new report came for 1 s."""
        deadline = time.monotonic() + timeout
        last, quiet_since = -1, time.monotonic()
        while time.monotonic() < deadline:
            with self.lock:
                mine = [r for r in self.reports if "/%s/nodes/" % task_id in r["path"]]
            if len(mine) != last:
                last, quiet_since = len(mine), time.monotonic()
            elif mine and time.monotonic() - quiet_since >= 1.0:
                break
            time.sleep(0.1)
        states = {}
        for r in mine:
            body = r["body"] if isinstance(r["body"], dict) else {}
            node = r["path"].rsplit("/nodes/", 1)[-1]
            check(body.get("task_id") == task_id and body.get("node_id") == node,
                  "a task store PATCH names another task or node than its path", r)
            check(bool(r["idempotency_key"]), "a task store PATCH carries no Idempotency-Key", r)
            states.setdefault(node, []).append(body.get("state"))
        return states


# The logical NWP host of Spawn-02's resolved ref: no DNS knows it, only the
# NDP resolver below, so a runner that fetches it resolved it.
RESOLVED_HOST = "specs.conformance.nps-runner"


class NdpResolver:
    """An NDP resolver as the runner asks one (ResolveFrame 0x31 over the
    nps-registry HTTP form, digest §3.2/§3.3): GET /v1/resolve?target=<nwp URL>
    answers {target, resolved:{host, port, ttl, health}}. RESOLVED_HOST maps to
    the host and port of `spec_base_url`; any other nwp URL to its own host and
    port. Records every target asked; the runner's [spawn] nwp_resolver_url
    must be http://HOST:PORT."""

    def __init__(self, listen, spec_base_url):
        host, _, port = listen.rpartition(":")
        spec = urllib.parse.urlsplit(spec_base_url or "https://127.0.0.1")
        self.targets = []
        self.lock = threading.Lock()
        resolver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                parts = urllib.parse.urlsplit(self.path)
                target = urllib.parse.parse_qs(parts.query).get("target", [""])[0]
                nwp = urllib.parse.urlsplit(target)
                if parts.path != "/v1/resolve" or nwp.scheme != "nwp" or not nwp.hostname:
                    return self.answer(404, {"error": "NDP-RESOLVE-NOT-FOUND", "target": target})
                with resolver.lock:
                    resolver.targets.append(target)
                if nwp.hostname == RESOLVED_HOST:
                    resolved = {"host": spec.hostname, "port": spec.port or 443}
                else:
                    resolved = {"host": nwp.hostname, "port": nwp.port or 17433}
                self.answer(200, {"target": target, "resolved": dict(resolved, ttl=60, health="healthy")})

            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer((host or "127.0.0.1", int(port)), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def asked(self, target):
        with self.lock:
            return target in self.targets


class Context:
    def __init__(self, args, client):
        self.args = args
        self.client = client
        self.run_id = time.strftime("%Y%m%d%H%M%S") + "-" + uuid.uuid4().hex[:6]
        self.cleanup = []  # task ids to cancel at the end (best effort)
        self.task_store = TaskStoreRecorder(args.task_store_listen) if args.task_store_listen else None
        self.resolver = NdpResolver(args.ndp_resolver_listen, args.spec_base_url) if args.ndp_resolver_listen else None

    # Identifiers unique to this run, so a deployment can be tested again
    # without colliding with an earlier run's tasks and announces.
    def task_id(self, name):
        return "tc-n3-%s-%s" % (self.run_id, name)

    def agent(self, name):
        return "urn:nps:agent:conformance.nps-runner:%s-%s" % (self.run_id, name)

    def runner_nid(self, name):
        return "urn:nps:node:conformance.nps-runner:%s-runner-%s" % (self.run_id, name)

    def claim_inbox(self):
        return self.args.claim_inbox or "urn:nps:agent:conformance.nps-runner:%s-claims" % self.run_id

    # --- API
    def deposit(self, inbox, frame, headers=None):
        reply = self.client.call("POST", "/v1/inbox/" + enc(inbox), frame, headers)
        expect_status(reply, 201, "deposit of task %s into %s" % (frame["task_id"], inbox))
        self.cleanup.append(frame["task_id"])
        return reply

    def task(self, task_id):
        reply = self.client.call("GET", "/v1/tasks/" + enc(task_id))
        expect_status(reply, 200, "GET task %s" % task_id)
        return reply.body

    def wait_terminal(self, task_id, timeout=None):
        timeout = timeout or self.args.task_timeout
        deadline = time.monotonic() + timeout
        task = None
        while time.monotonic() < deadline:
            task = self.task(task_id)
            if task.get("state") in TERMINAL:
                return task
            time.sleep(0.1)
        raise CaseFailed("task %s not terminal after %ss: state %s" %
                         (task_id, timeout, task.get("state") if task else "?"))

    def announce(self, agent, ref):
        body = {"nid": agent, "activation_mode": "ephemeral", "spawn_spec_ref": ref, "ttl": 3600}
        reply = self.client.call("PUT", "/v1/ndp/announces/" + enc(agent), body)
        expect_status(reply, 200, "announce of %s" % agent)

    def claim(self, inbox, runner, lease_seconds, task_id=None):
        body = {"runner_nid": runner, "lease_seconds": lease_seconds}
        if task_id:
            body["task_id"] = task_id
        return self.client.call("POST", "/v1/inbox/%s/claims" % enc(inbox), body)

    def renew(self, task_id, runner, lease_seconds):
        return self.client.call("POST", "/v1/leases/%s/renew" % enc(task_id),
                                {"runner_nid": runner, "lease_seconds": lease_seconds})

    def report_node(self, task_id, node, dedup_key, runner, state, result=None):
        body = {"dedup_key": dedup_key, "runner_nid": runner, "state": state, "attempts": 1}
        if result is not None:
            body["result"] = result
        return self.client.call("PATCH", "/v1/tasks/%s/nodes/%s" % (enc(task_id), enc(node)), body)

    def complete(self, task_id, runner, state):
        return self.client.call("POST", "/v1/leases/%s/complete" % enc(task_id),
                                {"runner_nid": runner, "state": state})

    def release(self, task_id, runner):
        return self.client.call("DELETE", "/v1/leases/%s?runner_nid=%s" % (enc(task_id), enc(runner)))

    def running_worker(self, task_id):
        """The state of the task's worker GET /v1/workers lists ("queued", "running", "stopping"), or None."""
        reply = self.client.call("GET", "/v1/workers")
        expect_status(reply, 200, "GET /v1/workers")
        states = [w.get("state") for w in reply.get("workers", []) if w.get("task_id") == task_id]
        return states[0] if states else None

    def require_execution(self, need_image=True):
        if not self.args.inbox:
            raise CaseSkipped("needs --inbox (the NID this deployment executes)")
        if need_image and not self.args.image:
            raise CaseSkipped("needs --image (the demo worker image present in the deployment)")

    def run_single(self, name, agent, extra_frame=None, extra_node=None):
        """Deposits a 1-node task for `agent` into the executing inbox; returns the terminal task."""
        node = dag_node("n", agent, "nwp://conformance.nps-runner/%s/invoke" % name)
        if extra_node:
            node.update(extra_node)
        frame = task_frame(self.task_id(name), [node], dict({"max_retries": 0}, **(extra_frame or {})))
        self.deposit(self.args.inbox, frame)
        return self.wait_terminal(frame["task_id"])

    def worker_spec(self, command, **extra):
        spec = {"image": self.args.image, "command": command}
        spec.update(extra)
        return spawnspec_ref(spec)


def dag_node(node_id, agent, action, input_from=None, **extra):
    node = {"id": node_id, "agent": agent, "action": action}
    if input_from:
        node["input_from"] = list(input_from)
    node.update(extra)
    return node


def task_frame(task_id, nodes, extra=None):
    edges = [{"from": src, "to": n["id"]} for n in nodes for src in n.get("input_from", [])]
    frame = {"task_id": task_id, "dag": {"nodes": nodes, "edges": edges}}
    frame.update(extra or {})
    return frame


def placeholder_frame(task_id, nodes=3):
    """A linear DAG for the claim cases: its inbox is not executed, so its
    agents are never resolved."""
    agent = "urn:nps:agent:conformance.nps-runner:unexecuted"
    node_list = [dag_node("n%d" % i, agent, "nwp://conformance.nps-runner/step/invoke",
                          ["n%d" % (i - 1)] if i else None) for i in range(nodes)]
    return task_frame(task_id, node_list)


# --------------------------------------------------------------------------
# The cases. Each returns a short detail string on success, raises
# CaseFailed / CaseSkipped otherwise; `notes` collects evidence for the report.


def claim_01(ctx, notes):
    """Concurrent claims of one task by two runners: exactly one granted, the other 409 NOP-CLAIM-CONFLICT."""
    inbox = ctx.claim_inbox()
    runners = (ctx.runner_nid("a"), ctx.runner_nid("b"))
    rounds = ctx.args.claim_rounds
    wins = {runners[0]: 0, runners[1]: 0}
    for i in range(rounds):
        task_id = ctx.task_id("claim01-%d" % i)
        ctx.deposit(inbox, placeholder_frame(task_id))
        barrier = threading.Barrier(2)
        replies = [None, None]
        errors = []

        def attempt(slot):
            try:
                conn = ctx.client.connection()
                conn.connect()  # both connections open before either request leaves
                try:
                    barrier.wait(timeout=10)
                    replies[slot] = ctx.client.send(conn, "POST", "/v1/inbox/%s/claims" % enc(inbox),
                                                    {"runner_nid": runners[slot], "lease_seconds": 60,
                                                     "task_id": task_id})
                finally:
                    conn.close()
            except Exception as e:  # reported below
                errors.append("%s: %s" % (type(e).__name__, e))

        # Alternate which thread starts first, so neither runner is always ahead.
        threads = [threading.Thread(target=attempt, args=(s,)) for s in ((0, 1) if i % 2 == 0 else (1, 0))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(not errors, "round %d: claim request failed: %s" % (i, "; ".join(errors)))
        granted = [s for s in (0, 1) if replies[s].status == 200]
        check(len(granted) == 1, "round %d: expected exactly one 200, got %r / %r" % (i, replies[0], replies[1]))
        winner, loser = replies[granted[0]], replies[1 - granted[0]]
        check(winner.get("outcome") == "granted", "round %d: winner's outcome is not 'granted'" % i, winner)
        expect_error(loser, 409, "NOP-CLAIM-CONFLICT", "round %d: the losing claim" % i)
        check(loser.get("status") == "NPS-CLIENT-CONFLICT", "round %d: loser status is not NPS-CLIENT-CONFLICT" % i,
              loser)
        task = ctx.task(task_id)
        lease = task.get("lease") or {}
        check(lease.get("runner_nid") == runners[granted[0]], "round %d: the store's lease owner is not the winner" % i,
              task)
        check(task.get("claims") == 1, "round %d: the store counts %s claims, not 1" % (i, task.get("claims")), task)
        wins[runners[granted[0]]] += 1
        ctx.release(task_id, runners[granted[0]])
    notes["wins"] = wins
    return "%d rounds: one 200 granted + one 409 NOP-CLAIM-CONFLICT each (wins A %d / B %d)" % (
        rounds, wins[runners[0]], wins[runners[1]])


def claim_02(ctx, notes):
    """An expired lease is reclaimed by another runner; the terminal node is reported, the old owner fenced."""
    inbox = ctx.claim_inbox()
    a, b = ctx.runner_nid("a"), ctx.runner_nid("b")
    task_id = ctx.task_id("claim02")
    ctx.deposit(inbox, placeholder_frame(task_id))
    # lease_seconds 1 is clamped to the minimum, 10 s (CR-0007 §4.1).
    first = ctx.claim(inbox, a, 1, task_id)
    claimed_at = time.monotonic()
    expect_status(first, 200, "runner A's claim")
    check(first.get("outcome") == "granted", "runner A's claim is not 'granted'", first)
    check(first.get("lease_seconds") == 10, "lease_seconds 1 was not clamped to 10", first)
    dedup = first.get("dedup_key")
    check(isinstance(dedup, str) and len(dedup) == 64, "no dedup_key in the claim", first)
    notes["first_claim"] = first.body

    # A completes n0, then stops renewing (a crash).
    done = ctx.report_node(task_id, "n0", dedup, a, "COMPLETED", {"value": 2})
    expect_status(done, 200, "runner A's report of n0")
    early = ctx.claim(inbox, b, 10, task_id)
    expect_error(early, 409, "NOP-CLAIM-CONFLICT", "runner B's claim under A's live lease")

    # Past the expiry: B reclaims. Waiting on our own clock (the lease's
    # length, not its absolute expiry) keeps clock skew out of it; a 409 just
    # after the expected expiry is retried for a few seconds.
    time.sleep(max(0.0, claimed_at + first.get("lease_seconds", 10) + 0.2 - time.monotonic()))
    deadline = time.monotonic() + 5
    while True:
        second = ctx.claim(inbox, b, 30, task_id)
        if second.status != 409 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    waited = time.monotonic() - claimed_at
    expect_status(second, 200, "runner B's claim after A's lease expired")
    notes["second_claim"] = second.body
    check(second.get("outcome") == "reclaimed", "runner B's claim is not 'reclaimed'", second)
    check(second.get("task_id") == task_id and second.get("dedup_key") == dedup,
          "the reclaim names another task or dedup_key", second)
    check(second.get("claims") == 2, "the reclaim is not the task's second claim", second)
    check(second.get("terminal_nodes") == {"n0": "COMPLETED"},
          "terminal_nodes does not name n0 COMPLETED (resume at n1)", second)

    # The old owner is fenced off.
    expect_error(ctx.renew(task_id, a, 30), 409, "NOP-CLAIM-CONFLICT", "runner A's renewal after the reclaim")
    expect_error(ctx.complete(task_id, a, "COMPLETED"), 409, "NOP-CLAIM-CONFLICT",
                 "runner A's completion after the reclaim")
    expect_error(ctx.report_node(task_id, "n1", dedup, a, "COMPLETED"), 409, "NOP-CLAIM-CONFLICT",
                 "runner A's node report while B holds the lease")
    # Idempotency on (task_id, node_id, dedup_key): the terminal node is not recorded again.
    dup = ctx.report_node(task_id, "n0", dedup, b, "COMPLETED", {"value": 2})
    expect_status(dup, 200, "re-report of the terminal node n0")
    check(dup.get("outcome") == "duplicate", "re-report of n0 is not a duplicate", dup)
    for node in ("n1", "n2"):
        expect_status(ctx.report_node(task_id, node, dedup, b, "COMPLETED"), 200, "runner B's report of " + node)
    expect_status(ctx.complete(task_id, b, "COMPLETED"), 200, "runner B's completion")
    task = ctx.task(task_id)
    check(task.get("state") == "COMPLETED", "task not COMPLETED", task)
    n0 = task.get("nodes", {}).get("n0", {})
    check(n0.get("attempts") == 1 and n0.get("runner_nid") == a, "n0 was recorded again", task)
    return "lease clamped to 10 s; reclaimed after %.1f s with terminal_nodes {n0: COMPLETED}; old owner fenced" % waited


def claim_03(ctx, notes):
    """The owner's renewal before expiry extends the lease to now + lease_seconds."""
    inbox = ctx.claim_inbox()
    a, b = ctx.runner_nid("a"), ctx.runner_nid("b")
    task_id = ctx.task_id("claim03")
    ctx.deposit(inbox, placeholder_frame(task_id))
    claim = ctx.claim(inbox, a, 10, task_id)
    claimed_at = time.monotonic()
    expect_status(claim, 200, "runner A's claim")
    original = parse_time(claim.get("lease_expiry"))

    time.sleep(4)
    renew = ctx.renew(task_id, a, 10)
    expect_status(renew, 200, "runner A's renewal 4 s into a 10 s lease")
    renewed = parse_time(renew.get("lease_expiry"))
    notes["expiry"] = {"claimed": claim.get("lease_expiry"), "renewed": renew.get("lease_expiry")}
    check(renewed > original, "the renewal did not move the expiry later", renew)
    # now + 10 s (≈ original + 4 s), not original + 10 s.
    check(renewed - original < 9.0, "the renewal added lease_seconds to the old expiry instead of to now", notes)
    expect_error(ctx.renew(task_id, b, 10), 409, "NOP-CLAIM-CONFLICT", "renewal by a non-owner")

    # Past the original expiry the lease still holds.
    time.sleep(max(0.0, claimed_at + 10.5 - time.monotonic()))
    expect_error(ctx.claim(inbox, b, 10, task_id), 409, "NOP-CLAIM-CONFLICT",
                 "runner B's claim past the original expiry")
    expect_status(ctx.renew(task_id, a, 10), 200, "runner A's second renewal past the original expiry")

    # Release hands the task back at once.
    expect_status(ctx.release(task_id, a), 204, "runner A's release")
    nxt = ctx.claim(inbox, b, 10, task_id)
    expect_status(nxt, 200, "runner B's claim after the release")
    check(nxt.get("outcome") == "granted", "the claim after a release is not 'granted'", nxt)
    ctx.release(task_id, b)
    return "renewed at +4 s: expiry +%.1f s; held past the original expiry; non-owner 409" % (renewed - original)


def announce_dag_agents(ctx, prefix):
    """The DAG-01 workers (2 → double → report) under agents of their own; their NIDs."""
    fetch, double, report = (ctx.agent(prefix + "-" + name) for name in ("fetch", "double", "report"))
    ctx.announce(fetch, ctx.worker_spec(["/bin/worker", "emit", '{"value":2}']))
    ctx.announce(double, ctx.worker_spec(["/bin/worker", "double"]))
    ctx.announce(report, ctx.worker_spec(["/bin/worker", "report"]))
    return fetch, double, report


def linear_dag_frame(task_id, fetch, double, report):
    act = "nwp://conformance.nps-runner/%s/invoke"
    return task_frame(task_id, [
        dag_node("fetch", fetch, act % "fetch"),
        dag_node("double", double, act % "double", ["fetch"], input_mapping={"value": "$.fetch.value"}),
        dag_node("report", report, act % "report", ["double"], input_mapping={"answer": "$.double.value"}),
    ])


def claim_04(ctx, notes):
    """An executing runner reclaims a lapsed lease and resumes: it runs only the nodes not yet finished."""
    ctx.require_execution()
    a = ctx.runner_nid("a")
    task_id = ctx.task_id("claim04")
    frame = linear_dag_frame(task_id, *announce_dag_agents(ctx, "claim04"))
    # Held back from the executing runner's head claims (X-Nps-Inbox-Delay-Seconds), so that
    # runner A, naming the task, takes the first lease.
    ctx.deposit(ctx.args.inbox, frame, {"X-Nps-Inbox-Delay-Seconds": "300"})
    first = ctx.claim(ctx.args.inbox, a, 10, task_id)
    claimed_at = time.monotonic()
    expect_status(first, 200, "runner A's claim of the held task")
    check(first.get("outcome") == "granted", "runner A's claim is not 'granted'", first)
    dedup = first.get("dedup_key")
    expect_status(ctx.report_node(task_id, "fetch", dedup, a, "COMPLETED", {"value": 2}), 200,
                  "runner A's report of fetch")
    # A crashes. Once its lease lapses the executing runner's head claim reclaims the task.
    task = ctx.wait_terminal(task_id, ctx.args.task_timeout + 15)
    waited = time.monotonic() - claimed_at
    notes["task_id"] = task_id
    check(task.get("state") == "COMPLETED", "task not COMPLETED after the reclaim", task)
    check(task.get("aggregate") == {"answer": 4}, "aggregate is not {\"answer\": 4} (fetch's result unused?)", task)
    check(task.get("claims") == 2, "the executing runner's claim is not the task's second", task)
    nodes = task.get("nodes", {})
    fetch = nodes.get("fetch", {})
    check(fetch.get("attempts") == 1 and fetch.get("runner_nid") == a, "fetch was run again", task)
    executor = (nodes.get("double") or {}).get("runner_nid")
    check(executor and executor != a and nodes.get("report", {}).get("runner_nid") == executor,
          "double and report were not run by the executing runner", task)
    names = event_names(task)
    notes["events"] = names
    check("lease:reclaimed" in names, "no lease:reclaimed event", names)
    check("fetch:worker" not in names and "fetch:attempt:1" not in names,
          "the executing runner started a worker for the finished node fetch", names)
    check("double:worker" in names and "report:worker" in names, "double and report ran no worker", names)
    return "A held the lease, finished fetch and stopped; the runner reclaimed after %.1f s and ran only double, report" % waited


def claim_05(ctx, notes):
    """A runner that loses its lease mid-execution stops its worker and writes nothing more about the task."""
    ctx.require_execution()
    b = ctx.runner_nid("b")
    agent = ctx.agent("claim05")
    ctx.announce(agent, ctx.worker_spec(["/bin/worker", "sleep", "60"],
                                        idle_timeout_seconds=120, max_runtime_seconds=120))
    task_id = ctx.task_id("claim05")
    frame = task_frame(task_id, [dag_node("n", agent, "nwp://conformance.nps-runner/claim05/invoke")],
                       {"max_retries": 0})
    ctx.deposit(ctx.args.inbox, frame)
    deadline = time.monotonic() + ctx.args.task_timeout
    while ctx.running_worker(task_id) != "running":
        check(time.monotonic() < deadline, "the worker never started", ctx.task(task_id))
        time.sleep(0.1)
    task = ctx.task(task_id)
    owner = (task.get("lease") or {}).get("runner_nid")
    check(owner, "the running task has no lease", task)
    # The lease is lost as if it had lapsed: released for its owner, then taken by runner B.
    expect_status(ctx.release(task_id, owner), 204, "release of the executing runner's lease")
    taken = ctx.claim(ctx.args.inbox, b, 600, task_id)
    lost_at = time.monotonic()
    expect_status(taken, 200, "runner B's claim")
    seq_taken = max(e.get("seq", 0) for e in ctx.task(task_id).get("events", []))
    # The old owner notices at its next renewal (a third of its lease at most) and ends its worker.
    while ctx.running_worker(task_id):
        check(time.monotonic() - lost_at < 630, "the runner that lost its lease never stopped its worker")
        time.sleep(0.2)
    stopped = time.monotonic() - lost_at
    time.sleep(1.0)
    later = [e for e in ctx.task(task_id).get("events", []) if e.get("seq", 0) > seq_taken]
    notes["events_after_loss"] = later
    check(not later, "the runner that lost its lease wrote about the task after losing it", later)
    task = ctx.task(task_id)
    check(task.get("state") == "RUNNING" and (task.get("lease") or {}).get("runner_nid") == b,
          "the task is not RUNNING under runner B's lease", task)
    check("n" not in task.get("nodes", {}) or task["nodes"]["n"].get("state") not in TERMINAL,
          "the old owner recorded the node", task)
    dedup = taken.get("dedup_key")
    expect_status(ctx.report_node(task_id, "n", dedup, b, "COMPLETED", {"by": "b"}), 200, "runner B's report of n")
    expect_status(ctx.complete(task_id, b, "COMPLETED"), 200, "runner B's completion")
    check(ctx.task(task_id).get("state") == "COMPLETED", "runner B could not complete the task")
    return "lease taken by B; the old owner stopped its worker %.1f s later and wrote nothing more" % stopped


def spawn_01(ctx, notes):
    """An inline spawnspec: ref: the announced agent's 1-node task completes."""
    ctx.require_execution()
    agent = ctx.agent("spawn01")
    ctx.announce(agent, ctx.worker_spec(["/bin/worker", "emit", '{"spawn":"inline"}']))
    task = ctx.run_single("spawn01", agent)
    notes["task_id"] = task["task_id"]
    check(task.get("state") == "COMPLETED", "task not COMPLETED", task)
    node = task.get("nodes", {}).get("n", {})
    check(node.get("state") == "COMPLETED" and node.get("result") == {"spawn": "inline"},
          "node n not COMPLETED with the worker's result", task)
    return "spawnspec: ref → worker ran, node COMPLETED with its result"


def spawn_02(ctx, notes):
    """https:// and nwp:// refs: each agent's 1-node task completes with the fetched spec's worker."""
    ctx.require_execution()
    if not ctx.args.spec_base_url:
        raise CaseSkipped("needs --spec-base-url (an https URL serving %s; see --print-spawn-spec)" % SPAWN02_FILE)
    https_ref = ctx.args.spec_base_url.rstrip("/") + "/" + SPAWN02_FILE
    nwp_ref = ctx.args.spec_nwp_url or nwp_from_https(https_ref)
    notes["refs"] = {"https": https_ref, "nwp": nwp_ref}
    if ctx.resolver:
        # Known only to the NDP resolver: the runner must resolve it there.
        path = urllib.parse.urlsplit(https_ref).path
        notes["refs"]["nwp-resolved"] = "nwp://%s%s" % (RESOLVED_HOST, path)
    tasks = {}
    for kind, ref in notes["refs"].items():
        agent = ctx.agent("spawn02-" + kind)
        ctx.announce(agent, ref)
        name = "spawn02-" + kind
        frame = task_frame(ctx.task_id(name),
                           [dag_node("n", agent, "nwp://conformance.nps-runner/%s/invoke" % name)],
                           {"max_retries": 0})
        ctx.deposit(ctx.args.inbox, frame)
        tasks[kind] = frame["task_id"]
    notes["task_ids"] = tasks
    for kind, task_id in tasks.items():
        task = ctx.wait_terminal(task_id)
        node = task.get("nodes", {}).get("n", {})
        check(task.get("state") == "COMPLETED" and node.get("result") == SPAWN02_RESULT,
              "%s ref %s: task not COMPLETED with result %s" % (kind, notes["refs"][kind], SPAWN02_RESULT), task)
    if not ctx.resolver:
        notes["ndp_resolve"] = "not checked (no --ndp-resolver-listen)"
        return "https:// and nwp:// refs fetched → both nodes COMPLETED"
    check(ctx.resolver.asked(notes["refs"]["nwp-resolved"]),
          "the runner did not resolve %s through the NDP resolver" % notes["refs"]["nwp-resolved"], ctx.resolver.targets)
    return ("https:// and nwp:// refs fetched, one nwp:// host known only to the NDP resolver (ResolveFrame) "
            "→ all three nodes COMPLETED")


def spawn_03(ctx, notes):
    """Invalid SpawnSpecs: the node FAILED with NOP-SPAWN-SPEC-INVALID (400), the task FAILED."""
    ctx.require_execution(need_image=False)
    image = ctx.args.image or DEFAULT_IMAGE
    invalid = {
        "no-image": spawnspec_ref({"command": ["/bin/true"]}),
        "idle-over-max": spawnspec_ref({"image": image, "command": ["/bin/true"],
                                        "idle_timeout_seconds": 60, "max_runtime_seconds": 30}),
    }
    tasks = {}
    for name, ref in invalid.items():
        agent = ctx.agent("spawn03-" + name)
        ctx.announce(agent, ref)
        frame = task_frame(ctx.task_id("spawn03-" + name),
                           [dag_node("n", agent, "nwp://conformance.nps-runner/spawn03/invoke")])
        ctx.deposit(ctx.args.inbox, frame)
        tasks[name] = frame["task_id"]
    notes["task_ids"] = tasks
    for name, task_id in tasks.items():
        task = ctx.wait_terminal(task_id)
        node = task.get("nodes", {}).get("n", {})
        check(task.get("state") == "FAILED", "%s: task not FAILED" % name, task)
        check(node.get("state") == "FAILED" and node.get("error_code") == "NOP-SPAWN-SPEC-INVALID",
              "%s: node not FAILED with NOP-SPAWN-SPEC-INVALID" % name, task)
        check((node.get("error_status") or {}).get("http") == 400, "%s: node error_status.http is not 400" % name,
              task)
        check(node.get("attempts") == 1, "%s: an invalid spec was retried" % name, task)
    return "no image; idle > max → node FAILED NOP-SPAWN-SPEC-INVALID (400), not retried; task FAILED"


def check_breach(task, code, killed_reason):
    check(task.get("state") == "FAILED", "task not FAILED", task)
    check(task.get("error_code") == code, "task error_code is not " + code, task)
    node = task.get("nodes", {}).get("n", {})
    check(node.get("state") == "FAILED" and node.get("error_code") == code, "node not FAILED with " + code, task)
    check((node.get("error_status") or {}).get("http") == 504, "node error_status.http is not 504", task)
    check(node.get("killed_reason") == killed_reason, "node killed_reason is not " + killed_reason, task)
    # The worker was reaped: its worker event records how its process ended.
    details = [worker_detail(e) for e in task.get("events", []) if e.get("event") == "n:worker"]
    check(len(details) == 1, "not one n:worker event recording the reaped worker", task)
    check(details[0].get("killed_reason") == killed_reason and ("signal" in details[0] or "exit_code" in details[0]),
          "the n:worker event does not record the killed and reaped worker", details[0])
    return details[0]


def worker_detail(event):
    detail = event.get("detail")
    if isinstance(detail, str):
        try:
            detail = json.loads(detail)
        except ValueError:
            detail = {}
    return detail if isinstance(detail, dict) else {}


def life_01(ctx, notes):
    """Idle timeout: a silent worker is killed; node FAILED NOP-RUNTIME-IDLE-TIMEOUT (504)."""
    ctx.require_execution()
    agent = ctx.agent("life01")
    ctx.announce(agent, ctx.worker_spec(["/bin/worker", "sleep", "30"],
                                        idle_timeout_seconds=1, max_runtime_seconds=60))
    started = time.monotonic()
    task = ctx.run_single("life01", agent)
    notes["task_id"] = task["task_id"]
    notes["worker"] = check_breach(task, "NOP-RUNTIME-IDLE-TIMEOUT", "idle_timeout")
    return "silent 1 s → killed (idle_timeout) after %.1f s, node FAILED 504" % (time.monotonic() - started)


def life_02(ctx, notes):
    """Max runtime: a chatty worker is killed at its cap; NOP-RUNTIME-MAX-RUNTIME (504)."""
    ctx.require_execution()
    agent = ctx.agent("life02")
    ctx.announce(agent, ctx.worker_spec(["/bin/worker", "chatter", "30"],
                                        idle_timeout_seconds=2, max_runtime_seconds=3))
    started = time.monotonic()
    task = ctx.run_single("life02", agent)
    notes["task_id"] = task["task_id"]
    notes["worker"] = check_breach(task, "NOP-RUNTIME-MAX-RUNTIME", "max_runtime")
    return "chatty past 3 s → killed (max_runtime) after %.1f s, node FAILED 504" % (time.monotonic() - started)


def dag_01(ctx, notes):
    """A 3-node linear DAG of spawned workers with input_mapping completes; canonical event order."""
    ctx.require_execution()
    frame = linear_dag_frame(ctx.task_id("dag01"), *announce_dag_agents(ctx, "dag"))
    ctx.deposit(ctx.args.inbox, frame)
    task = ctx.wait_terminal(frame["task_id"])
    notes["task_id"] = task["task_id"]
    check(task.get("state") == "COMPLETED", "task not COMPLETED", task)
    check(task.get("error_code") is None, "a COMPLETED task carries an error_code", task)
    check(task.get("aggregate") == {"answer": 4}, "aggregate is not {\"answer\": 4}", task)
    nodes = task.get("nodes", {})
    expected = {"fetch": {"value": 2}, "double": {"value": 4}, "report": {"answer": 4}}
    for node, result in expected.items():
        n = nodes.get(node, {})
        check(n.get("state") == "COMPLETED" and n.get("result") == result and n.get("attempts") == 1,
              "node %s not COMPLETED once with %s" % (node, json.dumps(result)), task)
    canonical = [e for e in event_names(task)
                 if e.startswith("task:") or ":attempt:" in e or e.endswith(":completed")]
    want = ["task:running", "fetch:attempt:1", "fetch:completed", "double:attempt:1", "double:completed",
            "report:attempt:1", "report:completed", "task:completed"]
    notes["canonical_events"] = canonical
    check(canonical == want, "canonical event order differs", {"got": canonical, "want": want})
    if not ctx.task_store:
        notes["task_store"] = "not checked (no --task-store-listen)"
        return "COMPLETED, aggregate {answer: 4}, results 2 → 4 → 4, canonical event order"
    reported = ctx.task_store.node_states(frame["task_id"])
    notes["task_store_patches"] = reported
    want_reports = {"fetch": ["COMPLETED"], "double": ["COMPLETED"], "report": ["COMPLETED"]}
    check(reported == want_reports, "terminal PATCHes to the task store differ",
          {"got": reported, "want": want_reports})
    return ("COMPLETED, aggregate {answer: 4}, results 2 → 4 → 4, canonical event order, "
            "one terminal PATCH per node")


def saga_01(ctx, notes):
    """reserve → charge → ship, ship fails: charge then reserve COMPENSATED, task FAILED."""
    ctx.require_execution()
    reserve, charge, ship = ctx.agent("saga-reserve"), ctx.agent("saga-charge"), ctx.agent("saga-ship")
    ctx.announce(reserve, ctx.worker_spec(["/bin/worker", "emit", '{"reserved":"r-1"}']))
    ctx.announce(charge, ctx.worker_spec(["/bin/worker", "emit", '{"charge_id":"c-9","amount":12}']))
    ctx.announce(ship, ctx.worker_spec(["/bin/worker", "fail", "NOP-DELEGATE-REJECTED"]))
    base = "nwp://conformance.nps-runner/"
    frame = task_frame(ctx.task_id("saga01"), [
        dag_node("reserve", reserve, base + "reserve/invoke", compensate_action=base + "reserve/compensate"),
        dag_node("charge", charge, base + "charge/invoke", ["reserve"], compensate_action=base + "charge/compensate",
                 compensate_params_mapping={"charge_id": "$.charge_id"}),
        dag_node("ship", ship, base + "ship/invoke", ["charge"]),
    ], {"max_retries": 0, "compensation_policy": "best_effort"})
    ctx.deposit(ctx.args.inbox, frame)
    task = ctx.wait_terminal(frame["task_id"])
    notes["task_id"] = task["task_id"]
    check(task.get("state") == "FAILED", "task not FAILED", task)
    check(task.get("error_code") == "NOP-DELEGATE-REJECTED", "task error_code is not ship's", task)
    nodes = task.get("nodes", {})
    states = {n: nodes.get(n, {}).get("state") for n in ("reserve", "charge", "ship")}
    check(states == {"reserve": "COMPENSATED", "charge": "COMPENSATED", "ship": "FAILED"},
          "node states differ: %s" % json.dumps(states), task)
    saga = [e for e in event_names(task) if "compensat" in e]
    want = ["charge:compensating", "charge:compensated", "reserve:compensating", "reserve:compensated"]
    notes["compensation_events"] = saga
    check(saga == want, "compensation order differs", {"got": saga, "want": want})
    if not ctx.task_store:
        notes["task_store"] = "not checked (no --task-store-listen)"
        return "ship FAILED → charge, reserve COMPENSATING → COMPENSATED in reverse order; task FAILED"
    reported = ctx.task_store.node_states(frame["task_id"])
    notes["task_store_patches"] = reported
    want_reports = {"reserve": ["COMPLETED", "COMPENSATING", "COMPENSATED"],
                    "charge": ["COMPLETED", "COMPENSATING", "COMPENSATED"], "ship": ["FAILED"]}
    check(reported == want_reports, "PATCHes to the task store differ", {"got": reported, "want": want_reports})
    return ("ship FAILED → charge, reserve COMPENSATING → COMPENSATED in reverse order; task FAILED; "
            "every node state PATCHed to the task store in order")


CASES = [
    ("TC-N3-Claim-01", claim_01),
    ("TC-N3-Claim-02", claim_02),
    ("TC-N3-Claim-03", claim_03),
    ("TC-N3-Claim-04", claim_04),
    ("TC-N3-Claim-05", claim_05),
    ("TC-N3-Spawn-01", spawn_01),
    ("TC-N3-Spawn-02", spawn_02),
    ("TC-N3-Spawn-03", spawn_03),
    ("TC-N3-Life-01", life_01),
    ("TC-N3-Life-02", life_02),
    ("TC-N3-DAG-01", dag_01),
    ("TC-N3-Saga-01", saga_01),
]


# --------------------------------------------------------------------------
# Driver


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="nps-l3-conformance.py",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__,
        epilog="""\
cases:
  Claim-01..03 use a fresh inbox of their own (--claim-inbox) and the claims/leases
  API with two made-up runner NIDs; they need no worker. Claim-04/05 (the executing
  runner reclaims and resumes; a runner that lost its lease stops and writes nothing
  more), Spawn-01/02, Life-01/02, DAG-01 and Saga-01 deposit tasks into --inbox and
  need the demo worker image;
  Spawn-02 also needs --spec-base-url; Spawn-03 needs only --inbox. A case missing
  an input is SKIP, never PASS.

the demo worker image (in this repository):
  demo/make-image DIR
  nps-runner image import DIR/oci --name nps-demo-worker:1

exit status: 0 when no case FAILED (skips allowed), 1 when one did,
             2 when the runner cannot be reached or the options are wrong.""")
    p.add_argument("--url", default=DEFAULT_URL,
                   help="the runner's API base URL (default %(default)s); with --unix-socket only its path "
                        "prefix is used")
    p.add_argument("--unix-socket", metavar="PATH", help="reach the API over this unix socket instead of TCP")
    p.add_argument("--token", default=os.environ.get("NPS_RUNNER_TOKEN"),
                   help="bearer token for the API (api.token); default $NPS_RUNNER_TOKEN")
    p.add_argument("--inbox", metavar="NID",
                   help="an inbox NID the deployment executes ([runner] inboxes / serve --inbox); "
                        "tasks for the execution cases go there")
    p.add_argument("--image", metavar="REF",
                   help="the demo worker image as named in the deployment, e.g. %s: built with "
                        "demo/make-image and imported with `nps-runner image import DIR/oci --name %s` "
                        "(or pullable by the runner)" % (DEFAULT_IMAGE, DEFAULT_IMAGE))
    p.add_argument("--spec-base-url", metavar="URL",
                   help="https:// base URL under which %s is served, the SpawnSpec printed by "
                        "--print-spawn-spec for the same --image; the runner must be allowed to fetch it "
                        "([spawn] allow_destinations, ca_file) — for TC-N3-Spawn-02" % SPAWN02_FILE)
    p.add_argument("--spec-nwp-url", metavar="URL",
                   help="nwp:// ref of that same SpawnSpec (default: --spec-base-url's host and port as "
                        "nwp://host:port/…/%s, which a runner without [spawn] nwp_resolver_url maps to "
                        "https on the same host and port)" % SPAWN02_FILE)
    p.add_argument("--claim-inbox", metavar="NID",
                   help="inbox for the claim cases; it must NOT be executed by any runner "
                        "(default: a fresh NID per run)")
    p.add_argument("--report", metavar="FILE", default="conformance-report.json",
                   help="write the JSON report here (default %(default)s)")
    p.add_argument("--task-store-listen", metavar="HOST:PORT",
                   help="serve a recording task store here; the runner's [report] task_store_url must be "
                        "http://HOST:PORT/tasks. DAG-01 and Saga-01 then also check the node state PATCHes "
                        "the runner sends it (NPS-5 §3.2)")
    p.add_argument("--ndp-resolver-listen", metavar="HOST:PORT",
                   help="serve an NDP resolver here (ResolveFrame over GET /v1/resolve?target=); the runner's "
                        "[spawn] nwp_resolver_url must be http://HOST:PORT. Spawn-02 then also fetches a "
                        "SpawnSpec by an nwp:// host only that resolver knows")
    p.add_argument("--cases", metavar="LIST",
                   help="comma-separated case ids to run (e.g. Claim-01,DAG-01); default all")
    p.add_argument("--task-timeout", type=float, default=90.0, metavar="S",
                   help="longest wait for a task to end (default %(default)s s; the first spawn may pull or "
                        "unpack the image)")
    p.add_argument("--claim-rounds", type=int, default=10, metavar="N",
                   help="concurrent claim rounds in Claim-01 (default %(default)s)")
    p.add_argument("--print-spawn-spec", action="store_true",
                   help="print the SpawnSpec to serve at <--spec-base-url>/%s for --image, and exit"
                        % SPAWN02_FILE)
    args = p.parse_args(argv)
    if args.claim_rounds < 1:
        p.error("--claim-rounds must be at least 1")
    if args.spec_base_url and not args.spec_base_url.lower().startswith("https://"):
        p.error("--spec-base-url must be an https:// URL")
    if args.spec_nwp_url and not args.spec_nwp_url.lower().startswith("nwp://"):
        p.error("--spec-nwp-url must be an nwp:// URL")
    if args.cases:
        wanted = {c.strip().upper().removeprefix("TC-N3-") for c in args.cases.split(",") if c.strip()}
        known = {name.upper().removeprefix("TC-N3-") for name, _ in CASES}
        unknown = wanted - known
        if unknown:
            p.error("unknown case(s): %s" % ", ".join(sorted(unknown)))
        args.selected = wanted
    else:
        args.selected = None
    return args


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def print_table(results):
    rows = [("case", "result", "seconds", "detail")]
    rows += [(r["case"], r["result"], "%.1f" % r["seconds"], r["detail"]) for r in results]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    for i, r in enumerate(rows):
        print("%-*s  %-*s  %*s  %s" % (w0, r[0], w1, r[1], w2, r[2], r[3]))
        if i == 0:
            print("%s  %s  %s  %s" % ("-" * w0, "-" * w1, "-" * w2, "-" * 6))


def main(argv):
    args = parse_args(argv)
    image = args.image or DEFAULT_IMAGE
    if args.print_spawn_spec:
        print(json.dumps(spawn02_spec(image), indent=2))
        return 0
    try:
        client = Client(args.url, args.token, args.unix_socket)
    except ValueError as e:
        print("nps-l3-conformance: %s" % e, file=sys.stderr)
        return 2
    target = args.unix_socket and "unix:" + args.unix_socket or args.url
    try:
        health = client.call("GET", "/healthz")
    except OSError as e:
        print("nps-l3-conformance: cannot reach the runner at %s: %s" % (target, e), file=sys.stderr)
        return 2
    if health.status != 200 or not isinstance(health.body, dict):
        print("nps-l3-conformance: GET /healthz at %s: %r" % (target, health), file=sys.stderr)
        return 2
    # The API needs the token for everything but /healthz: fail early when it is missing or wrong.
    probe = client.call("GET", "/v1/tasks?limit=1")
    if probe.status == 401:
        print("nps-l3-conformance: the API at %s refuses us (401): pass --token" % target, file=sys.stderr)
        return 2

    ctx = Context(args, client)
    warnings = []
    inboxes = health.body.get("inboxes")
    if args.inbox and isinstance(inboxes, list) and args.inbox not in inboxes:
        warnings.append("--inbox %s is not among this daemon's inboxes %s: another runner process sharing its "
                        "store must execute it" % (args.inbox, inboxes))
    if args.claim_inbox and isinstance(inboxes, list) and args.claim_inbox in inboxes:
        print("nps-l3-conformance: --claim-inbox %s is executed by this daemon; the claim cases need an inbox "
              "no runner claims from" % args.claim_inbox, file=sys.stderr)
        return 2
    for w in warnings:
        print("warning: " + w, file=sys.stderr)

    print("%s conformance against %s (nps-runner %s, runner %s), run %s" % (
        SUITE, target, health.body.get("version", "?"), health.body.get("runner_nid", "?"), ctx.run_id))
    started_at = now_rfc3339()
    results = []
    for name, fn in CASES:
        if args.selected is not None and name.upper().removeprefix("TC-N3-") not in args.selected:
            continue
        notes = {}
        t0 = time.monotonic()
        try:
            detail = fn(ctx, notes)
            result = "PASS"
        except CaseSkipped as e:
            result, detail = "SKIP", str(e)
        except CaseFailed as e:
            result, detail = "FAIL", str(e)
            if e.evidence is not None:
                notes["failure_evidence"] = e.evidence
        except Exception as e:  # a broken connection, an unexpected body: a failure of the case
            result, detail = "FAIL", "%s: %s" % (type(e).__name__, e)
            notes["traceback"] = traceback.format_exc()
        seconds = time.monotonic() - t0
        entry = {"case": name, "title": fn.__doc__.strip(), "result": result, "seconds": round(seconds, 3),
                 "detail": detail}
        if notes:
            entry["evidence"] = notes
        results.append(entry)
        short = detail if len(detail) <= 200 else detail[:200] + "…"
        print("  %-15s %-4s %6.1fs  %s" % (name, result, seconds, short), flush=True)

    # Best effort: no task of ours is left waiting in an inbox or under a lease.
    for task_id in ctx.cleanup:
        try:
            reply = client.call("GET", "/v1/tasks/" + enc(task_id))
            if reply.status == 200 and reply.get("state") not in TERMINAL:
                client.call("POST", "/v1/tasks/%s/cancel" % enc(task_id))
        except OSError:
            pass

    summary = {k: sum(1 for r in results if r["result"] == k) for k in ("PASS", "FAIL", "SKIP")}
    report = {
        "suite": SUITE,
        "suite_version": "0.2",
        "run_id": ctx.run_id,
        "started_at": started_at,
        "finished_at": now_rfc3339(),
        "target": {"url": args.url, "unix_socket": args.unix_socket, "token": bool(args.token)},
        "healthz": health.body,
        "inputs": {"inbox": args.inbox, "image": args.image, "spec_base_url": args.spec_base_url,
                   "spec_nwp_url": args.spec_nwp_url, "claim_inbox": ctx.claim_inbox()},
        "host": {"python": platform.python_version(), "node": platform.node()},
        "warnings": warnings,
        "summary": {"pass": summary["PASS"], "fail": summary["FAIL"], "skip": summary["SKIP"]},
        "passed": summary["FAIL"] == 0,
        "cases": results,
    }
    print()
    print_table(results)
    print()
    print("%d passed, %d failed, %d skipped" % (summary["PASS"], summary["FAIL"], summary["SKIP"]))
    try:
        tmp = args.report + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
        os.replace(tmp, args.report)
        print("report: %s" % os.path.abspath(args.report))
    except OSError as e:
        print("nps-l3-conformance: cannot write the report %s: %s" % (args.report, e), file=sys.stderr)
        return 2
    return 1 if summary["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
