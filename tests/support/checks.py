# SPDX-License-Identifier: Apache-2.0
"""The Python tests' checks: each prints "ok" or "FAIL" with what it checked,
and the test exits 1 if any failed."""


class Checks:
    def __init__(self):
        self.count = 0  # failures

    def __call__(self, ok, what):
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            self.count += 1

    check = __call__

    def exit_status(self):
        print(f"{self.count} failure(s)")
        return 1 if self.count else 0


def check_equal(checks, got, want, what):
    """checks(got == want, what), saying both values when they differ."""
    checks(got == want, what if got == want else f"{what}: got {got!r}, want {want!r}")
