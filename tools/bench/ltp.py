"""The Linux Test Project's system-call tests, the same binaries on the Linux
reference VM and on Tessera's Linux personality.

`tools/ltp/build.sh` (make ltp-build) builds them as static musl programs into
build/ltp/.  This module puts the programs (without debug information) and
the runtest list on an ext2 image and boots a system on it in batches, each
running a range of the runtest entries, each entry under a watchdog, in
TMPDIR on the disk, as root, reported on the console (LTP-START, LTP-RESULT,
LTP-DONE).  On Linux /init does it (`ltp=<first>:<count>` on the kernel
command line, bench/linux/init.sh); on Tessera the image is also its root
file system (the system disk's tree beside /ltp) and busybox's shell runs
tools/ltp/tessera.sh through the personality.  docs/results/ltp.csv and
ltp.md hold one verdict per runtest entry and system; a run of one system
keeps the other's column.

A batch that ends early (a hung kernel, a test that powered the machine off)
loses only the test that was running: it is recorded, the image is repaired
with e2fsck, and the next batch starts after it.
"""

import csv
import datetime
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import disk
import linuxvm
import qemu
from common import RESULTS, ROOT, build_tessera, ensure_host_tools, log, rel, run_guarded, shown_argv, tessera_boot

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
SYSTEMS = ("linux", "tessera")

# Tessera's image: the system disk's tree (made by `cargo xtask build`) and
# /ltp, with the driver script as /ltp/run.sh.
SYSTEM_ROOT = ROOT / "build" / "rootfs"
TESSERA_STAGE = LTP / "tessera-root"
TESSERA_IMAGE = LTP / "tessera.img"
TESSERA_DRIVER = ROOT / "tools" / "ltp" / "tessera.sh"
# Smaller batches than Linux's: a batch that ends early costs a boot of a
# system that still has much to learn.
TESSERA_BATCH = 40
# The guest watchdog per test, in seconds (Linux's /init gives 900).
TESSERA_LIMIT = 300


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


def refine(verdict, detail, lines):
    """The verdict the exit status gave, checked against what the test
    printed.  LTP's library gathers its children's results in a page of a
    file mapped MAP_SHARED; where that page is not shared, a test exits 0
    whatever its children printed, and the new library's summary counts
    nothing (on Linux a test that reports nothing is TBROK, never a
    zero summary and status 0)."""
    if verdict != "pass":
        return verdict, detail
    seen = {w for line in lines for w in ("TFAIL", "TBROK", "TWARN") if w in line}
    summary = {}
    for line in lines:
        m = re.match(r"\s*(passed|failed|broken|skipped)\s+(\d+)\s*$", line)
        if m:
            summary[m.group(1)] = int(m.group(2))
    if seen & {"TBROK", "TWARN"}:
        return "broken", "exit status 0 after " + " ".join(sorted(seen))
    if "TFAIL" in seen:
        return "fail", "exit status 0 after TFAIL"
    if len(summary) == 4 and not any(summary.values()):
        return "broken", "exit status 0, no result counted (summary all zero)"
    return verdict, detail


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
            verdict, detail = refine(*classify(int(m.group(3))), out_lines)
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


def _not_built(selected):
    return {i: {"name": name, "verdict": "not built", "detail": f"no program {cmd.split()[0]}", "seconds": ""}
            for i, (name, cmd) in enumerate(selected, 1) if not built(cmd)}


def run_batches(selected, image, batch, argv_for, raw, host_timeout):
    """Boot `argv_for(first, count)` until every built entry has a verdict;
    (results, boots, wall seconds, the last argv)."""
    results = _not_built(selected)
    todo = [i for i in range(1, len(selected) + 1) if i not in results]
    boots, t_start = 0, time.monotonic()
    argv = None
    while todo:
        first = todo[0]
        count = min(batch, len(selected) - first + 1)
        boots += 1
        argv = argv_for(first - 1, count)
        timeout = host_timeout(count)
        log(f"batch {boots}: entries {first}..{first + count - 1} of {len(selected)} "
            f"({len(todo)} to run; timeout {timeout} s)")
        r = run_guarded(argv, timeout, log_path=raw / f"batch{boots:03d}-{first}.log", idle_s=IDLE_TIMEOUT)
        why = ("killed by the host (no output or out of time)" if r.timed_out
               else f"the machine ended (QEMU status {r.status})")
        done = collect(r.lines, selected, results, why)
        if not done:
            ok, report = disk.repair(image)
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
            # No progress at all: the first entry ends the machine before it
            # can even be reported.
            results[first] = {"name": selected[first - 1][0], "verdict": "broken",
                              "detail": "no result: the machine ended before it started", "seconds": ""}
            todo = todo[1:]
    return results, boots, time.monotonic() - t_start, argv


