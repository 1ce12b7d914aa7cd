# SPDX-License-Identifier: Apache-2.0
"""What the VM tests share (tests/vm/vm_test.py, tests/vm/power_cut.py): the
initramfs archive writer, the copies of binaries and their shared libraries
that go into it, the cleaning of console lines, and finding the kernel that
scripts/install-deps caches."""

import base64
import io
import json
import re
import shutil
import subprocess
import sysconfig
import tarfile
from pathlib import Path

DEFAULT_VM_DIR = "/var/cache/nps-runner-tests/vm"
SKIP = 77


# --- initramfs (cpio "newc") -----------------------------------------------

class Cpio:
    """A newc archive written from a list of entries; no staging directory,
    so device nodes need no privileges."""

    def __init__(self):
        self.entries = {}  # path -> (mode, data, (rdev major, minor))

    def dir(self, path):
        parts = Path(path).parts[1:]
        for i in range(1, len(parts) + 1):
            p = "/" + "/".join(parts[:i])
            if p not in self.entries:
                self.entries[p] = (0o040755, b"", (0, 0))

    def file(self, path, data, mode=0o644):
        self.dir(str(Path(path).parent))
        self.entries[path] = (0o100000 | mode, data, (0, 0))

    def chardev(self, path, major, minor, mode=0o600):
        self.dir(str(Path(path).parent))
        self.entries[path] = (0o020000 | mode, b"", (major, minor))

    def symlink(self, path, target):
        self.dir(str(Path(path).parent))
        self.entries[path] = (0o120777, target.encode(), (0, 0))

    def mkdir(self, path, mode):
        """A directory with its own mode (dir() makes its parents 0755)."""
        self.dir(str(Path(path).parent))
        self.entries[path] = (0o040000 | mode, b"", (0, 0))

    def bytes(self):
        out = bytearray()

        def add(ino, name, mode, data, rdev):
            name_b = name.encode() + b"\0"
            fields = [ino, mode, 0, 0, 2 if mode & 0o040000 else 1, 0, len(data),
                      0, 0, rdev[0], rdev[1], len(name_b), 0]
            out.extend(b"070701" + b"".join(b"%08X" % f for f in fields))
            out.extend(name_b)
            out.extend(b"\0" * (-len(out) % 4))
            out.extend(data)
            out.extend(b"\0" * (-len(out) % 4))

        for ino, path in enumerate(sorted(self.entries), start=1):
            mode, data, rdev = self.entries[path]
            add(ino, path.lstrip("/"), mode, data, rdev)
        add(0, "TRAILER!!!", 0, b"", (0, 0))
        return bytes(out)


# --- the demo worker's agents ------------------------------------------------

def demo_spawn_spec(image, words, max_runtime_seconds):
    """An inline SpawnSpec (spawnspec:<base64url JSON>) running the demo
    worker (demo/worker.sh as /bin/worker) of `image` with `words`."""
    spec = {"image": image, "command": ["/bin/worker", *words],
            "resource_limits": {"memory": "32Mi", "cpu": "500m"},
            "idle_timeout_seconds": 60, "max_runtime_seconds": max_runtime_seconds}
    return "spawnspec:" + base64.urlsafe_b64encode(json.dumps(spec).encode()).decode().rstrip("=")


# --- a Debian userland from .debs ------------------------------------------

def add_debian_userland(cpio, debs):
    """Unpacks each .deb of `debs` into `cpio` and records it in dpkg's
    database as installed (/var/lib/dpkg/status, info/<package>.list), as
    if dpkg had installed it; their maintainer scripts do not run (nothing
    of this architecture can run here). /etc/passwd and /etc/group are
    base-passwd's master files. Returns the packages' names."""
    status, names = [], []
    for deb in sorted(debs):
        control = subprocess.run(["dpkg-deb", "-f", str(deb)], capture_output=True, text=True, check=True).stdout
        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", control, re.M))
        package, arch = fields["Package"], fields["Architecture"]
        names.append(package)
        paths = add_deb_data(cpio, deb)
        paragraph = control.rstrip("\n").split("\n")
        paragraph.insert(1, "Status: install ok installed")
        status.append("\n".join(paragraph) + "\n")
        list_name = f"{package}:{arch}" if fields.get("Multi-Arch") == "same" else package
        cpio.file(f"/var/lib/dpkg/info/{list_name}.list", "".join(p + "\n" for p in paths).encode())
    cpio.file("/var/lib/dpkg/status", "\n".join(status).encode())
    for name in ("available", "diversions", "statoverride"):
        cpio.file(f"/var/lib/dpkg/{name}", b"")
    for d in ("/var/lib/dpkg/updates", "/var/lib/dpkg/triggers", "/var/lib/dpkg/alternatives", "/var/log",
              "/var/cache", "/etc/dpkg/dpkg.cfg.d"):
        cpio.dir(d)
    for name in ("passwd", "group"):
        master = cpio.entries.get(f"/usr/share/base-passwd/{name}.master")
        if master:
            cpio.file(f"/etc/{name}", master[1])
    return names


# Left out of the userland, as Debian's minimal images do with dpkg's
# path-exclude: documentation, translations and iconv's conversion modules
# (a quarter of the initramfs, and slower to boot under emulation).
EXCLUDED = re.compile(r"^/usr/(share/(doc|man|info|locale)|lib/[^/]+/gconv)/")


