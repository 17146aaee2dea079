//! The personality's own protocol between its processes: the launcher, the
//! supervisors (one per Linux process) and the shared server (`linux`).
//!
//! Calls go one way only: a Linux process to its supervisor (the kernel's
//! rendezvous), a supervisor to the shared server or the file server, a
//! supervisor to a pooled supervisor it hands a child to. The shared server
//! never calls a supervisor and waits for it: it tells one of a signal
//! with a request (`request`, no wait), so no cycle of waits can form.
//!
//! Messages are little-endian 64-bit words, the first one the operation.

use alloc::vec::Vec;

/// The shared server's name.
pub const NAME: &str = "linux";

/// The shared server's entries.
pub mod shared {
    /// A request that is answered at once (or, for the launcher's WAIT,
    /// when its process ends): `Ctl` words.
    pub const CTL: u64 = 0;
    /// A Linux call its supervisor passed on (`linux_pass`): it waits here
    /// (a pipe, a child, the terminal), answered to the process directly.
    pub const PASS: u64 = 1;
    /// The alarm (`port_alarm`): timers are due.
    pub const TICK: u64 = 2;
    /// Console input arrived (`console_attach`).
    pub const INPUT: u64 = 3;
    /// Bytes for the terminal: the message is the data itself, read from
    /// the Linux process's own buffer (`call_for`: copied once).
    pub const TTY_WRITE: u64 = 4;
    pub const ENTRIES: u64 = 0b11111;
}

/// A supervisor's entries beyond the kernel's (`abi::linux::entry`).
pub mod sup {
    /// Its process, from a launcher or a forking supervisor.
    pub const INIT: u64 = 3;
    /// A signal for its process, from the shared server (a request).
    pub const SIGNAL: u64 = 4;
    /// A poll of its process may go on (the token of its registration).
    pub const WAKE: u64 = 5;
    /// An event from the kernel: a kernel pipe a poll of its process
    /// watches changed (`linux_pipe(WATCH)`).
    pub const KWAKE: u64 = 6;
    pub const IDLE_ENTRIES: u64 = (1 << INIT) | (1 << SIGNAL) | (1 << WAKE) | (1 << KWAKE);
    pub const ENTRIES: u64 = 0b1111111;
    /// A `SIGNAL` request of signal 0 with this code is no signal: it
    /// says whether inotify watches exist (status 1) as of notice number
    /// `value` (`shared/inotify.rs`).
    pub const WATCHING: i64 = -120;
}

/// Operations of `shared::CTL` (word 0).
/// The settings of `ctl::SYSCTL`.
pub mod sysctl {
    pub const PID_MAX: u64 = 0;
    pub const PIPE_MAX_SIZE: u64 = 1;
}

