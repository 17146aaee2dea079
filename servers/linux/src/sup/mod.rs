//! A supervisor (seed 003's 監督プロセス): the one process that serves one
//! Linux process's system calls. The kernel turns each call the process
//! makes into a rendezvous with it; it serves the call from the process's
//! own state (descriptors, working directory, credentials, signal
//! dispositions and mask, limits), calls the file server for files and the
//! shared server for what processes share, and ends the rendezvous with
//! the call's return value. A call that must wait it passes on to the
//! shared server, which ends it later.
//!
//! Supervisors are pooled by the shared server: one whose process ended
//! waits, idle, to be given the next one (`proto::sup::INIT`).

mod argmem;
mod chroot;
mod close_range;
mod cputime;
mod epoll;
mod eventfd;
mod fallocate;
mod fanotify;
mod fdtable;
mod fifo;
mod fileend;
mod files;
mod fmap;
mod fowner;
mod fs;
mod fsinfo;
mod handles;
mod hints;
mod inotify;
mod kcmp;
mod keys;
mod kpipe;
mod lease;
mod locks;
mod loopdev;
mod maps;
mod memfd;
mod mlock;
mod mmsg;
mod mounts;
mod mqueue;
mod ntp;
mod off2f;
mod pidfd;
mod procs;
mod ready;
mod sched;
mod sched_attr;
mod sendfile;
mod settime;
mod signalfd;
mod signals;
mod sigqueue;
mod socket;
mod splice;
mod syscalls;
mod sysv;
mod thread_signals;
mod threads;
mod timers;
mod unix;
mod unix_named;
mod unnamed;
mod unshare;
mod vfs;
mod vmrw;
mod xattr;

use crate::proto::{self, sup as entry};
use alloc::collections::BTreeSet;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use fdtable::FdTable;
use linuxabi::errno;
use signals::Signals;
use tessera_rt::abi::AccInfo;
use tessera_rt::abi::linux::{LinuxCall, LinuxFault};
use tessera_rt::sys;
use tessera_rt::sys::calls;

/// A call's outcome as the dispatcher sees it.
pub enum Out {
    /// Return this value (a Linux return value, maybe a negated errno).
    Ret(u64),
    /// Already ended (passed on, exec'd, exited) or held for later.
    Done,
}

pub fn ret(r: Result<u64, i64>) -> Out {
    Out::Ret(match r {
        Ok(v) => v,
        Err(e) => errno::fail(e),
    })
}

/// Credentials (real, effective, saved; the file-system ids follow the
/// effective ones), supplementary groups and capabilities.
#[derive(Clone, Debug, Default)]
pub struct Creds {
    pub uid: u32,
    pub euid: u32,
    pub suid: u32,
    pub gid: u32,
    pub egid: u32,
    pub sgid: u32,
    pub groups: Vec<u32>,
    /// Capability sets (capget, capset): reported and kept by Linux's
    /// rules; privilege is still decided by the effective uid.
    pub caps: linuxabi::caps::Caps,
}

/// A call of its process the supervisor holds: it ends when a signal or
/// an event comes.
#[derive(Clone, Copy, Debug)]
pub enum Hold {
    /// pause, or sigsuspend (its frame restores the mask from before).
    Pause,
    /// A poll or select waiting for its registration's wake (the token).
    Poll { token: u64 },
    /// Stopped by a signal (the call it stopped in goes on when continued).
    Stopped,
    /// A read of a signalfd of set `mask` waiting for a signal of it.
    SignalRead { mask: u64, buf: u64, len: u64 },
}

