"""The Linux Test Project's system-call tests on the Linux reference VM.

`tools/ltp/build.sh` (make ltp-build) builds them as static musl programs into
build/ltp/.  This module puts the programs (without debug information) and
the runtest list on an ext2 image, boots the reference VM on it in batches
(`ltp=<first>:<count>` on the kernel command line; /init runs each entry
under a watchdog, in TMPDIR on the disk, as root), and writes
docs/results/ltp.csv and ltp.md: one verdict per runtest entry.

A batch that ends early (a hung kernel, a test that powered the VM off) loses
only the test that was running: it is recorded, the image is repaired with
e2fsck, and the next batch starts after it.  Tessera's column says "not run
yet" until its Linux personality can boot the same image.
"""

import csv
import datetime
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import disk
import linuxvm
import qemu
from common import RESULTS, ROOT, ensure_host_tools, log, rel, run_guarded, shown_argv

LTP = ROOT / "build" / "ltp"
BIN = LTP / "install" / "testcases" / "bin"
DATA = LTP / "install" / "testcases" / "data"
RUNTEST = LTP / "src" / "runtest" / "syscalls"
STAGE = LTP / "disk-root"
IMAGE = LTP / "disk.img"
RUNS = LTP / "runs"
# Room for what the tests write, beyond the programs (sparse on the host).
SPARE_MIB = 1024
BATCH = 120
# A batch's host time limit grows with its size; every test also has
# /init's own watchdog (init.sh: 900 s) and, for most, LTP's library
# timeout.  A VM silent for longer than the watchdog is hung: it is killed.
BATCH_TIMEOUT_BASE = 600
BATCH_TIMEOUT_PER_TEST = 90
IDLE_TIMEOUT = 960

CLASSES = ("pass", "fail", "conf", "broken", "not built")


def entries():
    """The runtest list: [(name, command)] in file order."""
    if not RUNTEST.exists():
        raise SystemExit(f"{rel(RUNTEST)} missing: run make ltp-build first")
    out = []
    for line in RUNTEST.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) == 2:
            out.append((parts[0], parts[1]))
    return out


def built(cmd):
    """The program a runtest command starts exists in the build."""
    prog = cmd.split()[0]
    return (BIN / prog).exists()


def stage(selected, kconfig):
    """The image's tree: ltp/testcases/{bin,data}, ltp/runtest and ltp/kconfig
    (the kernel's configuration, which tests that need an option read)."""
    log("staging the LTP programs (debug information stripped)")
    bin_dir = STAGE / "ltp" / "testcases" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for src in BIN.iterdir():
        dst = bin_dir / src.name
        if dst.exists() and dst.stat().st_mtime >= src.stat().st_mtime:
            continue
        shutil.copy2(src, dst)
        if _is_elf(dst):
            subprocess.run(["strip", "--strip-debug", str(dst)], check=True)
    data = STAGE / "ltp" / "testcases" / "data"
    if DATA.exists() and not data.exists():
        shutil.copytree(DATA, data, symlinks=True)
    (STAGE / "ltp" / "runtest").write_text("".join(f"{n} {c}\n" for n, c in selected))
    if kconfig:
        shutil.copy(ROOT / kconfig, STAGE / "ltp" / "kconfig")
    size = sum(p.stat().st_size for p in STAGE.rglob("*") if p.is_file())
    return size


def _is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def classify(status):
    """(verdict, detail) from the exit status /init saw (LTP's bit mask)."""
    if status is None:
        return "broken", "no result (VM ended)"
    if status == 0:
        return "pass", ""
    if status == 32:
        return "conf", ""
    if status == 137:
        return "broken", "killed by the watchdog (timeout)"
    if status > 128:
        return "broken", f"killed by signal {status - 128}"
    if status == 127:
        return "broken", "command not found"
    words = [w for bit, w in ((1, "TFAIL"), (2, "TBROK"), (4, "TWARN"), (32, "TCONF")) if status & bit]
    if status & 1:
        return "fail", " ".join(words)
    return "broken", " ".join(words) or f"exit status {status}"


