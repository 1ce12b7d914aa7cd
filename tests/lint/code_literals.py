#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that src/ and include/ name protocol error codes and states by their constants.

Every code the runner emits is a constant generated from the one table in
include/nps/proto/error_codes.hpp (`proto::code::kNopClaimConflict`), so a
misspelt code does not compile. A string literal that is exactly a code
("NOP-CLAIM-CONFLICT") anywhere else in the product's C++ would bypass that;
this lint finds one. The same holds for the task and node states of
include/nps/proto/states.hpp ("COMPLETED" is proto::NodeState::completed;
store/types.hpp's task-state constants are checked against that table at
compile time). Raw strings (canned JSON bodies) and comments are not code
names and are left alone.

--self-test plants one offending file and one clean file in a scratch tree
and checks the verdicts (a test of the test).
"""
import argparse
import os
import re
import sys
import tempfile

TABLE = os.path.join('include', 'nps', 'proto', 'error_codes.hpp')
ROW = re.compile(r'X\((k\w+), "([A-Z0-9-]+)"')
STATES = os.path.join('include', 'nps', 'proto', 'states.hpp')
STATE_ROW = re.compile(r'X\((\w+), "([A-Z_]+)", (?:true|false)\)')
STATE_CONSTANTS = os.path.join('include', 'nps', 'store', 'types.hpp')
SOURCE = re.compile(r'\.(cpp|hpp)$')


def literals(text):
    """Yields (line number, content) of each ordinary string literal."""
    i, n = 0, len(text)
    while i < n:
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif text.startswith('/*', i):
            i = text.find('*/', i + 2) + 2
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            k = text.index('(', i)
            delimiter = text[i + 2:k]
            i = text.index(')' + delimiter + '"', k) + len(delimiter) + 2
        elif text[i] == "'" and not (i > 0 and text[i - 1].isalnum()):  # not a digit separator
            j = i + 1
            while text[j] != "'":
                j += 2 if text[j] == '\\' else 1
            i = j + 1
        elif text[i] == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == '\\' else 1
            yield text.count('\n', 0, i) + 1, text[i + 1:j]
            i = j + 1
        else:
            i += 1


def check(root):
    with open(os.path.join(root, TABLE), encoding='utf-8') as f:
        codes = {m.group(2): 'proto::code::' + m.group(1) for m in ROW.finditer(f.read())}
    with open(os.path.join(root, STATES), encoding='utf-8') as f:
        for m in STATE_ROW.finditer(f.read()):
            codes.setdefault(m.group(2), 'proto::NodeState::' + m.group(1) + ' (or TaskState)')
    problems = []
    for top in ('src', 'include'):
        for directory, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                path = os.path.join(directory, name)
                rel = os.path.relpath(path, root)
                if not SOURCE.search(name) or rel in (TABLE, STATES, STATE_CONSTANTS):
                    continue
                with open(path, encoding='utf-8', errors='replace') as f:
                    text = f.read()
                for line, content in literals(text):
                    if content in codes:
                        problems.append(f'{rel}:{line}: "{content}" as a literal: use {codes[content]}')
    return problems


def self_test(root):
    with tempfile.TemporaryDirectory() as scratch:
        os.makedirs(os.path.join(scratch, os.path.dirname(TABLE)))
        os.makedirs(os.path.join(scratch, 'src', 'x'))
        for table in (TABLE, STATES):
            with open(os.path.join(root, table), encoding='utf-8') as f, \
                    open(os.path.join(scratch, table), 'w', encoding='utf-8') as out:
                out.write(f.read())
        clean = ('// "NOP-CLAIM-CONFLICT" in a comment\n'
                 'auto body = R"({"error":"NOP-CLAIM-CONFLICT"})";\n'
                 'auto n = 1\'000; auto code = proto::code::kNopClaimConflict;\n')
        with open(os.path.join(scratch, 'src', 'x', 'clean.cpp'), 'w', encoding='utf-8') as f:
            f.write(clean)
        if check(scratch):
            print('self-test: a clean file was reported:', check(scratch))
            return 1
        with open(os.path.join(scratch, 'src', 'x', 'planted.cpp'), 'w', encoding='utf-8') as f:
            f.write(clean + 'return protocol_error("NOP-CLAIM-CONFLICT", "x");\n'
                            'if (state == "COMPENSATED") return;\n')
        found = check(scratch)
        if len(found) != 2 or 'planted.cpp:4' not in found[0] or 'planted.cpp:5' not in found[1]:
            print('self-test: the planted code and state were not reported once each:', found)
            return 1
    print('code-literals self-test: a planted code and state are found; comments and raw strings are not')
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--root', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'),
                        help='the repository root (default: this checkout)')
    parser.add_argument('--self-test', action='store_true', help='check the checker on a planted file')
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if args.self_test:
        return self_test(root)
    problems = check(root)
    for problem in problems:
        print(problem)
    if problems:
        print(f'code-literals: {len(problems)} literal code(s)', file=sys.stderr)
        return 1
    print('code-literals: every protocol error code and state is named by its constant')
    return 0


if __name__ == '__main__':
    sys.exit(main())
