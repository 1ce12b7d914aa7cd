#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A test of tests/lint/layering.py: on a copy of this tree it passes, and each
planted wrong include (or unlisted area) makes it fail, naming the file."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))
CHECKER = os.path.join(HERE, 'layering.py')
SOURCE_SUFFIXES = ('.c', '.cc', '.cpp', '.h', '.hh', '.hpp', '.ipp', '.txt')


def copy_tree(destination):
    def ignore(directory, names):
        return [n for n in names
                if not os.path.isdir(os.path.join(directory, n)) and not n.endswith(SOURCE_SUFFIXES)]
    for top in ('src', 'include', 'tests', 'bench', 'conformance', 'fuzz'):
        if os.path.isdir(os.path.join(ROOT, top)):
            shutil.copytree(os.path.join(ROOT, top), os.path.join(destination, top), ignore=ignore)


def run(root):
    done = subprocess.run([sys.executable, CHECKER, '--root', root], capture_output=True, text=True)
    return done.returncode, done.stdout


def append(root, rel, line):
    with open(os.path.join(root, rel), 'a', encoding='utf-8') as f:
        f.write(line + '\n')


failures = 0


def expect(name, condition, detail=''):
    global failures
    print(('ok   ' if condition else 'FAIL ') + name + ('' if condition else ': ' + detail))
    if not condition:
        failures += 1


def planted(name, plant, *needles):
    with tempfile.TemporaryDirectory(prefix='layering-test-') as root:
        copy_tree(root)
        plant(root)
        code, out = run(root)
        expect(name, code == 1 and all(n in out for n in needles), f'exit {code}, output:\n{out}')


with tempfile.TemporaryDirectory(prefix='layering-test-') as root:
    copy_tree(root)
    code, out = run(root)
    expect('the unmodified tree passes', code == 0, out)

planted('a lower area including a higher one fails',
        lambda r: append(r, 'src/store/sqlite_store.cpp', '#include "nps/daemon/daemon.hpp"'),
        'src/store/sqlite_store.cpp:', "area 'store' includes nps/daemon/daemon.hpp")
planted('the old config <-> image cycle fails',
        lambda r: append(r, 'include/nps/image/registry.hpp', '#include "nps/config/config.hpp"'),
        'include/nps/image/registry.hpp:', "'config' is layered above 'image'")
planted('the event loop including the supervisor fails',
        lambda r: append(r, 'src/event/event_loop.cpp', '#include "nps/supervisor/supervisor.hpp"'),
        'src/event/event_loop.cpp:', "area 'event'")
planted("another area's private header fails",
        lambda r: append(r, 'src/net/mhd_server.cpp', '#include "../api/json_io.hpp"'),
        'src/net/mhd_server.cpp:', 'private')
planted("a sub-folder climbing out of its area fails",
        lambda r: append(r, 'src/store/postgres/pg_rows.cpp', '#include "../../image/image_db.hpp"'),
        'src/store/postgres/pg_rows.cpp:', 'private')
planted('an unlisted test including a private header fails',
        lambda r: append(r, 'tests/unit/base/digest_test.cpp', '#include "../../../src/store/sqlite_store.hpp"'),
        'tests/unit/base/digest_test.cpp:', 'private_includes.txt')
planted('an area missing from the table fails',
        lambda r: os.makedirs(os.path.join(r, 'src', 'newarea')),
        'src/newarea: area not listed')
planted('an include of something that is no area fails',
        lambda r: append(r, 'src/base/result.cpp', '#include "nps/nowhere/x.hpp"'),
        "'nowhere' is not an area")

print(f'{failures} failed')
sys.exit(1 if failures else 0)