pub struct Sup {
    pub me: u64,
    pub shared: u64,
    pub fs: fs::Fs,
    /// It serves a process (else it is idle, in the pool).
    pub active: bool,
    pub pid: u32,
    /// The Tessera process running the program.
    pub tpid: u64,
    pub fds: FdTable,
    /// The working directory: its path and the file server's number for it
    /// (None: the root).
    pub cwd: String,
    pub cwd_fd: Option<u32>,
    /// The root directory (`chroot`; None: the system's).
    pub root: Option<chroot::Root>,
    /// The program file, held open to run it: no one writes it meanwhile.
    pub exe_hold: Option<u32>,
    pub umask: u32,
    pub cred: Creds,
    pub sig: Signals,
    /// Resource limits (soft, hard) by RLIMIT_* number.
    pub limits: [[u64; 2]; 16],
    /// The program's path and arguments (`/proc`).
    pub exe: String,
    pub argv: Vec<Vec<u8>>,
    pub env_len: usize,
    /// The call held, if any, and its rendezvous.
    pub held: Option<(u64, Hold)>,
    /// The system call last passed on to the shared server (its number
    /// and arguments), for a restart after a signal.
    pub passed: Option<(u64, [u64; 6])>,
    /// The call a kernel-served or passed call gave up for the attention
    /// stop being served (the kernel's `RESTART_MARK` word), to restart or
    /// fail as the handler says; None at any other stop.
    pub gave_up: Option<u64>,
    /// `set_tid_address`: the word cleared when the process ends.
    pub clear_tid: u64,
    /// The personality (`personality(2)`) value.
    pub persona: u64,
    /// PR_SET_PDEATHSIG's signal (the shared server sends it).
    pub pdeath: u32,
    /// PR_SET_TIMERSLACK's nanoseconds, and the value 0 sets back (the
    /// parent's at the fork); timers do not use it: they expire on time.
    pub timerslack: u64,
    pub timerslack_default: u64,
    /// prctl's flags of the process (`PRCTL_*`): fork and exec keep them.
    pub prctl_flags: u64,
    /// The membarrier commands it registered for (fork keeps them, exec
    /// forgets).
    pub membarrier: u64,
    /// Each thread's robust futex list (set_robust_list): tid, head.
    pub robust: Vec<(u32, u64)>,
    /// execve's buffers for reading its arguments (`argmem.rs`).
    pub arg_pages: argmem::ArgPages,
    /// It has taken a record lock (closing a file's descriptor then tells
    /// the shared server).
    pub has_locks: bool,
    /// Its MAP_SHARED file mappings (`fmap.rs`).
    pub fmaps: Vec<fmap::FileMap>,
    /// The files it maps whose end the kernel keeps (`fileend.rs`): a
    /// set, as every write of a process that maps files looks there.
    pub mapped_files: BTreeSet<u64>,
    /// Signals that came while it served no process, each naming its
    /// target: those for the child it is then handed (`INIT`) are that
    /// child's (sent as soon as the child ran, before its state came).
    pub early: Vec<proto::Signal>,
    /// Whether the shared server knows the Tessera process (exec tells
    /// it; a forked child's supervisor at the first call it holds).
    pub tpid_told: bool,
    /// What its process has locked with mlock and mlockall (VmLck).
    pub locked: linuxabi::mlock::Locked,
    /// Its own CPU time when it took its process (`cputime.rs`).
    pub serving_since: u64,
    /// It is serving one of its process's calls right now (a signal it
    /// posts itself is delivered as the call ends).
    pub in_call: bool,
    /// The value the call a stopped process stopped in returns with.
    pub stopped_value: u64,
    /// The call a stop interrupted, if it was in one (`gave_up` when it
    /// is continued).
    pub stopped_call: Option<u64>,
    /// The fault being delivered: (vector, error code) for the frame.
    pub fault_trap: (u64, u64),
    /// A timed signal wait: (set, siginfo address, deadline).
    pub waiting_set: Option<(u64, u64, u64)>,
    /// A poll or timed wait it holds.
    pub poll_req: Option<syscalls::PollReq>,
    /// A FIFO's open waiting for the other side, and the end an open just
    /// made that must wait (`fifo.rs`).
    pub fifo_wait: Option<fifo::FifoWait>,
    pub fifo_pending: Option<fdtable::OfdRef>,
    /// A splice, tee or vmsplice waiting for a pipe (`splice.rs`).
    pub splice_wait: Option<splice::SpliceWait>,
    /// Its process just ended: back to the pool.
    pub ended: bool,
    /// What the shared server answered when told of the end and of this
    /// supervisor's being free in one request (true: end instead).
    pub idle_answer: Option<bool>,
    /// Its sockets' server, and socket calls and epoll waits it holds.
    pub net: socket::Net,
    /// The process's threads.
    pub threads: threads::Threads,
    /// A call's return (rid, value) left to the loop's next accept, which
    /// makes both in one system call (`caller_return_acc`): the process
    /// then gets the CPU directly while the supervisor waits.
    pub reply: Option<(u64, u64)>,
    /// Whether inotify watches exist anywhere (the supervisor's, kept
    /// from one process to the next: `inotify.rs`).
    pub watching: inotify::Watching,
}

/// Linux's default limits (soft, hard), by RLIMIT_* number.
/// `Sup::prctl_flags`: PR_SET_NO_NEW_PRIVS, PR_SET_THP_DISABLE.
pub const PRCTL_NO_NEW_PRIVS: u64 = 1;
pub const PRCTL_THP_DISABLE: u64 = 2;

