# SPDX-License-Identifier: Apache-2.0
"""The crun peer of the Python benchmarks: the demo worker's OCI bundle and
a way to run crun on this host."""
import json
import os
import subprocess
import sys


def worker_config(base, node, command):
    """The bundle's config.json for the demo worker as `node` running `command`."""
    config = json.loads(json.dumps(base))
    config["process"]["args"] = ["/bin/worker", *command]
    config["process"]["env"] = ["PATH=/bin", "NPS_ACTION=nwp://bench.local/" + node, "NPS_NODE_ID=" + node]
    return config


def unpack_bundle(image_dir, bundle):
    """Unpacks the image (umoci) to `bundle`; returns its config.json, made
    non-interactive with a read-only root (as nps-runner's workers run)."""
    subprocess.run(["umoci", "unpack", "--image", image_dir + ":latest", bundle], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(bundle, "config.json")) as f:
        base = json.load(f)
    base["process"]["terminal"] = False
    base["root"]["readonly"] = True
    return base


def run_peer_script(script, *args):
    """Runs `python3 script ARGS…` where crun can work, returning its stdout
    as JSON. crun 1.8 refuses a hybrid cgroup host, so on one the script runs
    in a mount namespace whose cgroup2 mount is hidden (crun then uses the
    v1 hierarchies, as in bench/spawn); the namespace is made once, not per
    container."""
    hide = "mount -t tmpfs tmpfs /sys/fs/cgroup/unified && " if os.path.isdir("/sys/fs/cgroup/unified") else ""
    command = " ".join([sys.executable, os.path.abspath(script), *map(str, args)])
    out = subprocess.run(["unshare", "-m", "sh", "-c", hide + "exec " + command], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("crun peer failed: " + out.stdout + out.stderr)
    return json.loads(out.stdout)