_RESULT = re.compile(r"LTP-RESULT,(\d+),([^,]+),(\d+),([\d.]+),([\d.]+)")
_START = re.compile(r"LTP-START,(\d+),(.+)")
# A verdict line: the new library's "file.c:12: TBROK: text", the old one's
# "name  1  TBROK  :  file.c:12: text".
_VERDICT = re.compile(r"\b(TFAIL|TBROK|TCONF|TWARN)\b\s*:\s*(.*)")


def collect(lines, selected, results, why_unfinished):
    """Fill `results` from one batch's console lines; True when the batch
    ran to its end (LTP-DONE).  A test that started and never reported
    (the VM ended) is broken, for the reason given."""
    running, out_lines = None, []
    for line in lines:
        m = _START.search(line)
        if m:
            running, out_lines = int(m.group(1)), []
            continue
        m = _RESULT.search(line)
        if m:
            n = int(m.group(1))
            running = None
            if results.get(n, {}).get("verdict") == "not built":
                continue
            verdict, detail = classify(int(m.group(3)))
            results[n] = {"name": m.group(2), "verdict": verdict, "detail": detail,
                          "seconds": f"{float(m.group(5)) - float(m.group(4)):.1f}",
                          "counts": _counts(out_lines), "reason": _reason(verdict, out_lines)}
        elif running is not None:
            out_lines.append(line)
    if running is not None and running not in results:
        results[running] = {"name": selected[running - 1][0], "verdict": "broken",
                            "detail": f"no result: {why_unfinished}", "seconds": ""}
    return "LTP-DONE" in lines


def _reason(verdict, lines):
    """The first line that explains a verdict other than pass."""
    want = {"fail": ("TFAIL",), "broken": ("TBROK", "TWARN", "TFAIL"), "conf": ("TCONF",)}.get(verdict)
    if not want:
        return ""
    for line in lines:
        m = _VERDICT.search(line)
        if m and m.group(1) in want and not m.group(2).startswith("Remaining cases"):
            # Drop the source position: the reason, not where it was said.
            text = re.sub(r"^[\w./-]+\.[ch]:\d+:\s*", "", m.group(2).strip())
            return text[:160]
    return ""


def results_from_logs(raw, selected):
    """The results of a run, again, from its batch logs (the one source)."""
    results = {}
    for i, (name, cmd) in enumerate(selected, 1):
        if not built(cmd):
            results[i] = {"name": name, "verdict": "not built", "detail": f"no program {cmd.split()[0]}",
                          "seconds": ""}
    for path in sorted(raw.glob("batch*.log"), key=lambda p: int(p.stem.split("-")[-1])):
        collect(path.read_text(errors="replace").splitlines(), selected, results,
                "the VM ended or was killed")
    return results


