#!/usr/bin/env python3
"""Instruction-level profile of one system call: every kernel instruction it
executes, from `syscall_entry` to the first return to user mode, attributed
to the (inlined) functions it belongs to. `fault` in place of a call traces
a user page fault instead, from its vector's entry stub.

It boots Tessera under instruction counting, stopped for gdb (`cargo xtask
debug`), lets gdb stop at the K-th entry of system call N (optionally with a
further condition on the registers), single-steps the kernel until it leaves
for user mode, and names each instruction with addr2line (inline frames
included). Under instruction counting a benchmark's figure is a path length;
this shows where that path goes.

    python3 tools/profile/syscall_trace.py ica_move --skip 25 --cmdline 'bench=ipc'
    make profile SYSCALL=container_send SKIP=5 COND='$r10 == 4' CMDLINE='bench=container bench_short'
    make profile SYSCALL=call SKIP=3084 COND='$rdi == 6 && $rsi == 2' AFTER=forward_acc WHOLE=1 \
        CMDLINE='servers=off run=fsbench args=ram'
    make profile SYSCALL=fault SKIP=100 COND='$cr2 >= 0x10000000' CMDLINE='bench=pagefault'

`--sequence` adds the path in order: each run of instructions in one
(inlined) function as one line with its count and the running total, where
the tables above it only add up.

`--after FUNCTION` arms the trace only once the kernel first reaches that
function (the end of its name, looked up with nm; the skip counts from
there): until then nothing stops in gdb. A program whose start sleeps on
timers (the storage servers' does) is better left alone while it starts:
under icount, a stop in gdb at every system call then leaves it waiting
forever.

What the trace covers: the kernel's part of that one call up to the first
`sysret`/`iret` to user mode, whichever process that is (a call that switches
directly to a server is followed into the server's return). With `--whole`
it goes on, through other processes' user code and system calls, until the
caller itself is back in user mode (same page-table root as at entry): a
blocking call as the caller sees it, e.g. an `ncallsync` and every server
step it waits for; user instructions are counted per address space, and
each space's are named by function of the program it runs (the native
program or Linux binary in whose code every traced address starts an
instruction; `--load FILE` reports again on PCs kept with `--save`, on the
same build only: user programs are named from the current build too). QEMU's
gdb stub keeps interrupts off while it single-steps, so no interrupt handler
is in the trace. Run as gdb's script (`gdb -x`) this file is the tracer; run by Python
it is the driver and the report.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ELF = os.path.join(ROOT, "build", "tessera.elf")
ABI = os.path.join(ROOT, "kernel", "abi", "src", "lib.rs")
USER_END = 0x0000_8000_0000_0000


def tracer():
    """Inside gdb: stop at the chosen call and record every PC until user mode."""
    import gdb  # noqa: provided by gdb

    nr = int(os.environ["TRACE_NR"])
    skip = int(os.environ.get("TRACE_SKIP", "0"))
    cond = os.environ.get("TRACE_COND", "").strip()
    limit = int(os.environ.get("TRACE_MAX", "200000"))
    out = os.environ["TRACE_OUT"]
    whole = os.environ.get("TRACE_WHOLE") == "1"
    gdb.execute("set architecture i386:x86-64")
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    gdb.execute("target remote 127.0.0.1:" + os.environ["TRACE_PORT"])
    after = os.environ.get("TRACE_AFTER", "").strip()
    if after:
        gdb.execute(f"hbreak {after}")
        gdb.execute("continue", to_string=True)
        gdb.execute("delete")
    # A hardware breakpoint: the kernel is mapped where gdb's software
    # breakpoints would be written before paging is up.
    extra = f" && ({cond})" if cond else ""
    fault = os.environ.get("TRACE_FAULT", "").strip()
    if fault:
        # The page fault's stub, entered from user mode: the CPU pushed
        # the error code, rip, then cs (whose low bits are the ring).
        gdb.execute(f"hbreak {fault} if (*(unsigned long *)($rsp + 16) & 3) == 3{extra}")
    else:
        gdb.execute(f"hbreak syscall_entry if $rax == {nr}{extra}")
    for _ in range(skip + 1):
        gdb.execute("continue", to_string=True)
    gdb.execute("delete")
    def reg(name):
        return int(gdb.parse_and_eval(name)) & 0xFFFF_FFFF_FFFF_FFFF

    caller = reg("$cr3")
    rows = []
    while len(rows) < limit:
        pc = reg("$pc")
        if pc < USER_END:
            space = reg("$cr3")
            if not whole or space == caller:
                break
            rows.append(f"u {space:x} {pc:x}")
        else:
            rows.append(f"{pc:x}")
        gdb.execute("stepi", to_string=True)
    with open(out, "w") as f:
        f.writelines(r + "\n" for r in rows)
    gdb.execute("kill")


def syscall_number(name):
    """`71`, `ica_move` or `IcaMove` -> 71, from the ABI's `Sys` enum."""
    if name.isdigit():
        return int(name)
    want = name.replace("_", "").lower()
    text = open(ABI).read()
    for ident, num in re.findall(r"^\s*([A-Z][A-Za-z0-9]*) = (\d+),", text, re.M):
        if ident.lower() == want:
            return int(num)
    sys.exit(f"syscall_trace: no system call named {name!r} in {ABI}")