pub mod ctl {
    /// Launcher [, without a terminal]: a new Linux process, leader of a
    /// session on the terminal (1: of one without a controlling terminal,
    /// as Linux's init's children start) → [pid, supervisor].
    pub const START: u64 = 1;
    /// Launcher: waits for the end of `pid` → [wait status].
    pub const WAIT: u64 = 2;
    /// [parent pid, flags (`fork_flags`) | exit signal << 8, objects...]:
    /// a child → [pid, supervisor].
    pub const FORK: u64 = 3;
    /// [pid, tessera pid, comm (2 words), command line words...]: the
    /// process runs a new program.
    pub const EXEC: u64 = 4;
    /// [pid, wait status, minor faults, user ns, system ns, objects...]:
    /// it ended.
    pub const EXIT: u64 = 5;
    /// A supervisor is free again → [1: end instead (the pool is full)].
    pub const IDLE: u64 = 6;
    /// EXIT of the caller's process and IDLE of the caller in one
    /// request (the end of every process) → as IDLE.
    pub const EXIT_IDLE: u64 = 39;
    /// [sender, target (pid, -pgid, -1, 0), signal, code, value, uid]
    /// → [0 or -errno, the sender itself is among the targets].
    pub const KILL: u64 = 7;
    /// [caller, pid, pgid] → [0 or -errno].
    pub const SETPGID: u64 = 8;
    /// [caller, pid] → [pgid or -errno].
    pub const GETPGID: u64 = 9;
    /// [caller, pid] → [sid or -errno].
    pub const GETSID: u64 = 10;
    /// [caller] → [sid or -errno].
    pub const SETSID: u64 = 11;
    /// [pid, its Tessera process (0: none)] → [parent], which the shared
    /// server sets in the Tessera process's kernel record too: the
    /// kernel answers its getppid from then on (`linux_set_ppid`).
    pub const GETPPID: u64 = 12;
    /// [messages (1: each write one message, an AF_UNIX datagram pair's)]
    /// → [read end, write end].
    pub const PIPE: u64 = 13;
    /// [objects...]: references given up.
    pub const RELEASE: u64 = 14;
    /// [object] → [kind, status flags, bytes readable].
    pub const OBJ_INFO: u64 = 15;
    /// [object, flags] : its status flags (O_NONBLOCK, O_APPEND).
    pub const OBJ_SETFL: u64 = 16;
    /// [offset, flags] → [object]: an open file's position, shared from
    /// now on (its descriptor went to a child).
    pub const SHARE_FILE: u64 = 17;
    /// [object, 0: get | 1: set | 2: add, value] → [position before];
    /// [object, 3: take] → [position], waiting while another supervisor
    /// holds it; [object, 4: put, value | 5: let go] ends the hold.
    pub const FILE_POS: u64 = 18;
    /// [pid, request, argument words...] → [result, words out...]: a
    /// terminal ioctl.
    pub const TTY_IOCTL: u64 = 19;
    /// [pid, deadline ns (0: do not wait; u64::MAX: no deadline),
    /// objects and events...] → [ready, events...], or [0, token]: the
    /// supervisor is told (`sup::WAKE` with the token) when an object is
    /// ready or at the deadline.
    pub const POLL: u64 = 20;
    /// [pid, tid]: the call its thread `tid` passed (if any; tid 0: any
    /// of its threads) ends with -ERESTARTSYS.
    pub const INTERRUPT: u64 = 21;
    /// [pid, uid, euid, suid, gid, egid, sgid]: who it is, for kill's
    /// permission check and process_vm_readv's (`shared/vmrw.rs`).
    pub const CRED: u64 = 22;
    /// [pid, seconds ns value, interval ns] → [remaining ns, interval]:
    /// its real-time timer (alarm, setitimer ITIMER_REAL).
    pub const ALARM: u64 = 23;
    /// [pid, no child waits (SIGCHLD ignored or SA_NOCLDWAIT)].
    pub const NOCLDWAIT: u64 = 24;
    /// [] → pids of every live or zombie process.
    pub const PIDS: u64 = 25;
    /// [pid] → [parent, pgid, sid, state, tessera pid, uid, tty fg pgrp,
    /// start ns, comm (2 words)].
    pub const PROC: u64 = 26;
    /// [pid, stopped (1) or continued (0), signal]: job control; 1 if a
    /// stop is refused (a terminal's stop signal, an orphaned group).
    pub const STOPPED: u64 = 27;
    /// [pid] → [0: allowed, or the signal that stops it (SIGTTOU) or
    /// -errno]: may it change the terminal (tcsetpgrp, TCSETS)?
    pub const TTY_CHECK: u64 = 28;
    /// [objects...]: one more reference each (a new description of one).
    pub const HOLD: u64 = 29;
    /// [which (0: host name, 1: domain name), length or u64::MAX to only
    /// read, the name's bytes in words] → [length, the bytes in words]:
    /// the system's names (uname), as they were before a change.
    pub const UTS: u64 = 30;
    /// [object, new size (u64::MAX: only read)] → [capacity in bytes or
    /// -errno]:
    /// a pipe's size (`F_GETPIPE_SZ`, `F_SETPIPE_SZ`).
    pub const PIPE_SIZE: u64 = 31;
    /// [pid, dev, ino, 0: F_GETLK | 1: F_SETLK, type (F_RDLCK, F_WRLCK,
    /// F_UNLCK), start, end] → F_SETLK: [0 or -EAGAIN]; F_GETLK: [found,
    /// write, start, end, pid] of the lock in the way. A ninth word, the
    /// description's object, makes the lock the description's (F_OFD_*).
    pub const LOCK: u64 = 32;
    /// [pid, dev, ino]: its locks on that file go (it closed a descriptor).
    pub const UNLOCK_FILE: u64 = 33;
    /// [caller, pid] → [policy, priority, nice, affinity (0: every CPU)]
    /// of that process (or of the process of that thread; 0: the caller).
    pub const SCHED_GET: u64 = 34;
    /// [caller, pid, policy (u64::MAX: kept), priority] → [0 or -errno].
    pub const SCHED_SET: u64 = 35;
    /// [caller, which, who] → [20 - the lowest nice value, or -errno].
    pub const PRIO_GET: u64 = 36;
    /// [caller, which, who, nice] → [0 or -errno].
    pub const PRIO_SET: u64 = 37;
    /// [caller, pid, mask of CPUs there are] → [0 or -errno].
    pub const AFFINITY_SET: u64 = 38;
    /// [type, name key...] → [object or -errno]: an AF_UNIX socket is
    /// bound (the key: [0, device, inode] of its file, or [1, length,
    /// the abstract name's bytes in words]; `shared/unix.rs`).
    pub const UNIX_BIND: u64 = 80;
    /// [listener, backlog, pid, uid, gid] → [0 or -errno].
    pub const UNIX_LISTEN: u64 = 81;
    /// [type, pid, uid, gid, key length, name key..., the caller's name's
    /// length, its bytes in words] → [0, the connecting end's read and
    /// write ends, the listener's pid, uid, gid] (a datagram name: [0, a
    /// write end of its queue of the caller's own]) or [-errno].
    pub const UNIX_CONNECT: u64 = 82;
    /// [listener] → [0, read end, write end, the connector's pid, uid,
    /// gid] or [-errno].
    pub const UNIX_ACCEPT: u64 = 83;
    /// [operation, ...]: the loop block devices (`shared/loopdev.rs`).
    pub const LOOP: u64 = 90;
    /// [operation, ...]: the mount table (`shared/mounts.rs`).
    pub const MOUNT: u64 = 91;
    /// [pid, comm (2 words)]: `prctl(PR_SET_NAME)` renamed the process
    /// (its supervisor's own only).
    pub const COMM: u64 = 92;
    /// [operation (`fmap`), ...]: a MAP_SHARED mapping's memory object
    /// (`shared/fmap.rs`).
    pub const FMAP: u64 = 93;
    /// [setting (`sysctl::PID_MAX`, `sysctl::PIPE_MAX_SIZE`), new value
    /// or u64::MAX to only read] → [value or -errno]: a numeric setting of
    /// `/proc/sys` the shared server keeps (the supervisor checked the
    /// caller's right).
    pub const SYSCTL: u64 = 94;
    /// [pid, tessera pid]: a forked child's Tessera process (an exec
    /// tells its new one with `EXEC`).
    pub const TPID: u64 = 95;
    /// [pid] → [tid]: a number for a new thread of the process.
    pub const THREAD_NEW: u64 = 60;
    /// [pid, tid]: that thread ended (its number is free).
    pub const THREAD_END: u64 = 61;
    /// [setting (`linuxabi::sysv::SETTINGS`), length or u64::MAX to only
    /// read, the new text in words] → [length or -errno, the text in
    /// words]: an IPC setting of `/proc/sys/kernel`.
    pub const SYSV_SETTING: u64 = 70;
    /// [0: shm, 1: sem, 2: msg] → [length, text in words]: that file of
    /// `/proc/sysvipc`.
    pub const SYSV_LIST: u64 = 71;
    /// [count, semaphore mode] → [object]: a new eventfd.
    pub const EVENTFD: u64 = 72;
    /// [op, pid, ...] → a POSIX timer's call (`shared/ptimers.rs`).
    pub const PTIMER: u64 = 73;
    /// [op, object, ...] → a timerfd's call (`shared/ptimers.rs`).
    pub const TIMERFD: u64 = 74;
    /// [] or [modes, offset, freq, maxerror, esterror, status, constant,
    /// tick] (a validated change) → [1 and the old adjtime offset, or 0
    /// 0, then `linuxabi::ntp::Ntp`'s words]: the clock's parameters.
    pub const NTP: u64 = 75;
    /// [description's object, device, inode, 0 unlock | 1 shared | 2
    /// exclusive] → 0 or an error: flock (`objects.rs`).
    pub const FLOCK: u64 = 76;
    /// [pid, signal] → 0: the signal the process gets when its parent
    /// ends (PR_SET_PDEATHSIG; 0: none).
    pub const PDEATHSIG: u64 = 77;
    /// [device, inode, access (0 read, 1 write, 2 both), status flags
    /// (O_NONBLOCK, O_APPEND: the description's, shared)] →
    /// [end object, its kind, 1 if the other side is open] or [-errno]:
    /// an open of a named FIFO, which joins the pipe every open of the
    /// inode shares (`objects.rs`). ENXIO: a non-blocking writer and no
    /// reader. The end counts as open at once, as Linux's, so that a
    /// blocked opener lets the other side's open go on.
    pub const FIFO_OPEN: u64 = 78;
    /// [operation (`keys`), ...]: the key retention service's settings
    /// and list (`shared/keys.rs`).
    pub const KEYS: u64 = 105;
    /// [operation (`mqueue`), ...]: POSIX message queues
    /// (`shared/mqueue.rs`).
    pub const MQUEUE: u64 = 106;
    /// [operation (`inotify`), ...]: inotify instances
    /// (`shared/inotify.rs`).
    pub const INOTIFY: u64 = 120;
    /// [caller, pid, status flags (O_NONBLOCK)] → [object or -errno]: a
    /// pidfd of process `pid` (`shared/pidfd.rs`): ESRCH if there is none,
    /// EINVAL if `pid` names a thread that is not its process's first.
    pub const PIDFD_OPEN: u64 = 130;
    /// [object] → [pid, exited] or [-errno]: the process a pidfd names;
    /// EBADF: no pidfd; ESRCH: it was reaped (its pid may be another's).
    pub const PIDFD_PID: u64 = 131;
    /// [object, sender, signal, code, value] → as `KILL`: a signal to the
    /// process a pidfd names, never to a later process with its pid.
    pub const PIDFD_KILL: u64 = 132;
    /// [pid]: its SysV semaphore adjustments are applied now and dropped
    /// (unshare(CLONE_SYSVSEM), as at its end).
    pub const SYSV_UNDO: u64 = 133;
    /// [pid, 0 | 1 | u64::MAX: only read] → [the value before]: whether
    /// the process adopts its descendants' orphans
    /// (PR_SET_CHILD_SUBREAPER).
    pub const SUBREAPER: u64 = 145;
    /// [caller, pid, policy, sched_flags, nice, priority, runtime,
    /// deadline, period] → [0 or -errno]: sched_setattr (SCHED_GET
    /// answers the deadline's three after the affinity).
    pub const SCHED_ATTR_SET: u64 = 146;
    /// [caller, which, who, priority (u64::MAX: only read)] → [0, the
    /// priority read, or -errno]: ioprio_get and ioprio_set.
    pub const IOPRIO: u64 = 147;
    /// [object id] → [processes mapping the shared file object (0: none,
    /// and the object goes), or -errno]: whether a memfd is still mapped
    /// (F_SEAL_WRITE's EBUSY).
    pub const FMAP_MAPPED: u64 = 155;
    /// [pid] → [minor faults, user ns, system ns] of the children it
    /// waited for (getrusage RUSAGE_CHILDREN, times).
    pub const CHILD_USAGE: u64 = 170;
    /// [pid, soft s, hard s]: watch its CPU time for RLIMIT_CPU (both
    /// infinite: no watch) → [0].
    pub const CPU_LIMIT: u64 = 171;
    /// [pid, 0 | 1 | u64::MAX: only read] → [the value after]: whether
    /// the process is dumpable (PR_SET_DUMPABLE; cleared when its
    /// effective ids change, set again by an exec with equal real and
    /// effective ids), which process_vm_readv's check asks of a target.
    pub const DUMPABLE: u64 = 160;
}

