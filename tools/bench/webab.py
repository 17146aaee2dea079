"""The web experiment's realism mode (issue 19, way (b)): ApacheBench on the
host through QEMU's forwarded port.

Each system boots once in plain TCG with a virtio-net NIC on QEMU's user
network (`restrict=on`, the host's 127.0.0.1:<free port> forwarded to the
guest's port 80: host loopback only) and its system disk; `web.sh DOCROOT
serve` (bench/linux/web.sh, the same script and binaries as the `web`
experiment) makes the document root, starts busybox httpd at port 80 and
prints WEB-SERVING.  The host then runs `ab -n N -c C` for each page (the
static page, the shell CGI, the page access C CGI with 0 and 800 pages) with
1 and 10 clients, RUNS times in a row, and keeps ApacheBench's requests per
second; the figure is their median.  A run with a failed request or a
non-2xx answer is a problem of the record, not a figure.

Tessera boots `servers.webab.conf` (storage, TCP/IP, the virtio-net driver,
the personality with eager loading; the pool as at boot) and runs web.sh on
the personality; Linux boots the reference VM with `disk web_serve` (its
init brings eth0 up at 10.0.2.15/24 and runs web.sh).
"""

import re
import socket
import subprocess
import threading
import time

from common import _child_setup, _kill_group, _live, _live_lock, log, rel, shown_argv

PAGES = [("static", "/index.html"), ("shcgi", "/cgi-bin/sh.cgi"),
         ("pagecgi0", "/cgi-bin/pa0"), ("pagecgi800", "/cgi-bin/pa800")]
CLIENTS = [1, 10]
REQUESTS = 100
READY = "WEB-SERVING"
BOOT_TIMEOUT = 900
AB_TIMEOUT = 600


def nic_args(port):
    """The NIC both systems get: xtask's `make run NET=1` machine (machine.rs)."""
    return ["-netdev", f"user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
            "-device", "virtio-net-pci,netdev=net0,disable-legacy=on"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_ab(text):
    """(requests per second, failed, non-2xx) from ApacheBench's report."""
    rps = re.search(r"^Requests per second:\s+([\d.]+)", text, re.M)
    failed = re.search(r"^Failed requests:\s+(\d+)", text, re.M)
    non2xx = re.search(r"^Non-2xx responses:\s+(\d+)", text, re.M)
    return (float(rps.group(1)) if rps else None, int(failed.group(1)) if failed else None,
            int(non2xx.group(1)) if non2xx else 0)


def ab(port, path, clients, n=REQUESTS):
    """One ApacheBench run; (requests per second or None, what went wrong)."""
    argv = ["ab", "-q", "-n", str(n), "-c", str(clients), "-s", "60", f"http://127.0.0.1:{port}{path}"]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=AB_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, f"`{' '.join(argv)}` took over {AB_TIMEOUT} s"
    rps, failed, non2xx = parse_ab(r.stdout)
    if r.returncode != 0 or rps is None:
        why = (r.stderr.strip().splitlines() or ["no report"])[-1]
        return None, f"`{' '.join(argv)}`: exit {r.returncode}: {why}"
    if failed or non2xx:
        return None, f"`{' '.join(argv)}`: {failed} failed, {non2xx} non-2xx"
    return rps, ""


def measure(name, argv, port, runs, log_path):
    """Boot `argv`, wait for the server, run ApacheBench; (figures per run, record)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, preexec_fn=_child_setup)
    with _live_lock:
        _live.add(proc)
    ready = threading.Event()
    logf = open(log_path, "w", encoding="utf-8")

    def pump():
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            logf.write(line + "\n")
            logf.flush()
            if READY in line:
                ready.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    problems, figure_runs = [], [[] for _ in range(runs)]
    try:
        while not ready.wait(1):
            if proc.poll() is not None or time.monotonic() - t0 > BOOT_TIMEOUT:
                problems.append(f"the server never printed {READY} (see {rel(log_path)})")
                break
        if ready.is_set():
            log(f"{name}: serving after {time.monotonic() - t0:.0f} s")
            for page, path in PAGES:
                for c in CLIENTS:
                    got = []
                    for i in range(runs):
                        rps, why = ab(port, path, c)
                        if why:
                            problems.append(f"{page} c{c} run {i + 1}: {why}")
                        else:
                            figure_runs[i].append(("webab", f"{page}_c{c}", "", rps, "req/s"))
                            got.append(rps)
                    log(f"{name}: {page} c{c}: {', '.join(f'{v:.1f}' for v in got)} req/s")
    finally:
        _kill_group(proc)
        reader.join(timeout=5)
        with _live_lock:
            _live.discard(proc)
        logf.close()
    record = {
        "qemu_command": " ".join(shown_argv(argv)),
        "ab": f"ab -q -n {REQUESTS} -c C -s 60 http://127.0.0.1:PORT/PATH, {runs} runs each, median",
        "host_wall_s": [round(time.monotonic() - t0, 1)],
        "problems": problems,
    }
    return figure_runs, record
