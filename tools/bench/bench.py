#!/usr/bin/env python3
"""Tessera's benchmark harness: Tessera and the Linux reference on one QEMU machine.

    bench.py run   [--mode icount|tcg|kvm] [--bench all|NAME[,NAME]] [--runs N]
                   [--smp N] [--mem SIZE] [--systems linux,tessera]
    bench.py smoke       build the Linux programs, run each once (--short) on the
                         host, and Tessera's bench mode once under TCG if built
    bench.py report [--mode M]     regenerate summary and plots from the CSVs
    bench.py linux-vm              only fetch and build the Linux reference VM
    bench.py ltp [--system linux|tessera] [--only NAME,...] [--mode M]
                         LTP's system-call tests (built by tools/ltp/build.sh) on
                         the reference VM or on Tessera's Linux personality:
                         docs/results/ltp.csv and ltp.md (both columns)
    bench.py linux-abi [--check] [--host] [--only NAME,...] [--mode M]
                         the Linux-ABI test programs on the reference VM: write
                         user/linux/abi/expected/ (--check: compare with it
                         instead; --host: run natively on this machine)

Results: docs/results/ (icount, the figures of record) or docs/results/<mode>/:
one CSV per experiment, README.md (the summary), plots/*.png, config.json.
Raw serial logs: build/bench/runs/.
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import disk  # noqa: E402
import linuxabi  # noqa: E402
import linuxvm  # noqa: E402
import ltp  # noqa: E402
import papers  # noqa: E402
import progs  # noqa: E402
import qemu  # noqa: E402
import report  # noqa: E402
import results  # noqa: E402
import webab  # noqa: E402
from common import (BUILD, RESULTS, ROOT, RUNS_DIR, TESSERA_ELF, build_tessera, ensure_host_tools, tessera_boot,  # noqa: E402
                    git_revision, install_signal_handlers, log, rel, run_guarded, shown_argv)

# Host wall-time limits per QEMU run (a whole suite).  An icount Linux run
# takes ~25 s on an idle 2-core host; a loaded host is 2-5x slower.
TIMEOUT = {"icount": 1200, "tcg": 900, "kvm": 900}
SMOKE_TIMEOUT = 90
TESSERA_EXIT_OK = 33  # isa-debug-exit: (0x10 << 1) | 1
VENV = BUILD / "venv"


def results_dir(mode):
    return RESULTS if mode == "icount" else RESULTS / mode


# ---------------------------------------------------------------------------
# One system, N runs


def _run_system(name, base_args, kernel_args, runs, mode, raw_dir, expect_status, pins=None, before_each=None,
                done_marker=None, more_figures=None):
    """Boot one system `runs` times; return (list of figure lists, record).
    `pins` (virtual CPU → host core) pins the virtual CPUs' threads;
    `before_each` is called before every boot (a fresh disk image);
    `done_marker`: the line that ends a good run, if not BENCH-DONE;
    `more_figures(lines)`: figures a run prints in lines of its own."""
    pinning = qemu.Pinning(pins or {})
    argv = ["qemu-system-x86_64", *base_args, *pinning.args(), *kernel_args]
    figure_runs, walls, info, problems = [], [], {}, []
    unsupported = False
    timeout = int(os.environ.get("BENCH_TIMEOUT", TIMEOUT[mode]))
    loads = []
    for i in range(runs):
        log(f"{name}: run {i + 1}/{runs} ({mode}, timeout {timeout} s)")
        loads.append(round(os.getloadavg()[0], 2))
        pinning.prepare()
        if before_each:
            before_each()
        r = run_guarded(argv, timeout, log_path=raw_dir / f"{name}-run{i + 1}.log", started=pinning.start)
        if pinning.problem:
            problems.append(f"run {i + 1}: {pinning.problem}")
            pinning.problem = None
        p = results.parse(r.lines)
        if done_marker:
            p.done = any(line.strip() == done_marker for line in r.lines)
        if more_figures:
            p.figures += more_figures(r.lines)
        walls.append(round(r.wall_s, 1))
        info.update(p.info)
        if any("unknown experiment" in e for e in p.errors):
            # The kernel does not have this experiment yet: not a failure.
            unsupported = True
            figure_runs.append(p.figures)
            continue
        if r.timed_out:
            problems.append(f"run {i + 1}: killed after {timeout} s")
        elif not p.done:
            problems.append(f"run {i + 1}: no BENCH-DONE (exit status {r.status})")
        elif expect_status is not None and r.status != expect_status:
            problems.append(f"run {i + 1}: exit status {r.status}, expected {expect_status}")
        problems += [f"run {i + 1}: {e}" for e in p.errors]
        problems += [f"run {i + 1}: malformed line {b!r}" for b in p.bad_lines]
        figure_runs.append(p.figures)
        log(f"{name}: {len(p.figures)} figures in {r.wall_s:.0f} s" + (f"; {problems[-1]}" if problems else ""))
    pinning.close()
    desc = qemu.describe(base_args)
    record = {
        **desc,
        # Paths inside the repository, alone or inside an option (the NVM
        # image's mem-path=, the disk's file=), are given relative to it.
        "qemu_command": qemu.command_line(shown_argv(argv)),
        **({"vcpu_pins": ", ".join(f"CPU {c} → host core {h}" for c, h in pins.items())} if pins else {}),
        "runs": runs,
        "host_wall_s": walls,
        # Plain TCG figures move with the host's load; icount ones do not.
        "host_load": loads,
        "guest_info": info,
        "problems": problems,
    }
    if unsupported:
        record["unsupported"] = True
    if runs > 1 and mode == "icount":
        # Under icount every run must print the very same figures.
        record["deterministic"] = "yes" if all(f == figure_runs[0] for f in figure_runs) else "no"
    return figure_runs, record


def _add_system_disk_boot(record, rec, boot):
    """The record of boots on the system disk so far, with `rec`'s (named `boot`) folded in."""
    if record is None:
        record = rec
        record["disk"] = f"virtio-blk-pci, the system disk ({rel(SYSTEM_IMAGE)}, a fresh copy each boot)"
        record["boots"] = []
    else:
        _fold_record(record, rec)
    record["boots"].append(boot)
    return record


def _fold_record(into, rec):
    """Adds boot record `rec`'s problems, wall times and loads to `into`,
    the record of the system it is one more boot of."""
    for k in ("problems", "host_wall_s", "host_load"):
        into[k] += rec[k]


def _linux_kernel_args(selection, short=False, with_disk=False):
    vmlinux, initrd, manifest = _linux_vm(with_disk)
    append = (f"{manifest['append']}{' disk' if with_disk else ''} bench={selection}"
              + (" bench_short" if short else ""))
    return ["-kernel", str(vmlinux), "-initrd", str(initrd), "-append", append], manifest


_vm_cache = {}


def _linux_vm(with_disk=False):
    """The reference VM; with a disk, its archive also holds the storage modules."""
    key = "disk" if with_disk else "vm"
    if key not in _vm_cache:
        _vm_cache[key] = linuxvm.prepare(progs.build(), disk=with_disk, name="disk" if with_disk else None)
    return _vm_cache[key]


