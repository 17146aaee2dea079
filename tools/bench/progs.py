"""Build the Linux-side benchmark programs (bench/linux/*.c) with musl.

They are static x86_64 Linux executables: the same files run natively on the
host (smoke test), in the Linux reference VM, and later on Tessera's Linux
personality.
"""

import os
import subprocess
from pathlib import Path

from common import PROGS_OUT, PROGS_SRC, ensure_host_tools, log

CC = ["musl-gcc", "-static", "-O2", "-Wall", "-Wextra"]

# Benchmark drivers, in the order the reference VM runs them.  Each prints
# BENCH lines for the experiment of the same name.
EXPERIMENTS = ["syscall", "spawn", "pageaccess", "pagefault", "ipc", "transfer", "fs"]
# Drivers that work on the ext2 disk: the VM runs them in a boot of their
# own, with the disk attached (and `fs DIR` takes the folder to work in).
DISK_EXPERIMENTS = ["fs"]
# Scripts packed beside the programs (the same file on both systems).
SCRIPTS = ["procnet.sh", "web.sh"]
# Experiments the VM's /init runs from a script of those, without a disk.
SCRIPT_EXPERIMENTS = ["procnet"]
# A driver whose source is not <experiment>.c.
SOURCES = {"fs": "fsbench.c"}

# Programs the drivers start: name -> (source, extra flags).
HELPERS = {"tiny": ("tiny.c", []), "webload": ("webload.c", [])}
HELPERS.update({f"pageprog{n}": ("pageprog.c", [f"-DPAGES={n}"]) for n in (0, 200, 400, 800)})


def _targets():
    for name in EXPERIMENTS:
        yield name, SOURCES.get(name, f"{name}.c"), []
    for name, (src, flags) in HELPERS.items():
        yield name, src, flags


def build():
    """Compile what is out of date; return {program name: path}."""
    ensure_host_tools(["musl-gcc"])
    PROGS_OUT.mkdir(parents=True, exist_ok=True)
    headers = list(PROGS_SRC.glob("*.h"))
    out = {}
    for name, src, flags in _targets():
        src_path = PROGS_SRC / src
        exe = PROGS_OUT / name
        deps = [src_path, *headers, __file__]
        newest = max(Path(p).stat().st_mtime for p in deps)
        if not _is_elf(exe) or exe.stat().st_mtime < newest:
            log(f"cc {src} -> {name}")
            # Compile beside, then rename: a concurrent run (make test during
            # make bench) never packs or starts a half-written program.
            tmp = exe.with_name(f".{name}.{os.getpid()}.tmp")
            subprocess.run([*CC, *flags, "-o", str(tmp), str(src_path)], check=True)
            tmp.rename(exe)
        out[name] = exe
    # The experiments' scripts (bench/linux/*.sh): run by /init, and on
    # Tessera from its system disk.
    for name in SCRIPTS:
        out[name] = PROGS_SRC / name
    return out


def _is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def compiler_version():
    r = subprocess.run(["musl-gcc", "--version"], capture_output=True, text=True)
    first = r.stdout.splitlines()[0] if r.stdout else "unknown"
    return first