def _record(kernel, argv, source, boots, wall, raw, mode):
    """How a run went, for the results page."""
    return {
        "kernel": kernel,
        "qemu": qemu.qemu_version(),
        "machine": qemu.command_line(shown_argv(argv)) if argv else "",
        "args_source": source,
        "boots": boots,
        "wall_s": round(wall),
        "raw_logs": rel(raw),
        "mode": mode,
    }


def _raw_dir(system):
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    raw = RUNS / (stamp if system == "linux" else f"{system}-{stamp}")
    raw.mkdir(parents=True, exist_ok=True)
    return raw


def _machine(system, image, tree, size, what, mode, smp, mem):
    """The ext2 `image` made of `tree` (`size` bytes of files, `what` they
    are, for the log) with room to spare, and a machine with it as its
    disk: its QEMU arguments, where they came from, and the folder of the
    system's raw logs."""
    image_mib = size // (1 << 20) + SPARE_MIB
    log(f"image: {image_mib} MiB ext2, {what}")
    disk.make_ext2(image, image_mib, tree)
    args, source = qemu.machine_args(mode, smp, mem, disk=image)
    return args, source, _raw_dir(system)


def run_linux(selected, mode="tcg", smp=1, mem="512M"):
    """Run every built entry on the reference VM; {index: result dict}, record."""
    ensure_host_tools(["qemu-system-x86_64"])
    vmlinux, initrd, manifest = linuxvm.prepare({}, disk=True, name="ltp")
    size = stage(selected, manifest["kconfig"])
    args, source, raw = _machine("linux", IMAGE, STAGE, size, f"{size >> 20} MiB of programs",
                                 mode, smp, mem)

    def argv_for(first, count):
        append = f"{manifest['append']} disk ltp={first}:{count}"
        return ["qemu-system-x86_64", *args, "-kernel", str(vmlinux), "-initrd", str(initrd), "-append", append]

    results, boots, wall, argv = run_batches(
        selected, IMAGE, BATCH, argv_for, raw, lambda n: BATCH_TIMEOUT_BASE + BATCH_TIMEOUT_PER_TEST * n)
    kernel = f"Debian {manifest['kernel_package']} {manifest['kernel_version']}"
    return results, _record(kernel, argv, source, boots, wall, raw, mode)


def _stage_tessera():
    """Tessera's root: the system disk's tree and /ltp, hard-linked (the
    image is made from it and nothing writes to it)."""
    if not SYSTEM_ROOT.is_dir():
        raise SystemExit(f"{rel(SYSTEM_ROOT)} missing: `cargo xtask build` makes it with the system disk")
    if TESSERA_STAGE.exists():
        shutil.rmtree(TESSERA_STAGE)
    shutil.copytree(SYSTEM_ROOT, TESSERA_STAGE, symlinks=True, copy_function=os.link)
    shutil.copytree(STAGE / "ltp", TESSERA_STAGE / "ltp", symlinks=True, copy_function=os.link)
    shutil.copy(TESSERA_DRIVER, TESSERA_STAGE / "ltp" / "run.sh")
    (TESSERA_STAGE / "ltp" / "run.sh").chmod(0o755)
    return sum(p.stat().st_size for p in TESSERA_STAGE.rglob("*") if p.is_file() and not p.is_symlink())


def run_tessera(selected, mode="tcg", smp=1, mem="512M"):
    """Run every built entry on Tessera's Linux personality; {index: result}, record."""
    ensure_host_tools(["qemu-system-x86_64"])
    ok, detail = build_tessera()
    if not ok:
        raise SystemExit(detail)
    # Linux's configuration goes on the image as on Linux's (tests that
    # need an option read it), from the reference VM's kernel.
    _vmlinux, _initrd, manifest = linuxvm.prepare({}, disk=True, name="ltp")
    stage(selected, manifest["kconfig"])
    size = _stage_tessera()
    args, source, raw = _machine("tessera", TESSERA_IMAGE, TESSERA_STAGE, size,
                                 f"the system disk's tree and {size >> 20} MiB in all", mode, smp, mem)

    def argv_for(first, count):
        run = f"/bin/sh,/ltp/run.sh,{first},{count},{TESSERA_LIMIT}"
        return ["qemu-system-x86_64", *args, *tessera_boot(f"servers=servers.linux.conf run=linux args={run}")]

    results, boots, wall, argv = run_batches(
        selected, TESSERA_IMAGE, TESSERA_BATCH, argv_for, raw,
        lambda n: BATCH_TIMEOUT_BASE + (TESSERA_LIMIT + 30) * n)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    # Uncommitted code (results and docs aside) ran: the revision alone
    # would name code that did not.
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs"],
                             cwd=ROOT, capture_output=True, text=True).stdout.strip()
    commit += " with uncommitted changes" if changed else ""
    return results, _record(f"Tessera {commit}", argv, source, boots, wall, raw, mode)


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


