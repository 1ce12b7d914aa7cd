#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The systemd unit: `systemd-analyze verify` accepts it (with ExecStart
pointing at the built binary), it keeps the settings the runner depends on,
it sets none of those that would break the runner (packaging/systemd/ says
why for each), and every group of settings is commented."""
import argparse
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import fail, run, skip  # noqa: E402

REQUIRED = {
    "Type": "notify",
    "NotifyAccess": "main",
    "KillMode": "mixed",
    "Delegate": "yes",
    "OOMPolicy": "continue",
    "StateDirectory": "nps-runner",
    "RuntimeDirectory": "nps-runner",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "NoNewPrivileges": "yes",
    "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6 AF_NETLINK",
    "UMask": "0022",
}
PRESENT = ["LimitNOFILE", "CapabilityBoundingSet", "ExecStart", "TimeoutStopSec"]
# Each breaks the runner (the unit's comments say how).
FORBIDDEN = ["RestrictNamespaces", "ProtectHostname", "ProtectControlGroups", "MemoryDenyWriteExecute",
             "RestrictSUIDSGID", "PrivateUsers", "DynamicUser", "User", "PrivateNetwork",
             "ProtectKernelTunables", "ProtectKernelLogs", "LockPersonality", "ProcSubset", "ProtectProc"]
# Capabilities the sandbox and the image store cannot work without.
NEEDED_CAPS = {"CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_CHOWN",
               "CAP_FOWNER", "CAP_DAC_OVERRIDE", "CAP_KILL"}


def parse(text):
    """[(section, key, value, commented)]: commented means the directive's
    group (consecutive directive lines) starts right after a comment line."""
    entries, section, previous = [], None, "blank"
    group_commented = False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            previous = "blank"
            continue
        if stripped.startswith("#"):
            previous = "comment"
            continue
        m = re.match(r"^\[(\w+)\]$", stripped)
        if m:
            section, previous = m.group(1), "section"
            continue
        key, _, value = stripped.partition("=")
        if previous != "directive":
            group_commented = previous == "comment"
        entries.append((section, key.strip(), value.strip(), group_commented))
        previous = "directive"
    return entries


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--unit", required=True)
    parser.add_argument("--runner", required=True)
    args = parser.parse_args()
    text = open(args.unit, encoding="utf-8").read()
    if "@BINDIR@" in text:
        fail(f"{args.unit} still holds @BINDIR@")
    entries = parse(text)
    service = {key: value for section, key, value, _ in entries if section == "Service"}

    problems = []
    for key, value in REQUIRED.items():
        if service.get(key) != value:
            problems.append(f"{key}={value} expected, found {service.get(key)!r}")
    problems += [f"{key}= missing" for key in PRESENT if key not in service]
    problems += [f"{key}= set, but it breaks the runner" for key in FORBIDDEN if key in service]
    caps = set(service.get("CapabilityBoundingSet", "").split())
    if caps & NEEDED_CAPS != NEEDED_CAPS:
        problems.append(f"CapabilityBoundingSet lacks {sorted(NEEDED_CAPS - caps)}")
    problems += [f"[{section}] {key}= is in a group without a comment saying why"
                 for section, key, _, commented in entries
                 if section == "Service" and not commented]
    if not re.match(r"^/\S+/nps-runner serve$", service.get("ExecStart", "")):
        problems.append(f"ExecStart is {service.get('ExecStart')!r}")
    if problems:
        fail("\n  ".join([f"{args.unit}:"] + problems))
    print(f"ok {os.path.basename(args.unit)}: required settings, none that break the runner, all commented")

    analyze = shutil.which("systemd-analyze")
    if not analyze:
        skip("systemd-analyze is not installed (apt-get install systemd): the unit was not verified")
    with tempfile.TemporaryDirectory(prefix="nps-unit-") as tmp:
        unit = os.path.join(tmp, "nps-runner.service")
        runner = os.path.abspath(args.runner)
        with open(unit, "w", encoding="utf-8") as out:
            out.write(re.sub(r"^ExecStart=\S+", f"ExecStart={runner}", text, flags=re.M))
        # --man=no: Documentation= names the pages, which are not installed here.
        done = run([analyze, "verify", "--man=no", unit])
        output = (done.stdout + done.stderr).strip()
        if done.returncode != 0 or output:
            fail(f"systemd-analyze verify: exit {done.returncode}: {output}")
        print("ok systemd-analyze verify")
        done = run([analyze, "security", "--offline=true", "--no-pager", unit])
        score = re.search(r"Overall exposure level for \S+: (.*)", done.stdout + done.stderr)
        print(f"info systemd-analyze security: {score.group(1) if score else 'no score: ' + done.stderr.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