/// Linux's default timer slack (PR_GET_TIMERSLACK), 50 µs.
pub const TIMERSLACK: u64 = 50_000;

pub const DEFAULT_LIMITS: [[u64; 2]; 16] = {
    const INF: u64 = u64::MAX;
    [
        [INF, INF],         // CPU
        [INF, INF],         // FSIZE
        [INF, INF],         // DATA
        [8 << 20, INF],     // STACK
        [0, INF],           // CORE
        [INF, INF],         // RSS
        [3836, 3836],       // NPROC
        [1024, 4096],       // NOFILE
        [8 << 20, 8 << 20], // MEMLOCK
        [INF, INF],         // AS
        [INF, INF],         // LOCKS
        [3836, 3836],       // SIGPENDING
        [819200, 819200],   // MSGQUEUE
        [0, 0],             // NICE
        [0, 0],             // RTPRIO
        [INF, INF],         // RTTIME
    ]
};

impl Sup {
    fn new() -> Sup {
        let fs_pid = sys::wait_for_name(tessera_api::fs::NAME);
        let shared = sys::name_lookup(proto::NAME).unwrap_or(0);
        let mut fs = fs::Fs::new(fs_pid);
        fs.mounts.shared = shared;
        Sup {
            me: sys::getpid(),
            shared,
            fs,
            active: false,
            pid: 0,
            tpid: 0,
            fds: FdTable::default(),
            cwd: String::from("/"),
            cwd_fd: None,
            root: None,
            exe_hold: None,
            umask: 0o022,
            cred: Creds::default(),
            sig: Signals::default(),
            limits: DEFAULT_LIMITS,
            exe: String::new(),
            argv: Vec::new(),
            env_len: 0,
            held: None,
            passed: None,
            gave_up: None,
            clear_tid: 0,
            persona: 0,
            pdeath: 0,
            timerslack: TIMERSLACK,
            timerslack_default: TIMERSLACK,
            prctl_flags: 0,
            membarrier: 0,
            robust: Vec::new(),
            arg_pages: Default::default(),
            has_locks: false,
            fmaps: Vec::new(),
            mapped_files: BTreeSet::new(),
            early: Vec::new(),
            tpid_told: true,
            locked: linuxabi::mlock::Locked::default(),
            serving_since: 0,
            in_call: false,
            stopped_value: 0,
            stopped_call: None,
            fault_trap: (0, 0),
            waiting_set: None,
            poll_req: None,
            fifo_wait: None,
            splice_wait: None,
            fifo_pending: None,
            ended: false,
            idle_answer: None,
            net: socket::Net::default(),
            threads: threads::Threads::default(),
            reply: None,
            watching: Default::default(),
        }
    }

    // ---- the waiting process's memory ----

    pub fn read_mem(&self, rid: u64, addr: u64, len: usize) -> Result<Vec<u8>, i64> {
        let mut v = vec![0u8; len];
        if len > 0 {
            calls::caller_read(rid, addr, &mut v).map_err(|_| errno::EFAULT)?;
        }
        Ok(v)
    }

    pub fn write_mem(&self, rid: u64, addr: u64, data: &[u8]) -> Result<(), i64> {
        if data.is_empty() {
            return Ok(());
        }
        calls::caller_write(rid, addr, data)
            .map(|_| ())
            .map_err(|_| errno::EFAULT)
    }

    pub fn read_u64(&self, rid: u64, addr: u64) -> Result<u64, i64> {
        let mut b = [0u8; 8];
        calls::caller_read(rid, addr, &mut b).map_err(|_| errno::EFAULT)?;
        Ok(u64::from_le_bytes(b))
    }

    pub fn write_u64(&self, rid: u64, addr: u64, v: u64) -> Result<(), i64> {
        self.write_mem(rid, addr, &v.to_le_bytes())
    }

    pub fn write_u32(&self, rid: u64, addr: u64, v: u32) -> Result<(), i64> {
        self.write_mem(rid, addr, &v.to_le_bytes())
    }

