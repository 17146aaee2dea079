"""The Linux-ABI test programs (user/linux/abi/): build, run, compare.

The programs are static musl C programs; each prints a transcript of what
the kernel answered and exits 0 when every check held.  Run on the Linux
reference VM they give Linux's answers, committed as
user/linux/abi/expected/<name>.out; the same binaries on any other system
must print the same bytes.  Each system's side is a function returning
{name: Transcript}; `compare` judges one transcript against another,
whichever systems they come from.

The VM runs every program from /abi in the initramfs, each in its own fresh
folder on an ext2 disk (virtio-blk, `mount -t ext2`), and writes the
transcripts to that disk (/out/<name>.out, .err); the harness reads them back
with debugfs after the VM powered off, so the console's line discipline never
touches them.
"""

import datetime
import difflib
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import disk
import linuxvm
import qemu
from common import BUILD, ROOT, ensure_host_tools, log, rel, run_guarded, shown_argv

SRC = ROOT / "user" / "linux" / "abi"
EXPECTED = SRC / "expected"
OUT = BUILD.parent / "linux-abi"
# Truncating snprintf is how the programs shorten what they print.
CC = ["musl-gcc", "-static", "-O2", "-Wall", "-Wextra", "-Werror", "-Wno-format-truncation"]
DISK_MIB = 64
VM_TIMEOUT = 1800
HOST_TIMEOUT = 300


@dataclass
class Transcript:
    out: bytes
    err: bytes = b""
    status: int | None = 0  # exit status; None: no status (killed, lost)


# One-file Rust programs (std, static for musl), as xtask/src/sysimage.rs builds them.
RUSTC = ["rustc", "--edition", "2024", "--target", "x86_64-unknown-linux-musl", "-C", "opt-level=2",
         "-C", "relocation-model=static", "-C", "target-feature=+crt-static",
         "-C", "strip=debuginfo"]


def programs():
    return sorted(p.stem for p in [*SRC.glob("*.c"), *SRC.glob("*.rs")])


def build(names=None):
    """Compile what is out of date; {name: executable}."""
    ensure_host_tools(["musl-gcc"])
    OUT.mkdir(parents=True, exist_ok=True)
    headers = list(SRC.glob("*.h"))
    out = {}
    for name in names or programs():
        src = SRC / f"{name}.c"
        if not src.exists():
            src = SRC / f"{name}.rs"
        if not src.exists():
            raise SystemExit(f"no program {name} (user/linux/abi/{name}.c or .rs)")
        exe = OUT / name
        newest = max(p.stat().st_mtime for p in [src, *headers, Path(__file__)])
        if not exe.exists() or exe.stat().st_mtime < newest:
            log(f"cc {rel(src)}")
            tmp = exe.with_name(f".{name}.{os.getpid()}.tmp")
            cc = RUSTC if src.suffix == ".rs" else CC
            r = subprocess.run([*cc, "-o", str(tmp), str(src)], capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"cc {rel(src)} failed:\n{r.stderr}")
            tmp.rename(exe)
        out[name] = exe
    return out


# ---------------------------------------------------------------------------
# Linux's side


def run_linux(exes, mode="tcg", smp=1, mem="512M", raw_dir=None, cached_only=False, image=None):
    """Boot the reference VM once with the programs; ({name: Transcript}, record).
    cached_only: never download (raises linuxvm.NotCached); image: the
    disk image to make and use (default build/linux-abi/disk.img)."""
    ensure_host_tools(["qemu-system-x86_64"])
    raw_dir = Path(raw_dir or OUT / "runs")
    raw_dir.mkdir(parents=True, exist_ok=True)
    extra = {f"abi/{n}": p for n, p in exes.items()}
    vmlinux, initrd, manifest = linuxvm.prepare({}, cached_only=cached_only, disk=True, extra=extra, name="abi")
    image = disk.make_ext2(image or OUT / "disk.img", DISK_MIB)
    args, source = qemu.machine_args(mode, smp, mem, disk=image)
    append = f"{manifest['append']} disk abi=all"
    argv = ["qemu-system-x86_64", *args, "-kernel", str(vmlinux), "-initrd", str(initrd), "-append", append]
    log(f"linux: {len(exes)} programs ({mode}, timeout {VM_TIMEOUT} s)")
    r = run_guarded(argv, VM_TIMEOUT, log_path=raw_dir / "linux.log")
    problems = []
    if r.timed_out:
        problems.append(f"VM killed after {VM_TIMEOUT} s")
    elif "ABI-DONE" not in r.lines:
        problems.append(f"no ABI-DONE (QEMU exit status {r.status})")
    problems += [ln for ln in r.lines if ln.startswith("BENCH-ERROR")]
    statuses = {}
    for ln in r.lines:
        if ln.startswith("ABI-RESULT,"):
            _, name, st = ln.split(",", 2)
            statuses[name] = int(st) if st.strip().isdigit() else None
    clean, report = disk.fsck(image)
    if not clean:
        problems.append("e2fsck -fn found errors after the run: " + report.splitlines()[-1])
    transcripts = {}
    with tempfile.TemporaryDirectory(prefix="tessera-abi-") as d:
        try:
            out = disk.copy_out(image, "/out", d)
        except SystemExit as e:
            problems.append(str(e))
            out = None
        for name in exes:
            o = out / f"{name}.out" if out else None
            if name not in statuses or not o or not o.exists():
                problems.append(f"{name}: did not run")
                continue
            e = out / f"{name}.err"
            transcripts[name] = Transcript(o.read_bytes(), e.read_bytes() if e.exists() else b"",
                                           statuses[name])
    record = {
        "kernel": f"Debian {manifest['kernel_package']} {manifest['kernel_version']}",
        "busybox": manifest["busybox_version"],
        "qemu": qemu.qemu_version(),
        "machine": qemu.command_line(shown_argv(argv)),
        "args_source": source,
        "host_wall_s": round(r.wall_s, 1),
        "problems": problems,
    }
    return transcripts, record


