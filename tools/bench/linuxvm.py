"""The Linux reference VM, built from Debian packages on a fresh machine.

- Kernel: the package `linux-image-amd64` depends on (Linux 6.1 on Debian 12),
  fetched with `apt-get download` and unpacked with `dpkg-deb -x` into
  build/, never installed on the host.  The uncompressed `vmlinux` is carved
  out of the vmlinuz: it carries a PVH entry note, so QEMU's `-kernel` starts
  it directly in 32-bit protected mode, like Tessera's ELF, skipping the
  real-mode setup and the decompressor (seconds under TCG).
- Userland: Debian's `busybox-static` plus the project's benchmark programs,
  packed as an uncompressed cpio (newc) initramfs written here in Python.
  /init (bench/linux/init.sh) runs the programs selected by `bench=` on the
  kernel command line, prints `BENCH-DONE` and powers the VM off.
- Storage: the kernel has virtio-blk and ext4 (which serves ext2) only as
  modules.  The ones the disk needs are kept from the package, with the
  modules they depend on, and go into the initramfs when a disk is wanted;
  /init loads them in dependency order when the command line says `disk`.
"""

import json
import lzma
import os
import stat
import struct
import subprocess
import zlib
from pathlib import Path

from common import LINUX_DIR, PROGS_SRC, ensure_host_tools, log, rel

DEBS = LINUX_DIR / "debs"
VMLINUX = LINUX_DIR / "vmlinux"
INITRD = LINUX_DIR / "initrd.cpio"
MANIFEST = LINUX_DIR / "manifest.json"

# Options the reference kernel boots with.  `console=ttyS0` sends the
# console (and /init's output) to the serial port QEMU prints; `quiet`
# keeps boot messages from slowing the run.  Measured: no TSC option is
# needed, the kernel calibrates against the PIT and keeps the TSC as its
# clocksource under TCG, so clock_gettime stays in the vDSO.
APPEND = "console=ttyS0 quiet"

_env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")


def _apt(*args, cwd=None):
    return subprocess.run(["apt-get", *args], cwd=cwd, env=_env, capture_output=True, text=True)


def _kernel_package():
    """Name of the concrete kernel package behind linux-image-amd64."""
    override = os.environ.get("LINUX_PKG")
    if override:
        return override
    for attempt in range(2):
        r = subprocess.run(["apt-cache", "depends", "linux-image-amd64"],
                           capture_output=True, text=True, env=_env)
        for line in r.stdout.splitlines():
            line = line.strip()
            if line.startswith("Depends: linux-image-"):
                return line.split(":", 1)[1].strip()
        if attempt == 0:
            # A fresh machine may not have package lists yet.
            log("apt-get update (package lists)")
            subprocess.run(["apt-get", "update"], env=_env, check=True)
    raise SystemExit("cannot resolve linux-image-amd64 (is this a Debian host?)")


class NotCached(Exception):
    """The VM is wanted without downloading, and a package is not there."""


def _download(pkg, cached_only=False):
    """Fetch one .deb into build/bench/linux/debs (cached)."""
    DEBS.mkdir(parents=True, exist_ok=True)
    found = sorted(DEBS.glob(f"{pkg}_*.deb"))
    if found:
        return found[-1]
    if cached_only:
        raise NotCached(pkg)
    log(f"apt-get download {pkg}")
    r = _apt("download", pkg, cwd=DEBS)
    if r.returncode != 0:
        subprocess.run(["apt-get", "update"], env=_env, check=True)
        r = _apt("download", pkg, cwd=DEBS)
    if r.returncode != 0:
        raise SystemExit(f"apt-get download {pkg} failed:\n{r.stderr}")
    found = sorted(DEBS.glob(f"{pkg}_*.deb"))
    if not found:
        raise SystemExit(f"apt-get download {pkg}: no .deb appeared")
    return found[-1]


def _deb_field(deb, field):
    return subprocess.run(["dpkg-deb", "-f", str(deb), field], capture_output=True,
                          text=True, check=True).stdout.strip()


