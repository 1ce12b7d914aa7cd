# SPDX-License-Identifier: Apache-2.0
"""The start of a Python test's main(): its arguments, its skip and its
unwinding on SIGTERM, the same in every test that uses it."""

import argparse
import signal
import sys

SKIP = 77  # meson's "skipped"


def runner_test_args(unavailable_reason=lambda: ""):
    """Parses --runner (required). If unavailable_reason() names something
    this machine lacks, prints "SKIP: <reason>" and exits 77. Then makes
    SIGTERM (meson's timeout) raise SystemExit, so the test's finally blocks
    stop the servers and daemons it started. Returns the parsed arguments."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    args = parser.parse_args()
    reason = unavailable_reason()
    if reason:
        print("SKIP: " + reason)
        sys.exit(SKIP)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    return args
