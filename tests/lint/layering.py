#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the area graph of the source tree against src/layers.txt.

Rules (docs/architecture.md):
  1. every directory under src/ and include/nps/ is an area listed in
     src/layers.txt, and every listed area exists;
  2. a file of area A includes "nps/B/..." only when B is A or listed above A;
  3. a file under src/ includes no other area's private headers ("../B/...";
     a sub-folder of an area may include the area's own, "../x.hpp");
  4. tests, benchmarks, conformance and fuzz drivers include private headers
     (".../src/...") only when tests/lint/private_includes.txt lists them.

Prints one line per violation and exits 1 when there is any; 0 otherwise.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
SOURCE = re.compile(r'\.(c|cc|cpp|h|hh|hpp|ipp)$')


def read_list(path):
    entries = []
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                entries.append(line)
    return entries


def sources(root, top):
    base = os.path.join(root, top)
    for directory, _, files in os.walk(base):
        for name in sorted(files):
            if SOURCE.search(name):
                path = os.path.join(directory, name)
                yield os.path.relpath(path, root)


def includes(root, rel):
    with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield number, m.group(1)


def area_of(rel):
    parts = rel.split(os.sep)
    if parts[0] == 'src' and len(parts) > 2:
        return parts[1]
    if parts[:2] == ['include', 'nps'] and len(parts) > 3:
        return parts[2]
    return None  # src/main.cpp: the program, above every area


def check(root):
    problems = []
    layers = read_list(os.path.join(root, 'src', 'layers.txt'))
    rank = {area: i for i, area in enumerate(layers)}
    if len(rank) != len(layers):
        problems.append('src/layers.txt: an area is listed twice')

    present = set()
    for top in ('src', os.path.join('include', 'nps')):
        for entry in sorted(os.listdir(os.path.join(root, top))):
            if os.path.isdir(os.path.join(root, top, entry)):
                present.add(entry)
                if entry not in rank:
                    problems.append(f'{top}/{entry}: area not listed in src/layers.txt')
    for area in layers:
        if area not in present:
            problems.append(f'src/layers.txt: area {area!r} has no directory')

    for top in ('src', 'include'):
        for rel in sources(root, top):
            area = area_of(rel)
            for number, target in includes(root, rel):
                m = re.match(r'nps/([^/]+)/', target)
                if m and area is not None:
                    used = m.group(1)
                    if used not in rank:
                        problems.append(f'{rel}:{number}: includes {target}: {used!r} is not an area')
                    elif area in rank and rank[used] > rank[area]:
                        problems.append(f'{rel}:{number}: area {area!r} includes {target}, '
                                        f'but {used!r} is layered above {area!r} (src/layers.txt)')
                # "../" may climb from an area's sub-folder to the area's own
                # private headers (store/postgres/ → store/), never out of it.
                if target.startswith('../') and top == 'src':
                    resolved = os.path.normpath(os.path.join(os.path.dirname(rel), target))
                    if area is None or area_of(resolved) != area:
                        problems.append(f'{rel}:{number}: includes {target}: another directory\'s private '
                                        'header (use its public header under include/nps/)')

    allowed = set(read_list(os.path.join(root, 'tests', 'lint', 'private_includes.txt')))
    used_allowance = set()
    for top in ('tests', 'bench', 'conformance', 'fuzz'):
        if not os.path.isdir(os.path.join(root, top)):
            continue
        for rel in sources(root, top):
            for number, target in includes(root, rel):
                if '/src/' in '/' + target:
                    if rel in allowed:
                        used_allowance.add(rel)
                    else:
                        problems.append(f'{rel}:{number}: includes the private header {target} '
                                        '(not listed in tests/lint/private_includes.txt)')
    for rel in sorted(allowed - used_allowance):
        problems.append(f'tests/lint/private_includes.txt: {rel} includes no private header '
                        '(remove it from the list)')
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--root', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'),
                        help='the repository root (default: this checkout)')
    args = parser.parse_args()
    problems = check(os.path.abspath(args.root))
    for problem in problems:
        print(problem)
    if problems:
        print(f'layering: {len(problems)} problem(s)', file=sys.stderr)
        return 1
    print('layering: every include follows src/layers.txt')
    return 0


if __name__ == '__main__':
    sys.exit(main())