def _unpack(deb, dest):
    if not dest.exists():
        log(f"dpkg-deb -x {deb.name}")
        tmp = dest.with_name(dest.name + ".tmp")
        subprocess.run(["rm", "-rf", str(tmp)], check=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
        tmp.rename(dest)
    return dest


def extract_vmlinux(vmlinuz, out):
    """Find the compressed kernel inside a bzImage and decompress it.

    Like Linux's scripts/extract-vmlinux: try every position of a known
    compression magic until one decompresses to an ELF file.
    """
    data = Path(vmlinuz).read_bytes()
    decoders = [
        (b"\xfd7zXZ\x00", lambda b: lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(b)),
        (b"\x1f\x8b\x08", lambda b: zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(b)),
        (b"\x28\xb5\x2f\xfd", _zstd),
    ]
    for magic, decode in decoders:
        pos = data.find(magic)
        while pos >= 0:
            try:
                blob = decode(data[pos:])
                if blob[:4] == b"\x7fELF":
                    out.write_bytes(blob)
                    return
            except Exception:  # not a real stream start; keep scanning
                pass
            pos = data.find(magic, pos + 1)
    raise SystemExit(f"no ELF kernel found inside {vmlinuz}")


def _zstd(b):
    return subprocess.run(["zstd", "-dc"], input=b, capture_output=True, check=True).stdout


def _has_pvh_note(elf):
    """True if the ELF carries a Xen PVH entry note (type 18, name 'Xen')."""
    r = subprocess.run(["readelf", "-n", str(elf)], capture_output=True, text=True)
    if r.returncode != 0:  # binutils absent: trust the kernel config instead
        return True
    # readelf names the type only in newer binutils; older ones print its number.
    return "(0x00000012)" in r.stdout or "PHYS32_ENTRY" in r.stdout


# What the disk needs: the virtio PCI transport, the block driver, ext4
# (mounting ext2) and the crc32c it asks for by its soft dependency
# `crypto-crc32c` (an alias, which no modprobe resolves here); and loop
# devices, which LTP's tests of mounts and devices attach files to; and
# virtio-net, for the web server's realism mode (webab.py).
STORAGE_MODULES = ["virtio_pci", "virtio_blk", "crc32c_generic", "ext4", "loop", "virtio_net"]


def _modinfo(ko):
    """The `.modinfo` section of a kernel module as {key: [values]}."""
    data = Path(ko).read_bytes()
    if data[:6] == b"\xfd7zXZ\x00":
        data = lzma.decompress(data)
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit(f"{ko}: not a 64-bit ELF module")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def section(i):
        name, _t, _f, _a, off, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        return name, data[off:off + size]

    names = section(shstrndx)[1]
    for i in range(shnum):
        name, body = section(i)
        if names[name:names.index(b"\0", name)] == b".modinfo":
            info = {}
            for item in body.split(b"\0"):
                key, sep, value = item.decode(errors="replace").partition("=")
                if sep:
                    info.setdefault(key, []).append(value)
            return info, data
    raise SystemExit(f"{ko}: no .modinfo section")


def collect_modules(root, wanted, dest):
    """Copy `wanted` and everything they depend on out of an unpacked kernel
    package into `dest`, laid out as /lib/modules is: `<release>/kernel/...`,
    with the `modules.dep` depmod would write for them and the package's
    `modules.builtin` and `modules.order` (tests look a driver up there),
    and `load.list`, the modules in an order insmod accepts.

    The package has no modules.dep (depmod writes it at installation); the
    same dependencies are in each module's `depends=` field, which is what
    depmod reads.
    """
    base = next((root / "lib" / "modules").iterdir())
    by_name = {}
    for ko in base.glob("kernel/**/*.ko*"):
        by_name[ko.name.split(".ko")[0].replace("-", "_")] = ko
    order, seen, deps = [], set(), {}

    def visit(name, chain):
        name = name.replace("-", "_")
        if name in seen:
            return
        if name in chain:
            raise SystemExit(f"module dependency loop: {' -> '.join(chain + [name])}")
        if name not in by_name:
            raise SystemExit(f"module {name} not in the kernel package (built in, or renamed?)")
        info, _ = _modinfo(by_name[name])
        deps[name] = [d.replace("-", "_") for d in ",".join(info.get("depends", [])).split(",") if d]
        for dep in deps[name]:
            visit(dep, chain + [name])
        seen.add(name)
        order.append(name)

    for name in wanted:
        visit(name, [])

    def rel_ko(name):
        # Stored uncompressed, so the name loses any .xz.
        path = by_name[name].relative_to(base)
        return str(path.with_name(path.name.split(".ko")[0] + ".ko"))

    def closure(name):
        # Every module `name` needs, each after the ones it needs itself.
        out = []
        for dep in deps[name]:
            for d in closure(dep) + [dep]:
                if d not in out:
                    out.append(d)
        return out

    tmp = dest.with_name(dest.name + ".tmp")
    subprocess.run(["rm", "-rf", str(tmp)], check=True)
    tree = tmp / base.name
    for name in order:
        _, data = _modinfo(by_name[name])
        target = tree / rel_ko(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    # depmod lists a module's dependencies last-needed first (a loader
    # inserts them from the end of the line).
    (tree / "modules.dep").write_text("".join(
        f"{rel_ko(n)}:" + "".join(f" {rel_ko(d)}" for d in reversed(closure(n))) + "\n" for n in order))
    for extra in ("modules.builtin", "modules.order"):
        if (base / extra).exists():
            (tree / extra).write_bytes((base / extra).read_bytes())
    (tmp / "load.list").write_text("".join(f"{base.name}/{rel_ko(n)}\n" for n in order))
    subprocess.run(["rm", "-rf", str(dest)], check=True)
    tmp.rename(dest)
    return dest


def prepare_kernel(cached_only=False):
    """Download and unpack the Debian kernel; return its manifest fields."""
    ensure_host_tools(["apt-get", "dpkg-deb"])
    if cached_only:
        # Whatever kernel an earlier run fetched; no package-list lookup.
        debs = sorted(DEBS.glob("linux-image-*.deb"))
        if not debs:
            raise NotCached("linux-image")
        pkg = _deb_field(debs[-1], "Package")
    else:
        pkg = _kernel_package()
    deb = _download(pkg, cached_only)
    version = _deb_field(deb, "Version")
    modules = LINUX_DIR / f"modules-{pkg}-{version}"
    root = LINUX_DIR / f"root-{pkg}-{version}"
    # The layout is part of what is kept: a change of either redoes it.
    wanted = ",".join(STORAGE_MODULES) + " in a /lib/modules tree"
    kept = (modules / "wanted").read_text() if (modules / "wanted").exists() else ""
    if kept != wanted and root.exists() and not (root / "lib").exists():
        # The modules were dropped after another set was kept: unpack again.
        subprocess.run(["rm", "-rf", str(root)], check=True)
    root = _unpack(deb, root)
    if kept != wanted:
        log(f"keeping modules {', '.join(STORAGE_MODULES)} and their dependencies")
        collect_modules(root, STORAGE_MODULES, modules)
        (modules / "wanted").write_text(wanted)
    # Nothing else needs the other 400 MB of modules: keep /boot.
    subprocess.run(["rm", "-rf", str(root / "lib"), str(root / "usr")], check=True)
    vmlinuz = sorted((root / "boot").glob("vmlinuz-*"))[0]
    stamp = LINUX_DIR / "vmlinux.source"
    if not VMLINUX.exists() or not stamp.exists() or stamp.read_text() != vmlinuz.name:
        log(f"extracting vmlinux from {vmlinuz.name}")
        extract_vmlinux(vmlinuz, VMLINUX)
        stamp.write_text(vmlinuz.name)
        if not _has_pvh_note(VMLINUX):
            raise SystemExit("extracted vmlinux has no PVH note; QEMU -kernel cannot start it")
    configs = sorted((root / "boot").glob("config-*"))
    return {"kernel_package": pkg, "kernel_version": version, "kernel_image": vmlinuz.name,
            "modules": str(modules), "kconfig": str(configs[0]) if configs else ""}


def prepare_busybox(cached_only=False):
    deb = _download("busybox-static", cached_only)
    version = _deb_field(deb, "Version")
    root = _unpack(deb, LINUX_DIR / f"root-busybox-static-{version}")
    return root / "bin" / "busybox", {"busybox_version": version}


# ---------------------------------------------------------------------------
# cpio "newc" writer: enough of the format for an initramfs (regular files,
# directories, symlinks and device nodes).  Timestamps and owners are fixed
# so that the same inputs give the same archive.

class Cpio:
    def __init__(self):
        self.parts = []
        self.ino = 1

    def _entry(self, name, mode, data=b"", rdev=(0, 0)):
        name_b = name.encode() + b"\0"
        fields = [self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name_b), 0]
        self.ino += 1
        hdr = b"070701" + b"".join(b"%08X" % f for f in fields)
        self.parts.append(hdr + name_b)
        self._pad()
        self.parts.append(data)
        self._pad()

    def _pad(self):
        size = sum(len(p) for p in self.parts)
        self.parts.append(b"\0" * (-size % 4))

    def dir(self, name):
        self._entry(name, stat.S_IFDIR | 0o755)

    def tree(self, name):
        """A directory and its parents, each once."""
        made = getattr(self, "_made", set())
        self._made = made
        parts = name.split("/")
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in made:
                made.add(d)
                self.dir(d)

    def file(self, name, data, mode=0o755):
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name, target):
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def chardev(self, name, major, minor, mode=0o600):
        self._entry(name, stat.S_IFCHR | mode, rdev=(major, minor))

    def bytes(self):
        self._entry("TRAILER!!!", 0)
        out = b"".join(self.parts)
        return out + b"\0" * (-len(out) % 512)


