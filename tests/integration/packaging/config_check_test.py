#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`nps-runner config check` (issue 18) through the real binary: a valid file
prints every setting with its source (default, file, flag) and exits 0; the
settings cover every key docs/configuration.md documents; secrets never
show; a bad file exits 1 naming the key, and changes nothing."""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from checks import Checks  # noqa: E402
from support import documented_config_keys, run  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--configuration-md", required=True)
    args = parser.parse_args()
    check = Checks()

    with tempfile.TemporaryDirectory(prefix="nps-config-check-") as tmp:
        good = Path(tmp, "good.toml")
        good.write_text('[workers]\ndefault_memory = "256Mi"\nmax_concurrent = 3\n'
                        '[api]\ntoken = "a-secret-token-0123456789"\n'
                        '[store]\ntask_retention_hours = 0.5\n')
        done = run([args.runner, "config", "check", "--config", str(good), "--listen", "127.0.0.1:18000", "--json"])
        check(done.returncode == 0, f"a valid file checks (exit {done.returncode} {done.stderr.strip()})")
        body = json.loads(done.stdout) if done.returncode == 0 else {}
        settings = {s["key"]: s for s in body.get("settings", [])}
        check(body.get("valid") is True and body.get("config") == str(good), "valid, naming the file")
        check(settings.get("workers.default_memory", {}).get("value") == "256Mi"
              and settings["workers.default_memory"]["source"] == "file", "a file key: its value, source file")
        check(settings.get("workers.max_concurrent", {}).get("value") == 3, "an integer key from the file")
        check(settings.get("store.task_retention_hours", {}).get("value") == 0.5, "fractional hours as written")
        check(settings.get("api.listen", {}).get("value") == "127.0.0.1:18000"
              and settings["api.listen"]["source"] == "flag", "a flag wins over file and default: source flag")
        check(settings.get("workers.default_pids", {}).get("value") == 256
              and settings["workers.default_pids"]["source"] == "default", "an unset key: its default, source default")
        check(settings.get("api.token", {}).get("value") == "(set)", "a token shows as (set)")
        check("a-secret-token" not in done.stdout, "... and its text appears nowhere")

        documented = {f"{section}.{key}" for section, key in documented_config_keys(args.configuration_md)}
        # *_file twins and per-registry credentials show under the key they set.
        expected = {k for k in documented if not k.endswith("_file") and not k.startswith("images.auth.")
                    and not k.startswith("ndp.trusted_keys.")}
        missing = sorted(expected - set(settings))
        check(not missing, f"every documented key is shown ({missing} missing)")
        extra = sorted(set(settings) - documented - {"images.auth", "ndp.trusted_keys"})
        check(not extra, f"no key that is not documented ({extra})")

        text = run([args.runner, "config", "check", "--config", str(good)])
        check(text.returncode == 0 and text.stdout.startswith(f"{good}: valid\n"), "the text form says valid")
        line = next((l for l in text.stdout.splitlines() if l.startswith("workers.default_memory ")), "")
        check(line.split() == ["workers.default_memory", "256Mi", "file"], f"a row: key, value, source ({line!r})")

        for name, content, key in (("unknown.toml", "[workers]\nmax_concurent = 3\n", "workers.max_concurent"),
                                   ("type.toml", "[runner]\nlease_seconds = \"sixty\"\n", "runner.lease_seconds"),
                                   ("syntax.toml", "[runner\n", "")):
            bad = Path(tmp, name)
            bad.write_text(content)
            before = bad.read_text()
            done = run([args.runner, "config", "check", "--config", str(bad)])
            check(done.returncode == 1 and key in done.stderr and str(bad) in done.stderr,
                  f"{name}: exit 1 naming {key or 'the file'} ({done.returncode} {done.stderr.strip()})")
            check(bad.read_text() == before, f"{name}: the file is left as it was")
        done = run([args.runner, "config", "check", "--config", str(Path(tmp, "absent.toml"))])
        check(done.returncode == 1, f"a named file that is missing: exit 1 ({done.stderr.strip()})")
        done = run([args.runner, "config", "check", "--config", str(good), "--inbox", "not-a-nid"])
        check(done.returncode == 2 and "--inbox" in done.stderr, "a bad flag value is a usage error naming it")

    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