# The disk the storage experiments run on: made afresh for every boot, the
# same for both systems.
DISK_MIB = 256


def disk_image(name):
    return BUILD / f"disk-{name}.img"


def fresh_disk(name):
    return disk.make_ext2(disk_image(name), DISK_MIB)


# Disk experiments whose disk models QEMU's throttling gives in plain TCG
# (under icount the guest's driver waits as each model instead).
THROTTLED = {"off2f": ["dk", "sata", "nvme"]}


# Experiments whose Tessera side is not a kernel `bench=` experiment but a
# boot of its own (papers.py `tessera_boot`) with the system disk (busybox,
# the Linux programs; xtask's image), a fresh copy of it each boot.
SYSTEM_IMAGE = ROOT / "build" / "images" / "system.img"


def fresh_system_disk(out=None):
    """A copy of the system disk for one boot (its writes are dropped)."""
    if not SYSTEM_IMAGE.exists():
        raise SystemExit(f"no {rel(SYSTEM_IMAGE)}: `cargo xtask build` makes it")
    out = Path(out or disk_image("system"))
    tmp = out.with_name(out.name + ".tmp")
    shutil.copyfile(SYSTEM_IMAGE, tmp)
    tmp.rename(out)
    return out


def _split_disk(selection, linux=False):
    """(experiments of the boot without a disk, experiments needing one);
    `linux`: of those that have a Linux side."""
    wanted = list(papers.EXPERIMENTS) if "all" in selection else selection
    if linux:
        wanted = [e for e in wanted if papers.EXPERIMENTS[e]["linux"]]
    on_disk = [e for e in wanted if papers.EXPERIMENTS[e].get("disk")]
    # (Tessera's side of these boots apart; Linux's runs with the others.)
    own = [] if linux else [e for e in wanted if papers.EXPERIMENTS[e].get("own_boots")]
    plain = ["all"] if "all" in selection else [e for e in selection if e not in on_disk + own]
    return plain, on_disk


# Experiments booted a second time with -smp 2 when the common
# configuration has one CPU, with the figures that boot adds.
SMP2_EXPERIMENTS = {
    "kernel": "`kernel` (IPI round trip, TLB shootdown)",
    "ipc": "`ipc` (round trip to a server on the other CPU)",
    "transfer": "`transfer` (container IPC with the receiver on the other CPU)",
}
# Figures of that boot the one-CPU boot prints as well, kept under their
# metric + SMP2_SUFFIX so that a two-CPU figure can be set beside a one-CPU
# figure of the same boot (the other duplicates are dropped).
SMP2_KEEP = {("ipc", "round_trip_same_cpu")}
SMP2_SUFFIX = "_smp2"


def _run_tessera(selection, base_args, mode, a, runs, raw_dir):
    """Tessera's side: build, boot with bench=<experiment>; (rows, records, status).
    records: "tessera" for the boots without a disk, "tessera-disk" for the
    storage experiments' (kept apart, as Linux's: a run of fs alone must not
    replace the record of the boots the other figures came from)."""
    ok, detail = build_tessera()
    if not ok:
        log(f"tessera: {detail}")
        state = "no-kernel" if not TESSERA_ELF.exists() else "build-failed"
        return [], {}, {"state": state, "detail": detail}
    # The kernel takes one experiment name (or all) per boot; the storage
    # experiments get a boot of their own with the disk, as on Linux.
    plain, on_disk = _split_disk(selection)
    all_figs, records, unsupported = [], {}, []
    # Without icount the guest's clock follows the host's: QEMU's block
    # throttling makes the disk as slow as each model, a boot per model.
    boots = [(t, None) for t in plain]
    for t in on_disk:
        models = THROTTLED.get(t, [None]) if mode != "icount" else [None]
        boots += [(t, m) for m in models]
    # An experiment with boots of its own has one entry per boot.
    boots = [(t, m, b) for t, m in boots
             for b in papers.EXPERIMENTS.get(t, {}).get("tessera_boot") or [None]]
    for t, model, own_boot in boots:
        kargs = tessera_boot(f"bench={t}" + (f" bench_disk={model}" if model else "") + _bench_only()
                             + (" bench_verbose" if os.environ.get("BENCH_VERBOSE") else ""))
        args_t, before, key = base_args, None, "tessera"
        if own_boot:
            kargs = tessera_boot(own_boot)
            args_t, _ = qemu.machine_args(mode, a.smp, a.mem, disk=fresh_system_disk())
            before, key = fresh_system_disk, "tessera-system-disk"
        elif t in on_disk:
            args_t, _ = qemu.machine_args(mode, a.smp, a.mem, disk=fresh_disk("tessera"), disk_model=model)
            before, key = (lambda: fresh_disk("tessera")), "tessera-disk"
        name = f"tessera-{t}" + (f"-{model}" if model else "") + (f"-{boots.index((t, model, own_boot))}"
                                                                   if own_boot else "")
        figs, rec = _run_system(name, args_t, kargs, runs, mode, raw_dir, TESSERA_EXIT_OK,
                                before_each=before)
        if rec.pop("unsupported", False):
            unsupported.append((key, t))
        all_figs.append(figs)
        if key == "tessera-system-disk":
            rec["disk"] = f"virtio-blk-pci, the system disk ({rel(SYSTEM_IMAGE)}, a fresh copy each boot) for {t}"
        if key == "tessera-disk":
            rec["disk"] = f"virtio-blk-pci, ext2 ({DISK_MIB} MiB, 4 KiB blocks) for {', '.join(on_disk)}"
            throttled = [f"{b[0]}: {b[1]}" for b in boots if b[1]]
            if throttled:
                rec["disk"] += f"; QEMU's block throttling as the disk models, a boot each ({', '.join(throttled)})"
        if key not in records:
            records[key] = rec
        else:
            _fold_record(records[key], rec)
    # Merge per-target runs: run i of every target forms run i of the suite.
    figs = [[_native_named(f) for f in sum((f[i] for f in all_figs), [])] for i in range(runs)]
    record = records.get("tessera", {"problems": [], "host_wall_s": [], "host_load": []})

    # Some figures need a second CPU: the kernel's IPI and TLB shootdown, and
    # the cross-CPU rendezvous round trip of `ipc`.  When the common
    # configuration has one CPU, run those experiments once more with two
    # (one boot each: the kernel takes one experiment per boot) and keep
    # only the figures the one-CPU run could not produce.
    multi = [e for e in SMP2_EXPERIMENTS if "all" in selection or e in selection]
    if a.smp == 1 and multi:
        args2, _ = qemu.machine_args(mode, 2, a.mem)
        have = {(f[0], f[1], f[2]) for run in figs for f in run}
        for exp in multi:
            kargs = tessera_boot(f"bench={exp}")
            figs2, rec2 = _run_system(f"tessera-{exp}-smp2", args2, kargs, runs, mode, raw_dir,
                                      TESSERA_EXIT_OK)
            for i in range(runs):
                figs[i] += [f for f in figs2[i] if (f[0], f[1], f[2]) not in have]
                figs[i] += [(f[0], f[1] + SMP2_SUFFIX, *f[2:]) for f in figs2[i]
                            if (f[0], f[1], f[2]) in have and (f[0], f[1]) in SMP2_KEEP]
            _fold_record(record, rec2)
        record["multi_cpu_figures"] = ("from a second boot with -smp 2: "
                                       + "; ".join(SMP2_EXPERIMENTS[e] for e in multi))

    # `batch`'s fig. 9 (work spread over two server CPUs) shows no speed-up
    # under icount, where every CPU's instructions advance one clock: boot
    # it once more in plain TCG with 3 CPUs, a few runs, for the speed-up.
    extra_rows = []
    if ("all" in selection or "batch" in selection) and a.smp < BATCH_PARALLEL_SMP and mode != "kvm":
        extra_rows, rec3 = _run_batch_parallel(a, raw_dir)
        record["batch_parallel"] = rec3
        record["problems"] += [f"batch -smp {BATCH_PARALLEL_SMP} (tcg): {x}" for x in rec3["problems"]]

    binary_rows, rec4 = _run_linux_binaries(selection, a, mode, runs, raw_dir)
    if rec4:
        records["tessera-linux-binaries"] = rec4
        extra_rows += binary_rows
    if "all" in selection or "procnet" in selection:
        procnet_rows, rec5 = _run_procnet(a, mode, runs, raw_dir)
        records["tessera-procnet"] = rec5
        extra_rows += procnet_rows

    for rec in records.values():
        rec["guest"] = f"Tessera {rel(TESSERA_ELF)} ({git_revision()})"
    for key, t in unsupported:
        records[key].setdefault("not_yet_in_kernel", []).append(t)
    problems = [p for rec in records.values() for p in rec["problems"]]
    if problems:
        status = {"state": "run-failed" if not any(figs) else "partial", "detail": "; ".join(problems[:3])}
    else:
        status = {"state": "ok"}
    return results.aggregate("tessera", figs) + extra_rows, records, status


