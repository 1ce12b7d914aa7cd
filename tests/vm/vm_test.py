#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs test binaries inside a qemu VM (software emulation) whose only cgroup
mount is cgroup2, and reports their results as one test.

The VM boots Debian's kernel, cached by scripts/install-deps, with an
initramfs built here from busybox, the test binaries (stripped copies) and
their shared libraries, and tests/vm/init, which runs the plan and reports
over the serial console. See docs/cgroups.md, "Pure v2 in a VM test". With
--arch aarch64 (the arm64 cross build's binaries) the machine is an emulated
arm64 one (docs/platforms.md). With --dag-smoke the VM also runs
tests/vm/dag_smoke: `serve` with the demo worker image built for the VM's
architecture and one 3-node DAG of sandboxed workers. With --package DEB
(arm64) the initramfs also holds a Debian userland of the VM's architecture
(dpkg, adduser and the libraries the package depends on, cached by
scripts/install-deps): tests/vm/package_smoke installs DEB with dpkg -i, the
DAG smoke runs with the installed /usr/bin/nps-runner, and the package is
purged.

Exit status: 0 when every planned run exited 0 in the VM, 77 (skipped) when
qemu or the cached kernel is missing, 1 otherwise (a failed run, a run that
skipped inside the VM, a panic, a hang past --timeout, a bad kernel).
"""

import argparse
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from vmlib import (DEFAULT_VM_DIR, SKIP, Cpio, add_debian_userland, clean, demo_spawn_spec,  # noqa: E402
                   foreign_shared_libraries, runner_libraries, shared_libraries, stripped)


class Machine:
    """How to emulate one architecture's machine. Its kernel and, for a
    foreign one, its busybox and unshare are cached by scripts/install-deps
    in <vm-dir>/<subdir>."""

    def __init__(self, qemu, qemu_package, board, console, kernel_names, kernel_package, oci_arch, subdir="",
                 triplet=None, strip="strip"):
        self.qemu, self.qemu_package, self.board, self.console = qemu, qemu_package, board, console
        self.kernel_names, self.kernel_package, self.subdir = kernel_names, kernel_package, subdir
        self.oci_arch = oci_arch  # the OCI (GOARCH) name of the architecture, for the worker image
        self.triplet, self.strip = triplet, strip  # triplet None: the build machine's own


# Keyed by meson's CPU family of the build being tested.
MACHINES = {
    "x86_64": Machine("qemu-system-x86_64", "qemu-system-x86", [], "ttyS0", ("vmlinux", "vmlinuz"),
                      "linux-image-amd64", "amd64"),
    # The generic virt board; the kernel is Debian's arm64 Image.
    "aarch64": Machine("qemu-system-aarch64", "qemu-system-arm", ["-M", "virt"], "ttyAMA0", ("Image",),
                       "linux-image-arm64", "arm64", subdir="arm64", triplet="aarch64-linux-gnu",
                       strip="aarch64-linux-gnu-strip"),
}


def say(msg):
    print(f"vm-test: {msg}", flush=True)


def build_initramfs(args, plan, workdir):
    cpio = Cpio()
    for d in ("/bin", "/dev", "/proc", "/sys", "/tmp", "/etc", "/nps/bin"):
        cpio.dir(d)
    cpio.chardev("/dev/console", 5, 1)
    cpio.chardev("/dev/null", 1, 3, 0o666)
    cpio.file("/init", (HERE / "init").read_bytes(), 0o755)
    cpio.file("/bin/busybox", Path(args.busybox).read_bytes(), 0o755)
    cpio.file("/etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
    libs = set()
    machine = args.machine
    if args.package:
        # dpkg installs the runner and the userland holds its libraries.
        add_debian_userland(cpio, sorted(args.userland.glob("*.deb")))
        cpio.file("/nps/pkg/" + Path(args.package).name, Path(args.package).read_bytes())
        cpio.file("/nps/package_smoke", (HERE / "package_smoke").read_bytes(), 0o755)
    for binary in args.binaries:
        cpio.file("/nps/bin/" + Path(binary).name, stripped(binary, workdir, machine.strip), 0o755)
        if binary == args.runner:
            libs.update(runner_libraries(binary, machine.triplet))
        else:
            libs.update(foreign_shared_libraries(binary, machine.triplet) if machine.triplet
                        else shared_libraries(binary))
    for lib in sorted(libs):
        # The real file under the name the loader asks for (no symlinks).
        cpio.file(lib, Path(lib).read_bytes(), 0o755)
    overlay = Path(args.vm_dir) / machine.subdir / "modules" / "overlay.ko"
    if overlay.is_file():
        cpio.file("/nps/overlay.ko", overlay.read_bytes())
    if args.dag_smoke:
        add_dag_smoke(cpio, args, workdir)
    cpio.file("/nps/plan", plan.encode())
    data = cpio.bytes()
    # Uncompressed: gunzip under software emulation cost the guest about 2 s
    # for the 27 MiB of the whole plan.
    path = Path(workdir) / "initramfs.cpio"
    path.write_bytes(data)
    return path


# --- the DAG smoke run (tests/vm/dag_smoke) ----------------------------------

SOURCE = HERE.parent.parent
DAG_INBOX = "urn:nps:agent:demo.local:pipeline"
# The demo's agents (demo/task.json names them) and their workers' commands.
DAG_AGENTS = {"urn:nps:agent:demo.local:fetch": ["emit", '{"value":2}'],
              "urn:nps:agent:demo.local:double": ["double"],
              "urn:nps:agent:demo.local:report": ["report"]}


def add_dag_smoke(cpio, args, workdir):
    """/nps/dag_smoke and its inputs in /nps/dag: the demo worker image as an
    OCI layout, built with the VM architecture's busybox (demo/make-image),
    the agents' SpawnSpecs, the TaskFrame and the inbox."""
    image_dir = Path(workdir) / "demo-image"
    env = dict(os.environ, NPS_DEMO_BUSYBOX=str(Path(args.busybox).resolve()), NPS_DEMO_ARCH=args.machine.oci_arch)
    done = subprocess.run([str(SOURCE / "demo" / "make-image"), str(image_dir)], env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"demo/make-image failed: {done.stderr.strip()}")
    oci = image_dir / "oci"
    for path in sorted(oci.rglob("*")):
        target = "/nps/dag/oci/" + str(path.relative_to(oci))
        if path.is_dir():
            cpio.dir(target)
        else:
            cpio.file(target, path.read_bytes())
    agents = "".join(f"{nid} {demo_spawn_spec('nps-demo-worker:1', words, 240)}\n" for nid, words in DAG_AGENTS.items())
    cpio.file("/nps/dag/agents", agents.encode())
    cpio.file("/nps/dag/task.json", (SOURCE / "demo" / "task.json").read_bytes())
    cpio.file("/nps/dag/inbox", DAG_INBOX.encode() + b"\n")
    cpio.file("/nps/dag_smoke", (HERE / "dag_smoke").read_bytes(), 0o755)


# --- the run ---------------------------------------------------------------

def make_plan(args):
    env = "NPS_EXPECT_CGROUP_MODE=unified"
    lines = []
    if args.cgroup_test:
        name = Path(args.cgroup_test).name
        lines.append(f"cgroup-root root env {env} /nps/bin/{name} --no-colors")
        lines.append(f"cgroup-delegated delegated env {env} /nps/bin/{name} --no-colors")
        lines.append(f"cgroup-namespace cgroupns env {env} /nps/bin/{name} --no-colors")
    if args.sandbox_test:
        name = Path(args.sandbox_test).name
        runner = Path(args.runner).name
        lines.append(f"sandbox root env {env} NPS_RUNNER_BIN=/nps/bin/{runner} /nps/bin/{name} --no-colors")
    # The smoke's own waits (serve ready, the task done) end well inside the
    # VM's timeout, so that a stall prints serve.log instead of the VM being
    # killed with nothing said.
    wait = max(20, int(args.timeout) // 4)
    if args.package:
        lines.append(f"package-install root /nps/package_smoke install /nps/pkg/{Path(args.package).name}")
        lines.append(f"dag-smoke root /nps/dag_smoke /usr/bin/nps-runner /nps/dag {wait}")
        lines.append("package-purge root /nps/package_smoke purge")
    elif args.dag_smoke:
        lines.append(f"dag-smoke root /nps/dag_smoke /nps/bin/{Path(args.runner).name} /nps/dag {wait}")
    return "".join(line + "\n" for line in lines)


class Terminated(Exception):
    pass


def on_signal(signum, frame):
    raise Terminated(signal.Signals(signum).name)


def run_vm(args, initrd):
    """Boots the VM, echoing its console; returns (lines, qemu's exit status,
    timed out?, seconds to userspace or None, seconds in all)."""
    cmd = [args.qemu, *args.machine.board, "-accel", "tcg", "-cpu", "max", "-smp", str(args.cpus),
           "-m", str(args.memory), "-nodefaults", "-nographic", "-serial", "stdio", "-no-reboot", "-nic", "none",
           "-kernel", args.kernel, "-initrd", str(initrd),
           # panic=-1: reboot at once on a panic, which -no-reboot turns into an exit.
           "-append", " ".join([f"console={args.machine.console} cgroup_no_v1=all panic=-1 quiet loglevel=4 "
                                "rdinit=/init"] + args.append)]
    say("starting: " + " ".join(cmd))
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines, pending = [], b""
    timed_out = False
    userspace_at = None

    def take(raw):
        nonlocal userspace_at
        line = clean(raw)
        print(line, flush=True)
        lines.append(line)
        if userspace_at is None and "NPS-VM-INIT" in line:
            userspace_at = time.monotonic() - start

    try:
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = start + args.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            if not sel.select(timeout=min(left, 1.0)):
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                take(raw)
        if pending:
            take(pending)
    finally:
        if proc.poll() is None and (timed_out or sys.exc_info()[0] is not None):
            proc.kill()
        rc = proc.wait()
    return lines, rc, timed_out, userspace_at, time.monotonic() - start


def verdict(args, lines, rc, timed_out, expected):
    """From the console lines: (all passed?, the problems, {name: exit status})."""
    ended, begun, done = {}, [], False
    for line in lines:
        if m := re.search(r"NPS-VM-BEGIN (\S+)", line):
            begun.append(m.group(1))
        elif m := re.search(r"NPS-VM-END (\S+) status=(\d+)", line):
            ended[m.group(1)] = int(m.group(2))
        elif "NPS-VM-DONE" in line:
            done = True
    problems = []
    if timed_out:
        running = next((n for n in reversed(begun) if n not in ended), None)
        where = f"while running '{running}'" if running else \
            ("before userspace reported" if not any("NPS-VM-INIT" in l for l in lines)
             else "outside any test")
        problems.append(f"the VM did not finish within {args.timeout} s ({where}); killed it")
    elif not done:
        panic = next((l for l in lines if "Kernel panic" in l), None)
        if panic:
            problems.append("the kernel panicked: " + panic[panic.index("Kernel panic"):])
        elif not any("NPS-VM-INIT" in l for l in lines):
            problems.append(f"the VM stopped (qemu exit status {rc}) before userspace reported; "
                            f"is '{args.kernel}' a bootable {args.arch} kernel? (console output above)")
        else:
            problems.append(f"the VM stopped (qemu exit status {rc}) before the plan finished")
    for name in expected:
        if name not in ended:
            if done:
                problems.append(f"'{name}' did not report a result")
        elif ended[name] == SKIP:
            problems.append(f"'{name}' skipped inside the VM (exit 77): the VM is built to run it, "
                            "so this is a failure")
        elif ended[name] != 0:
            problems.append(f"'{name}' failed in the VM (exit status {ended[name]})")
    return not problems, problems, ended


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cgroup-test", help="the privileged-cgroup test binary")
    p.add_argument("--sandbox-test", help="the privileged-sandbox test binary (needs --runner)")
    p.add_argument("--runner", help="the nps-runner binary, for --sandbox-test and --dag-smoke")
    p.add_argument("--dag-smoke", action="store_true",
                   help="also run serve and a 3-node DAG of sandboxed workers in the VM (tests/vm/dag_smoke)")
    p.add_argument("--package", metavar="DEB",
                   help="install DEB with dpkg in the VM, run the DAG smoke with it, purge it (tests/vm/package_smoke)")
    p.add_argument("--vm-dir", default=os.environ.get("NPS_VM_DIR", DEFAULT_VM_DIR),
                   help="where scripts/install-deps caches the kernel (default %(default)s, or $NPS_VM_DIR)")
    p.add_argument("--arch", default="x86_64",
                   help="the test binaries' CPU family, as meson names it: " + ", ".join(MACHINES) +
                        " (default %(default)s)")
    p.add_argument("--kernel", help="kernel image (default: the one install-deps caches in <vm-dir> for --arch)")
    p.add_argument("--qemu", help="qemu system emulator (default: the one for --arch)")
    p.add_argument("--busybox", help="a static busybox of --arch (default: /bin/busybox, or the cached one)")
    p.add_argument("--timeout", type=float, default=240, help="seconds for the whole VM run (%(default)s)")
    p.add_argument("--memory", type=int, default=1024, help="MiB (%(default)s)")
    p.add_argument("--cpus", type=int, default=2, help="(%(default)s)")
    p.add_argument("--append", action="append", default=[], help="another kernel command-line argument")
    p.add_argument("--keep", action="store_true", help="keep the work directory (initramfs)")
    args = p.parse_args()

    args.dag_smoke = args.dag_smoke or bool(args.package)
    if not args.cgroup_test and not args.sandbox_test and not args.dag_smoke:
        p.error("nothing to run: give --cgroup-test, --sandbox-test, --dag-smoke and/or --package")
    if args.sandbox_test and not args.runner:
        p.error("--sandbox-test needs --runner")
    if args.dag_smoke and not args.package and not args.runner:
        p.error("--dag-smoke needs --runner (or --package)")

    # Missing tools or kernel: skip, saying what and how to get it. A kernel
    # named explicitly that is not there is a mistake: fail.
    install_hint = "scripts/install-deps (as root) installs it"
    machine = args.machine = MACHINES.get(args.arch)
    if machine is None:
        say(f"SKIP: no emulated machine for the CPU family '{args.arch}' (known: {', '.join(MACHINES)})")
        return SKIP
    cache = Path(args.vm_dir) / machine.subdir
    args.qemu = args.qemu or machine.qemu
    if not shutil.which(args.qemu):
        say(f"SKIP: no '{args.qemu}' (Debian package {machine.qemu_package}); {install_hint}")
        return SKIP
    if args.kernel is None:
        found = [cache / name for name in machine.kernel_names if (cache / name).is_file()]
        if not found:
            say(f"SKIP: no VM kernel in '{cache}' ({' or '.join(machine.kernel_names)} from Debian's "
                f"{machine.kernel_package}); {install_hint}")
            return SKIP
        args.kernel = str(found[0])
    elif not Path(args.kernel).is_file():
        say(f"FAIL: kernel '{args.kernel}' does not exist")
        return 1
    args.busybox = args.busybox or ("/bin/busybox" if machine.triplet is None else str(cache / "busybox"))
    if not Path(args.busybox).is_file():
        say(f"SKIP: no '{args.busybox}' (Debian package busybox-static); {install_hint}")
        return SKIP
    if args.package:
        if not Path(args.package).is_file():
            say(f"SKIP: no package '{args.package}': the 'packages' test of this build makes it "
                "(meson test packages, before this test)")
            return SKIP
        args.userland = cache / "debian"
        if not (args.userland / "PACKAGES").is_file():
            say(f"SKIP: no Debian userland for {args.arch} in '{args.userland}'; {install_hint}")
            return SKIP
    if args.dag_smoke and not shutil.which("umoci"):
        say(f"SKIP: no 'umoci' (Debian package umoci) to build the worker image; {install_hint}")
        return SKIP
    args.binaries = [b for b in (args.cgroup_test, args.sandbox_test, args.runner) if b]
    if args.cgroup_test:
        # util-linux's (essential on Debian): busybox's cannot make a cgroup namespace.
        unshare = shutil.which("unshare") if machine.triplet is None else str(cache / "unshare")
        if not unshare or not Path(unshare).is_file():
            say(f"SKIP: no 'unshare' for {args.arch} (Debian package util-linux); {install_hint}")
            return SKIP
        args.binaries.append(unshare)
    for b in args.binaries:
        if not os.access(b, os.X_OK):
            say(f"FAIL: '{b}' is not an executable")
            return 1

    plan = make_plan(args)
    expected = [line.split()[0] for line in plan.splitlines()]
    version = cache / "VERSION"
    say(f"kernel {args.kernel}" + (f" ({version.read_text().strip()})" if version.is_file() else ""))

    workdir = tempfile.mkdtemp(prefix="nps-vm-")
    try:
        t0 = time.monotonic()
        try:
            initrd = build_initramfs(args, plan, workdir)
        except (OSError, RuntimeError) as e:
            say(f"FAIL: cannot build the initramfs: {e}")
            return 1
        say(f"initramfs: {initrd.stat().st_size >> 20} MiB, built in {time.monotonic() - t0:.1f} s")
        try:
            lines, rc, timed_out, userspace_at, total = run_vm(args, initrd)
        except Terminated as e:
            say(f"FAIL: stopped by {e}; killed the VM")
            return 1
    finally:
        if args.keep:
            say(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    ok, problems, ended = verdict(args, lines, rc, timed_out, expected)
    if userspace_at is not None:
        uptime = next((m.group(1) for l in lines if (m := re.search(r"NPS-VM-INIT uptime=(\S+)", l))), "?")
        say(f"userspace reached {userspace_at:.1f} s after qemu started (guest uptime {uptime} s)")
    say(f"VM run took {total:.1f} s")
    for name in expected:
        status = ended.get(name)
        say(f"  {name}: " + ("no result" if status is None else "passed" if status == 0 else f"exit {status}"))
    for problem in problems:
        say("FAIL: " + problem)
    return 0 if ok else 1


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sys.exit(main())
