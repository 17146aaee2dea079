#!/usr/bin/env python3
"""Where one fork+execve+wait of the spawn experiment goes on Tessera: the
CPU time of a spawn, by process, with the pool set to reuse (the
`linux_binary_pooled` way of bench.py).

It boots Tessera's test kernel (feature `cputime`) under icount with
`servers.linux-eager.conf`, `pool.linux-reuse.conf` and `cputime`, and runs
`/linux/bench/spawn N -s /proc/tessera/cpu -s /proc/tessera/calls -s
/proc/tessera/counters`: the spawn program then times fork+execve+wait
alone, and reads the kernel's CPU times by process, its call counts and the
mediator's counters just before the first timed spawn and just after the
last. The difference, divided by N, is the split; under icount nanoseconds
are instructions. The rows:

  parent           the spawn program (the one that forks and waits)
  child until exec the process fork makes, until its execve
  tiny             the program the child execs, until its exit
  supervisor: parent        the spawn program's supervisor
  supervisors: children     the pooled supervisors the children take
  shared server    the personality's shared server (`linux`)
  file server, cache        `fs` and `blockcache` (execve's open and reads)
  other            every other process
  idle             the processors' idle computations

"kernel" is the part of each row spent in the kernel (system calls, faults,
interrupts taken in user mode).

    python3 tools/bench/spawnsplit.py [--no-build] [--spawns N]
"""

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import log  # noqa: E402
from websplit import boot_lines, counters, name_values, parse  # noqa: E402

CPU_FILE = "/proc/tessera/cpu"
CALLS_FILE = "/proc/tessera/calls"
COUNTERS_FILE = "/proc/tessera/counters"
METRIC = "fork_exec_wait"
ROWS = ["parent", "child until exec", "tiny", "supervisor: parent", "supervisors: children",
        "shared server", "file server, cache", "other", "idle"]


def role(r, shared_pid, parent_sup):
    kind, name = r["kind"], r["name"]
    if kind == "idle":
        return "idle"
    how = kind.split("/")[1]
    last = name.rsplit("/", 1)[-1]
    if how == "native":
        if last in ("fs", "blockcache"):
            return "file server, cache"
        if last == "linux":
            if r["pid"] == shared_pid:
                return "shared server"
            return "supervisor: parent" if r["pid"] == parent_sup else "supervisors: children"
        return "other"
    if how == "forked":
        return "child until exec"
    if last == "tiny":
        return "tiny"
    return "parent" if last == "spawn" else "other"


def split(before, after):
    natives = [r for r in after if r["kind"] == "live/native" and r["name"].rsplit("/", 1)[-1] == "linux"]
    parents = {r["parent"] for r in natives}
    shared_pid = next((r["pid"] for r in natives if r["pid"] in parents), None)
    parent_sup = next((r["parent"] for r in after
                       if r["kind"] == "live/linux" and r["name"].rsplit("/", 1)[-1] == "spawn"), None)
    out = defaultdict(lambda: [0, 0])
    for sign, recs in ((-1, before), (1, after)):
        for r in recs:
            row = role(r, shared_pid, parent_sup)
            out[row][0] += sign * r["ns"]
            out[row][1] += sign * r["kernel"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-build", action="store_true", help="use the kernel and disk as built")
    ap.add_argument("--spawns", type=int, default=100)
    ap.add_argument("--smp", type=int, default=1)
    ap.add_argument("--log", help="parse this console log instead of booting")
    a = ap.parse_args()
    files = ",".join(f"-s,{f}" for f in (CPU_FILE, CALLS_FILE, COUNTERS_FILE))
    append = ("servers=servers.linux-eager.conf pool=pool.linux-reuse.conf cputime "
              f"run=linux args=/linux/bench/spawn,{a.spawns},{files}")
    lines = boot_lines(a, "spawnsplit", append)
    for e in (x for x in lines if x.startswith("BENCH-ERROR")):
        log(e)
    snaps, _, files = parse(lines)
    if METRIC not in snaps:
        raise SystemExit("no CPUSPLIT lines: was the kernel built with /proc/tessera/cpu?")
    total = next((float(x.split(",")[4]) for x in lines if x.startswith(f"BENCH,spawn,{METRIC},")), 0.0)
    n = a.spawns
    s = split(snaps[METRIC]["before"], snaps[METRIC]["after"])
    print(f"Instructions per fork+execve+wait (thousands; {n} spawns, Tessera, pool reuse, icount, "
          f"{a.smp} CPU): `python3 tools/bench/spawnsplit.py`")
    print()
    print("| row | all | kernel |")
    print("|---|---:|---:|")
    for row in ROWS:
        v = s.get(row, [0, 0])
        print(f"| {row} | {v[0] / n / 1000:.1f}k | {v[1] / n / 1000:.1f}k |")
    print(f"| sum | {sum(v[0] for v in s.values()) / n / 1000:.1f}k | "
          f"{sum(v[1] for v in s.values()) / n / 1000:.1f}k |")
    print(f"| the program's clock | {total / 1000:.1f}k | |")
    f = files[METRIC]
    b, e = name_values(f["before"][CALLS_FILE]), name_values(f["after"][CALLS_FILE])
    print()
    print("per spawn: " + ", ".join(f"{k} {(e[k] - b.get(k, 0)) / n:.1f}" for k in e))
    b, e = counters(f["before"][COUNTERS_FILE]), counters(f["after"][COUNTERS_FILE])
    d = {k: (e[k][0] - b.get(k, (0, 0))[0], e[k][1] - b.get(k, (0, 0))[1]) for k in e}
    d = {k: v for k, v in d.items() if v[0] > 0}
    print(f"the kernel's resource operations per spawn, {sum(v[1] for v in d.values()) / n / 1000:.1f}k cycles:")
    for (kind, op), (calls, cycles) in sorted(d.items(), key=lambda x: -x[1][1])[:12]:
        print(f"  {kind} {op}: {calls / n:.2f} calls, {cycles / n / 1000:.1f}k cycles")


if __name__ == "__main__":
    main()
