#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The man pages render and cannot rot: each renders with `man -l` without
warnings and has its key sections; every verb `nps-runner --help` lists has
a subsection in nps-runner(8) naming every option of that verb's --help;
every key docs/configuration.md documents is in nps-runner.conf(5) under its
section and in packaging/config.toml.example; the example loads."""
import argparse
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import (documented_config_keys, fail, man_sections, man_subsections,  # noqa: E402
                     render_man, run, skip)

PAGES = {
    "nps-runner.8": ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMON OPTIONS", "COMMANDS", "EXIT STATUS",
                     "ENVIRONMENT", "FILES", "SYSTEMD", "EXAMPLES", "SEE ALSO"],
    "nps-runner.conf.5": ["NAME", "SYNOPSIS", "DESCRIPTION", "SECTIONS", "EXAMPLE", "FILES", "SEE ALSO"],
    "nps-runner-worker.7": ["NAME", "DESCRIPTION", "ENVIRONMENT", "STANDARD INPUT", "STANDARD OUTPUT",
                            "STANDARD ERROR", "LIMITS", "OUTCOME", "EXAMPLE", "SEE ALSO"],
}

# Options the COMMON OPTIONS section documents once for every verb.
COMMON = {"--config", "--state-dir", "--server", "--token", "--json", "--help"}


def verbs_from_help(runner):
    """["serve", "task show", …] from the Verbs: list of `nps-runner --help`:
    the first word, a lower-case second word as its sub-verb, and lower-case
    words after '|' as further sub-verbs (`image ls | rm REF... | gc`)."""
    done = run([runner, "--help"])
    if done.returncode != 0:
        fail(f"nps-runner --help exited {done.returncode}")
    listing = done.stdout.split("Verbs:", 1)
    if len(listing) != 2:
        fail("nps-runner --help has no 'Verbs:' list")
    verbs = []
    for line in listing[1].splitlines():
        m = re.match(r"^  ([a-z][a-z-]*)(.*)$", line)
        if not m:
            continue
        verb, rest = m.group(1), m.group(2).split("  ")[0]
        alternatives = [part.split() for part in rest.split("|")]
        subs = [alt[0] for alt in alternatives if alt and re.fullmatch(r"[a-z][a-z-]*", alt[0])]
        verbs.extend(f"{verb} {sub}" for sub in subs) if subs else verbs.append(verb)
    if len(verbs) < 10:
        fail(f"only {len(verbs)} verbs parsed from nps-runner --help: {verbs}")
    return sorted(set(verbs))


def options_from_help(runner, verb):
    done = run([runner, *verb.split(), "--help"])
    if done.returncode != 0:
        fail(f"nps-runner {verb} --help exited {done.returncode}: {done.stderr.strip()}")
    options = set(re.findall(r"^  (--[a-z][a-z-]*)", done.stdout, re.M))
    usage = done.stdout.split("\n\n", 1)[0]
    options |= set(re.findall(r"(--[a-z][a-z-]*)", usage))
    return options


def check_page_sections(man_dir):
    rendered = {}
    for page, wanted in PAGES.items():
        path = os.path.join(man_dir, page)
        if not os.path.exists(path):
            fail(f"{path} was not built")
        text = render_man(path)
        sections = man_sections(text)
        missing = [s for s in wanted if s not in sections]
        if missing:
            fail(f"{page}: sections {missing} missing (has {list(sections)})")
        rendered[page] = sections
        print(f"ok {page}: renders, sections {', '.join(wanted)}")
    return rendered


def check_verbs(runner, page):
    commands = man_subsections(page["COMMANDS"])
    common = page["COMMON OPTIONS"]
    problems = []
    verbs = verbs_from_help(runner)
    for verb in verbs:
        body = commands.get(verb)
        if body is None:
            problems.append(f"verb '{verb}' has no subsection in COMMANDS of nps-runner(8)")
            continue
        for option in sorted(options_from_help(runner, verb)):
            # A definition: the option starting a line of its own, as the
            # term of an indented paragraph (not a mention in the synopsis).
            term = r"^ {7}" + re.escape(option) + r"(?![a-z-])"
            documented = re.search(term, body, re.M) or (option in COMMON and re.search(term, common, re.M))
            if not documented:
                problems.append(f"'nps-runner {verb}' option {option} is not in its nps-runner(8) subsection")
    extra = sorted(set(commands) - set(verbs))
    if extra:
        problems.append(f"nps-runner(8) documents verbs nps-runner --help does not list: {extra}")
    if problems:
        fail("\n  ".join(["nps-runner(8) is out of date:"] + problems))
    print(f"ok nps-runner(8): all {len(verbs)} verbs and their options")


def check_config_keys(source_root, page):
    keys = documented_config_keys(os.path.join(source_root, "docs", "configuration.md"))
    subsections = man_subsections(page["SECTIONS"])
    by_table = {}
    for heading, body in subsections.items():
        m = re.match(r"^\[([a-z_.]+)(?:\.\"[^\"]*\")?\]", heading)
        if m:
            by_table[m.group(1)] = body
    example = open(os.path.join(source_root, "packaging", "config.toml.example"), encoding="utf-8").read()
    example_tables, table = {}, None
    for line in example.splitlines():
        m = re.match(r"^#?\s*\[([a-z_]+(?:\.[a-z_]+)*)(?:\.\"[^\"]*\")?\]", line)
        if m:
            table = m.group(1)
            continue
        m = re.match(r"^#?\s*([a-z][a-z0-9_]*)\s*=", line)
        if m and table:
            example_tables.setdefault(table, set()).add(m.group(1))
    problems = []
    for section, key in keys:
        body = by_table.get(section)
        if body is None:
            problems.append(f"nps-runner.conf(5) has no [{section}] subsection")
        elif not re.search(r"^\s*" + re.escape(key) + r" = ", body, re.M):
            problems.append(f"nps-runner.conf(5) does not document {section}.{key}")
        if key not in example_tables.get(section, set()):
            problems.append(f"packaging/config.toml.example lacks {section}.{key}")
    if problems:
        fail("\n  ".join(["configuration docs out of step with docs/configuration.md:"] + problems))
    print(f"ok nps-runner.conf(5) and config.toml.example: all {len(keys)} documented keys")


def check_example_loads(runner, source_root):
    """`image ls` reads the configuration before anything else: the shipped
    example must load, and a broken copy must not (so the check means it)."""
    example = os.path.join(source_root, "packaging", "config.toml.example")
    with tempfile.TemporaryDirectory(prefix="nps-man-") as tmp:
        done = run([runner, "image", "ls", "--config", example, "--state-dir", os.path.join(tmp, "state")])
        if done.returncode != 0:
            fail(f"the example configuration does not load: {done.stderr.strip()}")
        broken = os.path.join(tmp, "broken.toml")
        with open(broken, "w", encoding="utf-8") as out:
            out.write(open(example, encoding="utf-8").read() + "\n[inbox]\nmax_dept = 1\n")
        done = run([runner, "image", "ls", "--config", broken, "--state-dir", os.path.join(tmp, "state")])
        if done.returncode == 0:
            fail("a configuration with an unknown key loaded: 'image ls' no longer checks it")
    print("ok config.toml.example loads")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--man-dir", required=True)
    parser.add_argument("--source-root", required=True)
    args = parser.parse_args()
    if not all(os.path.exists(os.path.join(args.man_dir, p)) for p in PAGES):
        skip(f"man pages not built in {args.man_dir} (scdoc missing? configure with -Dman=enabled)")
    pages = check_page_sections(args.man_dir)
    check_verbs(args.runner, pages["nps-runner.8"])
    check_config_keys(args.source_root, pages["nps-runner.conf.5"])
    check_example_loads(args.runner, args.source_root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
