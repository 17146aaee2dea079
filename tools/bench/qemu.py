"""The QEMU machine both systems run on.

The machine configuration (machine type, CPU model, memory, accelerator,
icount, devices) comes from one place, `cargo xtask qemu-args`, so Tessera
and the Linux reference are measured on an identical virtual machine.  Only
-kernel, -initrd and -append differ between the two.
"""

import json
import os
import shlex
import socket
import subprocess
import tempfile
import time

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


# The pseudo-NVM device (xtask's default image; QEMU makes the file if it is
# missing, unformatted, which neither system minds).
_NVM = ["-object", f"memory-backend-file,id=nvm,mem-path={ROOT}/build/nvm.img,size=268435456,share=on",
        "-device", "ivshmem-plain,memdev=nvm"]


def disk_args(disk):
    """The block device of the machine: a raw image on virtio-blk-pci."""
    file = str(disk).replace(",", ",,")
    return ["-drive", f"file={file},if=none,id=disk0,format=raw,cache=writeback",
            "-device", "virtio-blk-pci,drive=disk0,disable-legacy=on"]


def fallback_args(mode, smp, mem, disk=None):
    return [*_BASE, "-m", mem, "-smp", str(smp), *_ACCEL[mode], *_NVM, *(disk_args(disk) if disk else [])]


def machine_args(mode, smp, mem, disk=None, disk_model=None):
    """Return (args, source) for a mode; source is 'xtask' or 'fallback'.
    `disk`: a raw image attached on virtio-blk (none by default);
    `disk_model`: QEMU throttles it as that disk model (dk, sata, nvme)."""
    cmd = ["cargo", "xtask", "qemu-args", "--mode", mode, "--smp", str(smp), "--mem", mem]
    # DISK=off: the disk is the harness's choice, not the environment's.
    cmd += ["--disk", str(disk)] if disk else ["--disk", "off"]
    env = dict(os.environ, DISK_MODEL=disk_model or "")
    try:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
        args = [a.strip() for a in r.stdout.splitlines() if a.strip()]
        if r.returncode == 0 and args and _plausible(args):
            return args, "xtask"
        why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}, no usable output"])[-1]
    except (OSError, subprocess.TimeoutExpired) as e:
        why = str(e)
    log(f"`{' '.join(cmd)}` unavailable ({why}); using the harness's copy of its contract")
    return fallback_args(mode, smp, mem, disk), "fallback"


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
        "nvm": "ivshmem-plain, file-backed" if "ivshmem-plain,memdev=nvm" in args else "none",
        "disk": ("none" if "-drive" not in args else "virtio-blk-pci (raw image)" + next(
            (f", QEMU throttling {a[a.index('throttling.'):]}" for a in args if "throttling." in a), "")),
    }


def qemu_version():
    r = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True)
    return r.stdout.splitlines()[0] if r.stdout else "unknown"


def command_line(argv):
    return " ".join(shlex.quote(a) for a in argv)


# ---------------------------------------------------------------------------
# Virtual CPUs pinned to host cores (multi-CPU plain-TCG figures)


def vcpu_pins(smp, host_cores):
    """Which host core each virtual CPU's thread is pinned to: CPU i ≥ 1 to
    core (i − 1) mod host_cores; CPU 0 (the client's, mostly waiting) is left
    to the host. Empty with one CPU or one host core."""
    if smp < 2 or host_cores < 2:
        return {}
    return {i: (i - 1) % host_cores for i in range(1, smp)}


class Pinning:
    """Starts QEMU stopped (-S) with a QMP socket, pins the virtual CPUs'
    threads to host cores, then lets the guest run. Without it the host's
    scheduler may put two working virtual CPUs on one core when a halted one
    wakes (it wakes next to the thread that woke it), and a 3 ms request then
    measures that placement, not the guest: each virtual CPU on a core of its
    own is what a real machine has."""

    def __init__(self, pins):
        self.pins = pins
        self.dir = tempfile.mkdtemp(prefix="tessera-qmp-")
        self.sock = os.path.join(self.dir, "qmp")
        self.problem = None

    def args(self):
        return ["-S", "-qmp", f"unix:{self.sock},server=on,wait=off"] if self.pins else []

    def prepare(self):
        """Before each boot: no socket left from the one before."""
        try:
            os.unlink(self.sock)
        except FileNotFoundError:
            pass

    def _connect(self, proc):
        deadline = time.monotonic() + 10
        while True:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(self.sock)
                return s
            except OSError:
                s.close()
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.02)

    def start(self, proc):
        """Called once QEMU runs: pin, then continue. On any failure the
        guest is let go unpinned and `problem` says why."""
        if not self.pins:
            return
        try:
            with self._connect(proc) as s:
                s.settimeout(10)
                f = s.makefile("rw")

                def execute(cmd):
                    f.write(json.dumps({"execute": cmd}) + "\n")
                    f.flush()
                    while True:
                        reply = json.loads(f.readline())
                        if "return" in reply or "error" in reply:
                            return reply.get("return")

                f.readline()  # greeting
                execute("qmp_capabilities")
                try:
                    threads = {c["cpu-index"]: c["thread-id"] for c in execute("query-cpus-fast") or []}
                    for cpu, core in self.pins.items():
                        os.sched_setaffinity(threads[cpu], {core})
                except (OSError, KeyError) as e:
                    self.problem = f"virtual CPUs not pinned: {e}"
                execute("cont")
        except (OSError, ValueError) as e:
            self.problem = f"virtual CPUs not pinned: {e}"
            # Stopped at -S without QMP: nothing will let it run.
            proc.kill()

    def close(self):
        self.prepare()
        os.rmdir(self.dir)
