#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""meson test `tc-n3-suite`: nps-l3-conformance.py against a real daemon.

Starts the built binary ($NPS_RUNNER_BIN) on a scratch state directory with
the demo worker image imported, an HTTPS spec server (tests/support/
spec_server.py, $NPS_TEST_SPEC_SERVER) with a throw-away test CA that the
daemon trusts and whose loopback address it allows for spawn fetches, then
runs every TC-N3 case. Fails unless every case PASSes: here every input is
available, so a SKIP is a failure too. Exits 77 (skip) when the sandboxes
cannot run: not root, or umoci / busybox / openssl missing.

Usage: tc-n3-suite.py [--report FILE]
"""

import argparse
import json
import os
import socket
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
IMAGE = "nps-demo-worker:1"
INBOX = "urn:nps:agent:conformance.test:exec"
SKIP = 77

sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import pg_scratch  # noqa: E402


def unavailable_reason():
    if os.geteuid() != 0:
        return "needs root (namespaces, cgroups, overlay mounts for the workers)"
    for tool, why in (("umoci", "to build the demo image (scripts/install-deps)"),
                      ("busybox", "busybox-static for the demo image (scripts/install-deps)"),
                      ("openssl", "to make the test CA for the https SpawnSpec server")):
        if shutil.which(tool) is None:
            return "needs %s %s" % (tool, why)
    if not os.environ.get("NPS_RUNNER_BIN"):
        return "NPS_RUNNER_BIN is not set (run through meson test)"
    return ""


def run(argv, log):
    with open(log, "ab") as out:
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        with open(log, encoding="utf-8", errors="replace") as f:
            raise RuntimeError("%s failed (%d):\n%s" % (" ".join(argv), done.returncode, f.read()[-4000:]))


def make_pki(d):
    """A test CA and a server certificate for 127.0.0.1 / localhost."""
    log = os.path.join(d, "openssl.log")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    run(["openssl", "req", "-x509", *ec, "-keyout", d + "/ca.key", "-out", d + "/ca.pem", "-days", "2",
         "-subj", "/CN=nps-runner tc-n3 test CA", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"], log)
    with open(d + "/server.ext", "w", encoding="utf-8") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
    run(["openssl", "req", *ec, "-keyout", d + "/server.key", "-out", d + "/server.csr",
         "-subj", "/CN=localhost"], log)
    run(["openssl", "x509", "-req", "-in", d + "/server.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca.key",
         "-CAcreateserial", "-out", d + "/server.pem", "-days", "2", "-extfile", d + "/server.ext"], log)


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise RuntimeError("timed out waiting for " + what)


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def stop(proc, grace=10):
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port():
    """A loopback port free now, for a server the conformance runner starts later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--report", default="conformance-report.json")
    args = parser.parse_args()

    reason = unavailable_reason()
    if reason:
        print("SKIP: " + reason)
        return SKIP
    binary = os.environ["NPS_RUNNER_BIN"]
    spec_server_script = os.environ.get("NPS_TEST_SPEC_SERVER", os.path.join(ROOT, "tests/support/spec_server.py"))
    conformance = os.path.join(HERE, "nps-l3-conformance.py")

    work = tempfile.mkdtemp(prefix="nps-tc-n3-")
    state = os.path.join(work, "state")
    pki = os.path.join(work, "pki")
    os.makedirs(state)
    os.makedirs(pki)
    daemon = specs = None
    serve_log = os.path.join(work, "serve.log")
    try:
        # The SpawnSpec server for Spawn-02, over https with the test CA.
        make_pki(pki)
        spec = subprocess.run([sys.executable, conformance, "--print-spawn-spec", "--image", IMAGE],
                              check=True, capture_output=True, text=True).stdout
        routes = os.path.join(work, "routes.json")
        with open(routes, "w", encoding="utf-8") as f:
            json.dump({"/specs/spawn-02.json": {"body": spec, "headers": {"Content-Type": "application/json"}}}, f)
        port_file = os.path.join(work, "spec-server.port")
        specs = subprocess.Popen([sys.executable, spec_server_script, "--routes", routes,
                                  "--log", os.path.join(work, "spec-server.log"), "--port-file", port_file,
                                  "--cert", pki + "/server.pem", "--key", pki + "/server.key"],
                                 stdin=subprocess.DEVNULL)
        port = wait_for(lambda: read(port_file).strip(), 20, "the spec server")

        # The daemon: executes INBOX; trusts the test CA and the loopback spec
        # server. No api.token: the default, a token serve generates in
        # <state>/api.token, which the suite passes to the runner below.
        # The orchestrator's task store is the conformance runner's recorder
        # (--task-store-listen) on a loopback port picked now; reports sent
        # before it listens are retried by the outbox.
        task_store_port, resolver_port = free_port(), free_port()
        config = os.path.join(state, "config.toml")
        with open(config, "w", encoding="utf-8") as f:
            # lease_seconds 15: renewed every 5 s, so Claim-05's lost lease is noticed soon.
            f.write('[runner]\ninboxes = ["%s"]\nshutdown_grace_seconds = 2\nlease_seconds = 15\n'
                    '[spawn]\nallow_destinations = ["127.0.0.1"]\nca_file = "%s/ca.pem"\n'
                    'nwp_resolver_url = "http://127.0.0.1:%d"\n'
                    '[report]\ntask_store_url = "http://127.0.0.1:%d/tasks"\nretry_initial_ms = 200\n'
                    'retry_max_ms = 1000\n' % (INBOX, pki, resolver_port, task_store_port))
        run([os.path.join(ROOT, "demo/make-image"), os.path.join(work, "image")], os.path.join(work, "image.log"))
        run([binary, "image", "import", os.path.join(work, "image/oci"), "--name", IMAGE,
             "--state-dir", state, "--config", config], os.path.join(work, "image.log"))
        with open(serve_log, "wb") as log:
            # A PostgreSQL pass (tc-n3-suite-pg): the store is a fresh schema
            # of the test server.
            store = ["--store", pg_scratch.scratch_store_url()] if pg_scratch.on_postgres() else []
            daemon = subprocess.Popen([binary, "serve", "--config", config, "--state-dir", state,
                                       "--listen", "127.0.0.1:0", "--socket", os.path.join(state, "api.sock"),
                                       *store],
                                      stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        def ready():
            if daemon.poll() is not None:
                raise RuntimeError("the daemon exited (%d):\n%s" % (daemon.returncode, read(serve_log)))
            text = read(serve_log)
            return "ready" in text and "listening on http://" in text and text

        text = wait_for(ready, 30, "the daemon to be ready")
        url = text[text.index("listening on http://") + len("listening on "):].split()[0]
        token = read(os.path.join(state, "api.token")).strip()
        if not token:
            raise RuntimeError("the daemon generated no %s/api.token" % state)

        # The suite, as a third party runs it.
        argv = [sys.executable, conformance, "--url", url, "--token", token, "--inbox", INBOX, "--image", IMAGE,
                "--spec-base-url", "https://127.0.0.1:%s/specs" % port, "--report", args.report,
                "--task-store-listen", "127.0.0.1:%d" % task_store_port,
                "--ndp-resolver-listen", "127.0.0.1:%d" % resolver_port]
        print("$ " + " ".join(argv), flush=True)
        status = subprocess.run(argv).returncode
        report = json.loads(read(args.report) or "{}")
        not_passed = [c["case"] + " " + c["result"] for c in report.get("cases", []) if c["result"] != "PASS"]
        if status != 0 or not_passed or len(report.get("cases", [])) != 12:
            print("FAIL: runner exit %d; not passed: %s" % (status, ", ".join(not_passed) or "-"))
            print("---- daemon log (tail)\n" + read(serve_log)[-6000:])
            return 1
        print("all %d TC-N3 cases passed" % len(report["cases"]))
        return 0
    except Exception as e:  # a setup step failed: the log says which
        print("FAIL: %s" % e)
        print("---- daemon log (tail)\n" + read(serve_log)[-6000:])
        return 1
    finally:
        stop(daemon, grace=15)
        stop(specs)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
