#!/usr/bin/env python3
"""Where one request of the web experiment goes on Tessera: the CPU time of
a request, by process, for the static page, the shell CGI and the page
access CGI with 0 pages at one client.

It boots Tessera's test kernel (the one built with the kernel-time
accounting, feature `cputime`) under icount as the web experiment does
(`servers.web.conf`, the pool set to reuse) with `run=webbench args=split`
and `cputime` (the kernel then counts each computation's kernel time, which
costs about 1.5 % of a request; the figures of record are made without it): `web.sh --split` makes
100 requests of each page with `webload -s /proc/tessera/cpu`, which reads the
kernel's CPU times by process (`Topic::CpuTimes`: every live process, the
ended ones summed by program and kind, the idle computations; each with the
part spent in the kernel) just before the first request and just after the
last answer. The difference, divided by the requests, is the split below;
under icount nanoseconds are instructions. It reads the kernel's resource
operations (/proc/tessera/counters) and the TCP/IP server's counters
(/proc/tessera/net) around each burst too, and prints them per request
after the table. The rows:

  httpd            busybox httpd itself (and web.sh's sh, which only waits)
  httpd children   the processes httpd forks, one a request, until they exec
  CGI program      what the child execs (busybox sh for the shell CGI, the
                   page access program), started during the burst
  webload          the load generator (the client side)
  supervisor: ...  the Linux processes' supervisors (native `linux`): a
                   Linux process's kernel parent is its supervisor, so the
                   one of httpd and the one of webload are known; the
                   others (pooled, taken by each new child and CGI program)
                   are one row
  shared server    the personality's shared server (`linux`, their parent)
  TCP/IP server    `net` (smoltcp)
  file server ...  `fs` and `blockcache` (exec's and httpd's file reads)
  other            every other process (web.sh's sh and its supervisor,
                   init, the disk driver ...)
  idle             the processors' idle computations

"kernel" is the part of each row's time spent in the kernel (system calls,
faults and interrupts taken in user mode); "all" is user and kernel. The
sum is checked against the burst's own clock (webload's total).

    python3 tools/bench/websplit.py            (builds first; --no-build not to)
"""

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402
from bench import fresh_system_disk  # noqa: E402
from common import ROOT, RUNS_DIR, TESSERA_INITRD, build_tessera, log, rel, run_guarded  # noqa: E402

BOOT = "servers=servers.web.conf run=webbench args=split cputime"
TIMEOUT = 1800
REQUESTS = 100
PAGES = [("reuse_static_c1", "static page"), ("reuse_shcgi_c1", "shell CGI"),
         ("reuse_pagecgi_c1", "page access CGI, 0 pages")]
CPU_FILE = "/proc/tessera/cpu"
TEST_KERNEL = ROOT / "build" / "tessera-test.elf"
COUNTERS_FILE = "/proc/tessera/counters"
NET_FILE = "/proc/tessera/net"
ROWS = ["httpd", "httpd children", "CGI program", "webload", "supervisor: httpd", "supervisor: webload",
        "supervisors: children, CGI", "shared server", "TCP/IP server", "file server, cache", "other", "idle"]


def parse(lines):
    """({metric: {"before"/"after": [record]}}, {metric: total ns},
    {metric: {"before"/"after": {file: [line]}}} of the other files)."""
    snaps = defaultdict(lambda: {"before": [], "after": []})
    files = defaultdict(lambda: {"before": defaultdict(list), "after": defaultdict(list)})
    totals = {}
    for line in lines:
        if line.startswith("CPUSPLIT,"):
            _, metric, when, name, rest = line.rstrip("\r").split(",", 4)
            if name != CPU_FILE:
                files[metric][when][name].append(rest)
                continue
            f = rest.split(" ", 6)
            if f[0] == "pid" or len(f) < 7:
                continue
            snaps[metric][when].append({
                "pid": int(f[0]), "parent": int(f[1]), "kind": f[2], "count": int(f[3]),
                "ns": int(f[4]), "kernel": int(f[5]), "name": f[6].strip()})
        elif line.startswith("BENCH,web,"):
            f = line.split(",")
            if f[2] in dict(PAGES):
                totals[f[2]] = float(f[4])
    return snaps, totals, files