    /// A NUL-terminated string of at most `max` bytes (its NUL not
    /// counted): EFAULT if unreadable, ENAMETOOLONG if longer.
    pub fn read_cstr(&self, rid: u64, addr: u64, max: usize) -> Result<Vec<u8>, i64> {
        if addr == 0 {
            return Err(errno::EFAULT);
        }
        let mut out = Vec::new();
        let mut at = addr;
        // Most strings are short: a first read of a few hundred bytes,
        // not the rest of the page (a path in a buffer near the start of
        // its page cost 4 KiB of zeroing and copying).
        let mut step = 256;
        loop {
            // Up to the end of the page: the next one may not exist.
            let n = ((4096 - (at % 4096)) as usize).min(step);
            step = 4096;
            let mut chunk = vec![0u8; n.min(max + 1 - out.len())];
            calls::caller_read(rid, at, &mut chunk).map_err(|_| errno::EFAULT)?;
            if let Some(z) = chunk.iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..z]);
                return Ok(out);
            }
            out.extend_from_slice(&chunk);
            if out.len() > max {
                return Err(errno::ENAMETOOLONG);
            }
            at += chunk.len() as u64;
        }
    }

    /// A path argument: at most PATH_MAX - 1 bytes; empty is ENOENT.
    pub fn read_path(&self, rid: u64, addr: u64) -> Result<String, i64> {
        let p = self.read_cstr(rid, addr, linuxabi::path::PATH_MAX - 1)?;
        if p.is_empty() {
            return Err(errno::ENOENT);
        }
        String::from_utf8(p).map_err(|_| errno::EINVAL)
    }

    /// A path that may be empty when `empty` (AT_EMPTY_PATH) says so.
    pub fn read_path_empty(&self, rid: u64, addr: u64, empty: bool) -> Result<String, i64> {
        if !empty {
            return self.read_path(rid, addr);
        }
        let p = self.read_cstr(rid, addr, linuxabi::path::PATH_MAX - 1)?;
        String::from_utf8(p).map_err(|_| errno::EINVAL)
    }

    // ---- talking to the shared server ----

    /// A CTL request: the reply's words.
    pub fn ctl(&self, words: &[u64]) -> Vec<u64> {
        // On the stack: a heap block taken and given back at every
        // request (a fork, an exec and an end each make some) cost more.
        let mut reply = [0u8; 512];
        // The request too, when it fits (nearly all do: 16 words, a
        // larger buffer's zeroing cost more than it saved).
        let mut small = [0u8; 128];
        let heap;
        let msg = if words.len() * 8 <= small.len() {
            for (b, w) in small.as_chunks_mut::<8>().0.iter_mut().zip(words) {
                *b = w.to_le_bytes();
            }
            &small[..words.len() * 8]
        } else {
            heap = proto::bytes(words);
            &heap[..]
        };
        match sys::call(self.shared, proto::shared::CTL, msg, &mut reply) {
            Ok(n) => proto::words(&reply[..n]),
            Err(_) => vec![errno::fail(errno::EIO)],
        }
    }

    /// A CTL request whose reply is one result word.
    pub fn ctl1(&self, words: &[u64]) -> Result<u64, i64> {
        let v = proto::word(&self.ctl(words), 0);
        match errno::of(v) {
            Some(e) => Err(e),
            None => Ok(v),
        }
    }

    /// Passes the process's call `rid` (system call `nr`) on to the shared
    /// server with message `words`: at most 8, which the compiler checks,
    /// as the kernel refuses a longer one and the call would end in EIO.
    pub fn pass<const N: usize>(&mut self, rid: u64, nr: u64, args: [u64; 6], words: &[u64; N]) -> Out {
        const { assert!(N <= 8, "a pass message is at most 64 bytes") };
        let tid = self.threads.caller;
        let mut words = *words;
        if let Some(pid) = words.get_mut(1) {
            *pid |= (tid as u64) << 32;
        }
        let msg = proto::bytes(&words);
        // The shared server's answer lets the thread run.
        self.sync_signals();
        match calls::linux_pass(rid, self.shared, proto::shared::PASS, &msg) {
            Ok(_) => {
                self.passed = Some((nr, args));
                self.threads.passed.retain(|e| e.0 != tid);
                self.threads.passed.push((tid, nr, args));
                Out::Done
            }
            Err(_) => Out::Ret(errno::fail(errno::EIO)),
        }
    }

    // ---- the loop ----

    /// Ends the process's call `rid` with `value`, delivering first any
    /// signal that can be (its handler runs before the program sees the
    /// value).
    pub fn answer(&mut self, rid: u64, value: u64) {
        // As the thread whose call it is: its mask, stack and own signals.
        match self.thread_of(rid) {
            Some(tid) => self.as_thread(tid, |me| me.answer_as(rid, value)),
            None => self.answer_as(rid, value),
        }
    }

    fn answer_as(&mut self, rid: u64, value: u64) {
        // A call that gave up for a signal is restarted even when no
        // handler runs (a stop and continue it does not notice).
        let restart = value == errno::fail(errno::ERESTARTSYS) || value == errno::fail(errno::ERESTARTNOINTR);
        if self.active && (self.sig.deliverable() != 0 || restart) {
            match self.deliver(rid, Some(value)) {
                signals::Delivered::Ended => return,
                signals::Delivered::Frames(v) => {
                    self.sync_signals();
                    let _ = calls::caller_return(rid, v);
                    return;
                }
                signals::Delivered::None => {}
            }
        }
        if self.active {
            self.sync_signals();
        }
        // An earlier return not yet made goes first.
        if let Some((r, v)) = self.reply.replace((rid, value)) {
            let _ = calls::caller_return(r, v);
        }
    }

    /// Makes the return left for the loop, if any, now.
    fn flush_reply(&mut self) {
        if let Some((r, v)) = self.reply.take() {
            let _ = calls::caller_return(r, v);
        }
    }

    /// Waits for the next call on `mask`, making the return left for the
    /// loop on the way (one system call).
    fn next_call(&mut self, mask: u64, info: &mut AccInfo) -> Result<u64, tessera_rt::abi::Error> {
        // On an error (the return refused, the process killed meanwhile)
        // nothing was accepted: a plain accept follows.
        if let Some((r, v)) = self.reply.take()
            && let Ok(rid) = calls::caller_return_acc(r, v, mask, info)
        {
            return Ok(rid);
        }
        sys::acc(mask, info)
    }

    fn syscall(&mut self, rid: u64, info: &AccInfo) {
        let mut c = LinuxCall::default();
        let n = core::mem::size_of::<LinuxCall>().min(info.inline.len());
        let w = proto::words(&info.inline[..n]);
        c.nr = proto::word(&w, 0);
        for i in 0..6 {
            c.args[i] = proto::word(&w, 1 + i);
        }
        if self.tpid == 0 {
            self.tpid = info.caller;
        }
        self.fds.tpid = self.tpid;
        self.thread_arrives(rid, proto::word(&w, 7));
        self.passed = None;
        match self.dispatch(rid, c.nr, c.args) {
            Out::Ret(v) => self.answer(rid, v),
            Out::Done => {
                if matches!(self.held, Some((r, _)) if r == rid) {
                    self.threads.held_by = self.threads.caller;
                    self.threads.held_rid = rid;
                    // /proc shows a process asleep from its Tessera
                    // process's state, which the shared server learns
                    // for a forked child here, once it waits in a call
                    // held: before, the child blocked on its supervisor's
                    // start would read as asleep before it ever slept.
                    if !self.tpid_told {
                        self.tpid_told = true;
                        self.ctl(&[proto::ctl::TPID, self.pid as u64, self.tpid]);
                    }
                }
                // A signal posted while this call was on its way here asked
                // for the process's attention, which it sees only on its way
                // back to user mode: a wait held now would never end. The
                // same holds for a call just passed to the shared server
                // (the kick's interrupt reaches it after the call: its
                // requests are taken in order).
                let waits = matches!(self.held, Some((r, Hold::Pause | Hold::Poll { .. } | Hold::SignalRead { .. })) if r == rid);
                if (waits || self.passed.is_some()) && self.sig.deliverable() != 0 {
                    self.kick_thread(self.threads.caller);
                }
            }
        }
    }

    fn fault(&mut self, rid: u64, info: &AccInfo) {
        let n = core::mem::size_of::<LinuxFault>().min(info.inline.len());
        let w = proto::words(&info.inline[..n]);
        let f = LinuxFault {
            vector: proto::word(&w, 0),
            error_code: proto::word(&w, 1),
            address: proto::word(&w, 2),
            rip: proto::word(&w, 3),
            pid: proto::word(&w, 4),
        };
        self.thread_arrives(rid, f.pid);
        self.passed = None;
        self.on_fault(rid, &f);
    }

    fn attention(&mut self, rid: u64, restart: u64) {
        // A call the kernel served gave up its wait for this stop: it is
        // restarted or fails with EINTR as the signal's handler says.
        // (Not `passed`: that is the last call passed on, by any thread,
        // maybe long done; the call that gave up may be another.)
        self.gave_up = (restart & tessera_rt::abi::linux::RESTART_MARK != 0)
            .then_some(restart & !tessera_rt::abi::linux::RESTART_MARK);
        let delivered = self.deliver(rid, None);
        self.gave_up = None;
        if matches!(self.held, Some((r, _)) if r == rid) {
            self.threads.held_by = self.threads.caller;
            self.threads.held_rid = rid;
        }
        match delivered {
            signals::Delivered::Ended => {}
            // Left to the loop's next accept, as a call's return is: the
            // thread then gets the CPU straight away. Woken into the run
            // queue instead, it waited behind threads that sent it more
            // signals first, and a thread under a storm of them went from
            // one handler to the next without ever getting past them.
            _ => {
                self.sync_signals();
                if let Some((r, v)) = self.reply.replace((rid, 0)) {
                    let _ = calls::caller_return(r, v);
                }
            }
        }
    }

    fn serve(&mut self, info: &AccInfo, rid: u64) {
        if rid == 0 {
            // An event from the kernel: a watched kernel pipe changed, so
            // a held poll looks again.
            if info.inline[..8] != [0; 8]
                && self.active
                && let Some((_, Hold::Poll { token })) = self.held
            {
                self.as_thread(self.threads.held_by, |me| me.poll_woken(token));
            }
            return;
        }
        match info.entry {
            // Only the kernel's routing hook calls these entries: a process
            // calling one itself would be served as the process this
            // supervisor serves, with its files, memory and signals.
            e if e < 64
                && tessera_rt::abi::linux::entry::ALL & (1 << e) != 0
                && info.flags & tessera_rt::abi::ACC_ROUTED == 0 =>
            {
                let _ = sys::rv_fail(rid, tessera_rt::abi::Error::Denied);
            }
            tessera_rt::abi::linux::entry::SYSCALL if self.active => self.syscall(rid, info),
            tessera_rt::abi::linux::entry::FAULT if self.active => self.fault(rid, info),
            tessera_rt::abi::linux::entry::ATTENTION if self.active => {
                let w = proto::words(&info.inline[..(info.len as usize).min(64)]);
                self.thread_arrives(rid, proto::word(&w, 7));
                self.attention(rid, proto::word(&w, 1))
            }
            entry::INIT => self.init(rid, info),
            entry::SIGNAL => {
                let w = proto::words(&info.inline[..(info.len as usize).min(64)]);
                let _ = sys::endr(rid, &[]);
                let s = proto::Signal::from_words(&w);
                if s.sig == 0 && s.code == proto::sup::WATCHING {
                    self.watching_notice(&s);
                } else if self.active {
                    // One sent to the process it served before, as that one
                    // ended, is not this one's.
                    if s.target == 0 || s.target == self.pid as u64 {
                        self.signal_posted(s);
                    }
                } else if s.target != 0 && self.early.len() < EARLY_SIGNALS {
                    self.early.push(s);
                }
            }
            entry::WAKE => {
                let w = proto::words(&info.inline[..(info.len as usize).min(64)]);
                let _ = sys::endr(rid, &[]);
                if self.active {
                    let tid = if self.held.is_some() { self.threads.held_by } else { 0 };
                    self.as_thread(tid, |me| me.poll_woken(proto::word(&w, 0)));
                }
            }
            _ => {
                // A call of a process this supervisor no longer serves.
                let _ = sys::rv_fail(rid, tessera_rt::abi::Error::NotFound);
            }
        }
    }
}