# Issue 18: the reference VM's programs (bench/linux/), the same static
# binaries, on Tessera's Linux personality from the system disk
# (`/linux/bench/`, xtask's sysimage), a boot per program and
# configuration. Their figures are Tessera's, named <Linux metric>.<way>,
# and sit beside Linux's in its table (papers.linux_counterpart).
LINUX_BINARY_PROGRAMS = ("syscall", "spawn", "pageaccess", "pagefault", "ipc", "transfer")
LINUX_BINARY_WAYS = {
    # Demand loading, no pool: the personality as `make run` boots it.
    "linux_binary": ("servers=servers.linux.conf", LINUX_BINARY_PROGRAMS),
    # Tender's eager loading with the pool's reuse, for the programs whose
    # figures the pool changes (issue 18's goals "with the pool").
    "linux_binary_pooled": ("servers=servers.linux-eager.conf pool=pool.linux-reuse.conf",
                            ("spawn", "pageaccess")),
}
# Experiments whose Tessera column is the Linux program itself (the same
# names as Linux's rows), in a boot configuration of its own and with its
# arguments; the native program's figures become <metric>.native.
LINUX_BINARY_OWN = {
    # The system disk's /tmp, with the native fsbench's block cache;
    # --drop-caches through the personality's /proc/sys/vm/drop_caches
    # (the file servers' and block caches' pages) for the cold read.
    "fs": ("servers=servers.linux-fs.conf", "/linux/bench/fs,--drop-caches,/tmp"),
}


def _native_named(fig):
    """A native program's figure of an experiment in LINUX_BINARY_OWN, renamed."""
    e, m, *rest = fig
    return (e, f"{m}.native", *rest) if e in LINUX_BINARY_OWN else fig


def _run_linux_binaries(selection, a, mode, runs, raw_dir):
    """Tessera's figures from the Linux programs; (rows, record or None)."""
    wanted = [e for e in LINUX_BINARY_PROGRAMS if "all" in selection or e in selection]
    own = [e for e in LINUX_BINARY_OWN if "all" in selection or e in selection]
    if not wanted and not own:
        return [], None
    # (`cargo xtask build`, which the Tessera side ran, makes it.)
    if not SYSTEM_IMAGE.exists():
        return [], {"problems": [f"no {rel(SYSTEM_IMAGE)}"], "host_wall_s": [], "host_load": []}
    args, _ = qemu.machine_args(mode, a.smp, a.mem, disk=fresh_system_disk())
    figs = [[] for _ in range(runs)]
    record = None
    for way, (boot, programs) in LINUX_BINARY_WAYS.items():
        for prog in (p for p in programs if p in wanted):
            kargs = tessera_boot(f"{boot} run=linux args=/linux/bench/{prog}")
            f, rec = _run_system(f"tessera-linux-{prog}-{way}", args, kargs, runs, mode, raw_dir,
                                 TESSERA_EXIT_OK, before_each=fresh_system_disk,
                                 done_marker="RUN-EXIT linux 0")
            for i in range(runs):
                figs[i] += [(e, f"{m}.{way}", p, v, u) for e, m, p, v, u in f[i]]
            record = _add_system_disk_boot(record, rec, f"{way}: {prog}")
    for prog in own:
        boot, args_p = LINUX_BINARY_OWN[prog]
        kargs = tessera_boot(f"{boot} run=linux args={args_p}")
        f, rec = _run_system(f"tessera-linux-{prog}", args, kargs, runs, mode, raw_dir,
                             TESSERA_EXIT_OK, before_each=fresh_system_disk,
                             done_marker="RUN-EXIT linux 0")
        for i in range(runs):
            figs[i] += f[i]
        record = _add_system_disk_boot(record, rec, f"{prog}: `{boot}`, args {args_p}")
    record["programs"] = ("bench/linux/ as on the reference VM; " + "; ".join(
        f"{way}: `{boot}`" for way, (boot, _) in LINUX_BINARY_WAYS.items()))
    return results.aggregate("tessera", figs), record


# Seed 003's process network at work (`procnet`): the workload script on
# the Linux personality, once as it is, then with every communication
# (fig. 7) or every KiB passed by pointer (fig. 10) made slower by a busy
# wait of so many ns (the kernel's `ipc_delay=`, `ipc_kib_delay=`).
PROCNET_SCRIPT = "/linux/bench/procnet.sh"
PROCNET_CALL_DELAYS = (0, 1000, 2000, 4000, 8000)
PROCNET_KIB_DELAYS = (1000, 4000, 16000, 64000)
PROCNET_COUNTS = ("linux_calls", "communications", "syscalls", "context_switches", "bytes_copied",
                  "bytes_by_reference")


def _procnet_report(lines):
    """init's RUN-REPORT-PROCNET line as a dict of numbers (empty if none)."""
    for line in lines:
        i = line.find("RUN-REPORT-PROCNET ")
        if i >= 0:
            pairs = (w.split("=", 1) for w in line[i:].split()[1:] if "=" in w)
            return {k: int(v) for k, v in pairs if v.isdigit()}
    return {}