def counters(lines):
    """{(kind, operation): (calls, cycles)} of /proc/tessera/counters."""
    out = {}
    for line in lines:
        f = line.split()
        if len(f) == 5 and f[2].isdigit():
            out[(f[0], f[1])] = (int(f[2]), int(f[2]) * int(f[4]))
    return out


def name_values(lines):
    """{name: value} of lines `name value` (/proc/tessera/net, the TCP/IP
    server's STATS; /proc/tessera/calls)."""
    out = {}
    for line in lines:
        f = line.split()
        if len(f) == 2 and f[1].isdigit():
            out[f[0]] = int(f[1])
    return out


def more_tables(files, n):
    """Per request: the kernel's resource operations (the mediator's
    counters: calls and cycles, the ten costliest) and the TCP/IP
    server's calls, turns and loopback packets."""
    for m, label in PAGES:
        if m not in files:
            continue
        f = files[m]
        b, a = counters(f["before"][COUNTERS_FILE]), counters(f["after"][COUNTERS_FILE])
        d = {k: (a[k][0] - b.get(k, (0, 0))[0], a[k][1] - b.get(k, (0, 0))[1]) for k in a}
        d = {k: v for k, v in d.items() if v[0] > 0}
        nb, na = name_values(f["before"][NET_FILE]), name_values(f["after"][NET_FILE])
        net = {k: (na[k] - nb.get(k, 0)) / n for k in ("calls", "turns", "loopback_packets", "sockets_made")
               if k in na}
        print()
        print(f"{label}: TCP/IP server per request: " + ", ".join(f"{k} {v:.1f}" for k, v in net.items()))
        by_entry = {k[len("calls_"):]: (na[k] - nb.get(k, 0)) / n for k in na if k.startswith("calls_")}
        by_entry = {k: v for k, v in by_entry.items() if v > 0}
        if by_entry:
            print(f"{label}: TCP/IP server calls by entry per request: "
                  + ", ".join(f"{k} {v:.1f}" for k, v in sorted(by_entry.items(), key=lambda x: -x[1])))
        total = sum(v[1] for v in d.values())
        print(f"{label}: the kernel's resource operations per request, {total / n / 1000:.0f}k cycles in all:")
        for (kind, op), (calls, cycles) in sorted(d.items(), key=lambda x: -x[1][1])[:10]:
            print(f"  {kind} {op}: {calls / n:.1f} calls, {cycles / n / 1000:.1f}k cycles")


def role(r, shared_pid, served):
    """The row a record's time goes to."""
    kind, name = r["kind"], r["name"]
    if kind == "idle":
        return "idle"
    alive, how = kind.split("/")
    last = name.rsplit("/", 1)[-1]
    if how == "native":
        if last == "net":
            return "TCP/IP server"
        if last in ("fs", "blockcache"):
            return "file server, cache"
        if last == "linux":
            if r["pid"] == shared_pid:
                return "shared server"
            return served.get(r["pid"], "supervisors: children, CGI")
        return "other"
    if how == "forked":
        return "httpd children"
    if last == "webload":
        return "webload"
    # A Linux program started by exec: httpd (alive before and after), or
    # a CGI program (ended, or new since the first snapshot).
    if alive == "live" and r.get("old"):
        # web.sh's sh waits for webload meanwhile.
        return "other" if last == "sh" else "httpd"
    return "CGI program"


