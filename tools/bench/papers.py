"""What each experiment is, who fills in Tessera's side, and what the papers say.

Kept as data so that the summary is generated, never typed by hand.  The
papers' numbers are quoted as the papers state them (their hardware, their
units); they are context for our figures, not figures to match.
"""

# Experiments in the order the summary shows them.  `issue` names the issue
# whose work makes Tessera's side measurable; `linux` is False for
# Tessera-only experiments.
EXPERIMENTS = {
    "syscall": {
        "title": "Null system call and clock read",
        "what": "getpid through syscall() (always enters the kernel); clock_gettime(CLOCK_MONOTONIC) "
                "(the vDSO on Linux).",
        "issue": "issue 3 (user processes, native system calls)",
        "linux": True,
    },
    "spawn": {
        "title": "Process creation and deletion",
        "what": "Start a tiny static program and wait for it: fork+execve+wait, vfork+execve+wait, "
                "posix_spawn+wait. Page faults per spawn beside the times. Tessera runs it with the resource "
                "pool settings it boots with (`user/etc/pool.conf`); `pool` measures each setting on its own.",
        "issue": "issue 3 (spawn, eager and demand loading); with the resource pool: `pool` (issue 4)",
        "linux": True,
    },
    "pageaccess": {
        "title": "Page access program (seed 000, fig. 8 and table 5)",
        "what": "fork+execve+wait of a static program whose BSS has 0, 200, 400 or 800 pages, each "
                "written once; time per spawn and page faults per spawn (getrusage of the children; "
                "the child's own /proc/self/stat count; the parent's copy-on-write faults). Tessera runs it "
                "with the pool settings it boots with (`user/etc/pool.conf`).",
        "issue": "issue 3 (eager vs demand loading); with the resource pool: `pool` (issue 4)",
        "linux": True,
    },
    "pool": {
        "title": "Resource pool: process creation under the pool settings (seed 000 figs. 5, 6, 8, 9)",
        "what": "Tessera against itself: spawn + exit + wait of one process (eager loading: the whole "
                "program is loaded at creation, as in Tender), in ns per process, under the paper's "
                "configurations of the resource pool (§3.1): **basic** (pool off), **reuse** (the pool "
                "starts empty; an ended process's resources are kept for the next one), **reuse+add** "
                "(before measuring, the add function pre-creates fully attached virtual spaces, table 1 "
                "kind 6, of the program: 1 for serial, 10 for concurrent) and **reuse+add+reduce** "
                "(the same with reduce on, T = interval = 50 ms); **demand** is demand paging without "
                "the pool, for comparison. *Serial*: one process at a time; *concurrent 10*: 10 "
                "spawned, then 10 waited for. Programs: `tiny` (a tiny static program; our stand-in "
                "for the paper's perl CGI of figs. 5 and 6) and the page access program with 0, 200, "
                "400 or 800 BSS pages (figs. 8 and 9). Every setting is measured in the same boot; the "
                "ratio in brackets is against **basic** of the same run, program and mode. With `make bench` "
                "this runs in the one boot that runs all of Tessera's experiments (`bench=all`), after "
                "`spawn` and `pageaccess`. The Linux "
                "column is fork+execve+wait of the same program from `spawn` and `pageaccess` (Linux "
                "has no pool), for orientation only.",
        "issue": "issue 4 (resource pool: reuse, add, reduce)",
        "linux": False,
    },
    "poolmem": {
        "title": "Resource pool: memory held over time, with and without reduce (seed 000 figs. 7 and 10)",
        "what": "Tessera against itself: bytes held by the pool, sampled by the benchmark program, "
                "during and after a burst of page access processes (800 BSS pages, eager loading): "
                "rounds of 10 processes spawned at once and then waited for, the pool sampled after "
                "each round, then every ≥ 20 ms while the system is idle. Two settings: **reuse** only "
                "(the pool starts empty and keeps what ended processes leave) and "
                "**reuse+add+reduce** (10 fully attached spaces of the program pre-created by add; "
                "reduce deletes what stays unused for T = 50 ms, checked every 50 ms). Time is ms "
                "since the start of the burst.",
        "issue": "issue 4 (resource pool: reuse, add, reduce)",
        "linux": False,
    },
    "pagefault": {
        "title": "First-touch anonymous page fault",
        "what": "Map fresh anonymous memory (huge pages refused), write one byte per 4 KiB page; "
                "time per page.",
        "issue": "issue 3 (demand paging)",
        "linux": True,
    },
    "ipc": {
        "title": "Round trip between two processes, 1 byte",
        "what": "parent → child → parent through two pipes, a Unix stream socket pair, or a shared "
                "page with futex wait/wake. One CPU: every round trip is two context switches.",
        "issue": "issue 6 (rendezvous call/acc/endr, callsync); issue 5 (container IPC)",
        "linux": True,
    },
    "transfer": {
        "title": "Moving 4 KiB … 2 MiB between two processes",
        "what": "One message plus a 1-byte acknowledgement: pipe (write/read), vmsplice on the send "
                "side, or memcpy through shared memory with futex wake-ups.",
        "issue": "issue 5 (container IPC: COPY/SHARE/MOVE/SWAP); issue 6 (ICA remapping)",
        "linux": True,
    },
    "kernel": {
        "title": "Tessera kernel-internal operations",
        "what": "Operations inside the kernel (frame allocation, page mapping, IPI round trip, TLB "
                "shootdown, clock read), measured by the kernel's bench mode. No Linux counterpart.",
        "issue": "issue 2 (foundation)",
        "linux": False,
    },
}