def _run_procnet(a, mode, runs, raw_dir):
    """Tessera's `procnet` figures; (rows, record)."""
    if not SYSTEM_IMAGE.exists():
        return [], {"problems": [f"no {rel(SYSTEM_IMAGE)}"], "host_wall_s": [], "host_load": []}
    args, _ = qemu.machine_args(mode, a.smp, a.mem, disk=fresh_system_disk())
    boots = [(d, 0) for d in PROCNET_CALL_DELAYS] + [(0, k) for k in PROCNET_KIB_DELAYS]
    figs = [[] for _ in range(runs)]
    record = None
    for call_ns, kib_ns in boots:
        def figures(lines, call_ns=call_ns, kib_ns=kib_ns):
            r = _procnet_report(lines)
            if "elapsed_ns" not in r:
                return []
            # Busy: the time some CPU was not idle (the paper's system and
            # user time); elapsed also holds the waits for the disk and timers.
            busy = r["elapsed_ns"] - r.get("idle_ns", 0)
            out = []
            if kib_ns == 0:
                out += [("procnet", "busy", str(call_ns), busy, "ns"),
                        ("procnet", "elapsed", str(call_ns), r["elapsed_ns"], "ns")]
            if call_ns == 0:
                out += [("procnet", "busy_kib_delay", str(kib_ns), busy, "ns"),
                        ("procnet", "elapsed_kib_delay", str(kib_ns), r["elapsed_ns"], "ns")]
            if call_ns == 0 and kib_ns == 0:
                out += [("procnet", k, "", r[k], "count") for k in PROCNET_COUNTS if k in r]
                if r.get("linux_calls"):
                    out.append(("procnet", "communications_per_linux_call", "",
                                round(r["communications"] / r["linux_calls"], 2), "count"))
            return out
        kargs = tessera_boot(f"servers=servers.linux.conf report ipc_delay={call_ns} ipc_kib_delay={kib_ns} "
                             f"run=linux args=/bin/sh,{PROCNET_SCRIPT}")
        f, rec = _run_system(f"tessera-procnet-{call_ns}-{kib_ns}", args, kargs, runs, mode, raw_dir,
                             TESSERA_EXIT_OK, before_each=fresh_system_disk, done_marker="RUN-EXIT linux 0",
                             more_figures=figures)
        for i in range(runs):
            figs[i] += f[i]
        if record is None:
            record = rec
            record["disk"] = f"virtio-blk-pci, the system disk ({rel(SYSTEM_IMAGE)}, a fresh copy each boot)"
        else:
            _fold_record(record, rec)
    record["boots"] = ", ".join(f"ipc_delay={c} ipc_kib_delay={k}" for c, k in boots)
    return results.aggregate("tessera", figs), record


# The plain-TCG boot for `batch`'s parallel figures: CPUs, runs (median),
# and the metrics kept, stored as <metric> + BATCH_PARALLEL_SUFFIX with the
# number of CPUs as param (guest ns of plain TCG, not icount instructions).
BATCH_PARALLEL_SMP = 3
BATCH_PARALLEL_RUNS = 9
BATCH_PARALLEL_METRICS = ("work_callsync_x10", "work_ncallsync2_x5", "work30_callsync_x10",
                          "work30_ncallsync2_x5") + tuple(
    f"{papers.batch_work_variant(cs)}_{k}" for _, (cs, _nc) in papers.BATCH_WORK_VARIANTS
    for k in papers.BATCH_WORK_DETAIL) + tuple(
    papers.batch_pipeline_metrics()) + tuple(
    # Fig. 7/8 on one CPU and on three, in the same boot.
    f"{where}{m}" for where in ("", "spread_") for m, _ in papers.BATCH_SERIES) + tuple(
    f"{papers.BATCH_SPREAD_PREFIX}{m}_{c}" for m in ("ncallsync", "ncallsync_distributor")
    for c, _ in papers.BATCH_BREAKDOWN)
BATCH_PARALLEL_SUFFIX = "_tcg"


def _bench_only():
    """`BENCH_ONLY=fig12`: `batch` boots run its file transfer alone."""
    only = os.environ.get("BENCH_ONLY", "")
    if only and only != "fig12":
        sys.exit(f"BENCH_ONLY={only}: only fig12 is known")
    return f" bench_only={only}" if only else ""


def _run_batch_parallel(a, raw_dir):
    runs = int(os.environ.get("BATCH_TCG_RUNS") or BATCH_PARALLEL_RUNS)
    args3, _ = qemu.machine_args("tcg", BATCH_PARALLEL_SMP, a.mem)
    pins = qemu.vcpu_pins(BATCH_PARALLEL_SMP, os.cpu_count() or 1)
    figs3, rec3 = _run_system(f"tessera-batch-tcg-smp{BATCH_PARALLEL_SMP}", args3, tessera_boot("bench=batch" + _bench_only()),
                              runs, "tcg", raw_dir, TESSERA_EXIT_OK, pins=pins)
    kept = [[(e, m + BATCH_PARALLEL_SUFFIX, p, v, u) for e, m, p, v, u in run
             if e == "batch" and m in BATCH_PARALLEL_METRICS] for run in figs3]
    record = {"mode": "tcg (no icount)", "smp": BATCH_PARALLEL_SMP, "runs": runs,
              "vcpu_pins": rec3.get("vcpu_pins", "none"),
              "host_cores": os.cpu_count(), "host_load": rec3["host_load"],
              "host_wall_s": rec3["host_wall_s"], "problems": rec3["problems"],
              "metrics": ", ".join(m + BATCH_PARALLEL_SUFFIX for m in BATCH_PARALLEL_METRICS)}
    return results.aggregate("tessera", kept), record


# ---------------------------------------------------------------------------
# bench.py run


