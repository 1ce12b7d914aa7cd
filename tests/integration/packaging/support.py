# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the packaging tests: skip/fail, rendering man pages and
reading the keys docs/configuration.md documents."""
import os
import re
import shutil
import subprocess
import sys

SKIP = 77


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def render_man(page, width=90):
    """The page as `man -l` shows it (groff without man: the same text),
    with hyphenation off so that words are never split at line ends."""
    env = dict(os.environ, LC_ALL="C.UTF-8", MANPAGER="cat", PAGER="cat",
               MANWIDTH=str(width), MANROFFOPT="-rHY=0")
    if shutil.which("man"):
        cmd = ["man", "--warnings", "-l", page]
    elif shutil.which("groff"):
        cmd = ["groff", "-man", "-Tutf8", "-rHY=0", f"-rLL={width}n", "-P", "-cbou", "-ww", page]
    else:
        skip("neither man nor groff is installed (apt-get install man-db)")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()}")
    if done.stderr.strip():
        fail(f"{' '.join(cmd)} warned: {done.stderr.strip()}")
    text = re.sub(".\b", "", done.stdout)
    return text.replace("\u2010", "-").replace("\u2011", "-").replace("\u2212", "-")


def man_sections(text):
    """{heading: body} for the page's top-level sections (lines in column 0)."""
    sections, name, body = {}, None, []
    for line in text.splitlines()[1:]:
        if line and not line[0].isspace() and line.strip() == line and line.upper() == line:
            if name:
                sections[name] = "\n".join(body)
            name, body = line.strip(), []
        elif name:
            body.append(line)
    if name:
        sections[name] = "\n".join(body)
    return sections


def man_subsections(section_text):
    """{heading: body} for the subsections (three-space indented headings)."""
    subs, name, body = {}, None, []
    for line in section_text.splitlines():
        m = re.match(r"^ {3}(\S.*)$", line)
        if m:
            if name:
                subs[name] = "\n".join(body)
            name, body = m.group(1).strip(), []
        elif name:
            body.append(line)
    if name:
        subs[name] = "\n".join(body)
    return subs


def documented_config_keys(configuration_md):
    """[(section, key)] from the TOML block of docs/configuration.md, where
    each key is written `key = …` or, for optional ones, `# key = …`."""
    text = open(configuration_md, encoding="utf-8").read()
    block = re.search(r"```toml\n(.*?)```", text, re.S)
    if not block:
        fail(f"{configuration_md} has no ```toml block")
    keys, section = [], None
    for line in block.group(1).splitlines():
        m = re.match(r"^\s*#?\s*\[([a-z_]+(?:\.[a-z_]+)*)(?:\.\"[^\"]*\")?\]", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^#?\s*([a-z][a-z0-9_]*)\s*=", line)
        if m and section:
            keys.append((section, m.group(1)))
    if len(keys) < 20:
        fail(f"only {len(keys)} keys found in {configuration_md}: the parser no longer matches it")
    return keys


def run(cmd, **kwargs):
    """Runs cmd; returns CompletedProcess (text)."""
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)
