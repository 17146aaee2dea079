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
                "(the vDSO on Linux); getppid, which Tessera's kernel answers from the parent the Linux "
                "personality's shared server keeps in the process's record, and fstat of an open "
                "file, which the kernel answers from the attributes the file server keeps in the "
                "file's kernel cache; "
                "fcntl(F_GETFD), which the supervisor serves alone (one rendezvous); a signal sent to "
                "oneself and caught by a handler that returns (lmbench's lat_sig catch).",
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
        "title": "Resource pool: process creation under the pool settings (a component of seed 000 figs. 5, 6, 8, 9)",
        "what": "Tessera against itself: spawn + exit + wait of one process (eager loading: the whole "
                "program is loaded at creation, as in Tender), in ns per process, under the paper's "
                "configurations of the resource pool (§3.1): **basic** (pool off), **reuse** (the pool "
                "starts empty; an ended process's resources are kept for the next one), **reuse+add** "
                "(before measuring, the add function pre-creates fully attached virtual spaces, table 1 "
                "kind 6, of the program: 1 for serial, 10 for concurrent) and **reuse+add+reduce** "
                "(the same with reduce on, T = interval = 50 ms); **demand** is demand paging without "
                "the pool, for comparison. *Serial*: one process at a time; *concurrent 10*: 10 "
                "spawned, then 10 waited for. Programs: `tiny` (a tiny static program) and the page "
                "access program with 0, 200, 400 or 800 BSS pages. These are process creation alone, the "
                "part of a CGI request the pool shortens; the paper's experiment itself, whole requests "
                "to a web server with CGI programs, is `web` (and its memory `webmem`). Every setting is measured in the same boot; the "
                "ratio in brackets is against **basic** of the same run, program and mode. With `make bench` "
                "this runs in the one boot that runs all of Tessera's experiments (`bench=all`), after "
                "`spawn` and `pageaccess`. The Linux "
                "column is fork+execve+wait of the same program from `spawn` and `pageaccess` (Linux "
                "has no pool), for orientation only.",
        "issue": "issue 4 (resource pool: reuse, add, reduce)",
        "linux": False,
    },
    "poolmem": {
        "title": "Resource pool: memory held over time, with and without reduce (process bursts; "
                 "with web requests: `webmem`)",
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
        "title": "Round trip between two processes: Linux 1 byte, Tessera's rendezvous with a server",
        "what": "Linux: parent → child → parent through two pipes, a Unix stream socket pair, or a shared "
                "page with futex wait/wake, 1 byte each way. Tessera (user program `rvbench`, servers "
                "`servers/echo` and `servers/relay`): the client calls the `echo` server, which accepts "
                "the call and ends the rendezvous with the reply (call → acc → endr; the server ends one call "
                "and accepts the next in one system call, `endr_acc`), 0 or 64 bytes each "
                "way, the server on the client's CPU or on the other one; callsync (one blocking call) "
                "against a non-blocking request and a later fetch, and both through AnT's request and result "
                "rings (control blocks in rings mapped in the client, results taken without a system call); "
                "and multi-stage requests through a chain "
                "of 2 or 3 servers (relays, then `echo`), with direct return (each relay forwards the "
                "call, `echo` replies straight to the client) and without (each relay makes a nested call "
                "and relays the reply back). Every Tessera figure is the mean of 2,000 calls (20 in the short "
                "run), timed in the client by the TSC. With client and server on one CPU, every round trip is "
                "two context switches, each a direct switch from one partner to the other (no pass through "
                "the run queue).",
        "issue": "issue 6 (rendezvous call/acc/endr, callsync, request + fetch, forward)",
        # Shown beside the state of this experiment in "What each issue fills in".
        "partial": "issue 6's mechanisms all exist (rendezvous with the direct switch, name service, "
                   "references, forward with direct return, requests + fetch, ICA remapping, AnT's request "
                   "and result rings of control blocks); the round-trip goal is met with no payload (not with "
                   "64 bytes); the ICA-remap goal is met by the mean of the moves after the first (which "
                   "also builds the target's page tables)",
        "linux": True,
        "plots": [
            ("ipc.png", "Round trip: Tessera's rendezvous against Linux"),
            ("ipc_stages.png", "callsync against request + fetch; multi-stage requests with and without "
                               "direct return"),
        ],
    },
    "transfer": {
        "title": "Moving 4 KiB … 2 MiB between two processes",
        "what": "One message plus a 1-byte acknowledgement between two processes. Linux: pipe (write/read), "
                "vmsplice on the send side, or memcpy through shared memory with futex wake-ups. Tessera (user "
                "program `cttransfer`, seed 004's container IPC): the sender hands a container of the size to a "
                "child through a container box in each mode (**box copy / share / move / swap**) or directly "
                "(**push copy / share / move**, **exchange**: the pages of the sender's container and of the "
                "child's change places), then calls the child (call → acc → endr, the doorbell); the child "
                "takes the container (a receive from the box; nothing to do after a push or an exchange), "
                "checks the message's number in its first and last word and replies with one byte, the "
                "acknowledgement. What a steady stream of messages costs is in each figure: the child deletes "
                "a container it was given (copy, share, move, push), and with move the sender makes a new "
                "container for every message (its old one left with the message). Per message: the mean of "
                "20 (2 in the short run) after one not timed, timed in the sender by the TSC; the child on "
                "the sender's CPU, and in a second boot with two CPUs on the other one.",
        "issue": "issue 5's container IPC as a two-process message + ack (issue 21)",
        "linux": True,
        "plots": [("transfer.png", "Moving 4 KiB … 2 MiB between two processes (one CPU)")],
    },
    "web": {
        "title": "Web server: busybox httpd, static page and CGI (seed 000 figs. 5, 6, 8, 9, tables 4, 5)",
        "what": "`bench/linux/web.sh`, the same script and binaries on both systems: busybox `httpd` "
                "serves a document root on the ext2 disk (a 1 KiB page, a busybox `sh` CGI script, the "
                "page access program with 0, 200, 400, 800 BSS pages as a C CGI); `bench/linux/webload` "
                "in the same machine makes 100 HTTP/1.0 requests over the loopback with 1 (`_c1`) and 10 "
                "(`_c10`) clients at once and checks every answer. Metrics: `<page>_c<C>` the 100 "
                "requests' total time (the paper's 合計応答時間), `_request` the mean time of one request, "
                "`_faults` page faults per request of the server and its reaped children (fields 10 + 11 "
                "of httpd's /proc/PID/stat), `_pgfault` Linux's /proc/vmstat pgfault per request less "
                "the load generator's own. Param: BSS pages. Tessera runs it in a boot of its own with "
                "its system disk (`servers.web.conf`: storage, TCP/IP, the personality with eager "
                "loading), once per pool setting (`webbench`): `basic_`, `reuse_`, `add_` "
                "(reuse+add: 10 spaces, 10 work areas, 10 fully loaded spaces of `sh` and of each CGI "
                "program made ahead) and `reduce_` (reuse+add+reduce, T = interval = 50 ms); then in a second "
                "boot `demand_`: the personality's default, demand loading, with the pool off.",
        "issue": "issue 19 (network, the web-server experiments)",
        "linux": True,
        "disk": True,
        # Tessera's boots: the pool settings with eager loading, then the
        # personality's default, demand loading, with the pool off.
        "tessera_boot": ["servers=servers.web.conf run=webbench",
                         "servers=servers.linux.conf run=webbench args=demand"],
    },
    "webmem": {
        "title": "Web server: the pool's memory during and after the requests (seed 000 figs. 7 and 10)",
        "what": "Bytes the pool holds (`/proc/tessera/pool`), sampled every 10 ms by `webload` during "
                "100 requests at 10 clients (the shell CGI and the 800-page CGI) and for 500 ms after "
                "(param: ms since the first request), under each pool setting; a run of its own, as the "
                "samples disturb the timing. From the `web` boot.",
        "issue": "issue 19 (network, the web-server experiments)",
        "linux": False,
    },
    "fs": {
        "title": "File system operations on an ext2 disk (virtio-blk)",
        "what": "`bench/linux/fsbench.c` in a folder of a fresh 256 MiB ext2 image (`mke2fs -t ext2 -b 4096`) "
                "on virtio-blk, in a boot of its own (the other experiments run without a disk): sequential "
                "`write` of a 64 MiB file in 1 MiB calls (page cache) and the `fsync` after it; sequential "
                "`read` of it cold (after `sync; echo 3 > /proc/sys/vm/drop_caches`) and cached; a cached "
                "4 KiB `pread` at random aligned offsets (mean of 1,000); create + write 4 KiB + close of "
                "1,000 files (total); listing that folder of 1,000 entries (open, `getdents64`, close; mean "
                "of 10); `pwrite` of 4 KiB + `fsync` (mean of 20). Param: bytes or files. Under icount "
                "(`sleep=off`) a guest waiting for the disk is idle, and its clock then jumps to its next "
                "timer: the figures that wait for the device (the fsyncs above all, the cold read less) "
                "measure the guest's timers, not the disk; the cached figures are path lengths as "
                "everywhere else. Compare waiting figures in plain TCG (`make bench B=fs MODE=tcg`). "
                "Also 1-byte `pread`s at the same offsets and `pread`s at the file's end. "
                "Tessera: the same static program on the Linux personality (`servers.linux-fs.conf`: "
                "virtio-blk, a block cache of 20,480 pages with no periodic flush, the file server), in "
                "/tmp of the system disk (a fresh copy each boot), with `--drop-caches` (the personality's "
                "`/proc/sys/vm/drop_caches` has the kernel's file caches and the block cache write back "
                "and forget their pages). Rows `.native`: the native program `fsbench`, "
                "the same operations, sizes and offsets through a stack of its own on the fresh image "
                "(cold means the cache wrote everything back and forgot it), with its own rows: a 4 KiB "
                "`pread` off a page boundary, and the copies of file data per byte each path made, "
                "counted by the servers (Linux copies once, between its page cache and the caller; not "
                "counted here). Issue 17's goal for the cold sequential read, within 1.2 × "
                "Linux, is in plain TCG wall time.",
        "issue": "issue 17 (storage servers: virtio-blk, block cache, ext2)",
        "linux": True,
        # Runs with the machine's disk attached (bench.py boots it separately).
        "disk": True,
    },
    "container": {
        "title": "Container IPC: send, receive, push and exchange (seed 004 figs. 5, 6, 7)",
        "what": "Tessera against itself (user program `ctbench`): one container of 4 KiB … 2 MiB "
                "(1 … 512 pages) sent into a container box and received out of it by the same process, in "
                "each mode: **copy** (the data is copied into a new container), **share** (sender and "
                "receiver share the pages), **move** (the container leaves the sender's space) and **swap** "
                "(the paper's exchange mode: the pages behind the sender's container are exchanged with "
                "those of an empty container kept in the box, by rewriting page-table entries, no copy). "
                "*swap + create* is a swap send that finds no empty container and must create one (box "
                "bounds 0/0/0); *swap + delete* is the receive of the same run, which deletes the empty "
                "container the exchange leaves in the box. *Direct*: push of a container into another "
                "process (copy, share, move) against exchange of two containers' pages between two "
                "processes. Each figure is the mean of 20 operations (2 in the short run), timed in the "
                "process by the TSC; the breakdown is the kernel's own time per operation in each part "
                "(container create / delete, page exchange, copy, attach, detach, queue); *other* is the "
                "rest: the system call, the mediator and the lookups. The boxes are made without "
                "`BOX_SCRUB`: the pages a swap receive leaves in the box are handed to the next sender "
                "as they are; *swap, scrubbing box* is the same with a `BOX_SCRUB` box: the pages a receive "
                "leaves are zeroed before a sender gets them, in CPU 0's idle time or, when there was "
                "none (this row: rounds back to back), by the send that takes them (a cost that grows "
                "with size); *swap, scrubbing box, idle between* sleeps 2 ms after each round, untimed, "
                "so that idle time zeroes them.",
        "issue": "issue 5 (container IPC: COPY/SHARE/MOVE/SWAP, push/steal/exchange)",
        "linux": False,
        # Plots of this experiment, in the order the summary shows them.
        "plots": [
            ("container_send.png", "Send through a box (fig. 5)"),
            ("container_receive.png", "Receive from a box (fig. 6)"),
            ("container_direct.png", "Push against exchange, no box (fig. 7)"),
        ],
    },
    "batch": {
        "title": "Batch requests: callsync × n against ncallsync(n), distribution server (seed 002 figs. 7–9)",
        "what": "Tessera against itself (user program `batchbench`, servers `servers/echo` and "
                "`servers/distributor`). *Overhead* (fig. 7, nop work): n = 1 … 10 requests of 8 bytes to an "
                "`echo` server on the client's CPU, as n blocking calls (**callsync × n**), as one batch "
                "(**ncallsync(n)**: the kernel queues all n requests at once and wakes the caller once with "
                "every result; a batch of one goes as a call), and as one batch to the **distribution server**, which accepts the whole batch "
                "in one system call (`acc_many`) and passes every request on to `echo` in one more "
                "(`forward_many`, direct return: `echo` answers the client itself); time for the n requests, "
                "mean of 200 repetitions (2 in the short run), timed in the client by the TSC; and the same "
                "with the paper's 3-core placement (`spread_` series: ten `echo` servers taking turns between "
                "CPUs 1 and 2, request i to server i, the distributor beside the client on CPU 0). *CPU work* "
                "(fig. 9): ten requests of 3 ms of CPU work each (100 µs in the short run), and the same "
                "with 30 ms (1 ms), to two `echo` servers pinned on CPUs 1 and 2 (modulo the number of CPUs), "
                "as callsync × 10 against ncallsync(2) × 5, the 3 ms case timed 11 times per boot (the two ways "
                "taking turns; the median is the boot's figure), the 30 ms case once; param = number of CPUs. "
                "*File transfer* (fig. 12, user program `xferbench`): a file of the ext2 image (RAM disk, "
                "block cache and file server on CPU 1) read in chunks and sent over a TCP connection on the "
                "loopback (TCP/IP server `servers/net` and the sink on CPU 2; client and distribution server on "
                "CPU 0), as `read, send` × n with blocking calls against `read, (send + read) × (n−1), send` "
                "with ncallsync through the distribution server, each copying (the chunk lands in the client's "
                "buffer, copied into the send's message) and copy-less (it lands in an ICA the TCP/IP server "
                "takes: `SEND_ICA`); time until the sink has counted every byte, the median of 7 rounds (the "
                "four ways taking turns, after an untimed one of two chunks each), and the copies per byte "
                "the servers and the client count.",
        "issue": "issue 7 (ncallsync, distribution server); issue 19 (fig. 12)",
        "partial": "fig. 12 reads from the RAM disk through the block cache (the file is cached), not from "
                   "virtio-blk; the paper's case B (two sends per read) and its 0.1 ms added to the send are "
                   "not run",
        "linux": False,
        "plots": [("batch.png", "Time for n requests: callsync × n, ncallsync(n), ncallsync(n) through the "
                                "distribution server (fig. 7); CPU work on two server CPUs (fig. 9)")],
    },
    "off2f": {
        "title": "OFF2F: exec of programs kept on the disk, ELF against OFF2F (seed 001 figs. 4–5, tables 1–5)",
        "what": "Tessera against itself (user program `offbench`): three static programs run from an ext2 "
                "file system with demand loading, as ELF and as OFF2F (file 1 on the file system, the text "
                "in the NVM store, mapped in place at faults): `tiny` (5 KiB of text, the paper's `date`), "
                "`text128k` and `text16m` (133 KiB and 16 MiB of text, the paper's `less` and `cc`: a "
                "read-only table of which they read one page in 16, not real programs of those sizes). "
                "The disk is the machine's (an ext2 image on virtio-blk), Tessera's virtio-blk driver "
                "answering as late as a disk model would, waited in guest time (crate `diskmodel`): `dk` "
                "(a 5,400 rpm hard disk: 17.6 ms access, 100 MB/s), `sata` (100 µs, 500 MB/s), `nvme` "
                "(20 µs, 2 GB/s); the access latency is paid by a request that does not continue the "
                "previous one, and a request waits while the disk serves the one before (the driver polls "
                "the device meanwhile: an idle guest's clock would jump to its next tick). Every figure's "
                "param names its model: model/program/format. `exec_cold`: from before the file is opened to "
                "after the program's end (the paper's fork to wait), the block cache emptied before each "
                "run, median of 3; `exec_warm`: right after, its blocks cached. `bytes_read`: what exec "
                "read of the file (OFF2F: file 1's header page; Tessera's ELF exec reads the whole file, "
                "debug information included, where FreeBSD's reads 64 KiB and the rest of the text at "
                "faults); `disk_bytes`: what the disk moved (file-system metadata included); faults by "
                "category of the last cold run (`faults_text`: text pages filled by a copy; "
                "`faults_nvm_text`: NVM pages mapped in place); `pages_read_exec` and "
                "`pages_read_faults`: pages of the file read at exec and later at faults (OFF2F's data, "
                "supplied by the file server as the region's pager; ELF has none later). Then fig. 5 and "
                "tables 3–5, a build (user/programs/src/offmake.rs): no compiler "
                "or `make` runs on Tessera, so a stand-in executes from the file system, in a build's "
                "order, the programs a build of nine sources would: `mkdir`, `write` (a source), `cp` "
                "(its object), `mv`, `cat`, `ls`, `rm` (real programs on real files), `text16m` in the "
                "part of `cc` (24 execs, as in the paper), `text128k` in that of `sh` (36), `tiny` and "
                "`hello`: 92 execs of 11 programs (the paper's `make` of `ls`: 85 of 11). The first exec "
                "of each program reads it into a fresh plate, later ones spawn that plate (as a page "
                "cache keeps a program); the block cache is emptied at the start.",
        "issue": "issue 20 (OFF2F)",
        "linux": False,
        # Runs with the machine's disk attached: the virtio-blk driver is the
        # one that waits as the disk models.
        "disk": True,
    },
    "kernel": {
        "title": "Tessera kernel-internal operations",
        "what": "Operations inside the kernel (frame allocation, page mapping, IPI round trip, TLB "
                "shootdown, clock read), measured by the kernel's bench mode. Frame allocation is "
                "alloc + free of a run when a free block of its size exists (nothing to split or "
                "merge). No Linux counterpart.",
        "issue": "issue 2 (foundation)",
        "linux": False,
    },
    "procnet": {
        "title": "The process network at work (seed 003: communications per system call, figs. 7, 8, 10)",
        "what": "A busybox shell script of ordinary commands (`bench/linux/procnet.sh`: sort, uniq, sed, tr, "
                "grep, awk, tar, gzip, md5sum, cp, cmp, ls, head, cut, joined by pipes, four rounds over a few "
                "files; seed 003 ran a C compiler and an editor) on the Linux personality, from the system "
                "disk, one boot each. `workload`: its time from spawn to wait (init's count); the counts are "
                "the kernel's over the run: Linux system calls, communications (rendezvous completed, every "
                "process's: supervisors, shared server, file server, block cache, driver), the kernel's own "
                "system calls and context switches, bytes the kernel copied between processes and, of "
                "those, bytes servers moved in or out of the memory of a process waiting in its call (our "
                "passing by pointer, fig. 8). Then the paper's two slowdowns: every communication made "
                "longer by a busy wait of the param's ns (fig. 7: `ipc_delay=`), and every KiB passed by "
                "pointer by the param's ns (fig. 10: `ipc_kib_delay=`).",
        "issue": "issue 18 (seed 003's measurements of the process network)",
        "linux": True,
        # Boots of its own (bench.py `_run_procnet`), not the kernel's bench mode.
        "own_boots": True,
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
    ("fs", "pread_4k_cached", ""): "≤ Linux (issue 17)",
    ("fs", "create_write_close", "1000"): "≤ Linux (issue 17)",
}