def cmd_run(a):
    install_signal_handlers()
    ensure_host_tools(["qemu-system-x86_64"])
    mode = a.mode
    known = list(papers.EXPERIMENTS)
    selection = ["all"] if a.bench in ("", "all") else a.bench.split(",")
    if "webab" in selection:
        if selection != ["webab"]:
            raise SystemExit("webab runs alone: make bench B=webab MODE=tcg")
        return _run_webab(a)
    unknown = [s for s in selection if s != "all" and s not in known]
    if unknown:
        raise SystemExit(f"unknown experiment(s) {unknown}; known: all, {', '.join(known)}")
    systems = a.systems.split(",")
    runs = a.runs or (1 if mode == "icount" else 5)
    sel_linux = [s for s in selection if s == "all" or papers.EXPERIMENTS[s]["linux"]]

    base_args, source = qemu.machine_args(mode, a.smp, a.mem)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    raw_dir = RUNS_DIR / f"{mode}-{stamp}"
    raw_dir.mkdir(parents=True, exist_ok=True)
    common_rec = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
                  "git_revision": git_revision(), "qemu_version": qemu.qemu_version(),
                  "args_source": "cargo xtask qemu-args" if source == "xtask" else
                  "harness fallback (cargo xtask qemu-args unavailable)",
                  "experiments": ",".join(selection)}
    rows, records = [], {}
    tessera_status = {}

    if "linux" in systems and sel_linux:
        plain, on_disk = _split_disk(sel_linux, linux=True)
        figs = [[] for _ in range(runs)]
        boots = []
        if plain:
            kargs, manifest = _linux_kernel_args(",".join(plain))
            figs_p, rec = _run_system("linux", base_args, kargs, runs, mode, raw_dir, None)
            figs = [f + g for f, g in zip(figs, figs_p)]
            boots.append(("linux", rec, manifest))
        if on_disk:
            # A boot of its own with the disk attached: the other experiments
            # keep the machine they always had.  Its record is kept apart
            # ("linux-disk"), so that a run of fs alone leaves the record of
            # the boot the other figures came from.
            kargs, manifest = _linux_kernel_args(",".join(on_disk), with_disk=True)
            args_d, _ = qemu.machine_args(mode, a.smp, a.mem, disk=fresh_disk("linux"))
            figs_d, rec = _run_system("linux-disk", args_d, kargs, runs, mode, raw_dir, None,
                                      before_each=lambda: fresh_disk("linux"))
            figs = [f + g for f, g in zip(figs, figs_d)]
            rec["disk"] = f"virtio-blk-pci, ext2 ({DISK_MIB} MiB, 4 KiB blocks) for {', '.join(on_disk)}"
            boots.append(("linux-disk", rec, manifest))
        for key, rec, manifest in boots:
            rec.update(common_rec)
            rec["guest"] = (f"Debian {manifest['kernel_package']} {manifest['kernel_version']} (PVH vmlinux), "
                            f"busybox-static {manifest['busybox_version']}, programs: {progs.compiler_version()} "
                            f"with musl, `{' '.join(progs.CC)}`")
            records[key] = rec
        rows += results.aggregate("linux", figs)

    if "tessera" in systems:
        rows_t, recs, tessera_status = _run_tessera(selection, base_args, mode, a, runs, raw_dir)
        for key, rec in recs.items():
            rec.update(common_rec)
            records[key] = rec
        rows += rows_t

    (raw_dir / "rows.json").write_text(json.dumps(rows, indent=1))
    (raw_dir / "config.json").write_text(json.dumps(records, indent=2))
    linux_problems = [p for k in ("linux", "linux-disk") for p in records.get(k, {}).get("problems", [])]
    if linux_problems:
        # The reference must be whole: a broken run must not replace good
        # committed figures.  The raw logs tell what happened.
        log("Linux reference failed, results not written: " + "; ".join(linux_problems))
        log(f"serial logs: {rel(raw_dir)}")
        return 1
    out = Path(a.out) if a.out else results_dir(mode)
    _store(out, selection, rows, records, tessera_status, mode, a)
    problems = [p for r in records.values() for p in r["problems"]]
    if problems:
        log("problems: " + "; ".join(problems))
    return 0


def _run_webab(a):
    """The web experiment's realism mode (webab.py): ApacheBench on the host
    against each system's busybox httpd through the forwarded port."""
    ensure_host_tools(["qemu-system-x86_64", "ab"])
    mode = a.mode
    if mode == "icount":
        raise SystemExit("webab measures requests per second by the host's clock: MODE=tcg (or kvm)")
    runs = a.runs or 5
    systems = a.systems.split(",")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    raw_dir = RUNS_DIR / f"{mode}-webab-{stamp}"
    raw_dir.mkdir(parents=True, exist_ok=True)
    rows, records = [], {}
    if "linux" in systems:
        port = webab.free_port()
        kargs, manifest = _linux_kernel_args("none", with_disk=True)
        kargs[-1] = kargs[-1].replace(" bench=none", " web_serve")
        args, _ = qemu.machine_args(mode, a.smp, a.mem, disk=fresh_disk("linux"))
        argv = ["qemu-system-x86_64", *args, *webab.nic_args(port), *kargs]
        figs, rec = webab.measure("linux", argv, port, runs, raw_dir / "linux.log")
        rows += results.aggregate("linux", figs)
        records["linux"] = rec
    if "tessera" in systems:
        ok, detail = build_tessera()
        if not ok:
            raise SystemExit(f"tessera: {detail}")
        port = webab.free_port()
        args, _ = qemu.machine_args(mode, a.smp, a.mem, disk=fresh_system_disk())
        boot = tessera_boot("servers=servers.webab.conf run=linux args=/bin/sh,/linux/bench/web.sh,/tmp/www,serve")
        argv = ["qemu-system-x86_64", *args, *webab.nic_args(port), *boot]
        figs, rec = webab.measure("tessera", argv, port, runs, raw_dir / "tessera.log")
        rows += results.aggregate("tessera", figs)
        records["tessera"] = rec
    out = Path(a.out) if a.out else results_dir(mode)
    out.mkdir(parents=True, exist_ok=True)
    results.write_csv(out / "webab.csv", rows)
    (raw_dir / "config.json").write_text(json.dumps(records, indent=2))
    cmd = _make_command(mode, a)
    log(f"figures of `{cmd.splitlines()[0]}` in {rel(out / 'webab.csv')}; logs in {rel(raw_dir)}")
    by = {(r["system"], r["metric"]): r["value"] for r in rows}
    for page, _ in webab.PAGES:
        for c in webab.CLIENTS:
            lx, ts = by.get(("linux", f"{page}_c{c}")), by.get(("tessera", f"{page}_c{c}"))
            ratio = f"{ts / lx:.2f}" if lx and ts else "-"
            log(f"  {page}_c{c}: linux {lx or '-'} req/s, tessera {ts or '-'} req/s, tessera/linux {ratio}")
    problems = [p for r in records.values() for p in r["problems"]]
    if problems:
        log("problems: " + "; ".join(problems))
        return 1
    return 0


def _store(out, selection, rows, records, tessera_status, mode, a):
    """Write the CSVs of the experiments that ran, then summary and plots."""
    out.mkdir(parents=True, exist_ok=True)
    full = "all" in selection
    ran = {r["experiment"] for r in rows}
    targets = set(papers.EXPERIMENTS) | ran if full else set(selection) | ran
    ran_systems = set(a.systems.split(","))
    for exp in targets:
        path = out / f"{exp}.csv"
        # A run of one system replaces that system's figures only: the
        # other's stay beside them, as its record in config.json does.
        kept = [r for r in results.read_csv(path) if r["system"] not in ran_systems]
        exp_rows = kept + [r for r in rows if r["experiment"] == exp]
        if exp_rows:
            results.write_csv(path, exp_rows)
        elif path.exists():
            path.unlink()  # re-run produced nothing: don't keep stale figures
    cfg_path = out / "config.json"
    fresh = full and {"linux", "tessera"} <= ran_systems
    config = json.loads(cfg_path.read_text()) if cfg_path.exists() and not fresh else {}
    config.setdefault("systems", {}).update(records)
    if tessera_status:
        config["tessera_status"] = tessera_status
    config["mode"] = mode
    cmd = _make_command(mode, a)
    config["command"] = cmd
    cfg_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    make_outputs(out, mode, cmd)


