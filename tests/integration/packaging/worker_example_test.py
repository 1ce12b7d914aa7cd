#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The shell worker of nps-runner-worker(7) really works: taken from the
page's source, it runs under `nps-runner run --rootfs` in a busybox root file
system and answers with valid ndjson-v1 frames. It runs again with only the
systemd unit's CapabilityBoundingSet and no_new_privs (as the packaged
service would start it), with cgroup limits and in a user namespace, and,
when umoci is there, from an imported image whose layers the runner unpacks
under those capabilities (owners, a setuid file)."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import SKIP, fail, run, skip  # noqa: E402

FRAME = {"frame": "0x42", "parent_task_id": "t-1", "subtask_id": "s-1", "node_id": "n1",
         "target_agent_nid": "urn:nps:agent:example.com:adder", "action": "add",
         "deadline_at": "2030-01-01T00:00:00Z", "params": {"a": 2, "b": 3}}


def worker_from_page(scd):
    """The first literal block after '# EXAMPLE' of the page's scdoc source."""
    text = open(scd, encoding="utf-8").read()
    m = re.search(r"^# EXAMPLE\n.*?^```\n(.*?)^```", text, re.S | re.M)
    if not m or not m.group(1).startswith("#!/bin/sh\n"):
        fail(f"no shell worker found in the EXAMPLE section of {scd}")
    return m.group(1)


