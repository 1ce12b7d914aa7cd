#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""serve speaks sd_notify to systemd (issue 18): READY=1 once serving,
WATCHDOG=1 pings from the event loop at half of WATCHDOG_USEC, STATUS= with a
one-line summary, RELOADING=1 then READY=1 around a SIGHUP reload, and
STOPPING=1 on SIGTERM. The notify socket is one this test binds."""

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    args = parser.parse_args()
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        failures += not ok

    with tempfile.TemporaryDirectory(prefix="nps-notify-") as state:
        sock_path = f"{state}/notify.sock"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(sock_path)
        sock.settimeout(0.2)
        Path(state, "config.toml").write_text("")
        env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC="400000")
        log = open(f"{state}/serve.log", "w+")
        daemon = subprocess.Popen([args.runner, "serve", "--config", f"{state}/config.toml", "--state-dir", state,
                                   "--listen", "127.0.0.1:0", "--socket", "none"],
                                  stdout=log, stderr=log, env=env)
        messages = []

        def collect(seconds):
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                try:
                    messages.append(sock.recv(4096).decode())
                except socket.timeout:
                    pass

        def wait_for(prefix, seconds=15):
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                if any(m.startswith(prefix) or ("\n" + prefix) in m for m in messages):
                    return True
                collect(0.2)
            return False

        try:
            check(wait_for("READY=1"), "READY=1 once serving")
            messages.clear()
            collect(2.0)
            pings = sum(m.count("WATCHDOG=1") for m in messages)
            check(3 <= pings <= 12, f"WATCHDOG=1 about every 200 ms (WATCHDOG_USEC 400 ms): {pings} in 2 s")
            statuses = [m for m in messages if "STATUS=" in m]
            check(bool(statuses) and "task" in statuses[-1], f"STATUS= summary: {statuses[-1:]!r}")
            messages.clear()
            daemon.send_signal(signal.SIGHUP)
            check(wait_for("RELOADING=1"), "RELOADING=1 on SIGHUP")
            reload_index = next(i for i, m in enumerate(messages) if "RELOADING=1" in m)
            messages[:] = messages[reload_index + 1:]
            check(wait_for("READY=1"), "READY=1 after the reload")
            daemon.send_signal(signal.SIGTERM)
            check(wait_for("STOPPING=1"), "STOPPING=1 on SIGTERM")
            daemon.wait(timeout=30)
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
        if failures:
            print(Path(state, "serve.log").read_text())
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