def _make_command(mode, a):
    parts = ["make bench"]
    if mode != "icount":
        parts.append(f"MODE={mode}")
    if a.bench not in ("", "all"):
        parts.append(f"B={a.bench}")
    if a.runs:
        parts.append(f"RUNS={a.runs}")
    if a.smp != 1:
        parts.append(f"SMP={a.smp}")
    if a.mem != "512M":
        parts.append(f"MEM={a.mem}")
    shown = " ".join(parts)
    direct = (f"python3 tools/bench/bench.py run --mode {mode} --bench {a.bench or 'all'}"
              + (f" --runs {a.runs}" if a.runs else "") + f" --smp {a.smp} --mem {a.mem}")
    return f"{shown}\n# equivalently: {direct}"


def make_outputs(out, mode, command):
    plot_python = _plot_python()
    if plot_python:
        r = subprocess.run([plot_python, str(Path(__file__).with_name("plots.py")), str(out), mode])
        if r.returncode != 0:
            log("plotting failed; the summary has no plots")
    else:
        log("no matplotlib available; the summary has no plots")
    report.write_summary(out, mode, command)
    log(f"summary: {rel(out / 'README.md')}")


def _plot_python():
    """A Python with matplotlib: the harness's venv (created on first use)."""
    py = VENV / "bin" / "python"
    req = Path(__file__).with_name("requirements.txt")
    stamp = VENV / ".requirements"
    if py.exists() and stamp.exists() and stamp.read_text() == req.read_text():
        return str(py)
    log("creating build/bench/venv with matplotlib (pip)")
    try:
        if not py.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", "-r", str(req)], check=True,
                       timeout=900)
        stamp.write_text(req.read_text())
        return str(py)
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        log(f"venv/pip failed ({e}); trying Debian's python3-matplotlib")
    for cand in ("/usr/bin/python3",):
        if Path(cand).exists() and subprocess.run([cand, "-c", "import matplotlib"],
                                                  capture_output=True).returncode == 0:
            return cand
    return None


# ---------------------------------------------------------------------------
# bench.py smoke


def cmd_smoke(_a):
    """Each item prints SMOKE-PASS/SMOKE-FAIL; exit status 1 if any failed."""
    install_signal_handlers()
    failed = 0

    def verdict(name, why):
        nonlocal failed
        if why:
            failed += 1
            print(f"SMOKE-FAIL {name}: {why}", flush=True)
        else:
            print(f"SMOKE-PASS {name}", flush=True)

    try:
        exes = progs.build()
        verdict("bench-build", None)
    except (SystemExit, subprocess.CalledProcessError, OSError) as e:
        verdict("bench-build", str(e))
        return 1

    for name in progs.EXPERIMENTS:
        with tempfile.TemporaryDirectory(prefix="tessera-smoke-") as work:
            # A disk experiment works in the folder it is given (never
            # dropping the host's caches: no --drop-caches here).
            extra = [work] if name in progs.DISK_EXPERIMENTS else []
            r = run_guarded([str(exes[name]), "--short", *extra], SMOKE_TIMEOUT)
        p = results.parse(r.lines)
        why = None
        if r.timed_out:
            why = f"timed out after {SMOKE_TIMEOUT} s"
        elif r.status != 0:
            why = f"exit status {r.status}: {' '.join(r.lines[-2:])}"
        elif p.errors or p.bad_lines:
            why = (p.errors + p.bad_lines)[0]
        elif not p.figures or any(f[0] != name for f in p.figures):
            why = "no figures, or figures of another experiment"
        verdict(f"linux-{name}", why)

    verdict("cpio-writer", _check_cpio())
    _smoke_linux_vm(exes, verdict)
    _smoke_linux_abi(verdict)

    if TESSERA_ELF.exists():
        base, _src = qemu.machine_args("tcg", 1, "512M")
        argv = ["qemu-system-x86_64", *base, *tessera_boot("bench=all bench_short")]
        r = run_guarded(argv, SMOKE_TIMEOUT, log_path=_smoke_log("tessera"))
        p = results.parse(r.lines)
        why = None
        if r.timed_out:
            why = f"timed out after {SMOKE_TIMEOUT} s"
        elif not p.done:
            why = f"no BENCH-DONE (exit status {r.status})"
        elif r.status != TESSERA_EXIT_OK:
            why = f"exit status {r.status}, expected {TESSERA_EXIT_OK}"
        elif p.errors or p.bad_lines:
            why = (p.errors + p.bad_lines)[0]
        else:
            why = _check_tessera_figures(p.figures)
        verdict("tessera-bench", why)
        verdict("tessera-bench-smp2", _smoke_tessera_smp2())
        verdict("tessera-bench-disk", _smoke_tessera_disk())
        verdict("tessera-bench-web", _smoke_tessera_web())
    else:
        log(f"{rel(TESSERA_ELF)} not built: Tessera's bench mode not smoke-tested")
    return 1 if failed else 0


# Experiments Tessera's `bench=all bench_short` must print (the rest of
# papers.EXPERIMENTS may not be in the kernel yet).
TESSERA_SMOKE_EXPECT = ("syscall", "spawn", "pageaccess", "pagefault", "pool", "poolmem", "container",
                        "ipc", "batch", "transfer", "kernel")
# Figures only the second boot with -smp 2 prints (see SMP2_EXPERIMENTS):
# the smoke test boots `bench=ipc bench_short` on two CPUs and looks for them.
TESSERA_SMOKE_SMP2_EXPECT = (("ipc", "round_trip_cross_cpu"),)


def _smoke_tessera_smp2():
    """The cross-CPU path the full run takes with -smp 2 (a few seconds)."""
    base, _src = qemu.machine_args("tcg", 2, "512M")
    argv = ["qemu-system-x86_64", *base, *tessera_boot("bench=ipc bench_short")]
    r = run_guarded(argv, SMOKE_TIMEOUT, log_path=_smoke_log("tessera-smp2"))
    p = results.parse(r.lines)
    if r.timed_out:
        return f"timed out after {SMOKE_TIMEOUT} s"
    if not p.done:
        return f"no BENCH-DONE (exit status {r.status})"
    if r.status != TESSERA_EXIT_OK:
        return f"exit status {r.status}, expected {TESSERA_EXIT_OK}"
    if p.errors or p.bad_lines:
        return (p.errors + p.bad_lines)[0]
    got = {(f[0], f[1]) for f in p.figures}
    missing = [f"{e} {m}" for e, m in TESSERA_SMOKE_SMP2_EXPECT if (e, m) not in got]
    return f"no figures of {', '.join(missing)}" if missing else None


