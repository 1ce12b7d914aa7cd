#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The unmodified official Python SDK's NopClient against the real daemon.

Needs a checkout of labacacia/NPS-sdk-py (its `nps_sdk` package) named by
NPS_SDK_PY_DIR, and its dependencies httpx and msgpack (Debian:
python3-httpx python3-msgpack python3-cryptography); exits 77 saying which is
missing. The SDK is imported from there, never copied into this repository.

Submits a TaskFrame with NopClient.submit (an NCP MsgPack frame to POST
/task), reads it with get_status, cancels it and waits for the terminal state,
giving the daemon's token as the base URL's password (docs/api.md, "SDK
routes").
"""
import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
from serve_daemon import start_serve  # noqa: E402

SKIP = 77
INBOX = "urn:nps:agent:sdk-py.test:worker"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runner", required=True)
    args = p.parse_args()
    sdk = os.environ.get("NPS_SDK_PY_DIR")
    if not sdk or not (Path(sdk) / "nps_sdk" / "nop" / "client.py").is_file():
        print("SKIP: set NPS_SDK_PY_DIR to a checkout of labacacia/NPS-sdk-py to run its NopClient")
        return SKIP
    sys.path.insert(0, sdk)
    try:
        from nps_sdk.nop import frames, models
        from nps_sdk.nop.client import NopClient
    except ImportError as e:
        print(f"SKIP: the SDK's dependencies are missing ({e}): apt install python3-httpx python3-msgpack")
        return SKIP

    with tempfile.TemporaryDirectory(prefix="nps-sdk-py-") as state:
        Path(state, "config.toml").write_text(f'[api]\ntask_inbox = "{INBOX}"\n')
        try:
            daemon, base, token = start_serve(args.runner, state)
        except RuntimeError as e:
            print(f"FAIL: {e}")
            return 1
        try:
            host = base.removeprefix("http://")
            return asyncio.run(exercise(NopClient(f"http://nps:{token}@{host}"), frames, models))
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)


async def exercise(client, frames, models):
    dag = models.TaskDag(nodes=[models.DagNode(id="a", action="nwp://x.example/a", agent="urn:nps:agent:x:a")],
                         edges=[])
    task_id = await client.submit(frames.TaskFrame(task_id="sdk-py-1", dag=dag))
    failures = []
    if task_id != "sdk-py-1":
        failures.append(f"submit returned {task_id!r}")
    status = await client.get_status(task_id)
    if status.state.value != "pending" or status.is_terminal:
        failures.append(f"status after submit: {status.raw}")
    await client.cancel(task_id)
    status = await client.wait(task_id, timeout=10)
    if status.state.value != "cancelled" or status.error_code != "NOP-TASK-CANCELLED":
        failures.append(f"status after cancel: {status.raw}")
    for f in failures:
        print("FAIL: " + f)
    if not failures:
        print("ok: NopClient submit, get_status, cancel, wait against the daemon")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
