"""Paths, host tools and process handling shared by the benchmark harness.

Everything the harness builds or downloads lives under build/bench/ (ignored
by git); only the summary, CSVs and plots go to docs/results/.
"""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "bench"
PROGS_SRC = ROOT / "bench" / "linux"
PROGS_OUT = BUILD / "progs"
LINUX_DIR = BUILD / "linux"
RUNS_DIR = BUILD / "runs"
RESULTS = ROOT / "docs" / "results"
TESSERA_ELF = ROOT / "build" / "tessera.elf"
# The initial archive with Tessera's programs (sysbench and the programs it spawns).
TESSERA_INITRD = ROOT / "build" / "initrd.cpio"


def tessera_boot(append):
    """QEMU arguments that boot Tessera with its initial archive."""
    return ["-kernel", str(TESSERA_ELF), "-initrd", str(TESSERA_INITRD), "-append", append]

# Debian packages the harness needs on the host, by the command that shows
# they are there.  The Linux kernel and busybox are *not* installed: they are
# downloaded and unpacked into build/ (see linuxvm.py).
HOST_TOOLS = {
    "musl-gcc": "musl-tools",
    "qemu-system-x86_64": "qemu-system-x86",
    "dpkg-deb": "dpkg",
    "apt-get": "apt",
    "ab": "apache2-utils",
}


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def rel(path):
    """A path as the project writes it: relative to the repository root.

    Results and configuration records must not carry this machine's paths.
    """
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def shown_argv(argv):
    """A command line as the project writes it: this machine's paths inside
    arguments (-kernel build/..., file=build/...) relative to the root."""
    return [a.replace(str(ROOT) + "/", "") for a in argv]


def ensure_host_tools(names):
    """Install missing Debian packages for the given commands (root only).

    A fresh machine gets what it needs from the project's own scripts; where
    we cannot install, say exactly which package is missing.
    """
    missing = sorted({HOST_TOOLS[n] for n in names if shutil.which(n) is None})
    if not missing:
        return
    if os.geteuid() != 0:
        raise SystemExit(f"missing host packages: {' '.join(missing)} (apt-get install them)")
    log(f"installing {' '.join(missing)} with apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    r = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *missing], env=env)
    if r.returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, check=True)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *missing],
                       env=env, check=True)


def git_revision():
    """HEAD plus a '-dirty' mark, read-only git queries only."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---------------------------------------------------------------------------
# Guarded child processes.  Every QEMU runs in its own process group; a
# timeout, an exception, Ctrl-C or SIGTERM of the harness kills the group,
# so no stray QEMU survives the harness.

_live = set()
_live_lock = threading.Lock()


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def kill_all_children():
    with _live_lock:
        procs = list(_live)
    for p in procs:
        _kill_group(p)


def _on_signal(signum, _frame):
    kill_all_children()
    raise SystemExit(128 + signum)


def install_signal_handlers():
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)


class RunResult:
    def __init__(self, status, lines, wall_s, timed_out):
        self.status = status        # exit status, or None on timeout
        self.lines = lines          # output lines (serial console), decoded
        self.wall_s = wall_s        # host wall time of the run
        self.timed_out = timed_out


def _child_setup():
    """In the child before exec: own process group, and die with the harness.

    The group lets a timeout kill QEMU and anything it started; the parent-
    death signal covers the one case no handler sees: the harness itself
    killed with SIGKILL (e.g. by an outer timeout).
    """
    os.setsid()
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def run_guarded(argv, timeout_s, log_path=None, echo=False, cwd=None, started=None, idle_s=None):
    """Run argv with a hard timeout; collect its output lines. `started`,
    if given, is called with the process once it runs.  `idle_s`: also kill
    it when it prints nothing for that long (a hung guest).

    stdin is /dev/null so QEMU's `-serial stdio` never touches the terminal.
    """
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, preexec_fn=_child_setup, cwd=cwd)
    with _live_lock:
        _live.add(proc)
    lines = []
    last_output = [time.monotonic()]
    logf = open(log_path, "w", encoding="utf-8") if log_path else None

    def pump():
        for raw in proc.stdout:
            last_output[0] = time.monotonic()
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            lines.append(line)
            if logf:
                logf.write(line + "\n")
            if echo:
                print(line, flush=True)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    if started:
        started(proc)
    timed_out = False
    try:
        if idle_s is None:
            proc.wait(timeout=timeout_s)
        else:
            while proc.poll() is None:
                now = time.monotonic()
                if now - t0 > timeout_s or now - last_output[0] > idle_s:
                    raise subprocess.TimeoutExpired(argv, timeout_s)
                time.sleep(1)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        # After a normal exit the pid is reaped and may be reused: killing
        # its group then could hit an unrelated process, so only the
        # timeout and exception paths above kill.
        reader.join(timeout=5)
        with _live_lock:
            _live.discard(proc)
        if logf:
            logf.close()
    return RunResult(None if timed_out else proc.returncode, lines,
                     time.monotonic() - t0, timed_out)


def build_tessera():
    """Build the kernel; return (ok, detail)."""
    if os.environ.get("BENCH_NO_BUILD"):
        return TESSERA_ELF.exists(), "BENCH_NO_BUILD set"
    log("cargo xtask build")
    try:
        r = subprocess.run(["cargo", "xtask", "build"], cwd=ROOT, capture_output=True, text=True,
                           timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"cargo xtask build: {e}"
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        return False, f"cargo xtask build failed: {last}"
    if not TESSERA_ELF.exists():
        return False, f"cargo xtask build produced no {rel(TESSERA_ELF)}"
    return True, "built"