def _smoke_tessera_disk():
    """The experiments on Tessera's own driver (`bench=fs,off2f`) on a fresh
    ext2 image on virtio-blk, which e2fsck then finds clean."""
    on_disk = [e for e, meta in papers.EXPERIMENTS.items() if meta.get("disk") and not meta.get("tessera_boot")]
    with tempfile.TemporaryDirectory(prefix="tessera-smoke-") as work:
        img = disk.make_ext2(Path(work) / "disk.img", 64)
        base, _src = qemu.machine_args("tcg", 1, "512M", disk=img)
        argv = ["qemu-system-x86_64", *base, *tessera_boot(f"bench={','.join(on_disk)} bench_short")]
        r = run_guarded(argv, SMOKE_TIMEOUT, log_path=_smoke_log("tessera-disk"))
        why = _smoke_vm_verdict(r, set(on_disk))
        if not why and r.status != TESSERA_EXIT_OK:
            why = f"exit status {r.status}, expected {TESSERA_EXIT_OK}"
        if not why:
            clean, report = disk.fsck(img)
            why = None if clean else "e2fsck -fn after the run: " + report.splitlines()[-1]
    return why


# The web experiment's short boot: busybox httpd, 10 requests of each page
# per pool setting (a minute or two of plain TCG).
WEB_SMOKE_TIMEOUT = 600


def _smoke_tessera_web():
    """`web` on Tessera (its own boot with a copy of the system disk): every
    pool setting's figures, every answer right (webload checks each)."""
    if not SYSTEM_IMAGE.exists():
        log(f"{rel(SYSTEM_IMAGE)} not built: the web experiment is not smoke-tested")
        return None
    with tempfile.TemporaryDirectory(prefix="tessera-smoke-") as work:
        base, _src = qemu.machine_args("tcg", 1, "512M", disk=fresh_system_disk(Path(work) / "system.img"))
        boot = papers.EXPERIMENTS["web"]["tessera_boot"][0] + " args=short"
        r = run_guarded(["qemu-system-x86_64", *base, *tessera_boot(boot)], WEB_SMOKE_TIMEOUT,
                        log_path=_smoke_log("tessera-web"))
    why = _smoke_vm_verdict(r, {"web", "webmem"}, WEB_SMOKE_TIMEOUT)
    if not why and r.status != TESSERA_EXIT_OK:
        why = f"exit status {r.status}, expected {TESSERA_EXIT_OK}"
    if not why:
        metrics = {f[1] for f in results.parse(r.lines).figures if f[0] == "web"}
        missing = [f"{s}_{m}" for s in ("basic", "reuse", "add", "reduce")
                   for m in ("static_c1", "shcgi_c10", "pagecgi_c10", "pagecgi_c10_faults")
                   if f"{s}_{m}" not in metrics]
        why = f"figures missing: {missing}" if missing else None
    return why


def _check_tessera_figures(figures):
    """The short run's figures: every expected experiment, and a summary
    renders from them (tables of every experiment, no plots).  Experiments
    papers.py does not know yet are fine: the summary lists them as they are."""
    import tempfile
    got = {f[0] for f in figures}
    missing = [e for e in TESSERA_SMOKE_EXPECT if e not in got]
    if missing:
        return f"no figures of {', '.join(missing)}"
    rows = results.aggregate("tessera", [figures])
    with tempfile.TemporaryDirectory() as d:
        for exp in got:
            results.write_csv(Path(d) / f"{exp}.csv", [r for r in rows if r["experiment"] == exp])
        try:
            report.write_summary(Path(d), "tcg", "python3 tools/bench/bench.py smoke")
        except Exception as e:  # noqa: BLE001 - any failure of the report is the finding
            return f"summary from the short run failed: {type(e).__name__}: {e}"
    return None


def _smoke_linux_vm(exes, verdict):
    """Boot the Linux reference VM briefly, if an earlier run fetched it.

    Covers /init and the initramfs; never downloads (a fresh machine skips
    this item: the kernel is fetched only by `make bench`).
    """
    try:
        vmlinux, initrd, manifest = linuxvm.prepare(exes, cached_only=True)
    except linuxvm.NotCached:
        log("Linux reference VM not fetched yet (make bench does): not smoke-tested")
        return
    base, _src = qemu.machine_args("tcg", 1, "512M")
    argv = ["qemu-system-x86_64", *base, "-kernel", str(vmlinux), "-initrd", str(initrd),
            "-append", f"{manifest['append']} bench=all bench_short"]
    r = run_guarded(argv, SMOKE_TIMEOUT, log_path=_smoke_log("linux"))
    plain = set(progs.EXPERIMENTS) - set(progs.DISK_EXPERIMENTS) | set(progs.SCRIPT_EXPERIMENTS)
    verdict("linux-vm", _smoke_vm_verdict(r, plain))

    # The storage experiments: the same VM with its modules and an ext2 disk.
    vmlinux, initrd, manifest = linuxvm.prepare(exes, cached_only=True, disk=True, name="disk")
    with tempfile.TemporaryDirectory(prefix="tessera-smoke-") as work:
        img = disk.make_ext2(Path(work) / "disk.img", 64)
        base, _src = qemu.machine_args("tcg", 1, "512M", disk=img)
        on_disk = [*progs.DISK_EXPERIMENTS, "web"]
        argv = ["qemu-system-x86_64", *base, "-kernel", str(vmlinux), "-initrd", str(initrd),
                "-append", f"{manifest['append']} disk bench={','.join(on_disk)} bench_short"]
        r = run_guarded(argv, WEB_SMOKE_TIMEOUT, log_path=_smoke_log("linux-disk"))
        why = _smoke_vm_verdict(r, set(on_disk), WEB_SMOKE_TIMEOUT)
        if not why:
            clean, report = disk.fsck(img)
            why = None if clean else "e2fsck -fn after the run: " + report.splitlines()[-1]
    verdict("linux-vm-disk", why)


def _smoke_linux_abi(verdict):
    """The Linux-ABI programs build; on the reference VM (if an earlier run
    fetched it), Linux still prints the committed transcripts."""
    try:
        exes = linuxabi.build()
    except SystemExit as e:
        verdict("linux-abi-build", str(e))
        return
    verdict("linux-abi-build", None)
    with tempfile.TemporaryDirectory(prefix="tessera-smoke-") as work:
        try:
            transcripts, record = linuxabi.run_linux(exes, raw_dir=RUNS_DIR / "smoke" / "abi", cached_only=True,
                                                     image=Path(work) / "abi.img")
        except linuxvm.NotCached:
            log("Linux reference VM not fetched yet: the ABI transcripts are not checked")
            return
    problems = list(record["problems"])
    for name in sorted(exes):
        diffs = linuxabi.compare(name, linuxabi.read_expected(name), transcripts.get(name))
        if diffs:
            problems.append(f"{name} differs from its expected transcript: {diffs[-1][:120]}")
    verdict("linux-abi-vm", "; ".join(problems[:3]) if problems else None)


def _smoke_vm_verdict(r, experiments, timeout=SMOKE_TIMEOUT):
    p = results.parse(r.lines)
    if r.timed_out:
        return f"timed out after {timeout} s"
    if not p.done:
        return f"no BENCH-DONE (exit status {r.status})"
    if p.errors or p.bad_lines:
        return (p.errors + p.bad_lines)[0]
    got = {f[0] for f in p.figures}
    if got != experiments:
        return f"experiments missing or extra: {sorted(experiments ^ got)}"
    return None