# Issue 18's goals (icount ns) for the reference VM's own programs run
# unmodified on Tessera's Linux personality (bench.py LINUX_BINARY_WAYS),
# by the Linux figure they stand beside.
LINUX_BINARY_GOALS = {
    ("syscall", "getpid", ""): 150,
    # "A call served by the supervisor (e.g. fstat, or pread of 1 byte from
    # a cached file) ≤ Linux's figure": getppid and fstat, which the kernel
    # now answers from what the personality keeps in it, and fcntl(F_GETFD),
    # which only the supervisor serves (its path's floor).
    ("syscall", "getppid", ""): "linux",
    ("syscall", "fstat", ""): "linux",
    ("syscall", "fcntl_getfd", ""): "linux",
    ("ipc", "pipe", "1"): 3_000,
    ("transfer", "pipe", "1048576"): 270_000,
}
# ... and with the pool (`linux_binary_pooled`).
LINUX_BINARY_POOLED_GOALS = {
    ("spawn", "fork_exec_wait", ""): 100_000,
    ("pageaccess", "fork_exec_wait", "800"): 1_000_000,
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

# Seed 001 fig. 4: OFF2F/ELF exec time, by (disk model, our program).
OFF2F_PAPER = {
    ("dk", "tiny"): "`date` 1.00 (49.22/49.18 ms)",
    ("dk", "text128k"): "`less` 0.99",
    ("dk", "text16m"): "`cc` 0.20 (0.54/2.68 s)",
    ("sata", "tiny"): "`date` 1.01 (1.24/1.23 ms)",
    ("sata", "text128k"): "`less` 0.78",
    ("sata", "text16m"): "`cc` 0.21 (0.03/0.14 s)",
    ("nvme", "text16m"): "`cc` 0.37 (39.81/107.53 ms)",
}
# Seed 001 fig. 5 (the `make` of `ls`, ELF's time against OFF2F's), by
# our disk model; the paper ran a hard disk and a SATA SSD.
OFF2F_MAKE_PAPER = {
    "dk": "0.45 (2.11/4.69 s)",
    "sata": "0.81 (0.51/0.63 s)",
}
# Seed 001 table 3(A) and table 5(A): text KB, exec() count and ELF text
# faults (program, library) of the programs our build's stand-ins play.
OFF2F_MAKE_TABLES = {
    "cc": (42796, 24, 474, 0),
    "sh": (143, 36, 0, 0),
    "sed": (32, 2, 0, 1),
    "objcopy": (106, 5, 1, 29),
    "mv": (10, 4, 0, 0),
    "cat": (8, 2, 0, 0),
    "chmod": (5, 2, 0, 0),
}
# Issue 20's goals for the huge program: (limit of OFF2F/ELF, what).
OFF2F_GOALS = {
    ("dk", "text16m"): (0.20, "huge-text exec on the DK model ≤ 1/5 of ELF's time (paper 0.20)"),
    ("nvme", "text16m"): (1 / 2.7, "huge-text exec on NVMe ≤ 1/2.7 of ELF's time (paper 0.37)"),
}

# What the papers claim, per experiment (quoted with their conditions).
PAPER_NOTES = {
    "procnet": [
        "Seed 003 (a PDP-11 class machine, its OS as a network of processes beside UNIX): 1,112 system "
        "calls of its workload made 29,065 communications, 26 per system call, where UNIX switched "
        "processes 1.2 times per system call; one communication took 449 µs, 41 % of its "
        "synchronisation in state save and restore (43 µs each), 59 % in scheduling; system time rose "
        "by 54 % against UNIX (a C compilation: 107 s on UNIX, 109 s on the new system).",
        "Fig. 7: with loops in `call` and `acc` lengthening every communication, system time grew in "
        "proportion. Fig. 8: 118 KB travelled as call arguments, 3 MB by pointer. Fig. 10: a cost of "
        "4.71 µs per byte passed by pointer took system time from 38.4 s to 53.3 s.",
    ],
    "off2f": [
        "Seed 001 fig. 4 (FreeBSD 11.0, Core i3-8100, 5,400 rpm DK and a SATA SSD), OFF2F/ELF exec time: "
        "`date` (16 KB text) DK 49.22/49.18 ms, SSD 1.24/1.23 ms (OFF2F slightly slower below 64 KB); "
        "`less` (138 KB) DK 0.99, SSD 0.78; `cc` (44 MB with `ld`) DK 0.20 (0.54 s / 2.68 s), SSD 0.21; "
        "on an NVMe SSD `cc` 0.37 (39.81 / 107.53 ms). The gain grows with the text and shrinks with a "
        "faster disk.",
        "Table 2: ELF text page faults `date` 0, `less` 1, `cc`+`ld` 430 (FreeBSD reads the first 64 KB at "
        "exec; OFF2F reads the 4 KB header and maps every text page from NVM at its fault).",
        "Fig. 5 (the `make` of `ls`: 9 C files, 85 execs of 11 programs, `cc` 24 times): OFF2F/ELF DK 0.45 "
        "(2.11/4.69 s), SSD 0.81 (0.51/0.63 s); a FreeBSD kernel build (33,659 execs, about 1,000 s): DK "
        "0.998, SSD 1.001 (OFF2F 0.14 % slower). Table 4: the processor time of the ELF runs, `make` 0.45 s, "
        "the kernel build 1,033 s. Table 5(A): ELF text faults 509 of the programs, 32 of libraries, "
        "12,124 others.",
        "The direction of each effect, the paper's against ours: "
        "[docs/off2f.md](../off2f.md#the-papers-figures-beside-ours).",
    ],
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
        "Seed 003 (process network, table 4): one communication (call + acc + endr) took 449 µs on average "
        "on its hardware (call 181 µs, acc 213 µs, endr 55 µs per primitive), 41 % of the synchronisation "
        "in state save/restore (43 µs each) and 59 % in scheduling; one UNIX system call became 26 "
        "communications on average (29,065 for 1,112 system calls), about 11.7 ms of communication per "
        "system call at 449 µs each.",
        "Seed 002 (AnT, §1 and §2.2): a blocking request (callsync) does request, wait and fetch in one "
        "server call; the non-blocking interface needs two calls and costs more. Multi-stage requests reuse "
        "one control ICA along the path; a flag sends the result directly to the requester that needs it "
        "instead of back through every relaying server. The paper gives no figure for either on its own.",
        "Seed 002, fig. 7 (built on these calls; issue 7): on one core, ncallsync(n) beats callsync × n for "
        "n ≥ 2, and the distribution server adds about 10 µs (n = 9; Core i7-2600).",
        "Seed 004 (Tender container IPC): exchange completes a transfer in under 10 µs whatever the "
        "destination (Pentium 4, 2.4 GHz); share and move exceed 15 µs on receive.",
    ],
    "transfer": [
        "Seed 004 (Tender container IPC) measures its send, receive, push and exchange each on its "
        "own, in one process (figs. 5–7; Tessera's counterparts are in `container` below), and states that "
        "exchange completes a transfer in under 10 µs whatever the target (Pentium 4, 2.4 GHz); it "
        "measures no message between two processes and no acknowledgement. The figures above add what a "
        "transfer between processes costs besides the container operations: the doorbell call and its "
        "reply, and two context switches.",
    ],
    "container": [
        "Seed 004 measured Tender on a Pentium 4 at 2.4 GHz, in µs; only 4 KB is quoted in the text, the "
        "other sizes are in the plots. Send + receive by exchange is under 10 µs whatever the target "
        "(box or process); share and move stay under 10 µs on send (fig. 5) but exceed 15 µs on receive "
        "(fig. 6) and 10 µs in push (fig. 7).",
        "Why exchange wins on receive and direct (§4): receive by exchange creates no virtual user space "
        "(the receiver made its container beforehand); push creates one in the target and attaches the "
        "container, and copies (copy) or detaches (move) as well.",
        "Creating an empty container during a swap send costs ≈ 70 % of it (fig. 5), deleting one during "
        "a receive ≈ 36 % (fig. 6): the box's lower and upper bounds exist to keep both off the path.",
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
    "batch": [
        "Seed 002, fig. 7 (nop server, Core i7-2600, values only in the plot): on one core ncallsync(n) takes "
        "less time than callsync() × n for every n ≥ 2 — cutting the number of request system calls matters; "
        "the distribution server adds about 10 µs (n = 9).",
        "Seed 002, fig. 8 (breakdown at n = 10): callsync × 10 makes 12 system calls (1 ICA allocation, 10 "
        "requests, 1 release), ncallsync 21 (10 allocations, 1 request, 10 releases) and is still faster. "
        "With the distribution server one core beats three: the cross-core wake-up (IPI) costs more than the "
        "parallelism of nop work saves.",
        "Seed 002, fig. 9 (3 ms of CPU work per request, 5 per server): on one core both take about the same "
        "time; on 3 cores (client and distribution server on core 0, servers on cores 1 and 2) ncallsync(2) × 5 "
        "takes half the time of callsync × 10. Claim: a service of several CPU tasks gets ≈ 1/n of the "
        "response time over n cores.",
    ],
    "kernel": [],
}

# Where our setup cannot match the paper's (issue 21): one sentence each,
# with the way it biases the comparison, shown under the paper's figures.
SETUP_DIFFERENCES = {
    "off2f": [
        "Tessera's ELF exec reads the whole file and keeps it as a plate; each text fault of an ELF "
        "process copies its page from the plate, where FreeBSD reads 64 KB at exec, the rest of the text at "
        "faults, and maps cached pages without a copy: every ELF figure, most the huge program's, is "
        "biased in OFF2F's favour.",
        "No stand-in does a compiler's work: the build's time is mostly exec and faults, which favours "
        "OFF2F as the paper's short `make` does, and far more than its kernel build.",
        "Static programs only: no library text faults on either side (the paper's table 5 has 32).",
    ],
    "transfer": [
        "Box swap runs with a box whose creator chose not to scrub (`BOX_UNSCRUBBED`; a box granted "
        "to another process scrubs by default, see `container`): the pages a receive leaves in "
        "the box go to the next sender as they are, which favours the swap figures against a system "
        "that clears them.",
    ],
    "container": [
        "The figures of record use boxes without `BOX_SCRUB`, so the pages a SWAP receive leaves in the "
        "box go to the next sender unzeroed; seed 004 says nothing of clearing them, and if Tender did, "
        "our flat SWAP figures are biased in Tessera's favour (the *swap, scrubbing box* row shows the "
        "cost without idle time, which grows with size; with idle time between rounds the kernel "
        "zeroes in the background and the *idle between* row is SWAP's flat cost again).",
    ],
    "batch": [
        "Fig. 9's 3-core runs are a plain-TCG guest whose 3 virtual CPUs share the host's 2 cores with "
        "other work (the paper had real cores), so the client's and both servers' CPUs cannot all run at "
        "once: the measured speed-up is biased against Tessera.",
        "AnT remaps a control ICA (a page) between requester and server and the requester allocates and "
        "releases one per request (fig. 8: ncallsync(10) makes 21 client system calls); Tessera copies "
        "the request's description instead (a 56-byte list entry per member of an `ncallsync`, a "
        "128-byte control block in the rings) and allocates nothing, so our count is the batch call and the "
        "server's endr + acc per request (11 for n = 10, all processes counted), and both callsync and "
        "ncallsync are biased in Tessera's favour by the remap and the allocations they do not make.",
    ],
}

# `batch` (issue 7).  Metric names as batchbench prints them, with labels.
BATCH_SERIES = [("callsync_x_n", "callsync × n"),
                ("ncallsync", "ncallsync(n)"),
                ("ncallsync_distributor", "ncallsync(n) via the distribution server")]
# Fig. 7/8's 3-core case: the same series with the servers spread over
# CPUs 1 and 2 (batchbench's metric prefix), kept from the plain-TCG boot.
BATCH_SPREAD_PREFIX = "spread_"
# Issue 7's goal: each extra request in a batch costs ≤ this many
# instructions of overhead (icount ns), as the slope from n = 1 to n = 10.
BATCH_GOAL_PER_REQUEST = (1_000, "each extra request in a batch costs ≤ 1,000 instructions of overhead "
                                 "(issue 7)")
# Issue 21's goals for fig. 7 on one CPU (icount): ncallsync(2) below
# 2 × callsync; ncallsync(n) ≤ callsync + this × (n − 1); the distribution
# server's extra per request (over ncallsync, mean over n = 1…10) ≤ that.
BATCH_GOAL21_PER_REQUEST = 650
BATCH_GOAL21_DISTRIBUTOR = 900
# The batch metrics the goal applies to (callsync × n is shown for comparison).
BATCH_GOAL_METRICS = ("ncallsync", "ncallsync_distributor")
# Fig. 9: (callsync × 10, ncallsync(2) × 5); the harness's plain-TCG boot
# stores them with the suffix `_tcg` (bench.py BATCH_PARALLEL_SUFFIX).
BATCH_WORK = ("work_callsync_x10", "work_ncallsync2_x5")
# The same experiment with 30 ms per request: on a host whose idle cores
# take milliseconds to wake (a virtual machine's), a 3 ms request measures
# that wake-up as much as the batch; ten times longer work shows the
# speed-up of the mechanism itself.
BATCH_WORK_LONG = ("work30_callsync_x10", "work30_ncallsync2_x5")
BATCH_WORK_VARIANTS = [("3 ms (the paper's)", BATCH_WORK), ("30 ms", BATCH_WORK_LONG)]
# What batchbench also prints per fig. 9 variant, as `<variant>_<name>`
# (variant: the metrics' first word, `work` or `work30`): the median call
# and batch, the requests the host held up, and how many there were.
BATCH_WORK_DETAIL = ("call_median", "batch_median", "held", "requests")
# Fig. 8's breakdown per batch: batchbench's count suffixes, with labels.
BATCH_BREAKDOWN = [("syscalls", "system calls"), ("switches", "context switches"), ("ipis", "IPIs"),
                   ("allocs", "kernel heap allocations"), ("server", "server time (ns)")]


def batch_work_variant(metric):
    """`work` for `work_callsync_x10`: the prefix of a fig. 9 variant's metrics."""
    return metric.split("_")[0]
BATCH_SERVER_CPUS = 2
# Issue 7's goal for the speed-up callsync × 10 / ncallsync(2) × 5: ≥ this
# factor × the number of server CPUs.
BATCH_GOAL_SPEEDUP = (0.9, "≥ 0.9 × the number of server CPUs (issue 7)")
BATCH_PAPER_SPEEDUP = 2.0  # fig. 9: half the time on 3 cores
# Fig. 12, the file transfer (xferbench: a file of the ext2 image read from
# the file server and sent over TCP to a sink through the TCP/IP server):
# chunk label -> (what, chunk bytes, chunks). Metrics
# `fig12_<callsync|ncallsync>_<copy|ica>_<label>` (ns) and `…_copies`
# (copies per byte, counted by the servers and the client).
BATCH_PIPELINE = {
    "1k": ("1 KiB read + 1 KiB send, n = 50 (the paper's case A)", 1024, 50),
    "64k": ("64 KiB read + 64 KiB send, n = 64 (4 MiB)", 64 << 10, 64),
}
BATCH_PIPELINE_WAYS = ("callsync", "ncallsync")
BATCH_PIPELINE_DATA = (("copy", "copying"), ("ica", "copy-less"))
BATCH_PIPELINE_PAPER = ("fig. 12 (3 cores): ncallsync about 14 % (A) and 22 % (B: two 1 KB sends per read) "
                        "shorter than callsync × n, about 40 % with 0.1 ms of CPU added to the send")
# Issue 19's goal: the copy-less pipeline this much shorter than the copying one.
BATCH_PIPELINE_GOAL = (0.22, "copy-less pipeline ≥ 22 % shorter than the copying one (issue 19)")


def batch_pipeline_metrics():
    """Every fig. 12 metric xferbench prints."""
    return tuple(f"fig12_{way}_{d}_{s}{k}" for s in BATCH_PIPELINE for way in BATCH_PIPELINE_WAYS
                 for d, _ in BATCH_PIPELINE_DATA for k in ("", "_copies"))

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

# Container IPC (`container`): Tessera against itself.  Metric names as
# ctbench prints them, with the labels of tables and plots.
# Box operations, one row per mode: (label, send metric, receive metric,
# direct metric or None).  The last row is swap when the box must create an
# empty container at the send and delete one at the receive.
CONTAINER_ROWS = [
    ("copy", "send_copy", "receive_copy", "push_copy"),
    ("share", "send_share", "receive_share", "push_share"),
    ("move", "send_move", "receive_move", "push_move"),
    ("swap", "send_swap", "receive_swap", "exchange"),
    ("swap + create / delete", "send_swap_create", "receive_swap_delete", None),
    ("swap, scrubbing box", "send_swap_scrub", "receive_swap_scrub", None),
    ("swap, scrubbing box, idle between", "send_swap_scrub_idle", "receive_swap_scrub_idle", None),
]
CONTAINER_SEND = [("copy", "send_copy"), ("share", "send_share"), ("move", "send_move"),
                  ("swap", "send_swap"), ("swap + create", "send_swap_create")]
CONTAINER_RECEIVE = [("copy", "receive_copy"), ("share", "receive_share"), ("move", "receive_move"),
                     ("swap", "receive_swap"), ("swap + delete", "receive_swap_delete")]
CONTAINER_DIRECT = [("push copy", "push_copy"), ("push share", "push_share"), ("push move", "push_move"),
                    ("exchange", "exchange")]
# Parts of the kernel's breakdown (`<op>:<part>`); "other" is the rest of
# the operation's time (system call, mediator, lookups).
CONTAINER_PARTS = ["create", "delete", "exchange", "copy", "attach", "detach", "queue"]
# Sizes the summary tabulates (the CSV and the plots have every size).
CONTAINER_TABLE_SIZES = ["4096", "65536", "1048576", "2097152"]
# Issue 5's goals for SWAP send + receive (icount ns), by size, with the
# Linux figures they were set against (LINUX_EARLIER).
CONTAINER_GOALS = {
    "4096": (1_500, "≤ 1,500 (Linux pipe: 13,741)"),
    "1048576": (20_000, "≤ 20,000 (Linux shared memory with two copies: 274,551; pipe: 784,101)"),
}
# Issue 21's goal for seed 004's "almost independent of size": SWAP send +
# receive at the largest size ≤ this factor × at the smallest.
CONTAINER_FLAT_GOAL = ("4096", "2097152", 2.0)
# Sizes at which SWAP send + receive is set beside Linux's `transfer`.
CONTAINER_LINUX_SIZES = ["4096", "65536", "1048576"]
CONTAINER_LINUX_METHODS = [("pipe", "pipe"), ("shm_futex", "shared memory + futex")]

# Container IPC between two processes (`transfer`, Tessera's side, issue
# 21): cttransfer's methods, with labels, and Linux's.  `_cross_cpu`: the
# child on the other CPU (second boot with two CPUs).
TRANSFER_METHODS = [("box_copy", "box copy"), ("box_share", "box share"), ("box_move", "box move"),
                    ("box_swap", "box swap"), ("push_copy", "push copy"), ("push_share", "push share"),
                    ("push_move", "push move"), ("exchange", "exchange")]
TRANSFER_LINUX = [("pipe", "pipe"), ("vmsplice", "vmsplice"), ("shm_futex", "shared memory + futex")]
TRANSFER_CROSS = "_cross_cpu"
# Counts per message cttransfer prints as `<method>[_cross_cpu]_<suffix>`.
TRANSFER_COUNTS = [("syscalls", "system calls"), ("switches", "context switches"), ("ipis", "IPIs")]
# Issue 21's goals (icount ns, one CPU, message + ack) for the methods that
# move no byte, by size, with the Linux figures they were set against.
TRANSFER_GOAL_METHODS = ["box_swap", "exchange"]
TRANSFER_GOALS = {
    "4096": (3_000, "≤ 3,000 (Linux's best: 11,788)"),
    "1048576": (20_000, "≤ 20,000 (Linux's best: 271,543)"),
}
# The paper's claims, each checked on our figures.  Kinds:
#   ratio:    a / b at `param`; `paper` is the paper's ratio, `rel` the
#             direction it asserts (a slower ">" or faster "<" than b)
#   fastest:  a is the smallest of `among` at `param`
#   part:     the part a (`<op>:<part>`) as a fraction of its operation b
#   constant: a barely grows with size (against `against`, which does)
CONTAINER_CLAIMS = [
    {"fig": "5", "text": "send: swap ≈ 1.5× share", "kind": "ratio", "a": "send_swap", "b": "send_share",
     "param": "4096", "paper": 1.5, "rel": ">"},
    {"fig": "5", "text": "send: swap ≈ 1.2× move", "kind": "ratio", "a": "send_swap", "b": "send_move",
     "param": "4096", "paper": 1.2, "rel": ">"},
    {"fig": "5", "text": "send: swap ≈ 1/7 of copy", "kind": "ratio", "a": "send_swap", "b": "send_copy",
     "param": "4096", "paper": 1 / 7, "rel": "<"},
    {"fig": "5", "text": "send: swap + create slower than copy", "kind": "ratio", "a": "send_swap_create",
     "b": "send_copy", "param": "4096", "paper": None, "rel": ">"},
    {"fig": "5", "text": "send swap: page exchange ≈ 20 % of the time", "kind": "part",
     "a": "send_swap:exchange", "b": "send_swap", "param": "4096", "paper": 0.20},
    {"fig": "5", "text": "send swap: queue operations ≈ 2 %", "kind": "part",
     "a": "send_swap:queue", "b": "send_swap", "param": "4096", "paper": 0.02},
    {"fig": "5", "text": "send swap + create: creating the container ≈ 70 %", "kind": "part",
     "a": "send_swap_create:create", "b": "send_swap_create", "param": "4096", "paper": 0.70},
    {"fig": "5", "text": "send swap + create: page exchange ≈ 4 %", "kind": "part",
     "a": "send_swap_create:exchange", "b": "send_swap_create", "param": "4096", "paper": 0.04},
    {"fig": "6", "text": "receive: swap the fastest mode", "kind": "fastest", "a": "receive_swap",
     "among": ["receive_copy", "receive_share", "receive_move"], "param": "4096"},
    {"fig": "6", "text": "receive: swap ≈ 3/5 of share", "kind": "ratio", "a": "receive_swap",
     "b": "receive_share", "param": "4096", "paper": 3 / 5, "rel": "<"},
    {"fig": "6", "text": "receive: swap ≈ 3/5 of move", "kind": "ratio", "a": "receive_swap",
     "b": "receive_move", "param": "4096", "paper": 3 / 5, "rel": "<"},
    {"fig": "6", "text": "receive: swap + delete slower than share", "kind": "ratio",
     "a": "receive_swap_delete", "b": "receive_share", "param": "4096", "paper": None, "rel": ">"},
    {"fig": "6", "text": "receive: swap + delete faster than copy", "kind": "ratio",
     "a": "receive_swap_delete", "b": "receive_copy", "param": "4096", "paper": None, "rel": "<"},
    {"fig": "6", "text": "receive swap: page exchange ≈ 13 %", "kind": "part",
     "a": "receive_swap:exchange", "b": "receive_swap", "param": "4096", "paper": 0.13},
    {"fig": "6", "text": "receive swap + delete: deleting the container ≈ 36 %", "kind": "part",
     "a": "receive_swap_delete:delete", "b": "receive_swap_delete", "param": "4096", "paper": 0.36},
    {"fig": "7", "text": "direct: exchange the fastest", "kind": "fastest", "a": "exchange",
     "among": ["push_copy", "push_share", "push_move"], "param": "4096"},
    {"fig": "7", "text": "direct: exchange ≈ 4/7 of push share", "kind": "ratio", "a": "exchange",
     "b": "push_share", "param": "4096", "paper": 4 / 7, "rel": "<"},
    {"fig": "7", "text": "direct: exchange ≈ 1/2 of push move", "kind": "ratio", "a": "exchange",
     "b": "push_move", "param": "4096", "paper": 1 / 2, "rel": "<"},
    {"fig": "5", "text": "send: swap ≈ constant in size", "kind": "constant", "a": "send_swap",
     "against": "send_copy"},
    {"fig": "6", "text": "receive: swap ≈ constant in size", "kind": "constant", "a": "receive_swap",
     "against": "receive_copy"},
    {"fig": "7", "text": "direct: exchange ≈ constant in size", "kind": "constant", "a": "exchange",
     "against": "push_copy"},
]
# A measured ratio "agrees" with the paper's when within this factor of it.
CONTAINER_AGREE = 1.25

# Tessera's side of `ipc` (rendezvous, issue 6).  Metric names as rvbench
# prints them.  Round trips: (metric, where the server runs).
# `_smp2`: the same-CPU figure of the second boot with two CPUs (bench.py
# keeps it so that the cross-CPU figure has a same-boot partner).
IPC_ROUND_TRIPS = [("round_trip_same_cpu", "same CPU"),
                   ("round_trip_same_cpu_smp2", "same CPU, in the 2-CPU boot"),
                   ("round_trip_cross_cpu", "other CPU (2 CPUs)")]
# Linux's round trips (1 byte), with labels.
IPC_LINUX = [("pipe", "two pipes"), ("unix", "Unix stream socket pair"), ("futex", "futex on a shared page")]
# Issue 6's goal for call + reply on the same CPU (icount ns), and the anchor
# it was set against.
IPC_GOAL_ROUND_TRIP = (1_000, "≤ 1,000 icount ns for call + reply on the same CPU (issue 6)")
IPC_ANCHOR = ("seL4's IPC fastpath, ≈ 380 cycles one way on bare-metal Skylake (≈ 760 cycles call + "
              "reply; cycles on real hardware, where ours are instructions under icount)")
# callsync against the non-blocking pair: (metric, label, client system calls per request).
IPC_INTERFACES = [("callsync", "callsync (call: request, wait and reply in one system call)", 1),
                  ("request_then_fetch", "request, then fetch (non-blocking pair)", 2),
                  ("ring_callsync", "ring callsync (a control block in the request ring, ring_submit "
                                    "waits, the result in the result ring)", 1),
                  ("ring_request_then_take", "ring request, then take (ring_submit; the result taken from "
                                             "the result ring, ring_wait while it is empty)", 2)]
# Multi-stage requests: (metric, label); param = servers in the chain.
# ICA re-attachment (seed 002 §2.1): metric, and issue 6's goal for one page.
IPC_REMAP = "ica_remap"
IPC_REMAP_FIRST = "ica_remap_first"
IPC_REMAP_MEDIAN = "ica_remap_median"
IPC_GOAL_REMAP = (500, "≤ 500 icount ns to move a one-page ICA to another process (issue 6)")
IPC_STAGES = [("multistage_direct_return", "direct return (relays forward)"),
              ("multistage_no_direct_return", "no direct return (nested calls)")]
# The one-server "chain" the multi-stage figures start from: a plain call
# with the same 64-byte message.
IPC_STAGE_BASE = ("round_trip_same_cpu", "64")

# Later work that adds experiments of its own (beyond Tessera's side of the
# rows above): (issue, what, the experiments that measure it once done[,
# what stays unmeasured because it is not implemented yet]).
LATER = [
    ("issue 4", "seed 000 settings: basic / reuse / reuse+add / reuse+add+reduce, with 10 concurrent "
                "spawners; pool memory over time (figs. 7 and 10).", ("pool", "poolmem")),
    ("issue 5", "seed 004 figs. 5–7: send/receive time per mode (COPY, SHARE, MOVE, SWAP, SWAP with "
                "create/delete) 4 KiB–2 MiB, push vs exchange.", ("container",)),
    ("issue 6", "round trip 0/64 bytes same and cross CPU, ICA remap for 1/16/256 pages, multi-stage "
                "requests with and without direct return, callsync and requests through the rings.", ("ipc",)),
    ("issue 7", "seed 002 figs. 7–9 and 12: callsync × n vs ncallsync(n), distribution server, "
                "1 and 3 CPUs; multi-core figures in plain TCG (icount shows no parallel speed-up).", ("batch",),
     "fig. 12 with the real file system and network servers (measured with synthetic read/send servers)"),
    ("issue 20", "OFF2F (seed 001): exec of single programs and a build's many, ELF against OFF2F, per "
                 "disk model, page faults by category (figs. 4–5, tables 1–5).", ("off2f",),
     "the paper's own programs (Debian userland), Linux programs and shared libraries as OFF2F"),
    ("not yet filed", "the web server + CGI comparison of seed 000 figs. 5, 6, 8, 9.", ()),
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
    # The web experiment: Tessera's figure per pool setting against Linux's
    # of the same page (the Linux metric is the rest of the name).
    ("web", r"(?P<v>basic|reuse|add|reduce|demand)_(?P<rest>\w+)", "{rest}", None),
]


def linux_counterpart(exp, metric, param):
    """(Linux (experiment, metric, param), variant) for a Tessera figure, or None."""
    import re
    # The Linux program itself run on Tessera (bench.py LINUX_BINARY_WAYS):
    # <Linux metric>.<way>.
    if "." in metric:
        lmetric, way = metric.split(".", 1)
        return (exp, lmetric, param), way.replace("_", " ")
    for e, pattern, lmetric, lparam in COUNTERPARTS:
        if e != exp:
            continue
        m = re.fullmatch(pattern, metric)
        if m:
            variant = m.groupdict().get("v") or ""
            lmetric = lmetric.format(**m.groupdict())
            return (exp, lmetric, param if lparam is None else lparam), variant
    return (exp, metric, param), ""
