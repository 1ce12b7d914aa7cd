#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Watching work live through the real daemon and real sandboxed workers
(docs/api.md "Live feeds", issue 18):

 1. A running node's log: `task logs ID NODE -f` prints each line the worker
    writes while the task still runs, and exits 0 once the node ended; the
    plain GET answers a running node with its live log ("running": true).
 2. GET /v1/tasks/{id}/events?follow=1: text/event-stream, ids ascending from
    1, the worker's and the node's events, then `event: end` with COMPLETED;
    Last-Event-ID resumes after the given seq; a finished task's feed sends
    its log and ends.
 3. GET /v1/events?follow=1 (all tasks) sees a task deposited after it
    opened; a client that goes away is released at once
    (nps_api_live_feeds back to 0).
 4. `task watch ID` prints the events and exits 0 on COMPLETED.

The worker is a busybox shell script in an image made with umoci. Needs
root, umoci and busybox (else 77)."""

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from checks import Checks  # noqa: E402
from serve_daemon import start_serve  # noqa: E402

INBOX = "urn:nps:agent:example.test:live"
AGENT = "urn:nps:agent:example.test:talker"

WORKER = """#!/bin/sh
# Reads its frame, writes three stderr lines 0.5 s apart, then its answer.
read -r frame
i=1
while [ $i -le 3 ]; do
    printf 'line%d\\n' $i >&2
    sleep 0.5
    i=$((i+1))