# Linux figures the issues' goals were set against: Linux 6.1 (Debian),
# identical QEMU configuration under icount, measured before this harness
# existed.  Shown so that a drift of our own Linux measurement is visible.
LINUX_EARLIER = {
    ("syscall", "getpid", ""): 343,
    ("syscall", "clock_gettime", ""): 78,
    ("spawn", "fork_exec_wait", ""): 335000,
    ("spawn", "vfork_exec_wait", ""): 250000,
    ("spawn", "posix_spawn_wait", ""): 262000,
    ("pageaccess", "fork_exec_wait", "200"): 1156000,
    ("pageaccess", "fork_exec_wait", "400"): 1976000,
    ("pageaccess", "fork_exec_wait", "800"): 4043000,
    ("pagefault", "anon_first_touch", ""): 3293,
    ("ipc", "pipe", "1"): 12743,
    ("ipc", "unix", "1"): 17077,
    ("ipc", "futex", "1"): 12300,
    ("transfer", "pipe", "4096"): 13741,
    ("transfer", "pipe", "65536"): 52185,
    ("transfer", "pipe", "1048576"): 784101,
    ("transfer", "vmsplice", "4096"): 13615,
    ("transfer", "vmsplice", "65536"): 34185,
    ("transfer", "vmsplice", "1048576"): 421183,
    ("transfer", "shm_futex", "4096"): 13357,
    ("transfer", "shm_futex", "65536"): 28791,
    ("transfer", "shm_futex", "1048576"): 274551,
}

# Goals the issues set for Tessera's figures (icount ns), by the Linux row
# they are compared with.
GOALS = {
    ("syscall", "getpid", ""): "≤ 150 (issue 3)",
    ("pagefault", "anon_first_touch", ""): "≤ 1,500 in demand mode (issue 3)",
    ("spawn", "vfork_exec_wait", ""): "no pool: ≤ Linux vfork+exec (issue 3); with pool: ≤ 60,000 "
                                      "(issue 4, see `pool`)",
    ("pageaccess", "fork_exec_wait", "800"): "eager: ≤ Linux (issue 3); with pool: ≤ 1,000,000 (issue 4, "
                                             "see `pool`)",
    ("ipc", "pipe", "1"): "call+reply same CPU ≤ 1,000 (issue 6)",
    ("ipc", "futex", "1"): "call+reply same CPU ≤ 1,000 (issue 6)",
}