# ---------------------------------------------------------------------------
# The host's side (a development aid: the host is a Linux too, but its file
# system and kernel version are not the reference's)


def run_host(exes):
    transcripts = {}
    for name, exe in exes.items():
        with tempfile.TemporaryDirectory(prefix=f"tessera-abi-{name}-") as d:
            env = {"PATH": "/bin:/usr/bin", "HOME": "/", "TERM": "linux"}
            with open(Path(d) / "out", "wb") as fo, open(Path(d) / "err", "wb") as fe:
                try:
                    p = subprocess.run([str(exe)], cwd=d, env=env, stdin=subprocess.DEVNULL,
                                       stdout=fo, stderr=fe, timeout=HOST_TIMEOUT)
                    st = p.returncode if p.returncode >= 0 else 128 - p.returncode
                except subprocess.TimeoutExpired:
                    st = None
            transcripts[name] = Transcript((Path(d) / "out").read_bytes(), (Path(d) / "err").read_bytes(), st)
    return transcripts


# ---------------------------------------------------------------------------
# Judging


def read_expected(name):
    path = EXPECTED / f"{name}.out"
    return Transcript(path.read_bytes(), b"", 0) if path.exists() else None


def compare(name, want, got, context=2, limit=60):
    """Differences of `got` from `want` as lines of text; [] when identical."""
    if want is None:
        return [f"{name}: no expected transcript"]
    if got is None:
        return [f"{name}: did not run"]
    diffs = []
    if got.status != want.status:
        diffs.append(f"{name}: exit status {got.status}, want {want.status}")
    if got.out != want.out:
        a = want.out.decode("utf-8", "replace").splitlines()
        b = got.out.decode("utf-8", "replace").splitlines()
        d = list(difflib.unified_diff(a, b, f"{name} (expected)", f"{name} (this run)", n=context,
                                      lineterm=""))
        diffs += d[:limit] + ([f"... {len(d) - limit} more diff lines"] if len(d) > limit else [])
    return diffs


def count_checks(transcript):
    """(checks, failed) from a transcript's last line."""
    for line in reversed(transcript.out.decode("utf-8", "replace").splitlines()):
        if line.startswith("-- ") and "checks" in line:
            parts = line.split()
            try:
                return int(parts[1]), int(parts[3])
            except (IndexError, ValueError):
                break
    return None, None


def write_expected(transcripts, record, complete):
    """Store Linux's transcripts; `complete`: every program ran, so an
    expected file without a program is stale and goes."""
    EXPECTED.mkdir(parents=True, exist_ok=True)
    for name, t in transcripts.items():
        (EXPECTED / f"{name}.out").write_bytes(t.out)
    if complete:
        for old in EXPECTED.glob("*.out"):
            if old.stem not in transcripts:
                old.unlink()
    total, rows = 0, []
    for path in sorted(EXPECTED.glob("*.out")):
        checks, _ = count_checks(Transcript(path.read_bytes()))
        total += checks or 0
        rows.append(f"| `{path.stem}` | {checks} |")
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    text = f"""# Linux's answers

Each `<name>.out` is the transcript `user/linux/abi/<name>.c` printed on the
Linux reference VM; a Linux-ABI personality passes a program when it prints
the same bytes and exits 0. Regenerated by `make linux-abi` (do not edit).

- Kernel: {record['kernel']} (the package Debian's `linux-image-amd64` depends on)
- Userland: busybox-static {record['busybox']} as /init; the programs run from
  the initramfs, each in a fresh folder of an ext2 file system (`mke2fs -t ext2 -b 4096`,
  virtio-blk, `mount -t ext2`), as root, with the environment `PATH=/bin HOME=/ TERM=linux`
- {record['qemu']}; last regenerated on {date}; the machine:

```
{record['machine']}
```

{len(rows)} programs, {total} checks:

| program | checks |
|---|---|
""" + "\n".join(rows) + "\n"
    (EXPECTED / "README.md").write_text(text)