def page_fault_stub():
    """`*0x...` of vector 14's entry stub (16 bytes a vector from
    `trap_stubs`, vectors.S)."""
    import subprocess

    out = subprocess.run(["nm", ELF], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == "trap_stubs":
            return f"*0x{int(parts[0], 16) + 14 * 16:x}"
    sys.exit("syscall_trace: no trap_stubs in the kernel")


def sequence(rows, depth):
    """The path in order: a line per run of instructions with one chain."""
    pcs = [int(r, 16) for r in rows if not r.startswith("u ")]
    chains = symbolize(pcs)
    user = user_chains(rows)
    print("\nin order (instructions, running total, call chain):")
    last, count, total = None, 0, 0
    for r in rows + [None]:
        if r is None:
            key = None
        elif r.startswith("u "):
            _, space, pc = r.split()
            name, named = user.get(space, ("?", {}))
            chain = named.get(int(pc, 16), ["?"])
            key = f"user {space} {name}: " + " > ".join(chain[:depth])
        else:
            chain = chains.get(int(r, 16), ["?"])
            key = " > ".join(chain[:depth]) + (f"  ...{chain[-1]}" if len(chain) > depth else "")
        if key != last and last is not None:
            print(f"{count:6} {total:7}  {last}")
            count = 0
        if key is None:
            break
        last = key
        count += 1
        total += 1


def function_address(name):
    """`*0x...` for the one kernel function whose name ends with `name`
    (`forward_acc`, `rendezvous::forward`), as the arm of `--after`."""
    import subprocess

    if name.startswith("*"):
        return name
    out = subprocess.run(["nm", "-C", ELF], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in ("t", "T") and parts[2].endswith(name):
            found[parts[2]] = int(parts[0], 16)
    if len(found) != 1:
        sys.exit(f"syscall_trace: --after {name!r} names {len(found)} functions: {sorted(found)[:5]}")
    return f"*0x{next(iter(found.values())):x}"


def symbolize(pcs, elf=ELF):
    """PC -> inline chain, outermost first, of short function names."""
    import subprocess

    uniq = sorted(set(pcs))
    out = subprocess.run(
        ["addr2line", "-e", elf, "-i", "-f", "-C", "-a"] + [f"0x{p:x}" for p in uniq],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    chains, cur, i = {}, None, 0
    while i < len(out):
        line = out[i]
        if line.startswith("0x"):
            cur = int(line, 16)
            chains[cur] = []
            i += 1
            continue
        fn = re.sub(r"::h[0-9a-f]{16}$", "", line)
        # Drop generic arguments and impl paths: keep the function's own name.
        while True:
            shorter = re.sub(r"<[^<>]*>", "", fn)
            if shorter == fn:
                break
            fn = shorter
        parts = [p for p in fn.split("::") if p]
        # A closure is named after the function it is in.
        keep = 2 if parts and parts[-1].startswith("{{closure") else 1
        chains[cur].append("::".join(parts[-keep:]) or fn)
        i += 2
    return {pc: list(reversed(c)) for pc, c in chains.items()}


def user_programs():
    """The ELF files a user address space may run: the native programs and
    servers as built, and the Linux programs of the root file system."""
    import glob

    found = glob.glob(os.path.join(ROOT, "target", "x86_64-unknown-none", "release", "*"))
    found += glob.glob(os.path.join(ROOT, "build", "rootfs", "**", "*"), recursive=True)
    elves = []
    for path in sorted(set(found)):
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    elves.append(path)
    return elves


def instruction_starts(elf):
    """The addresses at which the ELF's executable code has an instruction."""
    import subprocess

    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", elf], capture_output=True, text=True).stdout
    return {int(m.group(1), 16) for m in re.finditer(r"^\s+([0-9a-f]+):", out, re.M)}


def text_ranges(elf):
    """[(start, end)] of the ELF's executable segments."""
    import subprocess

    out = subprocess.run(["readelf", "-lW", elf], capture_output=True, text=True).stdout
    ranges = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "E" in f[6:-1]:
            ranges.append((int(f[2], 16), int(f[2], 16) + int(f[5], 16)))
    return ranges


def which_program(pcs, elves):
    """The program an address space runs, told by its instructions: the ELF
    in whose code (nearly) every traced address starts an instruction, or
    None. Every program is linked at the same address, so the ranges alone
    cannot tell."""
    uniq = set(pcs)
    best, score = None, 0.0
    for elf in elves:
        ranges = text_ranges(elf)
        inside = sum(1 for p in uniq if any(a <= p < b for a, b in ranges))
        if inside < 0.9 * len(uniq):
            continue
        starts = instruction_starts(elf)
        hit = len(uniq & starts) / len(uniq)
        if hit > score:
            best, score = elf, hit
    return best if score >= 0.9 else None


def report(rows, depth, top):
    from collections import Counter

    pcs = [int(r, 16) for r in rows if not r.startswith("u ")]
    user = Counter(r.split()[1] for r in rows if r.startswith("u "))
    chains = symbolize(pcs)
    by_chain, by_function = Counter(), Counter()
    for pc in pcs:
        chain = chains.get(pc, ["?"])
        by_chain[" > ".join(chain[:depth])] += 1
        by_function[chain[-1]] += 1
    print(f"{len(pcs)} kernel instructions")
    for space, n in user.most_common():
        print(f"{n} user instructions in the address space with page-table root {space}")
    if user:
        user_report(rows, user, top)
    print(f"\nby call chain (outermost {depth} frames, inlined frames included):")
    for key, n in by_chain.most_common(top):
        print(f"{n:7}  {key}")
    print("\nby innermost function:")
    for key, n in by_function.most_common(top):
        print(f"{n:7}  {key}")


def user_chains(rows):
    """Per user address space: (its program's name, PC -> inline chain)."""
    spaces = {}
    for r in rows:
        if r.startswith("u "):
            _, space, pc = r.split()
            spaces.setdefault(space, []).append(int(pc, 16))
    elves = user_programs()
    named = {}
    for space, pcs in spaces.items():
        elf = which_program(pcs, elves)
        named[space] = ("?", {}) if elf is None else (os.path.relpath(elf, ROOT), symbolize(pcs, elf))
    return named


def user_report(rows, user, top):
    """Each address space's user instructions by function of its program."""
    from collections import Counter

    named = user_chains(rows)
    for space, n in user.most_common():
        name, chains = named[space]
        if not chains:
            print(f"\nuser, page-table root {space}: {n} instructions, program not found")
            continue
        pcs = [int(r.split()[2], 16) for r in rows if r.startswith(f"u {space} ")]
        by_function = Counter(chains.get(pc, ["?"])[-1] for pc in pcs)
        print(f"\nuser, page-table root {space}: {n} instructions of {name}, by function:")
        for key, k in by_function.most_common(top // 2):
            print(f"{k:7}  {key}")


def kernel_digest():
    """A digest of the kernel's ELF, naming the build a trace was taken on."""
    import hashlib

    with open(ELF, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def driver():
    import argparse
    import shutil
    import socket
    import subprocess
    import tempfile
    import time

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("syscall", help="number or name (ica_move, IcaMove, 71), or fault")
    ap.add_argument("--skip", type=int, default=0, help="entries of that call to let pass first")
    ap.add_argument("--cond", default="", help="further gdb condition, e.g. '$rdi == 3'")
    ap.add_argument("--cmdline", default="", help="kernel command line (e.g. 'bench=ipc')")
    ap.add_argument("--depth", type=int, default=4, help="frames per call chain in the report")
    ap.add_argument("--top", type=int, default=40, help="rows per table")
    ap.add_argument("--max", type=int, default=200000, help="give up after this many instructions")
    ap.add_argument("--smp", default="", help="CPUs (default: the machine's default)")
    ap.add_argument("--save", help="also write the traced PCs to this file")
    ap.add_argument("--whole", action="store_true", help="follow until the caller is back in user mode")
    ap.add_argument("--after", default="", help="arm the trace once the kernel reaches this function")
    ap.add_argument("--sequence", action="store_true", help="also list the path in order")
    ap.add_argument("--load", help="report on PCs saved with --save instead of booting")
    args = ap.parse_args()
    if args.load:
        lines = [line.strip() for line in open(args.load) if line.strip()]
        kept = next((x.split()[-1] for x in lines if x.startswith("# kernel ")), None)
        if kept != kernel_digest():
            sys.exit(f"syscall_trace: {args.load} was traced on another build of {ELF}: its names would be wrong")
        rows = [x for x in lines if not x.startswith("#")]
        report(rows, args.depth, args.top)
        if args.sequence:
            sequence(rows, args.depth)
        return
    for tool in ("gdb", "addr2line"):
        if shutil.which(tool) is None:
            sys.exit(f"syscall_trace: {tool} is missing (apt-get install gdb binutils)")
    fault = args.syscall == "fault"
    nr = 0 if fault else syscall_number(args.syscall)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, ACCEL="icount", CMDLINE=args.cmdline, GDBPORT=str(port))
    if args.smp:
        env["SMP"] = args.smp
    build = subprocess.run(["cargo", "xtask", "build"], cwd=ROOT, env=env)
    if build.returncode != 0:
        sys.exit("syscall_trace: the build failed")
    qemu = subprocess.Popen(
        ["cargo", "xtask", "debug"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "pcs")
        genv = dict(
            env,
            TRACE_NR=str(nr),
            TRACE_SKIP=str(args.skip),
            TRACE_COND=args.cond,
            TRACE_MAX=str(args.max),
            TRACE_OUT=out,
            TRACE_PORT=str(port),
            TRACE_WHOLE="1" if args.whole else "0",
            TRACE_AFTER=function_address(args.after) if args.after else "",
            TRACE_FAULT=page_fault_stub() if fault else "",
        )
        try:
            for _ in range(100):  # until QEMU listens
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.1)
            r = subprocess.run(
                ["gdb", "-nx", "-batch", "-x", os.path.abspath(__file__), ELF],
                env=genv,
                capture_output=True,
                text=True,
            )
        finally:
            try:
                os.killpg(qemu.pid, 15)
            except ProcessLookupError:
                pass
            qemu.wait()
        if not os.path.exists(out):
            sys.stderr.write(r.stdout[-2000:] + r.stderr[-2000:])
            sys.exit("syscall_trace: no trace (did the call happen? is --skip too large?)")
        rows = [line.strip() for line in open(out) if line.strip()]
    if args.save:
        with open(args.save, "w") as f:
            # The build the PCs belong to: --load refuses another.
            f.write(f"# kernel {kernel_digest()}\n")
            f.writelines(r + "\n" for r in rows)
    after = f" after {args.after}" if args.after else ""
    what = "user page fault" if fault else f"system call {nr} ({args.syscall})"
    print(f"{what}, entry {args.skip + 1}{after}, cmdline {args.cmdline!r}")
    report(rows, args.depth, args.top)
    if args.sequence:
        sequence(rows, args.depth)


if __name__ == "__main__":
    if "gdb" in sys.modules:
        tracer()
    else:
        driver()
