# SPDX-License-Identifier: Apache-2.0
"""What the Python benchmarks share: a real `nps-runner serve` on a scratch
state directory, its bearer token, JSON over HTTP, and the demo worker's
agents announced with inline SpawnSpecs."""
import base64
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO_IMAGE = "nps-demo-worker:1"


def spec_ref(command):
    spec = {"image": DEMO_IMAGE, "command": ["/bin/worker", *command]}
    return "spawnspec:" + base64.urlsafe_b64encode(json.dumps(spec).encode()).decode().rstrip("=")


class Daemon:
    """`nps-runner serve` on 127.0.0.1 (an ephemeral port), no unix socket,
    claiming `inboxes`; config.toml holds `config`; `prefix` (a command that
    ends by executing its arguments, so the daemon keeps its pid) is put
    before it. A context manager: the daemon is stopped (SIGTERM) on exit."""

    def __init__(self, runner, state, inboxes, config="", prefix=()):
        self.runner, self.state = runner, state
        with open(os.path.join(state, "config.toml"), "w") as f:
            f.write(config)
        self.log = open(os.path.join(state, "serve.log"), "w+")
        command = [*prefix, runner, "serve", "--config", os.path.join(state, "config.toml"), "--state-dir", state,
                   "--listen", "127.0.0.1:0", "--socket", "none"]
        for nid in inboxes:
            command += ["--inbox", nid]
        self.process = subprocess.Popen(command, stdout=self.log, stderr=self.log)
        self.url, self.token = None, None
        for _ in range(300):
            self.log.seek(0)
            text = self.log.read()
            m = re.search(r"listening on (http://[0-9.:]+)", text)
            if m and "ready" in text:
                self.url = m.group(1)
                with open(os.path.join(state, "api.token")) as f:
                    self.token = f.readline().strip()
                return
            time.sleep(0.05)
        self.stop()
        sys.exit("serve did not start:\n" + text)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)

    def http(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Authorization": "Bearer " + self.token}
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"null")

    def wait_end(self, task_id, timeout=60):
        """Follows the task's event feed (Server-Sent Events) until its end, as
        a client that waits for a task without polling does."""
        url = urllib.parse.urlsplit(self.url)
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
        try:
            connection.request("GET", f"/v1/tasks/{task_id}/events?follow=1",
                               headers={"Authorization": "Bearer " + self.token, "Accept": "text/event-stream"})
            response = connection.getresponse()
            if response.status != 200:
                sys.exit(f"events of {task_id}: HTTP {response.status}: {response.read()[:500]!r}")
            while True:
                line = response.readline()
                if not line:
                    sys.exit(f"events of {task_id}: the feed ended without an end event")
                if line.startswith(b"event: end"):
                    return
        finally:
            connection.close()

    def metrics(self):
        with urllib.request.urlopen(self.url + "/metrics", timeout=30) as r:
            return r.read().decode()

    def announce(self, nid, command):
        self.http("PUT", f"/v1/ndp/announces/{nid}",
                  {"nid": nid, "activation_mode": "ephemeral", "spawn_spec_ref": spec_ref(command)})


def import_demo_image(runner, state, work):
    """Builds the demo worker image under `work` (demo/make-image) and
    imports it into `state`; returns the OCI layout's path."""
    if not os.path.isdir(os.path.join(work, "oci")):
        subprocess.run([os.path.join(ROOT, "demo", "make-image"), work], check=True, stdout=subprocess.DEVNULL)
    image = os.path.join(work, "oci")
    subprocess.run([runner, "image", "import", image, "--name", DEMO_IMAGE, "--state-dir", state],
                   check=True, stdout=subprocess.DEVNULL)
    return image


def unmount_under(path):
    for m in open("/proc/mounts").read().splitlines():
        if path in m.split()[1]:
            subprocess.run(["umount", "-l", m.split()[1]])
