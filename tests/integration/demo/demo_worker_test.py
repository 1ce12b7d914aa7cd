#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""demo/worker.sh, the demo worker, run by busybox sh as its image runs it
(outside any sandbox: what is tested is the script): each mode's answer to
DelegateFrames, including the edge cases of reading params — negative and
missing numbers, a non-number, params nested in another member (the last
"params" object counts), no params at all — and its refusals (no frame, an
unknown mode). Exits 77 when busybox is missing."""
import argparse
import json
import os
import shutil
import subprocess
import sys

SKIP = 77


def frame(params=None, **extra):
    f = {"frame": "0x42", "parent_task_id": "t-1", "subtask_id": "s-1", "node_id": "n1",
         "target_agent_nid": "urn:nps:agent:example.com:w", "action": "go"}
    f.update(extra)
    if params is not None:
        f["params"] = params
    return json.dumps(f, separators=(",", ":"))


def data(value):
    return {"seq": 0, "is_final": True, "data": value}


# (mode arguments, stdin line, the one frame expected on stdout)
CASES = [
    (["emit", '{"value":2}'], frame({}), data({"value": 2})),
    (["double"], frame({"value": 21}), data({"value": 42})),
    (["double"], frame({"a": 1, "value": -7}), data({"value": -14})),
    (["double"], frame({"value": 0}), data({"value": 0})),
    (["double"], frame({"value": 123456}), data({"value": 246912})),
    (["double"], frame({"value": "x"}), data({"value": 0})),      # not a number: as if missing
    (["double"], frame({"other": 5}), data({"value": 0})),
    (["double"], frame({}), data({"value": 0})),
    (["double"], frame(), data({"value": 0})),                    # no params
    (["double"], frame({"value": 3.5}), data({"value": 6})),      # its integer digits
    (["double"], frame({"xvalue": 9, "value": 4}), data({"value": 8})),
    (["report"], frame({"answer": 4}), data({"answer": 4})),
    (["report"], frame({"answer": -12}), data({"answer": -12})),
    (["report"], frame({"value": 4}), data({"answer": None})),
    (["report"], frame(), data({"answer": None})),
    # "params" nested in an earlier member: the frame's own (last) one counts.
    (["report"], frame({"answer": 7}, context={"params": {"answer": 1}}), data({"answer": 7})),
    (["echo"], frame({"a": 1, "b": "x"}), data({"params": {"a": 1, "b": "x"}})),
    (["echo"], frame({}), data({"params": {}})),
    (["echo"], frame(), data({"params": None})),
    (["fail", "E-TEST"], frame({}),
     {"seq": 0, "is_final": True, "error": {"code": "E-TEST", "message": "asked to fail", "retryable": False}}),
]


def run(busybox, worker, args, stdin, action="go"):
    env = {"PATH": os.path.dirname(busybox), "NPS_ACTION": action, "NPS_NODE_ID": "n1"}
    return subprocess.run([busybox, "sh", worker, *args], input=stdin, capture_output=True, text=True, env=env,
                          timeout=30)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--worker", required=True, help="demo/worker.sh")
    args = p.parse_args()
    busybox = shutil.which("busybox") or ("/bin/busybox" if os.path.exists("/bin/busybox") else None)
    if not busybox:
        print("SKIP: busybox is not installed (apt install busybox-static)")
        return SKIP
    failures = []

    def check(what, got, want_frame=None, want_status=0):
        if got.returncode != want_status:
            failures.append(f"{what}: exit {got.returncode}, wanted {want_status} (stderr {got.stderr!r})")
            return
        if want_frame is None:
            return
        lines = got.stdout.splitlines()
        try:
            frames = [json.loads(line) for line in lines]
        except ValueError as e:
            failures.append(f"{what}: stdout is not ndjson ({e}): {got.stdout!r}")
            return
        if frames != [want_frame]:
            failures.append(f"{what}: answered {got.stdout!r}, wanted {json.dumps(want_frame)}")

    for mode, stdin, want in CASES:
        check(f"{' '.join(mode)} <- {stdin}", run(busybox, args.worker, mode, stdin + "\n"), want)
    check("a compensation", run(busybox, args.worker, ["double"], frame({"value": 1}) + "\n", action="go/compensate"),
          data({"compensated": "n1"}))
    got = run(busybox, args.worker, ["double"], "")
    check("no frame on stdin", got, want_status=2)
    if "no DelegateFrame" not in got.stderr:
        failures.append(f"no frame on stdin: stderr {got.stderr!r} does not say so")
    got = run(busybox, args.worker, ["bogus"], frame({}) + "\n")
    check("an unknown mode", got, want_status=2)
    if "unknown mode 'bogus'" not in got.stderr:
        failures.append(f"an unknown mode: stderr {got.stderr!r} does not name it")

    for f in failures:
        print("FAIL:", f)
    print(f"demo worker: {len(CASES) + 3 - len(failures)} of {len(CASES) + 3} cases as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
