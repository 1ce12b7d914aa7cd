# SPDX-License-Identifier: Apache-2.0
"""The Python twin of pg_scratch.hpp: fresh schemas on the throw-away
PostgreSQL server that scripts/test starts (scripts/pg-scratch), for the
PostgreSQL passes of the suites (tests/support/on_postgres.sh sets
NPS_TEST_STORE_BACKEND=postgresql; NPS_TEST_PG_URL names the server).

scratch_store_url() makes an empty schema and returns the server's URL with
that schema as search_path: a store opened with it sees only its own
tables. Every schema made is dropped when the test process exits."""

import atexit
import os
import subprocess
import uuid

_made = []


def on_postgres():
    return os.environ.get("NPS_TEST_STORE_BACKEND") == "postgresql" and bool(os.environ.get("NPS_TEST_PG_URL"))


def server_url():
    return os.environ["NPS_TEST_PG_URL"]


def psql(sql):
    """Runs SQL on the test server; returns its output (unaligned, tuples only)."""
    done = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", server_url(), "-c", sql],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError("psql %r failed: %s" % (sql, done.stderr.strip()))
    return done.stdout


def scratch_store_url():
    name = "nps_test_py_%d_%s" % (os.getpid(), uuid.uuid4().hex[:8])
    psql("CREATE SCHEMA " + name)
    _made.append(name)
    url = server_url()
    return url + ("&" if "?" in url else "?") + "options=-csearch_path%3D" + name


_by_key = {}


def store_url_for(key):
    """One scratch schema per key (a daemon's state directory), so a daemon
    restarted on the same state finds its store again."""
    if key not in _by_key:
        _by_key[key] = scratch_store_url()
    return _by_key[key]


@atexit.register
def _drop_all():
    for name in _made:
        try:
            psql("DROP SCHEMA %s CASCADE" % name)
        except Exception:  # the server may be gone at the end of a failed run
            pass
