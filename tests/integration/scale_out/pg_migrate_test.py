#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`nps-runner store migrate` (src/cli/verb_store.cpp) and the schema checks
`serve` shares with it (docs/scale-out.md "Schema versions"), on fresh
schemas of the test server (pg_scratch.scratch_store_url()). The latest
schema version is never written down here: it is read from the first
migrate's own output, and checked against nps_meta.

 1. An empty schema: migrate exits 0, creates the tables (nps_meta says
    application nps-runner and the version it printed) and prints
    "<url>: schema version N (the latest this nps-runner knows)".
 2. A second run exits 0, prints the same and changes nothing (the catalogue
    and nps_meta's rows, their xmin included, are as before).
 3. `serve` then starts on that schema, /healthz reports schema_version N,
    and it stops cleanly (SIGTERM, exit 0).
 4. Four `store migrate` started at once on one empty schema all exit 0 on
    one schema, the same as a single migrate makes.
 5. A schema whose nps_meta.schema_version is N + 5: migrate and serve both
    refuse it (exit 1, "schema version N+5 is newer than this nps-runner
    supports (N); upgrade nps-runner"), and the schema is unchanged.
 6. A schema holding a table that is not nps-runner's, and one whose
    nps_meta names another application: both refused by migrate and serve
    (exit 1, the message names the schema and why), both left untouched.
 7. A URL that points at no server (a socket directory without one, a TCP
    port nobody listens on): exit 1 within 5 s with "cannot connect" (no
    crash, no hang); serve likewise. Usage errors exit 2.
 8. A URL with a password (postgresql://user:PASSWORD@/db?host=…, and a
    password= query parameter): the password appears in no output of
    migrate (success, refusal, unreachable, unknown role), serve's log,
    /healthz's store location or `config check` (text and --json); the
    URL is shown with "***" in its place.
 9. An upgrade: a schema made by migration 1 alone (its SQL read from
    src/store/postgres/pg_schema.cpp, as a runner of that version made it),
    holding a task claimed under it. migrate brings it to the latest version,
    says so on stderr ("migrated from version 1 to N"), keeps the task and its
    events, and the upgraded schema logs the task's completion like a new one.

A PostgreSQL-only test: through tests/support/on_postgres.sh (skips, 77,
without the test server). Needs psql (else 77, saying so)."""

import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
import pg_scratch  # noqa: E402
from checks import Checks, check_equal  # noqa: E402
from serve_daemon import start_serve  # noqa: E402
from test_entry import runner_test_args  # noqa: E402

PASSWORD = "n0t-echoed?Pw4711"  # libpq allows '?' in a URI password
INBOX = "urn:nps:agent:migrate.test:inbox"
REPORT = re.compile(r"^(?P<where>.+): schema version (?P<version>\d+) \(the latest this nps-runner knows\)$")


def unavailable_reason():
    if not pg_scratch.on_postgres():
        return "a PostgreSQL pass only (run through tests/support/on_postgres.sh with NPS_TEST_PG_URL)"
    if shutil.which("psql") is None:
        return "needs psql (scripts/install-deps)"
    return ""


def schema_of(url):
    return urllib.parse.unquote(url).rsplit("search_path=", 1)[1]


def with_password(url, password, user=None):
    """url with `password` in its userinfo: postgresql://USER:PASSWORD@host/db?…
    (USER: `user`, else the URL's userinfo or user= parameter, which is then dropped)."""
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    user = user or parts.username or dict(query).get("user") or "postgres"
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    query = [(k, v) for k, v in query if k not in ("user", "password")]
    netloc = f"{urllib.parse.quote(user, safe='')}:{password}@{host}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, urllib.parse.urlencode(query, safe="/"), ""))


def snapshot(schema):
    """Everything a migration could change in a schema: its relations,
    columns, indexes, functions, triggers, and nps_meta's rows with their
    xmin (an UPDATE that writes the same value still changes it)."""
    q = schema.replace("'", "''")
    text = pg_scratch.psql(
        "SELECT 'rel', c.relname::text, c.relkind::text "
        f"  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '{q}' "
        "UNION ALL SELECT 'col', table_name || '.' || column_name, data_type::text "
        f"  FROM information_schema.columns WHERE table_schema = '{q}' "
        f"UNION ALL SELECT 'idx', indexname::text, indexdef FROM pg_indexes WHERE schemaname = '{q}' "
        "UNION ALL SELECT 'fn', p.proname::text, md5(p.prosrc) "
        f"  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = '{q}' "
        "UNION ALL SELECT 'trg', t.tgname::text, c.relname::text "
        "  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        f"  WHERE n.nspname = '{q}' AND NOT t.tgisinternal "
        "ORDER BY 1, 2, 3")
    if "rel|nps_meta|r" in text.splitlines():
        text += pg_scratch.psql(f'SELECT key, value, xmin FROM "{schema}".nps_meta ORDER BY key')
    return text


def shape(schema):
    """The schema's tables and columns, without its name: to compare two schemas."""
    return pg_scratch.psql(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        f"WHERE table_schema = '{schema}' ORDER BY 1, 2")


def meta(schema):
    return dict(line.split("|", 1) for line in
                pg_scratch.psql(f'SELECT key, value FROM "{schema}".nps_meta').splitlines() if line)


class Cli:
    def __init__(self, runner, work):
        self.runner = runner
        self.state = work / "state"
        self.state.mkdir()
        self.config = self.state / "config.toml"  # where start_serve looks
        self.config.write_text(f'[runner]\ninboxes = ["{INBOX}"]\nshutdown_grace_seconds = 2\n')
        self.outputs = []  # every output, for the password check

    def run(self, *args, timeout=60):
        """(exit status, stdout, stderr, seconds) of nps-runner ARGS."""
        t0 = time.monotonic()
        try:
            done = subprocess.run([self.runner, *args], capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
            result = (done.returncode, done.stdout, done.stderr, time.monotonic() - t0)
        except subprocess.TimeoutExpired as e:  # (its output comes as bytes)
            result = (None, (e.stdout or b"").decode(errors="replace"), (e.stderr or b"").decode(errors="replace"),
                      time.monotonic() - t0)
        self.outputs.append((" ".join(args[:2]), result[1] + result[2]))
        return result

    def migrate(self, url, timeout=60):
        return self.run("store", "migrate", "--config", str(self.config), "--state-dir", str(self.state),
                        "--store", url, timeout=timeout)

    def serve_refused(self, url, timeout=20):
        """(exit status, output, seconds) of a serve that should refuse to start."""
        state = tempfile.mkdtemp(prefix="serve-", dir=self.state)
        rc, out, err, seconds = self.run("serve", "--config", str(self.config), "--state-dir", state,
                                         "--listen", "127.0.0.1:0", "--socket", "none", "--store", url,
                                         timeout=timeout)
        return rc, out + err, seconds


def first_migration_sql():
    """Migration 1's SQL, as the store's source holds it (the first raw string
    of kMigrations in src/store/postgres/pg_schema.cpp)."""
    source = (Path(__file__).resolve().parents[3] / "src/store/postgres/pg_schema.cpp").read_text()
    start = source.index('R"sql(', source.index("kMigrations")) + len('R"sql(')
    return source[start:source.index(')sql"', start)]


def upgrade_from_version_1(checks, cli, latest):
    """Section 9: a version-1 schema with a task in it, migrated."""
    url = pg_scratch.scratch_store_url()
    schema = schema_of(url)
    pg_scratch.psql(f"SET search_path = {schema};"
                    "CREATE TABLE nps_meta (key text PRIMARY KEY, value text NOT NULL);"
                    "INSERT INTO nps_meta VALUES ('application', 'nps-runner'), ('schema_version', '1');" +
                    first_migration_sql())
    # A task deposited and claimed under version 1 (its row trigger logs the claim).
    pg_scratch.psql(f"SET search_path = {schema};"
                    "INSERT INTO tasks (task_id, nid, content_type, priority, enqueued_at, expires_at, queue, state, "
                    "dag_hash, dedup_key, frame_hash, created_at, updated_at) VALUES ('up-1', "
                    f"'{INBOX}', 'application/json', 0, 1000, 9000000000000, 'queued', 'PENDING', 'd', 'k', 'f', "
                    "1000, 1000);"
                    "UPDATE tasks SET lease_owner = 'urn:nps:node:migrate.test:r1', lease_expiry = 9000000000000, "
                    "claims = 1, state = 'RUNNING', updated_at = 2000 WHERE task_id = 'up-1';")
    events_v1 = pg_scratch.psql(f"SELECT name || ' ' || detail FROM {schema}.events ORDER BY seq").split("\n")
    check_equal(checks, [e.split(" ")[0] for e in events_v1 if e], ["inbox:deposited", "lease:granted"],
                "version 1: the deposit and the claim are logged")
    rc, out, err, seconds = cli.migrate(url)
    print(f"  upgrade ({seconds:.2f} s): {out.strip()} {err.strip()}")
    check_equal(checks, rc, 0, "migrate of a version-1 schema exits 0")
    checks(f"migrated from version 1 to {latest}" in err, f"migrate says it migrated from 1 to {latest} ({err.strip()})")
    check_equal(checks, meta(schema)["schema_version"], str(latest), "nps_meta holds the latest version")
    # The task's completion, on the upgraded schema, is logged like any other.
    pg_scratch.psql(f"SET search_path = {schema};"
                    "UPDATE tasks SET queue = 'done', state = 'COMPLETED', lease_owner = NULL, lease_expiry = 0, "
                    "updated_at = 3000 WHERE task_id = 'up-1';")
    events = [e for e in pg_scratch.psql(f"SELECT name || ' ' || detail FROM {schema}.events ORDER BY seq")
              .split("\n") if e]
    check_equal(checks, events, [e for e in events_v1 if e] +
                ['task:completed {"runner_nid":"urn:nps:node:migrate.test:r1"}'],
                "the upgraded schema keeps the events and logs the completion")
    rc, out, err, seconds = cli.migrate(url)
    check_equal(checks, (rc, err), (0, ""), "a second migrate of the upgraded schema is silent")


def refused(checks, cli, url, schema, before, needles, what):
    """migrate and serve both refuse url (exit 1, a message holding every
    needle), and the schema is as `before`."""
    rc, out, err, seconds = cli.migrate(url)
    message = err.strip()
    print(f"  migrate: {message}")
    check_equal(checks, rc, 1, f"{what}: migrate exits 1")
    checks(all(n in message for n in needles), f"{what}: migrate says why ({', '.join(needles)})")
    check_equal(checks, out, "", f"{what}: migrate prints nothing on stdout")
    rc, output, seconds = cli.serve_refused(url)
    print(f"  serve: {output.strip().splitlines()[-1] if output.strip() else ''}")
    check_equal(checks, rc, 1, f"{what}: serve refuses to start (exit 1, after {seconds:.2f} s)")
    checks(all(n in output for n in needles), f"{what}: serve says why")
    check_equal(checks, snapshot(schema), before, f"{what}: the schema is unchanged")


def main():
    args = runner_test_args(unavailable_reason)
    checks = Checks()
    work = Path(tempfile.mkdtemp(prefix="nps-pg-migrate-"))
    daemon = None
    try:
        cli = Cli(args.runner, work)

        # 1. An empty schema.
        url_a = pg_scratch.scratch_store_url()
        schema_a = schema_of(url_a)
        check_equal(checks, snapshot(schema_a), "", "a fresh schema is empty")
        rc, out, err, seconds = cli.migrate(url_a)
        print(f"  first migrate ({seconds:.2f} s): {out.strip()} {err.strip()}")
        check_equal(checks, rc, 0, "migrate on an empty schema exits 0")
        reported = REPORT.match(out.strip())
        checks(reported is not None and reported["where"] == url_a,
               "migrate reports the store and the schema version it brought it to")
        latest = int(reported["version"]) if reported else None
        check_equal(checks, err, "", "migrate on an empty schema writes nothing on stderr")
        tables = set(pg_scratch.psql("SELECT table_name FROM information_schema.tables "
                                     f"WHERE table_schema = '{schema_a}'").split())
        checks({"nps_meta", "tasks", "events"} <= tables, f"migrate created the tables ({len(tables)}: "
                                                        f"{', '.join(sorted(tables))})")
        if latest is None:
            raise RuntimeError("no schema version in the first migrate's output: nothing more to compare")
        checks(latest >= 1, f"the reported schema version, {latest}, is at least 1")
        check_equal(checks, meta(schema_a), {"application": "nps-runner", "schema_version": str(latest)},
                    "nps_meta names nps-runner and the reported version")

        # 2. Again: nothing to do.
        before = snapshot(schema_a)
        rc, out2, err, seconds = cli.migrate(url_a)
        print(f"  second migrate ({seconds:.2f} s): {out2.strip()}")
        check_equal(checks, rc, 0, "a second migrate exits 0")
        check_equal(checks, out2, out, "a second migrate reports the same version, the latest it knows")
        check_equal(checks, snapshot(schema_a), before, "a second migrate changed nothing (nps_meta's xmin included)")

        # 3. serve on the migrated schema.
        daemon, base, _token = start_serve(args.runner, str(cli.state), ("--store", url_a))
        with urllib.request.urlopen(base + "/healthz", timeout=10) as response:
            health = json.loads(response.read())
        check_equal(checks, (health.get("status"), health.get("schema_version")), ("ok", latest),
                    "serve starts on the migrated schema, /healthz reports its version")
        daemon.send_signal(signal.SIGTERM)
        check_equal(checks, daemon.wait(timeout=30), 0, "serve stops cleanly (SIGTERM)")
        daemon = None
        check_equal(checks, snapshot(schema_a), before, "serve did not migrate again")

        # 9. An upgrade from version 1.
        upgrade_from_version_1(checks, cli, latest)

        # 4. Four at once on one empty schema.
        url_b = pg_scratch.scratch_store_url()
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda _: cli.migrate(url_b), range(4)))
        check_equal(checks, [r[0] for r in results], [0] * 4, "four concurrent migrates all exit 0")
        check_equal(checks, {r[1] for r in results}, {out.replace(url_a, url_b)},
                    "four concurrent migrates all report the latest version")
        check_equal(checks, shape(schema_of(url_b)), shape(schema_a), "four concurrent migrates made one schema, "
                    "the same as a single migrate")
        check_equal(checks, meta(schema_of(url_b)), {"application": "nps-runner", "schema_version": str(latest)},
                    "four concurrent migrates: nps_meta as after one")

        # 5. A schema newer than this build.
        url_c = pg_scratch.scratch_store_url()
        schema_c = schema_of(url_c)
        check_equal(checks, cli.migrate(url_c)[0], 0, "migrate a schema to be made newer")
        newer = latest + 5
        pg_scratch.psql(f"UPDATE \"{schema_c}\".nps_meta SET value = '{newer}' WHERE key = 'schema_version'")
        refused(checks, cli, url_c, schema_c, snapshot(schema_c),
                ("newer", f"schema version {newer} ", f"({latest})", "upgrade nps-runner"),
                f"a schema at version {newer}")

        # 6. Tables that are not ours; another application's nps_meta.
        url_d = pg_scratch.scratch_store_url()
        schema_d = schema_of(url_d)
        pg_scratch.psql(f'CREATE TABLE "{schema_d}".customers (id int PRIMARY KEY, name text); '
                        f"INSERT INTO \"{schema_d}\".customers VALUES (1, 'kept')")
        refused(checks, cli, url_d, schema_d, snapshot(schema_d),
                (f"schema '{schema_d}'", "holds tables that are not an nps-runner schema"),
                "a schema holding a foreign table")
        check_equal(checks, pg_scratch.psql(f'SELECT id, name FROM "{schema_d}".customers').strip(), "1|kept",
                    "the foreign table's row is intact")
        url_e = pg_scratch.scratch_store_url()
        schema_e = schema_of(url_e)
        pg_scratch.psql(f'CREATE TABLE "{schema_e}".nps_meta (key text PRIMARY KEY, value text NOT NULL); '
                        f"INSERT INTO \"{schema_e}\".nps_meta VALUES ('application', 'other-app'), "
                        "('schema_version', '1')")
        refused(checks, cli, url_e, schema_e, snapshot(schema_e),
                (f"schema '{schema_e}'", "belongs to another application", "other-app"),
                "a schema of another application")

        # 7. No server there.
        nowhere = work / "no-server"
        nowhere.mkdir()
        for url, what in ((f"postgresql:///postgres?host={nowhere}&port=5432&user=postgres", "a socket directory "
                           "without a server"),
                          ("postgresql://postgres@127.0.0.1:1/postgres", "a TCP port nobody listens on")):
            rc, out, err, seconds = cli.migrate(url, timeout=30)
            print(f"  migrate ({seconds:.2f} s): {err.strip()}")
            check_equal(checks, rc, 1, f"{what}: migrate exits 1")
            checks(seconds < 5, f"{what}: migrate gives up at once ({seconds:.2f} s)")
            checks("Failed to open the PostgreSQL store" in err and "cannot connect" in err,
                   f"{what}: migrate says it cannot connect")
        rc, output, seconds = cli.serve_refused(f"postgresql:///postgres?host={nowhere}&port=5432&user=postgres")
        check_equal(checks, rc, 1, f"no server: serve exits 1 ({seconds:.2f} s)")
        checks("cannot connect" in output, "no server: serve says it cannot connect")
        rc, out, err, _ = cli.run("store", "migrate", "--store", "mysql://db.example/nps")
        check_equal(checks, rc, 2, "a URL that is not postgresql://: usage error, exit 2")
        rc, out, err, _ = cli.run("store", "migrate", "--store", url_a, "extra")
        check_equal(checks, rc, 2, "an extra argument: usage error, exit 2")

        # 8. A password in the URL is never echoed.
        url_p = with_password(pg_scratch.scratch_store_url(), PASSWORD)
        rc, out, err, _ = cli.migrate(url_p)
        print(f"  with a password: {out.strip()} {err.strip()}")
        if rc != 0 and "password authentication failed" in err:
            print("  (the test server checks passwords: the runs that need a connection are left out)")
        else:
            check_equal(checks, rc, 0, "a URL with a password: migrate exits 0")
            checks(":***@" in out, "a URL with a password: migrate shows it as ***")
            state = work / "serve-password"
            state.mkdir()
            shutil.copy(cli.config, state / "config.toml")
            daemon, base, _token = start_serve(args.runner, str(state), ("--store", url_p))
            with urllib.request.urlopen(base + "/healthz", timeout=10) as response:
                location = json.loads(response.read()).get("store", {}).get("location", "")
            cli.outputs.append(("/healthz store.location", location))
            checks(":***@" in location, f"a URL with a password: /healthz's store location shows *** ({location})")
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)
            daemon = None
            cli.outputs.append(("serve log", (state / "serve.log").read_text(errors="replace")))
        pg_scratch.psql(f"UPDATE \"{schema_c}\".nps_meta SET value = '{newer}' WHERE key = 'schema_version'")
        url_c_pw = with_password(url_c, PASSWORD)
        rc, out, err, _ = cli.migrate(url_c_pw)
        checks(rc == 1 and "***" in err, "a URL with a password, a newer schema: refused, the password as ***")
        cli.serve_refused(url_c_pw)
        cli.migrate(with_password(f"postgresql:///postgres?host={nowhere}&port=5432&user=postgres", PASSWORD))
        cli.migrate(f"postgresql:///postgres?host={nowhere}&port=5432&user=postgres&password={PASSWORD}")
        cli.migrate(with_password(pg_scratch.server_url(), PASSWORD, user="no_such_role"))
        server = pg_scratch.server_url()
        cli.migrate(server + ("&" if "?" in server else "?") +
                    f"password={PASSWORD}&options=-csearch_path%3D{schema_d}")
        cli.run("store", "migrate", "--store", f"mysql://user:{PASSWORD}@db.example/nps")
        cli.migrate(f"postgresql://u:{PASSWORD}@[]/db")  # libpq quotes a URI it cannot parse
        for extra in ((), ("--json",)):
            cli.run("config", "check", "--config", str(cli.config), "--state-dir", str(cli.state),
                    "--store", url_p, *extra)
        leaked = [what for what, text in cli.outputs if PASSWORD in text]
        checks(not leaked, f"the password appears in no output ({len(cli.outputs)} outputs; leaked by: {leaked})")
        shown = [text for what, text in cli.outputs if "***" in text]
        checks(len(shown) >= 8, f"the URL was shown with *** in its place ({len(shown)} outputs)")
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        shutil.rmtree(work, ignore_errors=True)
    return checks.exit_status()


if __name__ == "__main__":
    sys.exit(main())
