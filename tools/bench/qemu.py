"""The QEMU machine both systems run on.

The machine configuration (machine type, CPU model, memory, accelerator,
icount, devices) comes from one place, `cargo xtask qemu-args`, so Tessera
and the Linux reference are measured on an identical virtual machine.  Only
-kernel, -initrd and -append differ between the two.
"""

import shlex
import subprocess

from common import ROOT, log

MODES = ("icount", "tcg", "kvm")

# The contract of `cargo xtask qemu-args`, used only when that command is not
# available; the configuration record says which source was used.
_BASE = [
    "-machine", "pc", "-nodefaults", "-no-user-config", "-display", "none",
    "-serial", "stdio", "-device", "isa-debug-exit,iobase=0xf4,iosize=4", "-no-reboot",
]
_ACCEL = {
    # One guest nanosecond per instruction, fixed guest wall clock, no
    # host-driven events (-nodefaults: no NIC): deterministic figures.
    "icount": ["-accel", "tcg", "-icount", "shift=0,sleep=off",
               "-rtc", "base=2024-01-01T00:00:00,clock=vm"],
    "tcg": ["-accel", "tcg", "-rtc", "base=2024-01-01T00:00:00,clock=vm"],
    "kvm": ["-accel", "kvm", "-rtc", "base=2024-01-01T00:00:00,clock=vm"],
}


def fallback_args(mode, smp, mem):
    return [*_BASE, "-m", mem, "-smp", str(smp), *_ACCEL[mode]]


def machine_args(mode, smp, mem):
    """Return (args, source) for a mode; source is 'xtask' or 'fallback'."""
    cmd = ["cargo", "xtask", "qemu-args", "--mode", mode, "--smp", str(smp), "--mem", mem]
    try:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
        args = [a.strip() for a in r.stdout.splitlines() if a.strip()]
        if r.returncode == 0 and args and _plausible(args):
            return args, "xtask"
        why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}, no usable output"])[-1]
    except (OSError, subprocess.TimeoutExpired) as e:
        why = str(e)
    log(f"`{' '.join(cmd)}` unavailable ({why}); using the harness's copy of its contract")
    return fallback_args(mode, smp, mem), "fallback"


def _plausible(args):
    # The per-system options must not come from the shared machine part.
    return ("-machine" in args or "-M" in args) and not {"-kernel", "-append", "-initrd"} & set(args)


def describe(args):
    """Pick the facts a results table must state out of a QEMU argv."""
    def value(*flags, default=None):
        for i, a in enumerate(args):
            if a in flags and i + 1 < len(args):
                return args[i + 1]
        return default

    icount = value("-icount")
    return {
        "machine": value("-machine", "-M", default="pc"),
        "cpu": value("-cpu", default="qemu64 (QEMU's default model)"),
        "memory": value("-m", default="128M (QEMU's default)"),
        "smp": value("-smp", default="1"),
        "accel": value("-accel", default="tcg") if "-enable-kvm" not in args else "kvm",
        "icount": icount or "off",
        "rtc": value("-rtc", default="host clock"),
    }


def qemu_version():
    r = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True)
    return r.stdout.splitlines()[0] if r.stdout else "unknown"


def command_line(argv):
    return " ".join(shlex.quote(a) for a in argv)
