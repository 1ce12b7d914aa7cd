# SPDX-License-Identifier: Apache-2.0
"""A daemon's HTTP API as the Python tests use it (bearer token, JSON), and
the small encoders they share: path segments, time stamps, inline SpawnSpecs."""

import base64
import datetime
import http.client
import json
import re
import time
import urllib.parse


def enc(segment):
    """A path segment, percent-encoded whole (NIDs hold ':')."""
    return urllib.parse.quote(segment, safe="")


def parse_time(text):
    """An API time stamp (RFC 3339, UTC) as seconds since the epoch."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def spawnspec(image, command, idle_timeout_seconds, max_runtime_seconds):
    """An inline spawnspec reference that runs image's /bin/worker with command."""
    spec = {"image": image, "command": ["/bin/worker", *command],
            "resource_limits": {"memory": "32Mi", "cpu": "500m"},
            "idle_timeout_seconds": idle_timeout_seconds, "max_runtime_seconds": max_runtime_seconds}
    return "spawnspec:" + base64.urlsafe_b64encode(json.dumps(spec).encode()).decode().rstrip("=")


class Api:
    def __init__(self, base, token):
        self.host, port = base.removeprefix("http://").split(":")
        self.port = int(port)
        self.token = token

    def raw(self, method, path, body=None, timeout=30):
        """(status, body text); raises OSError when the daemon does not answer."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
            response = conn.getresponse()
            return response.status, response.read().decode(errors="replace")
        finally:
            conn.close()

    def call(self, method, path, body=None, timeout=30):
        status, text = self.raw(method, path, body, timeout)
        try:
            return status, (json.loads(text) if text.strip() else None)
        except ValueError:
            return status, {"unparsed": text}

    def task(self, task_id):
        try:
            status, body = self.call("GET", f"/v1/tasks/{enc(task_id)}", timeout=10)
        except OSError:
            return None
        return body if status == 200 else None

    def wait_state(self, task_id, states, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            task = self.task(task_id)
            if task and task["state"] in states:
                return task
            time.sleep(0.05)
        return self.task(task_id)

    def health(self):
        """(status, body) of /healthz, or (None, error text) when it does not answer in 5 s."""
        try:
            return self.call("GET", "/healthz", timeout=5)
        except OSError as e:
            return None, str(e)

    def metric(self, name):
        """The value of an unlabelled sample in /metrics, or None."""
        try:
            status, text = self.raw("GET", "/metrics", timeout=5)
        except OSError:
            return None
        if status != 200:
            return None
        found = re.search(r"^" + re.escape(name) + r" (\S+)$", text, re.M)
        return float(found.group(1)) if found else None
