#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The shell completions (packaging/completions, issue 18): in a real bash,
`nps-runner <TAB>` offers every verb of --help, a group verb its sub-verbs,
and `-<TAB>` every option the verb's --help lists; completing `serve` does
not start a daemon. The zsh script is checked by `zsh -n` where zsh is
installed (said, not skipped silently, where it is not)."""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
from checks import Checks  # noqa: E402


def complete(script, runner, words):
    """COMPREPLY for the command line `runner words…` with the cursor on the last word."""
    quoted = " ".join(f"'{w}'" for w in [runner, *words])
    program = (f"source '{script}'; COMP_WORDS=({quoted}); COMP_CWORD={len(words)}; "
               "_nps_runner; printf '%s\\n' \"${COMPREPLY[@]}\"")
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return set(line for line in done.stdout.splitlines() if line)


def help_text(runner, *verb):
    return subprocess.run([runner, *verb, "--help"], capture_output=True, text=True, timeout=10).stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--completions", required=True)
    args = parser.parse_args()
    runner = str(Path(args.runner).resolve())
    bash_script = Path(args.completions, "nps-runner.bash")
    zsh_script = Path(args.completions, "_nps-runner")
    check = Checks()

    top = help_text(runner)
    verbs = set(re.findall(r"^  ([a-z]+)", top.split("Verbs:")[1].split("\n\n")[0], re.M))
    check(verbs >= {"serve", "submit", "task", "image", "announce", "run", "ps", "status", "invoke"},
          f"verbs read from --help ({sorted(verbs)})")
    offered = complete(bash_script, runner, [""])
    check(verbs <= offered, f"`nps-runner <TAB>` offers every verb ({sorted(verbs - offered)} missing)")
    check(complete(bash_script, runner, ["ta"]) == {"task"}, "a prefix narrows it")

    groups = {"task": {"show", "ls", "wait", "watch", "logs", "cancel", "rm", "prune"},
              "image": {"import", "pull", "ls", "rm", "gc", "inspect"},
              "announce": {"ls", "rm", "resolve"},
              "config": {"check"},
              "store": {"migrate"}}
    for group, subs in groups.items():
        offered = complete(bash_script, runner, [group, ""])
        check(subs <= offered, f"`nps-runner {group} <TAB>` offers {sorted(subs)} ({sorted(offered)})")

    commands = [[v] for v in sorted(verbs - set(groups))] + [[g, s] for g, subs in groups.items() for s in sorted(subs)]
    for command in commands:
        text = help_text(runner, *command)
        wanted = set(re.findall(r"^  (--?[a-z][a-z-]*)", text, re.M))
        offered = complete(bash_script, runner, [*command, "-"])
        check(wanted <= offered,
              f"`nps-runner {' '.join(command)} -<TAB>` offers its options ({sorted(wanted - offered)} missing)")
    check("-f" in complete(bash_script, runner, ["task", "logs", "-"]), "a short option is offered too")

    # What the completion runs, recorded by a wrapper: never a bare verb
    # other than a group's (a bare `serve` would start the daemon).
    with tempfile.TemporaryDirectory(prefix="nps-completion-") as tmp:
        calls = Path(tmp, "calls")
        wrapper = Path(tmp, "nps-runner")
        wrapper.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{calls}'\nexec '{runner}' \"$@\"\n")
        wrapper.chmod(0o755)
        for verb in sorted(verbs):
            complete(bash_script, str(wrapper), [verb, ""])
        bare = sorted(set(line for line in calls.read_text().splitlines() if line in verbs - set(groups)))
        check(not bare, f"completing runs no verb but a group's bare ({bare}): `serve` starts no daemon")

    if shutil.which("zsh"):
        done = subprocess.run(["zsh", "-n", str(zsh_script)], capture_output=True, text=True)
        check(done.returncode == 0, f"the zsh completion parses ({done.stderr.strip()})")
    else:
        print("note  zsh is not installed: the zsh completion's syntax was not checked")
    check(zsh_script.read_text().startswith("#compdef nps-runner"), "the zsh completion declares #compdef")

    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