def build_initrd(busybox, programs, path=INITRD, modules=None, extra=None):
    """Pack /init, busybox and the benchmark programs into an initramfs.

    modules: a folder from collect_modules, packed as /lib/modules (only
    for a VM with a disk: the benchmarks without one keep the archive they
    always had).  extra: {path in the archive: host file} (executables).
    """
    c = Cpio()
    for d in ("bin", "bench", "dev", "proc", "sys", "tmp"):
        c.tree(d)
    # The kernel opens /dev/console for init before anything mounts devtmpfs.
    c.chardev("dev/console", 5, 1)
    c.chardev("dev/null", 1, 3, 0o666)
    c.file("bin/busybox", Path(busybox).read_bytes())
    c.symlink("bin/sh", "busybox")
    c.file("init", (PROGS_SRC / "init.sh").read_bytes())
    for name, exe in sorted(programs.items()):
        c.file(f"bench/{name}", Path(exe).read_bytes())
    if modules:
        for item in sorted(Path(modules).rglob("*")):
            name = f"lib/modules/{item.relative_to(modules)}"
            if item.is_dir():
                c.tree(name)
            elif item.name != "wanted":
                c.tree(name.rsplit("/", 1)[0])
                c.file(name, item.read_bytes(), 0o644)
    for name, host in sorted((extra or {}).items()):
        c.tree(name.rsplit("/", 1)[0])
        c.file(name, Path(host).read_bytes())
    # Write-then-rename: a QEMU started meanwhile reads an old or a new
    # archive, never half of one.
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(c.bytes())
    tmp.rename(path)
    return path