def add_deb_data(cpio, deb):
    """The files of one .deb (dpkg-deb --fsys-tarfile) into `cpio`, but those
    EXCLUDED; returns their paths as dpkg lists them."""
    tar_bytes = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, check=True).stdout
    paths = []
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        for member in tar.getmembers():
            path = "/" + member.name.lstrip("./")
            if path == "/":
                continue
            paths.append(path)
            if EXCLUDED.match(path):
                continue
            if member.isdir():
                if path not in cpio.entries:
                    cpio.mkdir(path, member.mode)
            elif member.issym():
                cpio.symlink(path, member.linkname)
            elif member.islnk():
                cpio.entries[path] = cpio.entries["/" + member.linkname.lstrip("./")]
            elif member.isfile():
                cpio.file(path, tar.extractfile(member).read(), member.mode)
    return paths


def elf_dependencies(binary):
    """(program interpreter or None, [DT_NEEDED names]) of an ELF file of any
    architecture, read with binutils' readelf."""
    r = subprocess.run(["readelf", "-W", "-l", "-d", binary], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"readelf {binary} failed: {r.stderr.strip()}")
    interpreter = re.search(r"Requesting program interpreter: ([^\]]+)\]", r.stdout)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", r.stdout)
    return (interpreter.group(1) if interpreter else None), needed


def multiarch_library(soname, triplet):
    """The path of library `soname` in Debian's multiarch directories of
    `triplet` (e.g. aarch64-linux-gnu, where the :arm64 packages put them)."""
    dirs = [f"/lib/{triplet}", f"/usr/lib/{triplet}"]
    path = next((f"{d}/{soname}" for d in dirs if Path(f"{d}/{soname}").exists()), None)
    if path is None:
        raise RuntimeError(f"no {soname} in {dirs} (scripts/install-deps installs the libraries of the builds)")
    return path


def foreign_shared_libraries(binary, triplet):
    """As shared_libraries(), for a binary of another architecture (ldd cannot
    run its loader): follows DT_NEEDED through the multiarch directories of
    `triplet`."""
    found, todo = set(), [binary]
    seen = set()
    while todo:
        current = todo.pop()
        interpreter, needed = elf_dependencies(current)
        if interpreter:
            found.add(interpreter)
        for name in needed:
            if name in seen:
                continue
            seen.add(name)
            path = multiarch_library(name, triplet)
            found.add(path)
            todo.append(path)
    return sorted(found)


# What nps-runner opens with dlopen on first use (src/lazy/; libpq only with a
# PostgreSQL store): not in its DT_NEEDED, so found by name.
LAZY_LIBRARIES = ("libcurl.so.4", "libmicrohttpd.so.12", "libcrypto.so.3")


def runner_libraries(runner, triplet=None):
    """The shared libraries (and loader) the nps-runner binary `runner` needs,
    those it loads lazily included; `triplet` as for foreign_shared_libraries(),
    None for the build machine's own architecture."""
    lazy = [multiarch_library(name, triplet or sysconfig.get_config_var("MULTIARCH")) for name in LAZY_LIBRARIES]
    if triplet:
        libs = set(foreign_shared_libraries(runner, triplet))
        for lib in lazy:
            libs.update([lib, *foreign_shared_libraries(lib, triplet)])
    else:
        libs = set(shared_libraries(runner))
        for lib in lazy:
            libs.update([lib, *shared_libraries(lib)])
    return sorted(libs)


def shared_libraries(binary):
    """Absolute paths of the shared libraries (and loader) `binary` needs."""
    r = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if r.returncode != 0:
        if "not a dynamic executable" in r.stdout + r.stderr:
            return []
        raise RuntimeError(f"ldd {binary} failed: {r.stderr.strip()}")
    libs = []
    for line in r.stdout.splitlines():
        if "not found" in line:
            raise RuntimeError(f"ldd {binary}: {line.strip()}")
        m = re.search(r"(/\S+) \(0x", line)
        if m:
            libs.append(m.group(1))
    return libs


def stripped(binary, workdir, strip="strip"):
    """A copy of `binary` without symbols (smaller initramfs, faster boot);
    `strip` is the binutils strip of the binary's architecture."""
    out = Path(workdir) / ("stripped-" + Path(binary).name)
    if shutil.which(strip):
        r = subprocess.run([strip, "-o", str(out), binary], capture_output=True, text=True)
        if r.returncode == 0:
            return out.read_bytes()
        print(f"strip {binary} failed ({r.stderr.strip()}); using it unstripped", flush=True)
    return Path(binary).read_bytes()


# Terminal control sequences (the firmware clears the screen) and carriage
# returns from the serial line.
CONTROL = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|[^\[])|\r")


def clean(raw):
    return CONTROL.sub("", raw.decode("utf-8", "replace"))


def find_kernel(vm_dir):
    """<vm_dir>/vmlinux (uncompressed: qemu starts it directly), else
    <vm_dir>/vmlinuz; None when neither is there."""
    vm_dir = Path(vm_dir)
    found = [k for k in (vm_dir / "vmlinux", vm_dir / "vmlinuz") if k.is_file()]
    return str(found[0]) if found else None