def busybox_rootfs(root, worker):
    for sub in ("bin", "proc", "dev", "tmp", "sys", "etc", "root"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    shutil.copy2("/bin/busybox", os.path.join(root, "bin", "busybox"))
    applets = subprocess.run(["/bin/busybox", "--list"], capture_output=True, text=True, check=True).stdout
    for applet in applets.split():
        if applet != "busybox" and "/" not in applet:
            os.symlink("busybox", os.path.join(root, "bin", applet))
    with open(os.path.join(root, "etc", "passwd"), "w", encoding="utf-8") as out:
        out.write("root:x:0:0:root:/root:/bin/sh\n")
    with open(os.path.join(root, "add.sh"), "w", encoding="utf-8") as out:
        out.write(worker)
    os.chmod(root, 0o755)


def check_frames(label, stdout, expect_final):
    """The worker's stdout by the ndjson-v1 rules of nps-runner-worker(7)."""
    frames = []
    for line in stdout.splitlines():
        if not line.lstrip().startswith("{"):
            continue
        frame = json.loads(line)
        if "seq" in frame or "is_final" in frame or "frame" in frame:
            frames.append(frame)
    if not frames:
        fail(f"{label}: no frames on stdout: {stdout!r}")
    for i, frame in enumerate(frames):
        if frame.get("seq") != i or not isinstance(frame.get("seq"), int):
            fail(f"{label}: frame {i} has seq {frame.get('seq')!r}")
        if not isinstance(frame.get("is_final"), bool):
            fail(f"{label}: frame {i} has no boolean is_final")
        if frame["is_final"] != (i == len(frames) - 1):
            fail(f"{label}: only the last frame may be final: {frames}")
        if "data" in frame and "error" in frame:
            fail(f"{label}: frame {i} has both data and error")
    final = {k: v for k, v in frames[-1].items() if k != "seq"}
    if final != expect_final:
        fail(f"{label}: final frame {frames[-1]} is not {expect_final}")
    print(f"ok {label}: {len(frames)} frame(s), final {json.dumps(frames[-1])}")


def run_worker(label, cmd, frame, expect_final, expect_log=None):
    done = subprocess.run(cmd, input=json.dumps(frame, separators=(",", ":")) + "\n",
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        fail(f"{label}: {' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()}")
    check_frames(label, done.stdout, expect_final)
    if expect_log and expect_log not in done.stderr:
        fail(f"{label}: stderr {done.stderr!r} lacks {expect_log!r}")


def unit_bounding_set(unit):
    m = re.search(r"^CapabilityBoundingSet=(.*)$", open(unit, encoding="utf-8").read(), re.M)
    if not m:
        fail(f"{unit} has no CapabilityBoundingSet=")
    caps = [c.lower().removeprefix("cap_") for c in m.group(1).split()]
    return "-all," + ",".join("+" + c for c in caps)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--page", required=True, help="man/nps-runner-worker.7.scd")
    parser.add_argument("--unit", required=True, help="the configured nps-runner.service")
    args = parser.parse_args()
    if os.geteuid() != 0:
        skip("not running as root: the sandbox needs namespaces and mounts")
    if not os.access("/bin/busybox", os.X_OK):
        skip("no /bin/busybox (install busybox-static: scripts/install-deps)")
    probe = run(["unshare", "--pid", "--mount", "--net", "--uts", "--ipc", "--fork", "true"])
    if probe.returncode != 0:
        skip(f"cannot create namespaces here: {probe.stderr.strip()}")
    setpriv = shutil.which("setpriv")
    if not setpriv:
        fail("setpriv (util-linux) is missing: cannot apply the unit's capability bounding set")

    worker = worker_from_page(args.page)
    lines = worker.count("\n")
    if lines > 12:
        fail(f"the page's 'ten-line' shell worker has {lines} lines")
    runner = os.path.abspath(args.runner)
    confined = [setpriv, "--bounding-set", unit_bounding_set(args.unit), "--no-new-privs", "--"]
    answer = {"is_final": True, "data": {"sum": 5}}
    with tempfile.TemporaryDirectory(prefix="nps-worker-") as tmp:
        # As the unit's StateDirectoryMode: in a user namespace the sandbox
        # reaches the root file system as an unprivileged host uid.
        os.chmod(tmp, 0o711)
        rootfs = os.path.join(tmp, "rootfs")
        busybox_rootfs(rootfs, worker)
        base = [runner, "run", "--rootfs", rootfs]
        run_worker("sum", base + ["--env", "NPS_NODE_ID=n1", "--env", "NPS_ATTEMPT=1", "--", "/bin/sh", "/add.sh"],
                   FRAME, answer, expect_log="node n1, attempt 1")
        bad = dict(FRAME, params={"a": 2})
        run_worker("missing parameter", base + ["--", "/bin/sh", "/add.sh"], bad,
                   {"is_final": True, "error": {"code": "BAD-PARAMS", "message": "need a and b"}})
        run_worker("unit's capabilities, no_new_privs, cgroup limits",
                   confined + base + ["--memory", "64Mi", "--pids", "32", "--", "/bin/sh", "/add.sh"],
                   FRAME, answer)
        run_worker("unit's capabilities, user namespace",
                   confined + base + ["--userns", "--user", "1000", "--", "/bin/sh", "/add.sh"], FRAME, answer)

        umoci = shutil.which("umoci")
        if not umoci:
            print("SKIP (in part): no umoci to build an image (scripts/install-deps); the rootfs runs passed")
            return SKIP
        layout, bundle, state = (os.path.join(tmp, n) for n in ("layout", "bundle", "state"))
        for cmd in ([umoci, "init", "--layout", layout], [umoci, "new", "--image", layout + ":t"],
                    [umoci, "unpack", "--image", layout + ":t", bundle]):
            done = run(cmd)
            if done.returncode != 0:
                fail(f"{' '.join(cmd)}: {done.stderr.strip()}")
        image_root = os.path.join(bundle, "rootfs")
        subprocess.run(["cp", "-a", rootfs + "/.", image_root + "/"], check=True)
        os.chmod(os.path.join(image_root, "bin", "busybox"), 0o4755)
        os.makedirs(os.path.join(image_root, "home", "worker"))
        os.chown(os.path.join(image_root, "home", "worker"), 1000, 1000)
        for cmd in ([umoci, "repack", "--image", layout + ":t", bundle],
                    [runner, "image", "import", layout, "--name", "adder:1", "--state-dir", state, "--quiet"]):
            done = run(cmd)
            if done.returncode != 0:
                fail(f"{' '.join(cmd)}: {done.stderr.strip()}")
        # The first run unpacks the layer, here with only the unit's capabilities.
        check = ("stat -c '%a %u' /bin/busybox /home/worker | tr '\\n' ' ' >&2; /bin/sh /add.sh")
        cmd = confined + [runner, "run", "--image", "adder:1", "--state-dir", state, "--user", "1000",
                          "--memory", "64Mi", "--", "/bin/sh", "-c", check]
        run_worker("image unpacked with the unit's capabilities", cmd, FRAME, answer,
                   expect_log="4755 0 755 1000")
    return 0


if __name__ == "__main__":
    sys.exit(main())