# The paper's own figure for a specific row, where the paper has one.
# Seed 000 measured 100 requests of a CGI page on Apache (Core i3-2100,
# Linux 2.6.32 i686, 1 core, no concurrent requests); per request = /100.
PAPER_ROW = {
    ("pageaccess", "fork_exec_wait", "0"):
        "fig. 8: Linux 3.70 ms, Tender (reuse+add) 3.95 ms per CGI request",
    ("pageaccess", "fork_exec_wait", "200"):
        "fig. 8: Linux 4.19 ms, Tender 4.05 ms per request",
    ("pageaccess", "fork_exec_wait", "400"):
        "fig. 8: Linux 4.73 ms, Tender 4.13 ms per request",
    ("pageaccess", "fork_exec_wait", "800"):
        "fig. 8: Linux 6.06 ms, Tender 4.31 ms per request (28.9 % less)",
    ("pageaccess", "minflt", "0"):
        "table 5: 490.5 faults per request (whole request, Linux)",
    ("pageaccess", "minflt", "200"):
        "table 5: 699.1 per request (+208.6 over 0 pages)",
    ("pageaccess", "minflt", "400"):
        "table 5: 899.5 per request (+408.9)",
    ("pageaccess", "minflt", "800"):
        "table 5: 1,296.9 per request (+806.3)",
}

# What the papers claim, per experiment (quoted with their conditions).
PAPER_NOTES = {
    "syscall": [
        "Seed 003 (process-network OS): one UNIX system call became 26 communications on average "
        "(29,065 for 1,112 system calls) where UNIX made 1.2 process switches per system call; one "
        "communication took 449 µs on average on its hardware, 41 % of the synchronisation in state "
        "save/restore (43 µs each) and 59 % in scheduling.",
    ],
    "spawn": [
        "Seed 000 (Tender), fig. 5, 100 CGI (perl) requests without concurrency: Tender basic "
        "545.88 ms, reuse 451.72 ms (−17.2 %), reuse+add 450.28 ms (−17.5 %); Linux 490.55 ms, so "
        "Tender with the pool is 8.2 % faster than Linux (≈ 0.40 ms per request). With 10 concurrent "
        "requests (fig. 6): up to 18.6 % faster than basic, 13.8 % faster than Linux.",
        "Seed 000, table 4: the perl CGI run caused 72,594 page faults on Linux for 100 requests "
        "(static page only: 466).",
    ],
    "pageaccess": [
        "Seed 000, fig. 8 (no concurrency, 100 requests): Tender (reuse+add) is slower than Linux "
        "with 0 BSS pages (394.66 vs 369.89 ms) and faster from 200 pages on: 404.73 vs 418.86 ms "
        "(200), 412.95 vs 473.48 ms (400), 431.0 vs 606.01 ms (800, −28.9 %, ≈ 1.75 ms per request).",
        "Seed 000, table 5: Linux page faults for the 100 requests grow with the BSS, 49,054 / "
        "69,911 / 89,947 / 129,685 for 0 / 200 / 400 / 800 pages: about one fault per BSS page per "
        "request. Tender loads everything at creation and takes no page fault while running.",
        "Reading of the paper's figures: Linux's response grows by ≈ 2.36 ms per request from 0 to "
        "800 pages (≈ 2.95 µs per page on a 3.1 GHz Core i3), Tender's (reuse+add) by ≈ 0.36 ms.",
    ],
    "pagefault": [
        "Seed 000, section 3.1: Linux allocates real memory at the first access of each page (a page "
        "fault each time); Tender allocates everything at process creation, so a running Tender "
        "process takes no page fault unless memory was paged out.",
    ],
    "ipc": [
        "Seed 003: one rendezvous communication (call/acc/endr) took 449 µs on average; state "
        "save and restore 43 µs each.",
        "Seed 002 (AnT), fig. 7: on one core, ncallsync through the distribution server costs about "
        "10 µs more than without it (n = 9; Core i7-2600).",
        "Seed 004 (Tender container IPC): exchange completes a transfer in under 10 µs whatever the "
        "destination (Pentium 4, 2.4 GHz); share and move exceed 15 µs on receive.",
    ],
    "transfer": [
        "Seed 004, fig. 5 (send through a container box, 4 KiB): swap ≈ 1.5× share, ≈ 1.2× move, "
        "≈ 1/7 of copy; share, move and swap stay almost constant as the container grows, copy and "
        "creation grow with size.",
        "Seed 004, fig. 6 (receive, 4 KiB): swap ≈ 3/5 of share and of move; fig. 7 (direct, no box): "
        "exchange ≈ 4/7 of push(share) and ≈ 1/2 of push(move), constant with size.",
    ],
    "pool": [
        "Seed 000, fig. 5 (perl CGI, 100 requests, no concurrency): basic 545.88 ms, reuse 451.72 ms "
        "(−17.2 %), reuse+add 450.28 ms (−17.5 %: `sh` and `perl` find pooled resources from the first "
        "request on); Linux 490.55 ms, so Tender with the pool is 8.2 % faster than Linux.",
        "Seed 000, fig. 6 (10 concurrent): basic 428.63 → reuse+add 348.93 ms (−18.6 %); "
        "reuse+add+reduce 352.62 ms (+3.69 ms for reduce); Linux 404.8 ms (13.8 % slower than "
        "reuse+add).",
        "Seed 000, figs. 8 and 9 (page access program): with the pool Tender beats Linux from 200 BSS "
        "pages on, by up to 28.9 % at 800 pages (431.0 vs 606.01 ms); with 0 pages Linux is faster "
        "without concurrency (369.89 vs 394.66 ms) and about equal with 10 concurrent requests "
        "(295.36 vs 292.95 ms).",
        "The paper's times are whole requests (Apache, `sh`, the CGI program, the network), so only "
        "part of each is process creation and deletion, the part the pool shortens.",
    ],
    "poolmem": [
        "Seed 000, fig. 10 (page access program, 10 concurrent): reduce cuts the pool's memory after "
        "the requests by up to 6.97 MB (11.25 → 4.28 MB), for 3.56 ms more total response time "
        "(321.44 vs 317.88 ms).",
        "Seed 000, fig. 7 (perl CGI, 10 concurrent): 8.72 MB at the end of the requests, 4.04 MB with "
        "reduce (−4.68 MB). While requests arrive, reduce makes no visible difference: the pooled "
        "resources are in use and none qualifies for deletion.",
        "Reduce rules (§2.4.2): always-usable resources (work-area kernel space, virtual space) are "
        "never deleted; regions of ≤ 64 KB are kept; larger regions and program-dependent resources "
        "(one kept per program) go after T unused; deleting a composite returns its constituents to "
        "the pool, where their own rules apply.",
    ],
    "kernel": [],
}

