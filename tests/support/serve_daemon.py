# SPDX-License-Identifier: Apache-2.0
"""`nps-runner serve` for the Python tests: started on a state directory with
a TCP listener on a free loopback port and no unix socket, its log in
<state>/serve.log. In a PostgreSQL pass (pg_scratch.on_postgres()) each
state directory gets a fresh schema of the test server as its store
(--store), kept across restarts, unless extra_args names one."""

import re
import subprocess
import time
from pathlib import Path

import pg_scratch


def start_serve(runner, state, extra_args=()):
    """Starts serve --config <state>/config.toml; returns (process, base URL,
    generated token) once it logged "ready", or raises RuntimeError with the log."""
    log_path = Path(state, "serve.log")
    log = open(log_path, "w+")
    if pg_scratch.on_postgres() and "--store" not in extra_args:
        extra_args = (*extra_args, "--store", pg_scratch.store_url_for(str(Path(state).resolve())))
    daemon = subprocess.Popen([runner, "serve", "--config", f"{state}/config.toml", "--state-dir", state,
                               "--listen", "127.0.0.1:0", "--socket", "none", *extra_args],
                              stdout=log, stderr=log)
    for _ in range(300):
        text = log_path.read_text()
        if "ready" in text and "listening on http://" in text:
            # (text or JSON log lines)
            base = re.search(r"listening on (http://[0-9A-Za-z.:\[\]]+)", text).group(1)
            return daemon, base, Path(state, "api.token").read_text().strip()
        if daemon.poll() is not None:
            break
        time.sleep(0.05)
    daemon.kill()
    daemon.wait()
    raise RuntimeError("the daemon did not start:\n" + log_path.read_text())