def run_linux(selected, mode="tcg", smp=1, mem="512M"):
    """Run every built entry; {index: result dict}, record."""
    ensure_host_tools(["qemu-system-x86_64"])
    vmlinux, initrd, manifest = linuxvm.prepare({}, disk=True, name="ltp")
    size = stage(selected, manifest["kconfig"])
    image_mib = size // (1 << 20) + SPARE_MIB
    log(f"image: {image_mib} MiB ext2 with {size >> 20} MiB of programs")
    disk.make_ext2(IMAGE, image_mib, STAGE)
    args, source = qemu.machine_args(mode, smp, mem, disk=IMAGE)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    raw = RUNS / stamp
    raw.mkdir(parents=True, exist_ok=True)
    results = {}
    for i, (name, cmd) in enumerate(selected, 1):
        if not built(cmd):
            results[i] = {"name": name, "verdict": "not built", "detail": f"no program {cmd.split()[0]}",
                          "seconds": ""}
    todo = [i for i in range(1, len(selected) + 1) if i not in results]
    boots, t_start = 0, time.monotonic()
    argv = None
    while todo:
        first = todo[0]
        count = min(BATCH, len(selected) - first + 1)
        boots += 1
        append = f"{manifest['append']} disk ltp={first - 1}:{count}"
        argv = ["qemu-system-x86_64", *args, "-kernel", str(vmlinux), "-initrd", str(initrd), "-append", append]
        timeout = BATCH_TIMEOUT_BASE + BATCH_TIMEOUT_PER_TEST * count
        log(f"batch {boots}: entries {first}..{first + count - 1} of {len(selected)} "
            f"({len(todo)} to run; timeout {timeout} s)")
        r = run_guarded(argv, timeout, log_path=raw / f"batch{boots:03d}-{first}.log", idle_s=IDLE_TIMEOUT)
        why = ("VM killed by the host (no output or out of time)" if r.timed_out
               else f"VM ended (QEMU status {r.status})")
        done = collect(r.lines, selected, results, why)
        if not done:
            ok, report = disk.repair(IMAGE)
            log(f"batch {boots} ended early; e2fsck -fy: {'repaired' if ok else 'FAILED'}")
            if not ok:
                raise SystemExit("the LTP image cannot be repaired:\n" + report[-2000:])
        last = first + count - 1
        if done:
            for i in range(first, last + 1):
                results.setdefault(i, {"name": selected[i - 1][0], "verdict": "broken",
                                       "detail": "no result line", "seconds": ""})
        before = len(todo)
        todo = [i for i in todo if i not in results]
        if len(todo) == before:
            # No progress at all: the first entry ends the VM before /init
            # can even report it.
            results[first] = {"name": selected[first - 1][0], "verdict": "broken",
                              "detail": "no result: the VM ended before it started", "seconds": ""}
            todo = todo[1:]
    wall = time.monotonic() - t_start
    record = {
        "kernel": f"Debian {manifest['kernel_package']} {manifest['kernel_version']}",
        "qemu": qemu.qemu_version(),
        "machine": qemu.command_line(shown_argv(argv)) if argv else "",
        "args_source": source,
        "boots": boots,
        "wall_s": round(wall),
        "raw_logs": rel(raw),
        "mode": mode,
    }
    return results, record


def _counts(lines):
    """TPASS/TFAIL/TCONF/TBROK lines a test printed."""
    c = {}
    for line in lines:
        for w in ("TPASS", "TFAIL", "TCONF", "TBROK", "TWARN"):
            if w in line:
                c[w] = c.get(w, 0) + 1
    return c


def build_info():
    status = LTP / "build-status.txt"
    times = LTP / "build-time.txt"
    dirs = status.read_text().split("\n") if status.exists() else []
    dirs = [d.split() for d in dirs if d.strip()]
    return {
        "directories": len(dirs),
        "directories_with_errors": sorted(d[0] for d in dirs if d[1] != "ok"),
        "programs": sum(1 for p in BIN.iterdir() if p.is_file()) if BIN.exists() else 0,
        "build_log": times.read_text().strip().splitlines() if times.exists() else [],
        "source": (LTP / "src.stamp").read_text().strip() if (LTP / "src.stamp").exists() else "?",
    }


