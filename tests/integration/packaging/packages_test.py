#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The .deb and the .rpm, built from the already-built tree (no second
compile: debian/rules with NPS_PREBUILT_BUILDDIR, the spec with
nps_prebuilt_builddir). The .deb passes lintian and the .rpm rpmlint without errors or warnings,
installs with `dpkg -i` into this (throwaway, root) system with every file
where it belongs, and its /usr/bin/nps-runner serves with the installed
configuration on a temporary state directory, socket and port (no systemd):
it notifies READY=1, answers GET /healthz on loopback and on the socket, gives
the socket and its generated api.token to the group nps-runner the package
created, refuses a TCP request without that token, and exits 0 on SIGTERM. Then the package is purged and nothing is left. The .rpm
holds the same files, its configuration marked as such.

With --arch (a cross build: arm64, armhf) the packages are built for that
architecture from the cross-built tree (`dpkg-buildpackage -a`, `rpmbuild
--target`; .rpm for aarch64 only) and checked without installing them here:
lintian clean, every file in the .deb, the binary of the architecture. With
--artifacts DIR the packages built are kept there (CI keeps them:
scripts/test)."""
import argparse
import grp
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import SKIP, fail, run, skip  # noqa: E402

PACKAGE = "nps-runner"
GROUP = "nps-runner"
DEB_FILES = {
    "/usr/bin/nps-runner": 0o755,
    "/etc/nps-runner/config.toml": 0o640,  # root:nps-runner (dpkg-statoverride)
    "/lib/systemd/system/nps-runner.service": 0o644,
    "/usr/lib/tmpfiles.d/nps-runner.conf": 0o644,
    "/usr/share/man/man8/nps-runner.8.gz": 0o644,
    "/usr/share/man/man5/nps-runner.conf.5.gz": 0o644,
    "/usr/share/man/man7/nps-runner-worker.7.gz": 0o644,
    "/usr/share/nps-runner/config.toml.example": 0o644,
    "/usr/share/doc/nps-runner/copyright": 0o644,
    "/usr/share/bash-completion/completions/nps-runner": 0o644,
    "/usr/share/zsh/vendor-completions/_nps-runner": 0o644,
}
# Created at installation by systemd-tmpfiles (and by the unit at start).
DEB_DIRS = {"/var/lib/nps-runner": 0o711, "/run/nps-runner": 0o755}
RPM_FILES = {"/usr/bin/nps-runner", "/etc/nps-runner/config.toml", "/usr/lib/systemd/system/nps-runner.service",
             "/usr/lib/tmpfiles.d/nps-runner.conf", "/usr/share/man/man8/nps-runner.8",
             "/usr/share/man/man5/nps-runner.conf.5", "/usr/share/man/man7/nps-runner-worker.7",
             "/usr/share/nps-runner/config.toml.example", "/var/lib/nps-runner", "/run/nps-runner",
             "/usr/share/bash-completion/completions/nps-runner", "/usr/share/zsh/vendor-completions/_nps-runner"}


def must(cmd, label, **kwargs):
    done = run(cmd, **kwargs)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        fail(f"{label}: {' '.join(cmd)} exited {done.returncode}:\n{tail}")
    return done


def meson_version(source_root):
    return re.search(r"version\s*:\s*'([^']+)'", open(os.path.join(source_root, "meson.build")).read()).group(1)


def versions_agree(source_root, runner):
    """meson.build, debian/changelog, the spec and the binary name one version."""
    meson = meson_version(source_root)
    deb = re.match(r"\S+ \(([^)-]+)", open(os.path.join(source_root, "debian", "changelog")).read()).group(1)
    rpm = re.search(r"^Version:\s*(\S+)", open(os.path.join(source_root, "packaging", "rpm", "nps-runner.spec")).read(),
                    re.M).group(1)
    binary = must([runner, "version"], "version").stdout.split()[1]
    if len({meson, deb, rpm, binary}) != 1:
        fail(f"versions differ: meson.build {meson}, debian/changelog {deb}, spec {rpm}, binary {binary}")
    return meson


def has_debug_info(binary):
    return ".debug_info" in must(["readelf", "-S", "-W", binary], "readelf -S").stdout


def build_deb(build_root, src, out, arch=None):
    # A tree built without debug information (the ARM smoke builds) gets no
    # -dbgsym package: it would hold nothing.
    options = "nocheck" if has_debug_info(os.path.join(build_root, "nps-runner")) else "nocheck noautodbgsym"
    env = dict(os.environ, NPS_PREBUILT_BUILDDIR=build_root, DEB_BUILD_OPTIONS=options)
    # -d: the build dependencies are for a full build; this one only stages.
    cross = ["-a", arch] if arch else []
    must(["dpkg-buildpackage", "-b", "-us", "-uc", "-d", *cross], "dpkg-buildpackage", cwd=src, env=env)
    debs = [f for f in os.listdir(out) if re.fullmatch(rf"{PACKAGE}_[^_]+_[a-z0-9]+\.deb", f)]
    changes = [f for f in os.listdir(out) if f.endswith(".changes")]
    if len(debs) != 1 or len(changes) != 1:
        fail(f"dpkg-buildpackage made {debs} and {changes}")
    print(f"ok built {debs[0]} from the prebuilt tree")
    return os.path.join(out, debs[0]), os.path.join(out, changes[0])


def lint(changes):
    """lintian: no error or warning (info and pedantic tags are printed)."""
    done = run(["lintian", "--info", "--display-info", "--pedantic", changes])
    tags = [line for line in done.stdout.splitlines() if re.match(r"^[EWIPX]: ", line)]
    for tag in tags:
        print(f"  lintian {tag}")
    bad = [t for t in tags if t.startswith(("E: ", "W: "))]
    if bad or done.returncode not in (0, 1):
        fail(f"lintian: exit {done.returncode}, {len(bad)} errors/warnings: {bad} {done.stderr.strip()}")
    print(f"ok lintian: no errors or warnings ({len(tags)} info/pedantic tags)")


def check_installed():
    for path, mode in DEB_FILES.items():
        if not os.path.isfile(path):
            fail(f"{path} not installed")
        if os.stat(path).st_mode & 0o7777 != mode:
            fail(f"{path} has mode {oct(os.stat(path).st_mode & 0o7777)}, expected {oct(mode)}")
    for path, mode in DEB_DIRS.items():
        if not os.path.isdir(path):
            fail(f"{path} was not created at installation")
        if os.stat(path).st_mode & 0o7777 != mode:
            fail(f"{path} has mode {oct(os.stat(path).st_mode & 0o7777)}, expected {oct(mode)}")
    try:
        group = grp.getgrnam(GROUP)
    except KeyError:
        fail(f"installing the package created no system group {GROUP}")
    if group.gr_gid >= 1000:
        fail(f"group {GROUP} has gid {group.gr_gid}, not a system group")
    config = os.stat("/etc/nps-runner/config.toml")
    if config.st_uid != 0 or config.st_gid != group.gr_gid:
        fail(f"/etc/nps-runner/config.toml is owned {config.st_uid}:{config.st_gid}, expected root:{GROUP}")
    conffiles = must(["dpkg-query", "-W", "-f=${Conffiles}", PACKAGE], "dpkg-query").stdout
    if "/etc/nps-runner/config.toml" not in conffiles:
        fail(f"/etc/nps-runner/config.toml is not a conffile: {conffiles!r}")
    unit = open("/lib/systemd/system/nps-runner.service").read()
    if "ExecStart=/usr/bin/nps-runner serve" not in unit:
        fail("the installed unit does not start /usr/bin/nps-runner")
    if shutil.which("man"):
        for page, section in (("nps-runner", "8"), ("nps-runner.conf", "5"), ("nps-runner-worker", "7")):
            found = run(["man", "-w", section, page]).stdout.strip()
            if not found.startswith("/usr/share/man/"):
                fail(f"man -w {section} {page} finds {found!r}")
    print(f"ok dpkg -i: {len(DEB_FILES)} files and {len(DEB_DIRS)} directories in place, config.toml a conffile")


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self.path)


def healthz(conn, label):
    conn.request("GET", "/healthz")
    response = conn.getresponse()
    body = response.read()
    if response.status != 200 or json.loads(body).get("status") != "ok":
        fail(f"GET /healthz over {label}: {response.status} {body!r}")


def check_access(state, sock_path, port):
    """The installed defaults: a socket and a generated token for the group, TCP closed without the token."""
    gid = grp.getgrnam(GROUP).gr_gid
    for path, mode in ((sock_path, 0o660), (os.path.join(state, "api.token"), 0o640)):
        st = os.stat(path)
        if st.st_mode & 0o7777 != mode or st.st_uid != 0 or st.st_gid != gid:
            fail(f"{path} is {oct(st.st_mode & 0o7777)} {st.st_uid}:{st.st_gid}, expected {oct(mode)} root:{GROUP}")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/v1/tasks")
    response = conn.getresponse()
    response.read()
    if response.status != 401 or response.getheader("WWW-Authenticate") != "Bearer":
        fail(f"GET /v1/tasks without a token: {response.status}, WWW-Authenticate {response.getheader('WWW-Authenticate')}")
    token = open(os.path.join(state, "api.token")).readline().strip()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/v1/tasks", headers={"Authorization": "Bearer " + token})
    response = conn.getresponse()
    response.read()
    if response.status != 200:
        fail(f"GET /v1/tasks with the generated token: {response.status}")


def smoke(tmp):
    """The installed binary and configuration, without systemd."""
    state, sock_path, notify_path = (os.path.join(tmp, n) for n in ("state", "api.sock", "notify"))
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(30)
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    daemon = subprocess.Popen(["/usr/bin/nps-runner", "serve", "--config", "/etc/nps-runner/config.toml",
                               "--state-dir", state, "--socket", sock_path, "--listen", "127.0.0.1:0"],
                              env=env, stderr=subprocess.PIPE, text=True)
    try:
        try:
            ready = notify.recv(4096).decode()
        except socket.timeout:
            fail("serve sent nothing to NOTIFY_SOCKET within 30 s")
        if "READY=1" not in ready:
            fail(f"serve notified {ready!r}, not READY=1")
        port = None
        log = []
        while port is None:
            line = daemon.stderr.readline()
            if not line:
                fail(f"serve ended before naming its port: {''.join(log)}")
            log.append(line)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            port = m and int(m.group(1))
        healthz(http.client.HTTPConnection("127.0.0.1", port, timeout=10), f"127.0.0.1:{port}")
        healthz(UnixHTTPConnection(sock_path), "the unix socket")
        check_access(state, sock_path, port)
        daemon.send_signal(signal.SIGTERM)
        try:
            status = daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            fail("serve did not stop within 30 s of SIGTERM")
        if status != 0:
            fail(f"serve exited {status} after SIGTERM: {daemon.stderr.read()}")
        stopping = notify.recv(4096).decode()
        if "STOPPING=1" not in stopping:
            fail(f"serve notified {stopping!r} on SIGTERM, not STOPPING=1")
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        notify.close()
    print(f"ok /usr/bin/nps-runner serve: READY=1, /healthz on 127.0.0.1:{port} and the socket, SIGTERM exit 0")


def purge():
    must(["dpkg", "--purge", PACKAGE], "dpkg --purge")
    left = [p for p in list(DEB_FILES) + list(DEB_DIRS) + ["/etc/nps-runner"] if os.path.exists(p)]
    if left:
        fail(f"left after dpkg --purge: {left}")
    print("ok dpkg --purge: nothing left")


# Debian architecture → (RPM architecture, the GNU triplet of its binutils).
RPM_TARGETS = {"arm64": ("aarch64", "aarch64-linux-gnu")}
# Debian architecture → what `readelf -h` says of its binaries.
ELF_MACHINES = {"amd64": "Advanced Micro Devices X86-64", "arm64": "AArch64", "armhf": "ARM"}


def build_rpm(build_root, src, tmp, version, arch=None):
    topdir = os.path.join(tmp, "rpm")
    cross = []
    if arch:
        rpm_arch, triplet = RPM_TARGETS[arch]
        # Strip with the target's binutils (the host's cannot read its binaries).
        cross = ["--target", rpm_arch, "--define", f"__strip {triplet}-strip",
                 "--define", f"__objdump {triplet}-objdump"]
    # --nodeps: the BuildRequires name RPM packages, absent from dpkg systems.
    must(["rpmbuild", "-bb", "--nodeps", *cross, "--define", f"_topdir {topdir}",
          "--define", f"nps_prebuilt_builddir {build_root}", "--define", f"nps_srcdir {src}",
          "--define", "debug_package %{nil}", os.path.join(src, "packaging", "rpm", "nps-runner.spec")], "rpmbuild")
    rpms = []
    for root, _, files in os.walk(os.path.join(topdir, "RPMS")):
        rpms += [os.path.join(root, f) for f in files if f.endswith(".rpm")]
    if len(rpms) != 1 or not os.path.basename(rpms[0]).startswith(f"{PACKAGE}-{version}-"):
        fail(f"rpmbuild made {rpms}")
    files = set(must(["rpm", "-qlp", rpms[0]], "rpm -qlp").stdout.split())
    missing = RPM_FILES - files
    if missing:
        fail(f"{rpms[0]} lacks {sorted(missing)}")
    configs = must(["rpm", "-qcp", rpms[0]], "rpm -qcp").stdout.split()
    if configs != ["/etc/nps-runner/config.toml"]:
        fail(f"{rpms[0]} marks {configs} as configuration")
    unpacked = os.path.join(tmp, "rpmroot")
    os.mkdir(unpacked)
    subprocess.run(f"rpm2cpio '{rpms[0]}' | cpio -idm --quiet", shell=True, cwd=unpacked, check=True)
    if arch:
        check_machine(os.path.join(unpacked, "usr", "bin", "nps-runner"), arch, "the rpm's nps-runner")
    else:
        must([os.path.join(unpacked, "usr", "bin", "nps-runner"), "version"], "the rpm's nps-runner")
    unit = open(os.path.join(unpacked, "usr", "lib", "systemd", "system", "nps-runner.service")).read()
    if "ExecStart=/usr/bin/nps-runner serve" not in unit:
        fail("the rpm's unit does not start /usr/bin/nps-runner")
    print(f"ok built {os.path.basename(rpms[0])} from the prebuilt tree: {len(RPM_FILES)} paths, config marked")
    lint_rpm(rpms[0], src)
    return rpms[0]


def lint_rpm(rpm, src):
    """rpmlint: no error or warning beyond the filters of
    packaging/rpm/nps-runner.rpmlintrc (each says why)."""
    if not shutil.which("rpmlint"):
        skip("rpmlint is missing (scripts/install-deps installs it)")
    done = run(["rpmlint", "-r", os.path.join(src, "packaging", "rpm", "nps-runner.rpmlintrc"), rpm])
    found = [line for line in done.stdout.splitlines() if re.match(r"^\S+: [EW]: ", line)]
    if found or done.returncode != 0:
        fail(f"rpmlint {os.path.basename(rpm)}: exit {done.returncode}: {found} {done.stderr.strip()[-400:]}")
    print(f"ok rpmlint {os.path.basename(rpm)}: no errors or warnings")


def check_machine(binary, arch, label):
    header = must(["readelf", "-h", binary], f"readelf {label}").stdout
    machine = re.search(r"Machine:\s*(.+)", header).group(1).strip()
    if machine != ELF_MACHINES[arch]:
        fail(f"{label} is built for {machine}, not {arch} ({ELF_MACHINES[arch]})")


def check_cross_deb(deb, arch, tmp):
    """A .deb of another architecture, not installable here: its
    architecture, every file with its mode, a binary of that architecture."""
    field = must(["dpkg-deb", "-f", deb, "Architecture"], "dpkg-deb -f").stdout.strip()
    if field != arch:
        fail(f"{os.path.basename(deb)} says Architecture: {field}, not {arch}")
    listing = must(["dpkg-deb", "-c", deb], "dpkg-deb -c").stdout
    modes = {}
    for line in listing.splitlines():
        perms, path = line.split()[0], line.split()[-1].lstrip(".")
        if perms.startswith("-"):
            modes[path] = sum(0o400 >> i for i, c in enumerate(perms[1:10]) if c != "-")
    for path, mode in DEB_FILES.items():
        # The configuration's 0640 is set at installation (dpkg-statoverride).
        expected = 0o644 if path == "/etc/nps-runner/config.toml" else mode
        if modes.get(path) != expected:
            fail(f"{os.path.basename(deb)}: {path} " +
                 (f"has mode {oct(modes[path])}, expected {oct(expected)}" if path in modes else "is missing"))
    unpacked = os.path.join(tmp, "debroot")
    must(["dpkg-deb", "-x", deb, unpacked], "dpkg-deb -x")
    check_machine(os.path.join(unpacked, "usr", "bin", "nps-runner"), arch, "the .deb's nps-runner")
    print(f"ok {os.path.basename(deb)}: Architecture {arch}, {len(DEB_FILES)} files with their modes, "
          f"an {ELF_MACHINES[arch]} binary")


def keep(paths, artifacts):
    if not artifacts:
        return
    os.makedirs(artifacts, exist_ok=True)
    for path in paths:
        shutil.copy2(path, artifacts)
        print(f"kept {os.path.join(artifacts, os.path.basename(path))}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-root", required=True)
    parser.add_argument("--source-root", required=True)
    parser.add_argument("--arch", help="a cross build's Debian architecture: package it, do not install it")
    parser.add_argument("--artifacts", help="keep the packages built in this directory")
    args = parser.parse_args()
    build_root, source_root = os.path.abspath(args.build_root), os.path.abspath(args.source_root)
    runner = os.path.join(build_root, "nps-runner")
    if args.arch and args.arch not in ELF_MACHINES:
        fail(f"--arch {args.arch}: not one of {', '.join(ELF_MACHINES)}")

    if not shutil.which("dpkg-buildpackage") or not shutil.which("dh"):
        skip("dpkg-buildpackage or debhelper is missing (scripts/install-deps installs debhelper)")
    if os.geteuid() != 0 and not args.arch:
        skip("not root: the test installs the .deb into this system")
    if not all(os.path.exists(os.path.join(build_root, "man", p))
               for p in ("nps-runner.8", "nps-runner.conf.5", "nps-runner-worker.7")):
        skip("the man pages are not built (install scdoc; -Dman=enabled)")
    installed = run(["dpkg-query", "-W", "-f=${Status}", PACKAGE]).stdout
    existing = [p for p in ("/etc/nps-runner", "/var/lib/nps-runner") if os.path.exists(p)]
    if ("installed" in installed or existing) and not args.arch:
        skip(f"nps-runner is already installed here ({installed or existing}); the test would replace and purge it")

    if args.arch:
        return cross_packages(args, build_root, source_root)
    version = versions_agree(source_root, runner)
    skipped = []
    with tempfile.TemporaryDirectory(prefix="nps-packages-") as tmp:
        src = copy_packaging_sources(source_root, tmp)
        deb, changes = build_deb(build_root, src, tmp)
        kept = [deb]
        if shutil.which("lintian"):
            lint(changes)
        else:
            skipped.append("lintian is missing (scripts/install-deps)")
        group_before = GROUP in {g.gr_name for g in grp.getgrall()}
        must(["dpkg", "-i", deb], "dpkg -i")
        try:
            check_installed()
            smoke(tmp)
        finally:
            purge()
            # The package keeps its group on purge (as Debian packages do);
            # the group this test made it create goes again.
            if not group_before:
                run(["groupdel", GROUP])
        if shutil.which("rpmbuild"):
            kept.append(build_rpm(build_root, src, tmp, version))
        else:
            skipped.append("rpmbuild is missing (apt-get install rpm): no .rpm built")
        keep(kept, args.artifacts)
    if skipped:
        print("SKIP (in part): " + "; ".join(skipped))
        return SKIP
    return 0


def copy_packaging_sources(source_root, tmp):
    """A copy of what packaging reads, so the build leaves the source tree as
    it was (dpkg-buildpackage writes into debian/ and next to it)."""
    src = os.path.join(tmp, "src")
    os.mkdir(src)
    for sub in ("debian", "packaging"):
        shutil.copytree(os.path.join(source_root, sub), os.path.join(src, sub), symlinks=True)
    return src


def cross_packages(args, build_root, source_root):
    arch = args.arch
    check_machine(os.path.join(build_root, "nps-runner"), arch, "the cross-built nps-runner")
    if not shutil.which("lintian"):
        skip("lintian is missing (scripts/install-deps)")
    with tempfile.TemporaryDirectory(prefix="nps-packages-") as tmp:
        src = copy_packaging_sources(source_root, tmp)
        deb, changes = build_deb(build_root, src, tmp, arch)
        lint(changes)
        check_cross_deb(deb, arch, tmp)
        kept = [deb]
        if arch in RPM_TARGETS:
            if not shutil.which("rpmbuild"):
                skip("rpmbuild is missing (apt-get install rpm): no .rpm built")
            kept.append(build_rpm(build_root, src, tmp, meson_version(source_root), arch))
        keep(kept, args.artifacts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
