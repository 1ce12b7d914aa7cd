#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Completion messages to a TaskFrame's reply_to inbox, through real daemons
(docs/reporting.md "Completion messages", issue 17 item 7):

 1. Without [report] npsd_url: a task with reply_to that completes, fails or
    is cancelled leaves one completion message in this daemon's own inbox of
    that NID (task_id null in the listing; the payload names the task, its
    node_state, lowercase state, error code and aggregate); no claim takes
    it; ack removes it; the task's events say reply:delivered.
 2. A reply_to that is not an NID is refused, naming the field.
 3. The inbox takes other runners' completion messages (the reference
    runner's shape too): 201, the same Idempotency-Key again 200 duplicate,
    a bad node_state 400; none of them is ever claimable.
 4. With npsd_url naming a second daemon (as the npsd) and its token: the
    message lands in that daemon's inbox; with a wrong token the npsd
    refuses (401) and the reply is abandoned with the answer in its event.

The tasks are run as a remote runner would (claims endpoint, node PATCH,
lease complete), so no sandbox is needed."""

import argparse
import base64
import http.client
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
from checks import Checks  # noqa: E402
from serve_daemon import start_serve  # noqa: E402

INBOX = "urn:nps:agent:example.test:work"
ORCHESTRATOR = "urn:nps:agent:example.test:orchestrator"
RUNNER = "urn:nps:node:example.test:remote-runner"


class Api:
    def __init__(self, base, token):
        self.host, port = base.removeprefix("http://").split(":")
        self.port = int(port)
        self.token = token

    def call(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        h = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json", **(headers or {})}
        data = None if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
        conn.request(method, path, body=data, headers=h)
        response = conn.getresponse()
        raw = response.read()
        conn.close()
        return response.status, (json.loads(raw) if raw.strip() else None)

    def events(self, task_id):
        status, body = self.call("GET", f"/v1/tasks/{task_id}/events")
        return body["events"] if status == 200 else []

    def wait_event(self, task_id, name, seconds=20):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            found = [e for e in self.events(task_id) if e["event"] == name]
            if found:
                return found[0]
            time.sleep(0.05)
        return None

    def messages(self, nid):
        status, body = self.call("GET", f"/v1/inbox/{nid}?batch=100")
        return body["messages"] if status == 200 else []


def frame(task_id, **extra):
    return {"task_id": task_id, "reply_to": ORCHESTRATOR,
            "dag": {"nodes": [{"id": "n1", "action": "nwp://example.test/step/invoke",
                               "agent": "urn:nps:agent:example.test:worker"}]}, **extra}


def run_task(api, task_id, state="COMPLETED"):
    """Deposit, claim, report n1 and finish as a remote runner would."""
    status, deposited = api.call("POST", f"/v1/inbox/{INBOX}", frame(task_id))
    assert status == 201, (status, deposited)
    status, lease = api.call("POST", f"/v1/inbox/{INBOX}/claims",
                             {"runner_nid": RUNNER, "lease_seconds": 60, "task_id": task_id})
    assert status == 200, (status, lease)
    node = {"dedup_key": deposited["dedup_key"], "state": state, "attempts": 1, "runner_nid": RUNNER}
    done = {"runner_nid": RUNNER, "state": state}
    if state == "COMPLETED":
        node["result"] = {"answer": task_id}
        done["aggregate"] = {"n1": {"answer": task_id}}
    else:
        node["error"] = {"code": "NOP-WORKER-FAILED", "message": "exit 3"}
        done.update(error_code="NOP-WORKER-FAILED", error_message="node n1 failed")
    status, body = api.call("PATCH", f"/v1/tasks/{task_id}/nodes/n1", node)
    assert status in (200, 201), (status, body)
    status, body = api.call("POST", f"/v1/leases/{task_id}/complete", done)
    assert status == 200, (status, body)


def payload(message):
    return json.loads(base64.b64decode(message["payload_b64"]))


def find_reply(api, task_id, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for m in api.messages(ORCHESTRATOR):
            if m["task_id"] is None and payload(m).get("task_id") == task_id:
                return m
        time.sleep(0.05)
    return None


def local_inbox(api, t):
    run_task(api, "done-1")
    m = find_reply(api, "done-1")
    t(m is not None, "a completed task with reply_to leaves a message in the reply_to inbox")
    if m is None:
        return
    body = payload(m)
    t(m["content_type"] == "application/json" and m["task_id"] is None,
      f"the message is a notice: task_id null, JSON ({m['task_id']}, {m['content_type']})")
    t(body["node_state"] == "COMPLETED" and body["state"] == "completed",
      f"it carries the terminal state, as the reference runner and the SDKs spell it ({body})")
    t(body.get("result") == {"n1": {"answer": "done-1"}}, "it carries the task's aggregate as result")
    t(body["nodes"]["n1"]["state"] == "completed" and "error_code" not in body and "finished_at" in body,
      "its node states and finish time, and no null members")
    event = api.wait_event("done-1", "reply:delivered")
    t(event is not None and event["detail"]["reply_to"] == ORCHESTRATOR,
      f"the task's events say reply:delivered ({event})")

    status, claim = api.call("POST", f"/v1/inbox/{ORCHESTRATOR}/claims", {"runner_nid": RUNNER, "lease_seconds": 30})
    t(status == 204 or (status == 200 and claim in (None, {}, [])) or (status == 200 and not claim.get("task_id")),
      f"no claim takes a completion message ({status} {claim})")
    status, depth = api.call("GET", f"/v1/inbox/{ORCHESTRATOR}/depth")
    t(status == 200 and depth["depth"] == 1, f"the depth counts it ({depth})")
    status, _ = api.call("DELETE", f"/v1/inbox/{ORCHESTRATOR}/{m['message_id']}")
    t(status in (200, 204), f"ack removes it ({status})")
    status, again = api.call("DELETE", f"/v1/inbox/{ORCHESTRATOR}/{m['message_id']}")
    t(status == 404 and again["error"] == "NWP-INBOX-MESSAGE-NOT-FOUND", f"a second ack is not found ({status})")
    t(find_reply(api, "done-1", seconds=0.5) is None, "and the listing no longer has it")

    # A long-poll on the reply_to inbox is answered by the message itself.
    answered = {}

    def long_poll():
        started = time.monotonic()
        status, body = api.call("GET", f"/v1/inbox/{ORCHESTRATOR}?wait=20")
        answered.update(status=status, body=body, seconds=time.monotonic() - started)

    poller = threading.Thread(target=long_poll)
    poller.start()
    time.sleep(0.3)
    run_task(api, "failed-1", state="FAILED")
    poller.join(timeout=30)
    listed = [payload(m)["task_id"] for m in (answered.get("body") or {}).get("messages", [])]
    t(answered.get("status") == 200 and listed == ["failed-1"] and answered["seconds"] < 15,
      f"a parked long-poll on the reply_to inbox is answered with the message ({answered.get('seconds')} s, {listed})")

    m = find_reply(api, "failed-1")
    body = payload(m) if m else {}
    t(body.get("node_state") == "FAILED" and body.get("error_code") == "NOP-WORKER-FAILED"
      and body.get("error_message") == "node n1 failed" and "result" not in body,
      f"a failed task's message has its error ({body})")

    status, _ = api.call("POST", f"/v1/inbox/{INBOX}", frame("cancelled-1"))
    status, _ = api.call("POST", "/v1/tasks/cancelled-1/cancel")
    m = find_reply(api, "cancelled-1")
    body = payload(m) if m else {}
    t(status == 200 and body.get("node_state") == "CANCELLED" and body.get("error_code") == "NOP-TASK-CANCELLED",
      f"a cancelled task's message says CANCELLED ({status} {body})")
    replies = [payload(x)["task_id"] for x in api.messages(ORCHESTRATOR) if x["task_id"] is None]
    t(sorted(replies) == ["cancelled-1", "failed-1"], f"one message per task, none twice ({replies})")


def refusals(api, t):
    status, body = api.call("POST", f"/v1/inbox/{INBOX}", frame("bad-reply", reply_to="orchestrator"))
    t(status == 400 and body["error"] == "NWP-HTTP-FRAME-BODY-MALFORMED" and "reply_to" in body["message"],
      f"a reply_to that is not an NID is refused, naming it ({status} {body})")
    status, body = api.call("GET", "/v1/tasks/bad-reply")
    t(status == 404, "and nothing was stored")


def foreign_messages(api, t):
    # The reference runner's shape (digest §7.3), as another runner would send it.
    reference = {"task_id": "elsewhere-1", "exit_code": 0, "node_state": "COMPLETED",
                 "log_path": "/tmp/nps-runner-logs/elsewhere-1.log", "started_at": "2026-12-03T08:00:00.0000000Z",
                 "finished_at": "2026-12-03T08:00:01.0000000Z"}
    key = {"Idempotency-Key": "elsewhere-1:reply"}
    status, first = api.call("POST", f"/v1/inbox/{ORCHESTRATOR}", reference, key)
    t(status == 201 and first["duplicate"] is False and first["reports_task"] == "elsewhere-1",
      f"another runner's completion message is taken ({status} {first})")
    status, again = api.call("POST", f"/v1/inbox/{ORCHESTRATOR}", reference, key)
    t(status == 200 and again["duplicate"] is True and again["message_id"] == first["message_id"],
      f"the same Idempotency-Key again is a duplicate ({status} {again})")
    listed = [m for m in api.messages(ORCHESTRATOR) if m["message_id"] == first["message_id"]]
    t(len(listed) == 1 and payload(listed[0]) == reference, "it is listed with its members as sent")
    status, claim = api.call("POST", f"/v1/inbox/{ORCHESTRATOR}/claims", {"runner_nid": RUNNER, "lease_seconds": 30})
    t(status == 204 or not (claim or {}).get("task_id"), f"and never claimed ({status} {claim})")
    for bad, what in ((dict(reference, node_state="DONE"), "node_state"),
                      (dict(reference, task_id=""), "task_id"),
                      (dict(reference, node_state=1), "node_state")):
        status, body = api.call("POST", f"/v1/inbox/{ORCHESTRATOR}", bad)
        t(status == 400 and what in body.get("message", ""), f"a completion message with a bad {what} is 400 ({body})")
    status, body = api.call("POST", f"/v1/inbox/{ORCHESTRATOR}", reference, {"Idempotency-Key": "k" * 300})
    t(status == 400, f"an Idempotency-Key over 256 bytes is 400 ({status})")


def through_npsd(runner, npsd_api, npsd_base, npsd_token, t):
    """A second daemon whose [report] npsd_url is the first one."""
    with tempfile.TemporaryDirectory(prefix="nps-reply-b-") as state:
        Path(state, "config.toml").write_text(
            f'[report]\nnpsd_url = "{npsd_base}/"\nnpsd_token = "{npsd_token}"\nretry_initial_ms = 50\n')
        daemon, base, token = start_serve(runner, state)
        try:
            b = Api(base, token)
            run_task(b, "via-npsd")
            m = find_reply(npsd_api, "via-npsd")
            t(m is not None and payload(m)["node_state"] == "COMPLETED",
              "with npsd_url the message lands in the npsd's reply_to inbox")
            t(find_reply(b, "via-npsd", seconds=0.3) is None, "and not in the runner's own")
            event = b.wait_event("via-npsd", "reply:delivered")
            t(event is not None and event["detail"]["npsd"] == npsd_base,
              f"reply:delivered names the npsd ({event})")
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
    with tempfile.TemporaryDirectory(prefix="nps-reply-c-") as state:
        Path(state, "config.toml").write_text(f'[report]\nnpsd_url = "{npsd_base}"\nnpsd_token = "wrong-token"\n')
        daemon, base, token = start_serve(runner, state)
        try:
            c = Api(base, token)
            run_task(c, "refused-by-npsd")
            event = c.wait_event("refused-by-npsd", "reply:abandoned")
            t(event is not None and "401" in event["detail"]["error"],
              f"an npsd that refuses (401) abandons the message, saying why ({event})")
            status, metrics = c.call("GET", "/v1/tasks/refused-by-npsd")
            t(status == 200 and metrics["state"] == "COMPLETED", "the task itself stays COMPLETED")
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    args = parser.parse_args()
    t = Checks()
    with tempfile.TemporaryDirectory(prefix="nps-reply-a-") as state:
        Path(state, "config.toml").write_text("")
        daemon, base, token = start_serve(args.runner, state)
        try:
            api = Api(base, token)
            local_inbox(api, t)
            refusals(api, t)
            foreign_messages(api, t)
            through_npsd(args.runner, api, base, token, t)
            t(daemon.poll() is None, "the daemon is still running")
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
            if t.count:
                print(Path(state, "serve.log").read_text()[-4000:])
    return t.exit_status()


if __name__ == "__main__":
    sys.exit(main())