# The resource pool experiments (`pool`, `poolmem`): Tessera against itself.
# Settings as the kernel names them (metric `<setting>_<mode>` of `pool`,
# metric of `poolmem`), in the paper's order, with the paper's names.
POOL_SETTINGS = {
    "basic": "basic (no pool)",
    "reuse": "reuse",
    "add": "reuse+add",
    "reduce": "reuse+add+reduce",
    "demand": "demand paging (no pool)",
}
POOL_BASELINE = "basic"
POOL_WITH_POOL = ("reuse", "add", "reduce")  # the settings "with the pool" goals speak of
POOL_MODES = {"serial": "serial", "concurrent10": "concurrent 10"}
# Programs in the order shown, with the Linux row beside them (orientation
# only: Linux has no pool) and a label.
POOL_PROGRAMS = {
    "tiny": ("tiny (≈ perl CGI)", ("spawn", "fork_exec_wait", "")),
    "pa0": ("page access, 0 pages", ("pageaccess", "fork_exec_wait", "0")),
    "pa200": ("page access, 200 pages", ("pageaccess", "fork_exec_wait", "200")),
    "pa400": ("page access, 400 pages", ("pageaccess", "fork_exec_wait", "400")),
    "pa800": ("page access, 800 pages", ("pageaccess", "fork_exec_wait", "800")),
}
# Issue 4's goals (icount ns per process, with the pool), by program.
POOL_GOALS = {
    "tiny": (60_000, "≤ 60,000 with the pool (issue 4; Linux vfork+exec 250,000: a 4× lead)"),
    "pa800": (1_000_000, "≤ 1,000,000 with the pool (issue 4; Linux fork+exec 4,043,000)"),
}
# The paper's figures (100 requests through Apache + CGI, total response
# time, Core i3-2100, 1 core), by (program, mode).  Ratios are against basic.
POOL_PAPER = {
    ("tiny", "serial"): "fig. 5 (perl CGI): basic 545.88, reuse 451.72 (0.83), reuse+add 450.28 ms (0.82); "
                        "Linux 490.55",
    ("tiny", "concurrent10"): "fig. 6: basic 428.63, reuse+add 348.93 (0.81), reuse+add+reduce 352.62 ms "
                              "(0.82); Linux 404.8",
    ("pa0", "serial"): "fig. 8: reuse+add 394.66 ms, Linux 369.89",
    ("pa200", "serial"): "fig. 8: reuse+add 404.73 ms, Linux 418.86",
    ("pa400", "serial"): "fig. 8: reuse+add 412.95 ms, Linux 473.48",
    ("pa800", "serial"): "fig. 8: reuse+add 431.0 ms, Linux 606.01 (−28.9 %)",
    ("pa0", "concurrent10"): "fig. 9: reuse+add 292.95 ms, Linux 295.36",
    ("pa200", "concurrent10"): "fig. 9: Tender shorter than Linux with or without the pool",
    ("pa400", "concurrent10"): "fig. 9: Tender shorter than Linux with or without the pool",
    ("pa800", "concurrent10"): "fig. 9: Tender shorter than Linux with or without the pool",
}
# The paper's pool memory after the requests (MB as printed), per setting.
POOLMEM_PAPER = {
    "reuse": "fig. 10 (page access): 11.25 MB after the requests; fig. 7 (perl CGI): 8.72 MB",
    "reduce": "fig. 10: 4.28 MB (−6.97 MB); fig. 7: 4.04 MB (−4.68 MB)",
}
# The benchmark program samples the pool at least this far apart once the
# burst is over (sysbench's `poolmem`: 15 sleeps of 20 ms); samples closer
# together belong to the burst.
POOLMEM_IDLE_GAP_MS = 20
POOLMEM_IDLE_SAMPLES = 15

