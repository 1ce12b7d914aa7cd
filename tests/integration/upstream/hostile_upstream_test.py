#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""serve --upstream-npsd against an upstream that answers garbage (issue 17
item 8; docs/upstream.md "Failures"): a listing that is not JSON, not an
object, messages that are not objects, message ids and payloads of the wrong
type, a payload that is no TaskFrame. The daemon stays up and serving; a
message that can never be deposited is acked (so it cannot block the inbox),
a malformed listing is retried, and the good message behind the bad ones is
deposited and acked.

The fake npsd is a Python HTTP server on 127.0.0.1 scripted per request."""

import argparse
import base64
import http.server
import json
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
from serve_daemon import start_serve  # noqa: E402

INBOX = "urn:nps:agent:hostile.test:jobs"
GOOD = {"task_id": "good-1", "dag": {"nodes": [{"id": "a", "action": "nwp://x.test/a/invoke",
                                                   "agent": "urn:nps:agent:x.test:w"}], "edges": []}}


def b64(text):
    return base64.b64encode(text.encode()).decode()


# What the fake npsd answers to successive peeks; the last one repeats.
LISTINGS = [
    "not json at all",
    json.dumps(["an", "array"]),
    json.dumps({"messages": "not an array"}),
    json.dumps({"messages": [{"message_id": 1, "payload_b64": 12345}]}),          # payload of the wrong type
    json.dumps({"messages": [{"message_id": "2", "payload_b64": "!!not base64!!"}]}),
    json.dumps({"messages": [{"message_id": "3", "payload_b64": b64('{"task_id": 7}')}]}),  # not a TaskFrame
    json.dumps({"messages": [{"message_id": "4", "payload_b64": b64("{}"), "content_type": "application/x-nps-frame",
                              "priority": "high", "expires_at": 17}]}),
    json.dumps({"messages": [42, {"message_id": "5"}]}),                           # not an object: batch stops
    json.dumps({"messages": [{"message_id": "6", "payload_b64": b64(json.dumps(GOOD)), "priority": 5}]}),
    json.dumps({"messages": []}),
]


class FakeNpsd(http.server.BaseHTTPRequestHandler):
    peeks = 0
    acks = []
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def do_GET(self):
        with FakeNpsd.lock:
            i = min(FakeNpsd.peeks, len(LISTINGS) - 1)
            FakeNpsd.peeks += 1
        body = LISTINGS[i].encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_DELETE(self):
        with FakeNpsd.lock:
            FakeNpsd.acks.append(self.path.rsplit("/", 1)[-1])
        self.send_response(204)
        self.end_headers()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    args = parser.parse_args()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeNpsd)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}"

    failures = []

    def check(ok, what):
        print(("ok " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="nps-hostile-upstream-") as state:
        # Pulled, not claimed here: the local inbox can be read afterwards.
        Path(state, "config.toml").write_text(
            '[upstream]\nwait_seconds = 1\ninbox = "urn:nps:agent:hostile.test:unclaimed"\n')
        try:
            daemon, base, token = start_serve(args.runner, state, ["--upstream-npsd", upstream])
        except RuntimeError as e:
            print(f"FAIL: {e}")
            return 1
        try:
            def get(path):
                req = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
                with urllib.request.urlopen(req, timeout=5) as r:
                    return r.status, json.loads(r.read() or b"null")

            # The bad listings back off (1, 2, 4, … s); wait for the good message's ack.
            deadline = time.time() + 60
            while time.time() < deadline and "6" not in FakeNpsd.acks:
                time.sleep(0.2)
            with FakeNpsd.lock:
                acks = list(FakeNpsd.acks)
            check(daemon.poll() is None, "the daemon is still running after every bad listing")
            check(get("/healthz")[0] == 200, "/healthz answers 200")
            check(acks[:4] == ["1", "2", "3", "4"], f"messages that can never be deposited are acked ({acks})")
            check("5" not in acks, "a batch with a message that is not an object stops (nothing after it acked)")
            check("6" in acks, "the good message after them is deposited and acked")
            status, task = get("/v1/tasks/good-1")
            check(status == 200, "the good message's task exists locally")
            status, listing = get("/v1/inbox/urn:nps:agent:hostile.test:unclaimed?batch=10")
            check(status == 200 and [m["task_id"] for m in listing["messages"]] == ["good-1"],
                  f"only the good message is in the local inbox ({status} {listing})")
            check(listing.get("messages") and listing["messages"][0]["priority"] == 5,
                  "its upstream priority carried over")
            text = Path(state, "serve.log").read_text()
            check("did not answer {\"messages\": [...]}" in text, "a malformed listing is logged")
            check("refused and dropped upstream" in text, "a dropped message is logged with its error")
        finally:
            daemon.terminate()
            try:
                code = daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                code = "killed"
            check(code == 0, f"SIGTERM stops the daemon cleanly (exit {code})")
            server.shutdown()
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