def _smoke_log(name):
    d = RUNS_DIR / "smoke"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{name}.log"


def _check_cpio():
    """Round-trip the initramfs writer through a minimal newc reader."""
    c = linuxvm.Cpio()
    c.dir("bin")
    c.file("bin/x", b"hello")
    c.symlink("bin/y", "x")
    c.chardev("dev/console", 5, 1)
    blob = c.bytes()
    seen, off = {}, 0
    while True:
        if blob[off:off + 6] != b"070701":
            return f"bad magic at {off}"
        f = [int(blob[off + 6 + 8 * i: off + 14 + 8 * i], 16) for i in range(13)]
        namesize, filesize = f[11], f[6]
        name = blob[off + 110: off + 110 + namesize - 1].decode()
        off = (off + 110 + namesize + 3) & ~3
        data = blob[off: off + filesize]
        off = (off + filesize + 3) & ~3
        if name == "TRAILER!!!":
            break
        seen[name] = (f[1], data, (f[9], f[10]))
    if seen.get("bin/x", (0, b""))[1] != b"hello" or seen.get("bin/y", (0, b""))[1] != b"x":
        return "file or symlink content lost"
    if seen.get("dev/console", (0, b"", (0, 0)))[2] != (5, 1):
        return "device numbers lost"
    if len(blob) % 512:
        return "archive not padded"
    return None


# ---------------------------------------------------------------------------


def cmd_report(a):
    out = results_dir(a.mode)
    cfg = out / "config.json"
    command = json.loads(cfg.read_text()).get("command", "make bench") if cfg.exists() else "make bench"
    make_outputs(out, a.mode, command)
    return 0


def cmd_linux_vm(_a):
    vmlinux, initrd, manifest = linuxvm.prepare(progs.build())
    print(json.dumps({**manifest, "vmlinux": rel(vmlinux), "initrd": rel(initrd)}, indent=2))
    return 0


def cmd_linux_abi(a):
    """Linux's transcripts of the ABI test programs; exit status 1 on any
    problem (a program that fails its own checks on Linux is wrong)."""
    install_signal_handlers()
    names = a.only.split(",") if a.only else None
    exes = linuxabi.build(names)
    if a.host:
        transcripts, record = linuxabi.run_host(exes), {"problems": []}
        where = "host"
    else:
        raw = RUNS_DIR / f"abi-{datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ')}"
        transcripts, record = linuxabi.run_linux(exes, a.mode, a.smp, a.mem, raw)
        where = "linux"
        log(f"serial log: {rel(raw / 'linux.log')}")
    last = linuxabi.OUT / "last" / where
    last.mkdir(parents=True, exist_ok=True)
    problems = list(record["problems"])
    total = 0
    for name in sorted(exes):
        t = transcripts.get(name)
        if t is None:
            continue
        (last / f"{name}.out").write_bytes(t.out)
        (last / f"{name}.err").write_bytes(t.err)
        checks, failed = linuxabi.count_checks(t)
        total += checks or 0
        line = f"{name}: {checks} checks, {failed} failed, exit status {t.status}"
        if t.status != 0 or failed or checks is None:
            problems.append(line)
        if t.err:
            problems.append(f"{name}: stderr: {t.err.decode('utf-8', 'replace').strip()[:200]}")
        diffs = linuxabi.compare(name, linuxabi.read_expected(name), t) if (a.check or a.host) else []
        if diffs and not a.host:
            problems.append(f"{name}: differs from expected/{name}.out")
        print(line + ("" if not diffs else f", differs from expected/{name}.out:"), flush=True)
        for d in diffs:
            print(f"    {d}", flush=True)
    print(f"{len(transcripts)} of {len(exes)} programs ran, {total} checks; transcripts in {rel(last)}",
          flush=True)
    if problems:
        log("problems: " + "; ".join(problems))
    if not a.check and not a.host:
        if problems:
            log("expected transcripts not written")
        else:
            linuxabi.write_expected(transcripts, record, complete=names is None)
            log(f"written: {rel(linuxabi.EXPECTED)}")
    return 1 if problems else 0


def cmd_ltp(a):
    install_signal_handlers()
    only = a.only.split(",") if a.only else None
    return ltp.main(only, a.mode, a.smp, a.mem, report_only=a.report, system=a.system)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the benchmarks")
    # Defaults follow the Makefile's settings, which reach us as environment
    # variables (make bench MODE=tcg RUNS=3 SMP=2 MEM=1G).
    r.add_argument("--mode", choices=qemu.MODES, default=os.environ.get("MODE") or "icount")
    r.add_argument("--bench", default="all", help="all, or experiment names separated by commas")
    r.add_argument("--runs", type=int, default=int(os.environ.get("RUNS") or 0),
                   help="runs per system (default: 1 icount, 5 otherwise)")
    r.add_argument("--smp", type=int, default=int(os.environ.get("SMP") or 1))
    r.add_argument("--mem", default=os.environ.get("MEM") or "512M")
    r.add_argument("--systems", default="linux,tessera")
    r.add_argument("--out", default="", help="results folder (default docs/results[/<mode>])")
    sub.add_parser("smoke", help="build and run every benchmark once, briefly")
    rp = sub.add_parser("report", help="regenerate summary and plots from the CSVs")
    rp.add_argument("--mode", choices=qemu.MODES, default=os.environ.get("MODE") or "icount")
    sub.add_parser("linux-vm", help="fetch and build the Linux reference VM only")
    la = sub.add_parser("linux-abi", help="the Linux-ABI test programs on the reference VM")
    la.add_argument("--check", action="store_true", help="compare with expected/ instead of writing it")
    la.add_argument("--host", action="store_true", help="run natively on this machine, compare")
    la.add_argument("--only", default="", help="programs, separated by commas")
    # Plain TCG: the transcripts do not depend on the clock, and it is faster.
    la.add_argument("--mode", choices=qemu.MODES, default=os.environ.get("MODE") or "tcg")
    la.add_argument("--smp", type=int, default=int(os.environ.get("SMP") or 1))
    la.add_argument("--mem", default=os.environ.get("MEM") or "512M")
    lt = sub.add_parser("ltp", help="LTP's system-call tests on the reference VM or Tessera")
    lt.add_argument("--system", choices=ltp.SYSTEMS, default=os.environ.get("SYSTEM") or "linux")
    lt.add_argument("--only", default="", help="runtest entries or programs, separated by commas")
    lt.add_argument("--mode", choices=qemu.MODES, default=os.environ.get("MODE") or "tcg")
    lt.add_argument("--smp", type=int, default=int(os.environ.get("SMP") or 1))
    lt.add_argument("--mem", default=os.environ.get("MEM") or "512M")
    lt.add_argument("--report", action="store_true", help="rewrite the results from the last run's logs")
    a = ap.parse_args()
    fn = {"run": cmd_run, "smoke": cmd_smoke, "report": cmd_report, "linux-vm": cmd_linux_vm,
          "linux-abi": cmd_linux_abi, "ltp": cmd_ltp}[a.cmd]
    return fn(a)


if __name__ == "__main__":
    sys.exit(main())