# Later work that adds experiments of its own (beyond Tessera's side of the
# rows above): (issue, what, the experiments that measure it once done).
LATER = [
    ("issue 4", "seed 000 settings: basic / reuse / reuse+add / reuse+add+reduce, with 10 concurrent "
                "spawners; pool memory over time (figs. 7 and 10).", ("pool", "poolmem")),
    ("issue 5", "seed 004 figs. 5–7: send/receive time per mode (COPY, SHARE, MOVE, SWAP, SWAP with "
                "create/delete) 4 KiB–2 MiB, push vs exchange.", ()),
    ("issue 6", "round trip 0/64 bytes same and cross CPU, ICA remap for 1/16/256 pages, multi-stage "
                "requests with and without direct return.", ()),
    ("issue 7", "seed 002 figs. 7–9 and 12: callsync × n vs ncallsync(n), distribution server, "
                "1 and 3 CPUs; multi-core figures in plain TCG (icount shows no parallel speed-up).", ()),
    ("not yet filed", "OFF2F (seed 001): single programs and a build-like workload, page faults by "
                      "category; the web server + CGI comparison of seed 000 figs. 5, 6, 8, 9.", ()),
]

# Tessera figures whose names differ from the Linux row they answer.  A
# Tessera program prints its own variants (eager/demand loading, pool
# settings) as metric suffixes; the regression view puts each variant beside
# the Linux figure of the same operation.  Entries: (experiment, regex on
# Tessera's metric, Linux metric, Linux param or None for "the same param").
# The named group `v`, if any, is the variant shown in tables and legends.
COUNTERPARTS = [
    ("syscall", r"clock", "clock_gettime", ""),
    ("spawn", r"spawn_exit_wait_(?P<v>\w+)", "vfork_exec_wait", ""),
    ("pageaccess", r"spawn_exit_wait_(?P<v>\w+)", "fork_exec_wait", None),
    ("pageaccess", r"faults_all_(?P<v>\w+)", "minflt", None),
    ("pagefault", r"first_touch_anon", "anon_first_touch", ""),
]


def linux_counterpart(exp, metric, param):
    """(Linux (experiment, metric, param), variant) for a Tessera figure, or None."""
    import re
    for e, pattern, lmetric, lparam in COUNTERPARTS:
        if e != exp:
            continue
        m = re.fullmatch(pattern, metric)
        if m:
            variant = m.groupdict().get("v") or ""
            return (exp, lmetric, param if lparam is None else lparam), variant
    return (exp, metric, param), ""