/// Operations of `ctl::KEYS`, and request_key's place among keyctl's
/// (`pass::KEYCTL`).
/// The flags of `ctl::FORK`.
pub mod fork_flags {
    /// The parent waits for the child's exec or end.
    pub const VFORK: u64 = 1;
    /// The child gets its caller's parent (CLONE_PARENT).
    pub const SIBLING: u64 = 2;
}

pub mod keys {
    /// [index of `linuxabi::keys::SETTINGS`, value or u64::MAX to only
    /// read] → [value or -errno] (the supervisor checked root's right).
    pub const SETTING: u64 = 0;
    /// [pid, tid, uid | gid << 32] → [length, text in words]: `/proc/keys`
    /// as that thread sees it.
    pub const LIST: u64 = 1;
    /// `pass::KEYCTL`'s operation for request_key(type, description,
    /// callout, keyring): beyond keyctl's 32-bit operations.
    pub const REQUEST: u64 = 1 << 32;
}

/// Operations of `ctl::MQUEUE`.
pub mod mqueue {
    /// [uid | gid << 32, oflag, mode (umask applied), maxmsg, msgsize (0
    /// 0: the defaults), privileged, RLIMIT_MSGQUEUE, name length, name in
    /// words] → [object or -errno]: mq_open of a checked name.
    pub const OPEN: u64 = 0;
    /// [uid | gid << 32, privileged, name length, name in words] → [0 or
    /// -errno].
    pub const UNLINK: u64 = 1;
    /// [object, new flags (O_NONBLOCK) or u64::MAX] → [0, flags, maxmsg,
    /// msgsize, curmsgs] or [-errno].
    pub const ATTR: u64 = 2;
    /// [object, pid, uid, 0: remove | 1: register, kind, signal, value]
    /// → [0 or -errno].
    pub const NOTIFY: u64 = 3;
    /// [index of `linuxabi::mqueue::SETTINGS`, value or u64::MAX to only
    /// read] → [value or -errno] (the supervisor checked root's right).
    pub const SETTING: u64 = 4;
    /// `pass::MQ`'s operation, in the object word's bits 48 and up.
    pub const SEND: u64 = 0;
    pub const RECEIVE: u64 = 1;
}