def split(before, after):
    """{row: [all ns, kernel ns]} of the time between the two snapshots."""
    def shared(recs):
        # The shared server: the native `linux` that is its siblings' parent.
        natives = [r for r in recs if r["kind"] == "live/native" and r["name"].rsplit("/", 1)[-1] == "linux"]
        parents = {r["parent"] for r in natives}
        return next((r["pid"] for r in natives if r["pid"] in parents), None)

    sp = shared(after) or shared(before)
    live_before = {r["pid"]: r for r in before if r["kind"].startswith("live/")}
    # Supervisors of the long-lived Linux processes: their kernel parents.
    served = {}
    for r in before + after:
        last = r["name"].rsplit("/", 1)[-1]
        if r["kind"] == "live/linux" and r["pid"] in live_before:
            served[r["parent"]] = {"webload": "supervisor: webload", "sh": "other"}.get(last, "supervisor: httpd")
    out = defaultdict(lambda: [0, 0])
    for sign, recs in ((-1, before), (1, after)):
        for r in recs:
            if r["kind"].startswith("live/"):
                old = r["pid"] in live_before
                if sign == -1 or old:
                    r = dict(r, old=True)
                # A live process that was not there before counts whole;
                # one that was, its difference.
            row = role(r, sp, served)
            out[row][0] += sign * r["ns"]
            out[row][1] += sign * r["kernel"]
    return out


def table(snaps, totals, n):
    print("| row | " + " | ".join(f"{label}: all | kernel" for _, label in PAGES) + " |")
    print("|---|" + "---:|---:|" * len(PAGES))
    results = {m: split(snaps[m]["before"], snaps[m]["after"]) for m, _ in PAGES if m in snaps}
    for row in ROWS + ["sum", "webload's clock"]:
        cells = []
        for m, _ in PAGES:
            if m not in results:
                cells += ["-", "-"]
                continue
            s = results[m]
            if row == "sum":
                v = [sum(x[0] for x in s.values()), sum(x[1] for x in s.values())]
            elif row == "webload's clock":
                v = [totals.get(m, 0), None]
            else:
                v = s.get(row, [0, 0])
            cells += [f"{v[0] / n / 1000:.0f}k", "" if v[1] is None else f"{v[1] / n / 1000:.0f}k"]
        print(f"| {row} | " + " | ".join(cells) + " |")


def boot_lines(args, name, append):
    """The console lines of one boot of the test kernel with command line
    `append` under icount (or those of `args.log`, when given): the only
    kernel with the kernel-time accounting compiled in (feature `cputime`),
    which costs every system call."""
    if args.log:
        return Path(args.log).read_text(errors="replace").splitlines()
    if not args.no_build:
        ok, detail = build_tessera()
        if not ok:
            raise SystemExit(detail)
    RUNS_DIR.mkdir(parents=True, exist_ok=True)
    log_path = RUNS_DIR / f"{name}-tessera.log"
    with tempfile.TemporaryDirectory(prefix=f"tessera-{name}-") as work:
        base, _ = qemu.machine_args("icount", args.smp, "512M", disk=fresh_system_disk(Path(work) / "system.img"))
        boot = ["-kernel", str(TEST_KERNEL), "-initrd", str(TESSERA_INITRD), "-append", append]
        r = run_guarded(["qemu-system-x86_64", *base, *boot], TIMEOUT, log_path=log_path)
    log(f"console log in {rel(log_path)}")
    return r.lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-build", action="store_true", help="use the kernel and disk as built")
    ap.add_argument("--smp", type=int, default=1)
    ap.add_argument("--log", help="parse this console log instead of booting")
    a = ap.parse_args()
    lines = boot_lines(a, "websplit", BOOT)
    errors = [x for x in lines if x.startswith("BENCH-ERROR")]
    for e in errors:
        log(e)
    snaps, totals, files = parse(lines)
    if not snaps:
        raise SystemExit("no CPUSPLIT lines: was the kernel built with /proc/tessera/cpu?")
    print(f"Instructions per request (thousands; {REQUESTS} requests at 1 client, Tessera, pool reuse, "
          f"icount, {a.smp} CPU): `python3 tools/bench/websplit.py`")
    print()
    table(snaps, totals, REQUESTS)
    more_tables(files, REQUESTS)


if __name__ == "__main__":
    main()
