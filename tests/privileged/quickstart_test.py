#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""docs/quickstart.md, followed word for word: every ```sh block of it, in
order, as one bash script under `set -e`, with HOME a fresh directory and the
nps-runner under test first on PATH. It must run to its end, print the
invoke's {"words":3}, and leave first-task.json showing the submitted task
COMPLETED with {"words":4}. Needs root, umoci and busybox (else 77)."""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--doc", required=True)
    args = parser.parse_args()
    for tool in ("umoci", "busybox"):
        if not shutil.which(tool):
            print(f"skipped: needs {tool} (scripts/install-deps)")
            return 77
    if os.geteuid() != 0:
        print("skipped: needs root (the daemon makes namespaces, cgroups and mounts)")
        return 77

    doc = Path(args.doc).read_text()
    blocks = re.findall(r"^```sh\n(.*?)^```", doc, re.S | re.M)
    python_workers = re.findall(r"^```python\n(.*?)^```", doc, re.S | re.M)
    script = "set -e\n" + "\n".join(blocks)
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        failures += not ok

    check(len(blocks) >= 8, f"{len(blocks)} shell blocks in the quickstart")
    # The Python worker (its image needs Python, which is not here offline):
    # run as the runner would run it, one DelegateFrame line in.
    check(len(python_workers) == 1, "one Python worker in the quickstart")
    if python_workers:
        frame = {"frame": "0x43", "task_id": "t", "subtask_id": "s", "params": {"text": "one two three four five"}}
        with tempfile.TemporaryDirectory(prefix="nps-quickstart-py-") as tmp:
            worker = Path(tmp, "wc-worker.py")
            worker.write_text(python_workers[0])
            done = subprocess.run([sys.executable, str(worker)], input=json.dumps(frame) + "\n",
                                  capture_output=True, text=True, timeout=30)
        answer = json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else {}
        check(answer == {"seq": 0, "is_final": True, "data": {"words": 5}},
              f"the Python worker answers a DelegateFrame with a final frame ({done.stdout.strip()} {done.stderr.strip()})")
    with tempfile.TemporaryDirectory(prefix="nps-quickstart-") as home:
        bin_dir = Path(home, "bin")
        bin_dir.mkdir()
        Path(bin_dir, "nps-runner").symlink_to(Path(args.runner).resolve())
        env = dict(os.environ, HOME=home, PATH=f"{bin_dir}:{os.environ['PATH']}")
        env.pop("NPS_RUNNER_SERVER", None)
        shell = subprocess.Popen(["bash", "-c", script], cwd=home, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            out, _ = shell.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            out = "(timed out)"
        finally:
            try:
                os.killpg(shell.pid, signal.SIGKILL)  # the daemon too, if the script stopped early
            except ProcessLookupError:
                pass
            shell.wait()
        print(out)
        check(shell.returncode == 0, f"the quickstart runs to its end (exit {shell.returncode})")
        check('{"words":3}' in out.splitlines(), "invoke printed {\"words\":3}")
        check("task first-task COMPLETED" in out.splitlines(), "task watch followed first-task to its end")
        check(any("count:completed" in line for line in out.splitlines()), "task watch printed the node's events")
        task_file = Path(home, "first-worker", "first-task.json")
        task = json.loads(task_file.read_text()) if task_file.exists() else {}
        check(task.get("state") == "COMPLETED", f"first-task is COMPLETED ({task.get('state')})")
        check(task.get("nodes", {}).get("count", {}).get("result") == {"words": 4},
              f"its node counted four words ({task.get('nodes', {}).get('count', {}).get('result')})")
        log = Path(home, "first-worker", "serve.log")
        if failures and log.exists():
            print(log.read_text())
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