/// Operations of `ctl::INOTIFY`.
pub mod inotify {
    /// [uid] → [object or -EMFILE]: a new instance.
    pub const INIT: u64 = 0;
    /// [object, device, inode, mask] → [wd or -errno].
    pub const ADD: u64 = 1;
    /// [object, wd] → [0 or -EINVAL]: the watch goes (IN_IGNORED).
    pub const RM: u64 = 2;
    /// [records of device, inode, mask, name length, the name in words]
    /// → [0]: what a process did to files (sent only while watches exist).
    pub const EVENT: u64 = 3;
    /// [0: max_user_instances | 1: max_user_watches | 2:
    /// max_queued_events, new value or u64::MAX to only read] → [value or
    /// -errno].
    pub const LIMIT: u64 = 4;
    /// [object] → [count, then wd, device, inode, mask of each watch]
    /// (the first 15: `/proc/PID/fdinfo`).
    pub const LIST: u64 = 5;
    /// [uid, fanotify_init flags, event_f_flags] → [object or -EMFILE]: a fanotify group
    /// (`shared/fanotify.rs`).
    pub const FAN_INIT: u64 = 10;
    /// [object, fanotify_mark flags, device, inode, mask] → [0 or -errno].
    pub const FAN_MARK: u64 = 11;
    /// [object, room in bytes] → [0: none queued | -errno | 1, mask, pid,
    /// event_f_flags, path length, path in words]: the group's first event, taken.
    pub const FAN_TAKE: u64 = 12;
    /// The key word of an EVENT's first record while fanotify marks
    /// exist: [FAN_INFO, pid, 0, path length, path in words], the process
    /// and the file the records are of.
    pub const FAN_INFO: u64 = u64::MAX;
}