FIELDS = ("verdict", "detail", "reason", "seconds", "lines", "run")
NOT_RUN = "not run"


def _record_path(system):
    return LTP / ("last-record.json" if system == "linux" else f"last-record-{system}.json")


def _old_rows():
    """{(test, command): row} of the results file as it is."""
    path = RESULTS / "ltp.csv"
    if not path.exists():
        return {}
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        # An older file's single Tessera column said "not run yet".
        if r.get("tessera") in ("not run yet", None):
            r["tessera"] = NOT_RUN
    return {(r["test"], r["command"]): r for r in rows}


def run_name(record):
    """How a row names the run its verdict came from: the system's revision
    and the run's logs."""
    return f"{record['kernel']}, logs `{record['raw_logs']}`"


def merge_rows(allents, selected, system, results, run=""):
    """Every runtest entry's row: `system`'s fields from this run (named
    `run`) for the selected entries, everything else as the results file had
    it."""
    old = _old_rows()
    new = {(name, cmd): results.get(i) for i, (name, cmd) in enumerate(selected, 1)}
    rows = []
    for name, cmd in allents:
        row = {"test": name, "command": cmd}
        for sysname in SYSTEMS:
            for field in FIELDS:
                key = sysname if field == "verdict" else f"{sysname}_{field}"
                row[key] = old.get((name, cmd), {}).get(key, NOT_RUN if field == "verdict" else "")
        r = new.get((name, cmd))
        if r is not None:
            lines = ", ".join(f"{k} {v}" for k, v in sorted(r.get("counts", {}).items()))
            row[system] = r["verdict"]
            row[f"{system}_detail"] = r["detail"]
            row[f"{system}_reason"] = r.get("reason", "")
            row[f"{system}_seconds"] = r["seconds"]
            row[f"{system}_lines"] = lines
            row[f"{system}_run"] = run
        rows.append(row)
    return rows


def _reasons_table(rows, system, verdict, what):
    reasons = {}
    for r in rows:
        if r[system] == verdict:
            key = re.sub(r"\d+", "N", r[f"{system}_reason"] or r[f"{system}_detail"] or "?")
            reasons.setdefault(key, []).append(r["test"])
    if not reasons:
        return []
    md = [f"## {what}, most frequent first", "", "| tests | reason (digits as N) | e.g. |", "|---|---|---|"]
    for key, tests in sorted(reasons.items(), key=lambda kv: -len(kv[1]))[:25]:
        md.append(f"| {len(tests)} | {key.replace('|', '/')} | `{tests[0]}` |")
    return md + [""]


def _how_it_ran(system, record, rows):
    if record:
        lines = [f"- {system.capitalize()}, the last run: {record['kernel']}; {record['qemu']}; {record['mode']}; "
                 f"{record['boots']} boots, host wall time {record['wall_s'] // 60} min {record['wall_s'] % 60} s "
                 f"(logs: `{record['raw_logs']}`)", "", "  ```", f"  {record['machine']}", "  ```"]
    elif any(r[system] != NOT_RUN for r in rows):
        # The run record lives in the build directory, which a fresh clone
        # lacks; the rows still name the runs their verdicts came from.
        lines = [f"- {system.capitalize()}: no run record in this build; the verdicts' runs, from `ltp.csv`:"]
    else:
        return [f"- {system.capitalize()}: not run"]
    # A subset's run (ONLY=...) leaves the other entries' verdicts as they
    # were: each row names its run, and the runs are counted here.
    runs = {}
    for r in rows:
        if r[system] != NOT_RUN:
            runs[r[f"{system}_run"]] = runs.get(r[f"{system}_run"], 0) + 1
    if len(runs) > 1 and record:
        lines.append(f"- {system.capitalize()}'s verdicts come from {len(runs)} runs "
                     f"(`ltp.csv`'s `{system}_run`):")
    if len(runs) > 1 or not record:
        for name, n in sorted(runs.items(), key=lambda kv: -kv[1]):
            lines.append(f"  - {n} entries: {name or 'runs before the file named them (see its history)'}")
    return lines