done
printf '{"seq":0,"is_final":true,"data":{"lines":3}}\\n'
"""


def make_image(work):
    """An OCI layout at work/oci: busybox and the worker as its entrypoint."""
    oci = Path(work, "oci")
    bundle = Path(work, "bundle")
    run = lambda *cmd: subprocess.run(cmd, check=True, capture_output=True)  # noqa: E731
    run("umoci", "init", "--layout", str(oci))
    run("umoci", "new", "--image", f"{oci}:latest")
    run("umoci", "unpack", "--image", f"{oci}:latest", str(bundle))
    bin_dir = Path(bundle, "rootfs", "bin")
    bin_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(shutil.which("busybox"), bin_dir / "busybox")
    for applet in ("sh", "sleep", "printf"):
        os.symlink("busybox", bin_dir / applet)
    Path(bin_dir, "talker").write_text(WORKER)
    os.chmod(bin_dir / "talker", 0o755)
    run("umoci", "repack", "--image", f"{oci}:latest", str(bundle))
    run("umoci", "config", "--image", f"{oci}:latest", "--config.entrypoint", "/bin/talker",
        "--config.env", "PATH=/bin", "--config.user", "65534:65534")
    shutil.rmtree(bundle)
    return oci


class Api:
    def __init__(self, base, token):
        host, port = base.removeprefix("http://").split(":")
        self.host, self.port, self.token = host, int(port), token

    def connect(self, timeout=30):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def headers(self, extra=None):
        return {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json", **(extra or {})}

    def call(self, method, path, body=None):
        conn = self.connect()
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=self.headers())
        response = conn.getresponse()
        raw = response.read()
        conn.close()
        try:
            return response.status, json.loads(raw) if raw.strip() else None
        except ValueError:
            return response.status, raw.decode(errors="replace")

    def open_stream(self, path, extra=None, timeout=30):
        conn = self.connect(timeout)
        conn.request("GET", path, headers=self.headers(extra))
        return conn, conn.getresponse()

    def metric(self, name):
        conn = self.connect()
        conn.request("GET", "/metrics", headers=self.headers())
        text = conn.getresponse().read().decode()
        conn.close()
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None


def iter_sse(response):
    """Yields (id, event type, data JSON) of each event as it arrives, until EOF."""
    event = {"id": None, "type": "message", "data": []}
    while True:
        line = response.fp.readline()
        if not line:
            return
        line = line.decode().rstrip("\r\n")
        if line == "":
            if event["data"]:
                yield event["id"], event["type"], json.loads("\n".join(event["data"]))
            event = {"id": event["id"], "type": "message", "data": []}
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                event["data"].append(value)
            elif field == "id":
                event["id"] = value
            elif field == "event":
                event["type"] = value


def read_sse(response):
    """Every event up to and including `event: end` (or EOF)."""
    events = []
    for event in iter_sse(response):
        events.append(event)
        if event[1] == "end":
            break
    return events


def frame(task_id):
    return {"task_id": task_id,
            "dag": {"nodes": [{"id": "talk", "agent": AGENT, "action": "nwp://example.test/talk/invoke",
                               "input_mapping": {}}]}}


def wait_state(api, task_id, states, seconds=60):
    for _ in range(int(seconds * 20)):
        status, body = api.call("GET", f"/v1/tasks/{task_id}")
        if status == 200 and body["state"] in states:
            return body
        time.sleep(0.05)
    return None


def follow_log(args, base, token, api, t):
    status, _ = api.call("POST", f"/v1/inbox/{INBOX}", frame("log-task"))
    t.check(status == 201, f"log-task deposited ({status})")
    follower = subprocess.Popen([args.runner, "task", "logs", "log-task", "talk", "-f",
                                 "--server", base, "--token", token],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first_line = follower.stdout.readline().strip()
    status, task = api.call("GET", "/v1/tasks/log-task")
    t.check(first_line == "line1", f"the first line arrives through -f ({first_line!r})")
    t.check(task["state"] == "RUNNING", f"... while the task still runs ({task['state']})")
    status, live = api.call("GET", "/v1/tasks/log-task/nodes/talk/log")
    t.check(status == 200 and live.get("running") is True and live["text"].startswith("line1"),
            f"GET …/log answers a running node with its live log ({status} {live})")
    try:
        rest, err = follower.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        follower.kill()
        rest, err = follower.communicate()
    t.check(follower.returncode == 0, f"task logs -f exits 0 when the node ends ({follower.returncode} {err.strip()})")
    t.check(rest.split() == ["line2", "line3"], f"... having printed every later line once ({rest!r})")
    done = wait_state(api, "log-task", {"COMPLETED", "FAILED"})
    t.check(done is not None and done["state"] == "COMPLETED", "log-task COMPLETED")


def task_feed(api, t):
    status, _ = api.call("POST", f"/v1/inbox/{INBOX}", frame("feed-task"))
    t.check(status == 201, f"feed-task deposited ({status})")
    conn, response = api.open_stream("/v1/tasks/feed-task/events?follow=1", timeout=60)
    t.check(response.status == 200 and response.getheader("Content-Type") == "text/event-stream",
            f"the task feed is text/event-stream ({response.status} {response.getheader('Content-Type')})")
    events = read_sse(response)
    conn.close()
    ids = [int(e[0]) for e in events if e[1] == "message"]
    names = [e[2]["event"] for e in events if e[1] == "message"]
    t.check(ids == list(range(1, len(ids) + 1)), f"ids are the task's seq, 1, 2, … ({ids})")
    t.check(names[:2] == ["inbox:deposited", "lease:granted"], f"the log from its start ({names[:3]})")
    t.check("talk:worker" in names and "talk:completed" in names and names[-1] == "task:completed",
            f"the worker's and the node's events, the end last ({names})")
    t.check(events and events[-1][1] == "end" and events[-1][2] == {"task_id": "feed-task", "state": "COMPLETED"},
            f"then `event: end` with the final state ({events[-1] if events else None})")
    t.check(all(e[2]["task_id"] == "feed-task" for e in events), "each event names its task")

    # Resume: after seq 2 the feed starts at 3, and a finished task's feed ends after its log.
    conn, response = api.open_stream("/v1/tasks/feed-task/events?follow=1", {"Last-Event-ID": "2"})
    resumed = read_sse(response)
    conn.close()
    resumed_ids = [int(e[0]) for e in resumed if e[1] == "message"]
    t.check(resumed_ids == ids[2:], f"Last-Event-ID: 2 resumes at seq 3 ({resumed_ids[:3]} …)")
    t.check(resumed and resumed[-1][1] == "end", "a finished task's feed ends after its log")
    status, body = api.call("GET", "/v1/tasks/feed-task/events?after=3")
    t.check(status == 200 and [e["seq"] for e in body["events"]] == ids[3:],
            f"without follow: the JSON slice after a seq ({status})")
    status, body = api.call("GET", "/v1/tasks/no-such-task/events?follow=1")
    t.check(status == 404 and body["error"] == "NOP-TASK-NOT-FOUND", f"an unknown task: 404 ({status})")
    status, body = api.call("GET", "/v1/tasks/feed-task/events?follow=maybe")
    t.check(status == 400 and body["error"] == "NWP-HTTP-PARAM-INVALID", f"a bad follow value: 400 ({status})")


def global_feed(args, base, token, api, t):
    conn, response = api.open_stream("/v1/events?follow=1", timeout=60)
    t.check(response.status == 200, f"the all-tasks feed opens ({response.status})")
    status, _ = api.call("POST", f"/v1/inbox/{INBOX}", frame("global-task"))
    seen = []
    for _, _, data in iter_sse(response):
        seen.append((data["task_id"], data["event"]))
        if ("global-task", "task:completed") in seen:
            break
    t.check(("global-task", "inbox:deposited") in seen and ("global-task", "task:completed") in seen,
            f"it carries a task deposited after it opened ({len(seen)} events)")
    t.check(all(task == "global-task" for task, _ in seen), "only events written after it opened")
    t.check(api.metric("nps_api_live_feeds") == 1, "one live feed open")
    conn.close()  # the client goes away
    released = False
    for _ in range(100):
        if api.metric("nps_api_live_feeds") == 0:
            released = True
            break
        time.sleep(0.02)
    t.check(released, "a client that went away is released at once")

    watch = subprocess.run([args.runner, "task", "watch", "global-task", "--server", base, "--token", token],
                           capture_output=True, text=True, timeout=60)
    lines = watch.stdout.splitlines()
    t.check(watch.returncode == 0 and lines and lines[-1] == "task global-task COMPLETED",
            f"task watch exits 0 on COMPLETED ({watch.returncode} {lines[-1:] if lines else watch.stderr})")
    t.check(any("talk:completed" in line for line in lines), "task watch printed the node's events")


def worker_log_lines(log_path, t):
    """The daemon's JSON log: each worker's start and end once, with the task,
    node, worker and agent as fields."""
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    t.check(lines and all(line.get("level") in ("error", "warning", "notice", "info") for line in lines),
            f"every log line is JSON with a level ({len(lines)} lines)")
    for task in ("log-task", "feed-task", "global-task"):
        mine = [line for line in lines if line.get("task_id") == task and line.get("node_id") == "talk"]
        started = [line for line in mine if " started, pid " in line["message"] and line["message"].endswith(AGENT)]
        ended = [line for line in mine if " ended COMPLETED" in line["message"]]
        t.check(len(started) == 1 and len(ended) == 1,
                f"{task}: its worker's start and end are logged once each ({len(started)}, {len(ended)})")
        t.check(all(line.get("worker", "").startswith("w-") and line.get("agent") == AGENT for line in started + ended),
                f"{task}: with the worker and agent fields")
        t.check(any(line.get("task_id") == task and "node" not in line and line["message"].endswith("COMPLETED")
                    for line in lines), f"{task}: its end is logged with task_id")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    args = parser.parse_args()
    for tool in ("umoci", "busybox"):
        if not shutil.which(tool):
            print(f"skipped: needs {tool} (scripts/install-deps)")
            return 77
    if os.geteuid() != 0:
        print("skipped: needs root (the daemon makes namespaces, cgroups and mounts)")
        return 77
    t = Checks()
    with tempfile.TemporaryDirectory(prefix="nps-live-") as state:
        oci = make_image(state)
        subprocess.run([args.runner, "image", "import", str(oci), "--name", "talker:1", "--state-dir", state],
                       check=True, capture_output=True)
        Path(state, "config.toml").write_text(f'[runner]\ninboxes = ["{INBOX}"]\nlog_format = "json"\n')
        daemon, base, token = start_serve(args.runner, state)
        try:
            api = Api(base, token)
            announce = subprocess.run([args.runner, "announce", AGENT, "--image", "talker:1",
                                       "--server", base, "--token", token], capture_output=True, text=True)
            t.check(announce.returncode == 0, f"the agent is announced ({announce.stderr.strip()})")
            follow_log(args, base, token, api, t)
            task_feed(api, t)
            global_feed(args, base, token, api, t)
            t.check(daemon.poll() is None, "the daemon is still running")
            worker_log_lines(Path(state, "serve.log"), t)
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
            if t.count:
                print(Path(state, "serve.log").read_text())
    return t.exit_status()


if __name__ == "__main__":
    sys.exit(main())