/// A name as message words: its bytes, the last word padded with zeros.
pub fn name_words(name: &[u8]) -> Vec<u64> {
    name.chunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect()
}

/// Operations of `ctl::FMAP`.
pub mod fmap {
    /// [device, inode, offset, pages, pid] → [object, 1 if new]: the
    /// memory object of that range of the file; a new one is zeroed and
    /// its maker fills it (FILL) before it passes the mmap (`pass::FMAP`).
    pub const GET: u64 = 0;
    /// [object, offset, length, bytes in words] → 0: bytes of the file.
    pub const FILL: u64 = 1;
    /// [pid, address] → [object, base, size, file offset of base, mmap
    /// flags]: the
    /// object the process mapped where the address lies (ENOMEM: none).
    pub const FIND: u64 = 2;
    /// [object, offset, length ≤ 4096] → [length, bytes in words].
    pub const READ: u64 = 3;
    /// [pid, address] → [the lowest base above the address of an object
    /// the process mapped, or u64::MAX].
    pub const NEXT: u64 = 5;
    /// As FILL, into an object processes map: bytes a write(2) put in
    /// the file, so that the mappings see them.
    pub const WRITE: u64 = 4;
}

/// Operations of `shared::PASS` (word 0; the message is at most 64 bytes).
/// Each message's `pid` word carries the calling thread's tid in its high
/// half, so that a signal interrupts that thread's call and no other's.
pub mod pass {
    /// [pid, object, buffer, length, flags, name, name length address]:
    /// a read that may wait (an AF_UNIX datagram's sender's name is
    /// written at `name` unless it is 0).
    pub const READ: u64 = 1;
    /// [pid, object, buffer, length, flags]: a write that may wait.
    pub const WRITE: u64 = 2;
    /// [pid, which, options, status address, rusage address].
    pub const WAIT4: u64 = 3;
    /// [pid, idtype, id, options, siginfo address, rusage address].
    pub const WAITID: u64 = 4;
    /// [pid]: a vfork parent waits for its child to exec or end.
    pub const VFORK_WAIT: u64 = 6;
    /// [pid, object, address, prot | may << 32, flags, file, pages]: mmap
    /// of a file's range whose memory object (`ctl::FMAP`) is ready: it is
    /// shared into the caller, with the mapping's limit and file end
    /// (`caller_map_file`'s `may`, `file` and `pages`).
    pub const FMAP: u64 = 7;
    /// [pid, uid | gid << 32, type, description, payload, length,
    /// keyring]: add_key (`shared/keys.rs`).
    pub const KEY_ADD: u64 = 9;
    /// [pid, uid | gid << 32, operation, its four arguments]: keyctl, or
    /// request_key (`keys::REQUEST`).
    pub const KEYCTL: u64 = 10;
    /// [pid, uid, object | operation (`mqueue::SEND`, `RECEIVE`) << 48,
    /// buffer, length, priority (send) or its address (receive),
    /// deadline in ns since boot (u64::MAX: none)]: mq_timedsend or
    /// mq_timedreceive (`shared/mqueue.rs`).
    pub const MQ: u64 = 11;
    /// [pid, target pid, local iovecs, their count, remote iovecs,
    /// their count, 1: into the target]: process_vm_writev (1) or
    /// process_vm_readv (0), flags checked (`shared/vmrw.rs`).
    pub const VM_RW: u64 = 14;
    /// [pid, device, inode, kind (0 read or shared, 1 write or exclusive)
    /// | style (0 record lock, 1 description's, 2 flock) << 8, start, end,
    /// the description's object]: F_SETLKW, F_OFD_SETLKW or flock,
    /// waiting while a lock is in the way (`shared/locks.rs`).
    pub const LOCK: u64 = 16;
    /// Plus a SysV IPC call's number: [pid, uid | gid << 32, its
    /// arguments...] (semop as semtimedop with a deadline in ns since
    /// boot, u64::MAX: none).
    pub const SYSV: u64 = 0x1000;
    /// A WAITID `options` bit of the personality's own: a wait through a
    /// non-blocking pidfd, EAGAIN where WNOHANG would return 0.
    pub const WAIT_EAGAIN: u64 = 1 << 32;
    /// READ / WRITE flags.
    pub const NONBLOCK: u64 = 1;
    /// The reader ignores or blocks SIGTTIN (a background read fails).
    pub const TTIN_MASKED: u64 = 2;
}