def write_results(selected, results, record, complete):
    RESULTS.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (name, cmd) in enumerate(selected, 1):
        r = results.get(i, {"verdict": "not run", "detail": "", "seconds": ""})
        lines = ", ".join(f"{k} {v}" for k, v in sorted(r.get("counts", {}).items()))
        rows.append({"test": name, "command": cmd, "linux": r["verdict"], "linux_detail": r["detail"],
                     "linux_reason": r.get("reason", ""), "linux_seconds": r["seconds"], "linux_lines": lines,
                     "tessera": "not run yet"})
    with open(RESULTS / "ltp.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    counts = {c: sum(1 for r in rows if r["linux"] == c) for c in CLASSES}
    info = build_info()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    slow = sorted((r for r in rows if r["linux_seconds"]), key=lambda r: -float(r["linux_seconds"]))[:10]
    md = [
        "# LTP system-call tests",
        "",
        f"The Linux Test Project's `runtest/syscalls` ({info['source']}), built as static musl "
        "programs (`make ltp-build`) and run by `make ltp` on the Linux reference VM, as root, "
        "each in TMPDIR on an ext2 disk (virtio-blk), with `LTP_TIMEOUT_MUL=4` (an emulated machine) and "
        "`LTP_RUNTIME_MUL=0.1` (tests that run for a set time run a tenth of it, at least their minimum), "
        "a loop driver, `mkfs.ext2` (busybox), the kernel's configuration and a loopback interface. "
        "Per test: `ltp.csv` (verdict from LTP's exit "
        "status: 0 pass, 32 conf, TFAIL fail; TBROK, TWARN, a signal or a timeout broken; the first line "
        "saying why).",
        "" if complete else "**Partial run**: only the entries selected with ONLY= ran.",
        "",
        "| | Linux | Tessera |",
        "|---|---|---|",
    ]
    for c in CLASSES:
        md.append(f"| {c} | {counts[c]} | |")
    md.append(f"| **entries** | {len(rows)} | not run yet |")
    md += [
        "",
        "Tessera's column fills in when its Linux personality boots the same image; "
        "issue 18's goal is ≥ 80 % of the tests that pass on Linux.",
        "",
        "## How it ran",
        "",
        f"- Kernel: {record['kernel']}; {record['qemu']}; {record['mode']}; run on {date}",
        f"- {record['boots']} boots of the VM in batches of up to {BATCH} entries; "
        f"host wall time {record['wall_s'] // 60} min {record['wall_s'] % 60} s",
        f"- Build: {info['programs']} programs from {info['directories']} directories of "
        f"`testcases/kernel/syscalls`; with errors (some programs missing): "
        f"{', '.join(info['directories_with_errors']) or 'none'}",
    ]
    if info["build_log"]:
        md.append(f"- Last build (`tools/ltp/build.sh`): {info['build_log'][-1]}")
    md += ["", "Machine:", "", "```", record["machine"], "```", ""]
    for c in ("fail", "broken"):
        names = [f"`{r['test']}`" + (f" ({r['linux_detail']})" if r["linux_detail"] else "")
                 for r in rows if r["linux"] == c]
        if names:
            md += [f"## {c.capitalize()} on Linux ({len(names)})", "", ", ".join(names), ""]
    for c, what in (("broken", "Why tests broke"), ("conf", "Why tests did not apply (TCONF)")):
        reasons = {}
        for r in rows:
            if r["linux"] == c:
                key = re.sub(r"\d+", "N", r["linux_reason"] or r["linux_detail"] or "?")
                reasons.setdefault(key, []).append(r["test"])
        if reasons:
            md += [f"## {what} on Linux, most frequent first", "", "| tests | reason (digits as N) | e.g. |",
                   "|---|---|---|"]
            for key, tests in sorted(reasons.items(), key=lambda kv: -len(kv[1]))[:25]:
                md.append(f"| {len(tests)} | {key.replace('|', '/')} | `{tests[0]}` |")
            md.append("")
    if slow:
        md += ["## Slowest on Linux (guest seconds)", "", "| test | s |", "|---|---|"]
        md += [f"| `{r['test']}` | {r['linux_seconds']} |" for r in slow]
        md.append("")
    (RESULTS / "ltp.md").write_text("\n".join(md))
    (LTP / "last-record.json").write_text(json.dumps(record, indent=2))
    return counts


def main(only=None, mode="tcg", smp=1, mem="512M", report_only=False):
    allents = entries()
    selected = allents
    if only:
        wanted = set(only)
        selected = [e for e in allents if e[0] in wanted or e[1].split()[0] in wanted]
        if not selected:
            raise SystemExit(f"no runtest entry named {', '.join(sorted(wanted))}")
    if report_only:
        # The last run's results again from its logs (after a change to
        # how they are read), without running anything.
        saved = LTP / "last-record.json"
        if not saved.exists():
            raise SystemExit("no LTP run recorded yet")
        record = json.loads(saved.read_text())
        results = results_from_logs(ROOT / record["raw_logs"], selected)
    else:
        results, record = run_linux(selected, mode, smp, mem)
    counts = write_results(selected, results, record, complete=not only)
    log("LTP on Linux: " + ", ".join(f"{c} {n}" for c, n in counts.items())
        + f"; {record['boots']} boots, {record['wall_s']} s")
    log(f"written: {rel(RESULTS / 'ltp.md')}, {rel(RESULTS / 'ltp.csv')}")
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:] or None))
