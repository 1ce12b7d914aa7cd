#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Grafana dashboard the packages ship (packaging/grafana/) is valid
dashboard JSON, and every metric its queries name is one a real daemon
exports on GET /metrics (issue 18)."""

import argparse
import json
import re
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
from serve_daemon import start_serve  # noqa: E402

PROMQL_WORDS = {"sum", "rate", "irate", "increase", "max", "min", "avg", "by", "without", "le", "histogram_quantile",
                "count", "topk", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "offset"}


def metric_names(expr):
    """The metric names of a PromQL expression: identifiers outside label
    matchers and range brackets that are not functions or keywords."""
    bare = re.sub(r"\{[^}]*\}", "", re.sub(r"\[[^\]]*\]", "", expr))
    bare = re.sub(r"\b(by|without)\s*\([^)]*\)", "", bare)
    names = set()
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", bare):
        word = m.group(0)
        after = bare[m.end():].lstrip()
        if word in PROMQL_WORDS or after.startswith("(") or word[0].isdigit():
            continue
        names.add(word)
    return names


def exported(metrics_text):
    """Every sample name on the page, and the histogram series of each histogram."""
    names = set()
    for line in metrics_text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            names.add(name)
            if kind == "histogram":
                names.update({name + "_bucket", name + "_sum", name + "_count"})
        elif line and not line.startswith("#"):
            names.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
    return names


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--dashboard", required=True)
    args = parser.parse_args()
    failures = 0

    dashboard = json.loads(Path(args.dashboard).read_text())
    problems = []
    for key in ("title", "uid", "panels", "schemaVersion"):
        if key not in dashboard:
            problems.append(f"no '{key}'")
    ids = [p.get("id") for p in dashboard.get("panels", [])]
    if len(ids) != len(set(ids)):
        problems.append("panel ids repeat")
    queries = [(p["title"], t["expr"]) for p in dashboard.get("panels", []) for t in p.get("targets", [])]
    if not queries:
        problems.append("no queries")
    print(("ok    " if not problems else "FAIL  ") + f"dashboard JSON: {len(ids)} panels, {len(queries)} queries {problems}")
    failures += bool(problems)

    with tempfile.TemporaryDirectory(prefix="nps-grafana-") as state:
        Path(state, "config.toml").write_text('[runner]\ninboxes = ["urn:nps:agent:example.test:grafana"]\n')
        daemon, base, token = start_serve(args.runner, state)
        try:
            with urllib.request.urlopen(base + "/metrics", timeout=10) as response:
                names = exported(response.read().decode())
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
    for title, expr in queries:
        missing = metric_names(expr) - names
        used = metric_names(expr)
        ok = bool(used) and not missing
        print(("ok    " if ok else "FAIL  ") + f"{title}: {expr} " + (f"(not exported: {sorted(missing)})" if missing else ""))
        failures += not ok
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