/// Object kinds (`OBJ_INFO`).
pub mod obj {
    pub const PIPE_READ: u64 = 1;
    pub const PIPE_WRITE: u64 = 2;
    pub const TTY: u64 = 3;
    pub const FILE: u64 = 4;
    /// An eventfd's counter.
    pub const EVENTFD: u64 = 5;
    /// A timerfd: an eventfd's counter its timer raises.
    pub const TIMERFD: u64 = 6;
    /// A bound AF_UNIX stream or seqpacket socket (`shared/unix.rs`).
    pub const UNIX_NAME: u64 = 7;
    /// A named FIFO's end opened for reading and writing (O_RDWR).
    pub const PIPE_RDWR: u64 = 8;
    /// An inotify instance (`shared/inotify.rs`).
    pub const INOTIFY: u64 = 12;
    /// A pidfd: readable once its process has ended (`shared/pidfd.rs`).
    pub const PIDFD: u64 = 14;
    /// A POSIX message queue's description (`shared/mqueue.rs`).
    pub const MQUEUE: u64 = 17;
    /// A fanotify group (`shared/fanotify.rs`).
    pub const FANOTIFY: u64 = 13;
    /// The poll event (`ctl::POLL`) of a FIFO end whose other side has
    /// opened since it did: alone, not with the others.
    pub const FIFO_PARTNER: u64 = 1 << 16;
    /// The terminal's object, which every session's standard files share.
    pub const TTY_ID: u64 = 1;
}