def write_results(rows, records):
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / "ltp.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    counts = {s: {c: sum(1 for r in rows if r[s] == c) for c in (*CLASSES, NOT_RUN)} for s in SYSTEMS}
    info = build_info()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    md = [
        "# LTP system-call tests",
        "",
        f"The Linux Test Project's `runtest/syscalls` ({info['source']}), built as static musl "
        "programs (`make ltp-build`) and run by `make ltp` on the Linux reference VM and by "
        "`make ltp SYSTEM=tessera` on Tessera's Linux personality (the same binaries, as root, "
        "each in TMPDIR on an ext2 disk on virtio-blk), with `LTP_TIMEOUT_MUL=4` (an emulated machine) and "
        "`LTP_RUNTIME_MUL=0.1` (tests that run for a set time run a tenth of it, at least their minimum). "
        "Linux's VM also has a loop driver, `mkfs.ext2` (busybox) and a loopback interface. "
        "Per test: `ltp.csv` (verdict from LTP's exit "
        "status: 0 pass, 32 conf, TFAIL fail; TBROK, TWARN, a signal or a timeout broken; the first line "
        "saying why).",
        "",
        "| | Linux | Tessera |",
        "|---|---|---|",
    ]
    for c in (*CLASSES, NOT_RUN):
        md.append(f"| {c} | {counts['linux'][c]} | {counts['tessera'][c]} |")
    md.append(f"| **entries** | {len(rows)} | {len(rows)} |")
    linux_pass = [r for r in rows if r["linux"] == "pass"]
    both_ran = [r for r in linux_pass if r["tessera"] != NOT_RUN]
    both_pass = [r for r in both_ran if r["tessera"] == "pass"]
    md += [""]
    if both_ran:
        md.append(f"Of the {len(both_ran)} tests that pass on Linux and ran on Tessera, "
                  f"{len(both_pass)} pass there too ({100 * len(both_pass) / len(both_ran):.0f} %); "
                  f"{len(linux_pass) - len(both_ran)} of Linux's passes have not run on Tessera. "
                  "Issue 18's goal: ≥ 80 % of the tests that pass on Linux.")
    else:
        md.append("Tessera has not run any of the tests yet; issue 18's goal is ≥ 80 % of the tests "
                  "that pass on Linux.")
    md += ["", "## How it ran", "", f"Written on {date}.", ""]
    for system in SYSTEMS:
        md += _how_it_ran(system, records.get(system), rows)
    md += [
        f"- Build: {info['programs']} programs from {info['directories']} directories of "
        f"`testcases/kernel/syscalls`; with errors (some programs missing): "
        f"{', '.join(info['directories_with_errors']) or 'none'}",
    ]
    if info["build_log"]:
        md.append(f"- Last build (`tools/ltp/build.sh`): {info['build_log'][-1]}")
    md.append("")
    lost = [r for r in both_ran if r["tessera"] != "pass"]
    if lost:
        md += [f"## Pass on Linux, not on Tessera ({len(lost)})", "",
               ", ".join(f"`{r['test']}` ({r['tessera']})" for r in lost), ""]
        for c, what in (("fail", "Why tests failed on Tessera"), ("broken", "Why tests broke on Tessera"),
                        ("conf", "Why tests did not apply on Tessera (TCONF)")):
            md += _reasons_table(lost, "tessera", c, what)
    for c in ("fail", "broken"):
        names = [f"`{r['test']}`" + (f" ({r['linux_detail']})" if r["linux_detail"] else "")
                 for r in rows if r["linux"] == c]
        if names:
            md += [f"## {c.capitalize()} on Linux ({len(names)})", "", ", ".join(names), ""]
    md += _reasons_table(rows, "linux", "broken", "Why tests broke on Linux")
    md += _reasons_table(rows, "linux", "conf", "Why tests did not apply on Linux (TCONF)")
    slow = sorted((r for r in rows if r["linux_seconds"]), key=lambda r: -float(r["linux_seconds"]))[:10]
    if slow:
        md += ["## Slowest on Linux (guest seconds)", "", "| test | s |", "|---|---|"]
        md += [f"| `{r['test']}` | {r['linux_seconds']} |" for r in slow]
        md.append("")
    (RESULTS / "ltp.md").write_text("\n".join(md))
    return counts


def main(only=None, mode="tcg", smp=1, mem="512M", report_only=False, system="linux"):
    if system not in SYSTEMS:
        raise SystemExit(f"no system {system!r}: one of {', '.join(SYSTEMS)}")
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
        saved = _record_path(system)
        if not saved.exists():
            raise SystemExit(f"no LTP run on {system} recorded yet")
        record = json.loads(saved.read_text())
        results = results_from_logs(ROOT / record["raw_logs"], selected)
    else:
        run = run_linux if system == "linux" else run_tessera
        results, record = run(selected, mode, smp, mem)
        _record_path(system).write_text(json.dumps(record, indent=2))
    records = {s: json.loads(_record_path(s).read_text()) for s in SYSTEMS if _record_path(s).exists()}
    rows = merge_rows(allents, selected, system, results, run_name(record))
    counts = write_results(rows, records)
    log(f"LTP on {system}: " + ", ".join(f"{c} {n}" for c, n in counts[system].items())
        + f"; {record['boots']} boots, {record['wall_s']} s")
    log(f"written: {rel(RESULTS / 'ltp.md')}, {rel(RESULTS / 'ltp.csv')}")
    return 0



if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:] or None))