def prepare(programs, cached_only=False, disk=False, extra=None, name=None):
    """Everything the reference VM needs; returns (vmlinux, initrd, manifest).

    cached_only: build from packages an earlier run downloaded, or raise
    NotCached (the smoke test must never download a kernel).
    disk: pack the storage modules (the VM will get a disk).
    extra, name: more files for the archive (see build_initrd), which is
    then build/bench/linux/initrd-<name>.cpio.
    """
    LINUX_DIR.mkdir(parents=True, exist_ok=True)
    manifest = prepare_kernel(cached_only)
    busybox, bb = prepare_busybox(cached_only)
    manifest.update(bb)
    # The smoke test gets its own archive, so that it can run beside a
    # benchmark run without touching the archive that run boots; so does
    # every other kind of run.
    if cached_only:
        name = f"smoke-{name}" if name else "smoke"
    path = INITRD.with_name(f"initrd-{name}.cpio") if name else INITRD
    initrd = build_initrd(busybox, programs, path, manifest["modules"] if disk else None, extra)
    manifest["modules"] = rel(manifest["modules"])
    manifest["kconfig"] = rel(manifest["kconfig"]) if manifest["kconfig"] else ""
    manifest["append"] = APPEND
    if not cached_only:
        MANIFEST.write_text(json.dumps(manifest, indent=2))
    return VMLINUX, initrd, manifest