/// A signal as the shared server tells a supervisor (`sup::SIGNAL`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signal {
    pub sig: u64,
    pub code: i64,
    pub pid: u64,
    pub uid: u64,
    pub status: i64,
    pub value: u64,
    /// The Linux pid it is for (0: not said): a supervisor can tell one
    /// for the process it is about to serve (sent before its `INIT`) from
    /// a late one for the process it served before.
    pub target: u64,
}

impl Signal {
    pub fn to_words(self) -> [u64; 7] {
        [
            self.sig,
            self.code as u64,
            self.pid,
            self.uid,
            self.status as u64,
            self.value,
            self.target,
        ]
    }

    pub fn from_words(w: &[u64]) -> Signal {
        let g = |i: usize| w.get(i).copied().unwrap_or(0);
        Signal {
            sig: g(0),
            code: g(1) as i64,
            pid: g(2),
            uid: g(3),
            status: g(4) as i64,
            value: g(5),
            target: g(6),
        }
    }
}

/// Words as message bytes.
pub fn bytes(words: &[u64]) -> Vec<u8> {
    // Sized once and filled in place: a fork's state is hundreds of words.
    let mut v = alloc::vec![0u8; words.len() * 8];
    for (b, w) in v.chunks_exact_mut(8).zip(words) {
        b.copy_from_slice(&w.to_le_bytes());
    }
    v
}

/// Message bytes as words (a partial last word is dropped).
pub fn words(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect()
}

/// Word `i` of a message, 0 past its end.
pub fn word(w: &[u64], i: usize) -> u64 {
    w.get(i).copied().unwrap_or(0)
}