/// Signals a supervisor keeps while it serves no process.
const EARLY_SIGNALS: usize = 32;

pub fn main() -> i32 {
    let mut s = Sup::new();
    let mut info = AccInfo::default();
    loop {
        let mask = if s.active { entry::ENTRIES } else { entry::IDLE_ENTRIES };
        let Ok(rid) = s.next_call(mask, &mut info) else {
            return 1;
        };
        s.serve(&info, rid);
        if s.done_with_process() {
            s.flush_reply();
            // Back to the pool (if the end's report did not already say
            // so); the shared server may prefer it gone.
            let end = match s.idle_answer.take() {
                Some(end) => end,
                None => s.ctl(&[proto::ctl::IDLE]).first() == Some(&1),
            };
            if end {
                return 0;
            }
        }
    }
}

/// An errno's text, for the launcher's messages.
pub fn describe_errno(e: i64) -> &'static str {
    match e {
        errno::ENOENT => "no such file or directory",
        errno::EACCES => "permission denied",
        errno::ENOEXEC => "not an executable",
        errno::ENOMEM => "out of memory",
        errno::EIO => "input/output error",
        errno::ENOTDIR => "not a directory",
        errno::EISDIR => "is a directory",
        errno::E2BIG => "argument list too long",
        _ => "cannot run",
    }
}
