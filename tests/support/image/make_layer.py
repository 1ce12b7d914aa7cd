#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Crafts image layer tars for the image tests (python's tarfile, an
independent producer of what our libarchive-based unpacker reads).

    make_layer.py SCENARIO OUT [--compress none|gzip|zstd] [--outside DIR] [--count N]

Writes the layer to OUT (compressed as asked) and prints its diff_id, the
sha256 of the uncompressed tar, on stdout.
"""
import argparse
import hashlib
import io
import os
import subprocess
import sys
import tarfile

MTIME = 1_600_000_000  # 2020-09-13, fixed so the tests can check it


def info(name, kind=tarfile.REGTYPE, mode=0o644, uid=0, gid=0, mtime=MTIME, size=0, linkname="", xattrs=None):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.mode = mode
    ti.uid, ti.gid = uid, gid
    ti.mtime = mtime
    ti.size = size
    ti.linkname = linkname
    if xattrs:
        ti.pax_headers = {"SCHILY.xattr." + k: v for k, v in xattrs.items()}
    return ti


def add_file(tar, name, data=b"", **kw):
    ti = info(name, size=len(data), **kw)
    tar.addfile(ti, io.BytesIO(data))


def add(tar, name, kind, **kw):
    tar.addfile(info(name, kind=kind, **kw))


def normal(tar, args):
    add(tar, "./", tarfile.DIRTYPE, mode=0o755)
    add(tar, "etc/", tarfile.DIRTYPE, mode=0o755, mtime=MTIME + 1)
    add_file(tar, "etc/hello.txt", b"hello layer\n", mode=0o640, uid=1001, gid=1002, mtime=MTIME + 2)
    add_file(tar, "etc/empty", b"", mode=0o600)
    add(tar, "home/", tarfile.DIRTYPE, mode=0o700, uid=1000, gid=1000, mtime=MTIME + 3)
    add(tar, "home/user/", tarfile.DIRTYPE, mode=0o750, uid=1000, gid=1000, mtime=MTIME + 4)
    add_file(tar, "home/user/notes", b"notes\n", uid=1000, gid=1000)
    add(tar, "bin/", tarfile.DIRTYPE, mode=0o755)
    add_file(tar, "bin/su", b"#!/bin/sh\n", mode=0o4755, uid=0, gid=0)
    add_file(tar, "bin/tool", b"\x7fELF" + os.urandom(3 * 1024 * 1024), mode=0o755)
    add(tar, "bin/tool-link", tarfile.LNKTYPE, linkname="bin/tool")
    add(tar, "bin/sh", tarfile.SYMTYPE, linkname="busybox", mode=0o777)
    add(tar, "bin/abs", tarfile.SYMTYPE, linkname="/etc/passwd", mode=0o777)
    add(tar, "run/", tarfile.DIRTYPE, mode=0o755)
    add(tar, "run/fifo", tarfile.FIFOTYPE, mode=0o620, uid=5, gid=6)
    add(tar, "dev/", tarfile.DIRTYPE, mode=0o755)
    add(tar, "dev/null", tarfile.CHRTYPE, mode=0o666)
    add_file(tar, "xattr.txt", b"x", xattrs={"user.test": "hello", "trusted.nps": "kept"})
    add(tar, "overlayish/", tarfile.DIRTYPE, mode=0o755,
        xattrs={"trusted.overlay.redirect": "/elsewhere", "trusted.overlay.opaque": "y"})
    add_file(tar, "caf\u00e9/na\u00efve", b"utf-8 names\n")  # non-ASCII: a PAX path record
    # A name seen twice: the later entry wins (tar semantics).
    add_file(tar, "dup", b"first\n")
    add_file(tar, "dup", b"second\n")
    # A directory whose entry comes after its contents.
    add_file(tar, "late/child", b"c")
    add(tar, "late/", tarfile.DIRTYPE, mode=0o711, mtime=MTIME + 5)


def lower(tar, args):
    add(tar, "a/", tarfile.DIRTYPE, mode=0o755)
    add_file(tar, "a/keep", b"keep\n")
    add_file(tar, "a/gone", b"gone\n")
    add(tar, "a/gonedir/", tarfile.DIRTYPE, mode=0o755)
    add_file(tar, "a/gonedir/inner", b"inner\n")
    add(tar, "d/", tarfile.DIRTYPE, mode=0o755)
    add_file(tar, "d/old", b"old\n")
    add(tar, "d/olddir/", tarfile.DIRTYPE, mode=0o755)


def upper(tar, args):
    add(tar, "a/", tarfile.DIRTYPE, mode=0o755)
    add(tar, "a/.wh.gone", tarfile.REGTYPE)
    add(tar, "a/.wh.gonedir", tarfile.REGTYPE)
    add(tar, "d/", tarfile.DIRTYPE, mode=0o755)
    add(tar, "d/.wh..wh..opq", tarfile.REGTYPE)
    add_file(tar, "d/new", b"new\n")
    # Whiteout and entry of one name in one layer: the entry stays.
    add(tar, "a/.wh.both", tarfile.REGTYPE)
    add_file(tar, "a/both", b"both\n")
    # AUFS bookkeeping is skipped.
    add(tar, ".wh..wh.plnk/", tarfile.DIRTYPE, mode=0o700)
    add_file(tar, ".wh..wh.plnk/12.34", b"aufs")


def chain(tar, args):
    """Layer number args.count of a chain: its own file, and it changes
    'shared' (each layer's version hides the one below)."""
    add_file(tar, "layer-%03d" % args.count, b"%d\n" % args.count)
    add_file(tar, "shared", b"from layer %d\n" % args.count)


def absolute(tar, args):
    add_file(tar, os.path.join(args.outside, "evil"), b"evil")


def dotdot(tar, args):
    add(tar, "a/", tarfile.DIRTYPE)
    add_file(tar, "a/../../evil", b"evil")


def symlink_parent(tar, args):
    add(tar, "link", tarfile.SYMTYPE, linkname=args.outside)
    add_file(tar, "link/evil", b"evil")


def symlink_parent_relative(tar, args):
    add(tar, "a/", tarfile.DIRTYPE)
    add(tar, "a/up", tarfile.SYMTYPE, linkname="../../../../../../../../../../.." + args.outside)
    add_file(tar, "a/up/evil", b"evil")


def symlink_dir_then_mkdir(tar, args):
    add(tar, "link", tarfile.SYMTYPE, linkname=args.outside)
    add(tar, "link/sub/", tarfile.DIRTYPE)


def symlink_replaces_dir(tar, args):
    # The opaque marker makes the unpacker look 'a/sub' up (and remember it)
    # without putting anything in it; the empty directory is then replaced
    # by a symlink out, and a file is aimed through it.
    add(tar, "a/", tarfile.DIRTYPE)
    add(tar, "a/sub/", tarfile.DIRTYPE)
    add(tar, "a/sub/.wh..wh..opq", tarfile.REGTYPE)
    add(tar, "a/sub", tarfile.SYMTYPE, linkname=args.outside)
    add_file(tar, "a/sub/evil", b"evil")


def symlink_replaced(tar, args):
    # Not hostile in effect: the file replaces the symlink, nothing is
    # written through it.
    add(tar, "x", tarfile.SYMTYPE, linkname=os.path.join(args.outside, "target"))
    add_file(tar, "x", b"replaced\n")


def hardlink_absolute(tar, args):
    add(tar, "h", tarfile.LNKTYPE, linkname=os.path.join(args.outside, "target"))


def hardlink_dotdot(tar, args):
    add(tar, "a/", tarfile.DIRTYPE)
    add(tar, "a/h", tarfile.LNKTYPE, linkname="a/../../outside/target")


def hardlink_via_symlink(tar, args):
    add(tar, "l", tarfile.SYMTYPE, linkname=args.outside)
    add(tar, "h", tarfile.LNKTYPE, linkname="l/target")


def hardlink_missing(tar, args):
    add(tar, "h", tarfile.LNKTYPE, linkname="not-in-this-layer")


def hardlink_to_symlink(tar, args):
    # Links the symlink itself; the outside file is never touched.
    add(tar, "l", tarfile.SYMTYPE, linkname=os.path.join(args.outside, "target"))
    add(tar, "h", tarfile.LNKTYPE, linkname="l")


def many_entries(tar, args):
    for i in range(args.count):
        add_file(tar, "f%06d" % i, b"")


def big_file(tar, args):
    add_file(tar, "big", b"\0" * args.count)


def zero_files(tar, args):
    """args.count files of 1 MiB of zeros: compresses ~1000:1."""
    for i in range(args.count):
        add_file(tar, "zeros-%04d" % i, b"\0" * (1 << 20))


def long_path(tar, args):
    add_file(tar, "/".join(["d" * 200] * 30), b"deep")


def device(tar, args):
    add(tar, "dev/", tarfile.DIRTYPE)
    add(tar, "dev/sda", tarfile.BLKTYPE)


def bad_owner(tar, args):
    add_file(tar, "f", b"", uid=4294967295)


def root_symlink(tar, args):
    add(tar, ".", tarfile.SYMTYPE, linkname=args.outside)
    add_file(tar, "evil", b"evil")


def not_a_dir_parent(tar, args):
    add_file(tar, "file", b"f")
    add_file(tar, "file/child", b"c")


SCENARIOS = {f.__name__.replace("_", "-"): f for f in [
    normal, lower, upper, chain, absolute, dotdot, symlink_parent, symlink_parent_relative, symlink_dir_then_mkdir,
    symlink_replaces_dir, symlink_replaced, hardlink_absolute, hardlink_dotdot, hardlink_via_symlink, hardlink_missing,
    hardlink_to_symlink, many_entries, big_file, zero_files, long_path, device, bad_owner, root_symlink, not_a_dir_parent]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("out")
    p.add_argument("--compress", choices=["none", "gzip", "zstd"], default="none")
    p.add_argument("--outside", default="/nonexistent")
    p.add_argument("--count", type=int, default=0)
    args = p.parse_args()

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        SCENARIOS[args.scenario](tar, args)
    data = buf.getvalue()
    if args.compress == "gzip":
        out = subprocess.run(["gzip", "-c", "-n"], input=data, capture_output=True, check=True).stdout
    elif args.compress == "zstd":
        out = subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True, check=True).stdout
    else:
        out = data
    with open(args.out, "wb") as f:
        f.write(out)
    print("sha256:" + hashlib.sha256(data).hexdigest())


if __name__ == "__main__":
    sys.exit(main())
