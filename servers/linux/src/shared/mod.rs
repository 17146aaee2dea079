//! The personality's shared server (`linux`): what Linux processes share
//! and what they wait for. The process table with Linux's pids, parents,
//! process groups and sessions (`procs.rs`); waiting for children and
//! routing signals between processes; pipes and the terminal with its
//! line discipline (`objects.rs`); record locks (`locks.rs`); timers, POSIX
//! timers and timerfds (`ptimers.rs`); eventfds (`eventfd.rs`); SysV IPC
//! (`sysv.rs`). Each
//! Linux process's own state is its supervisor's (`crate::sup`).
//!
//! Supervisors call it (`CTL`) and pass it the calls that must wait
//! (`PASS`): it holds those and ends them itself, writing into the waiting
//! process's memory (seed 003: the process blocked in its call, the data
//! copied once). It never waits for a supervisor: a signal goes to one as
//! a request. Console input and its alarm come as events.

mod cpulimit;
mod eventfd;
mod fanotify;
mod fmap;
mod inotify;
mod keys;
mod locks;
pub mod loopdev;
pub mod mounts;
mod mqueue;
mod objects;
mod pidfd;
mod procs;
mod ptimers;
mod sched;
mod sysv;
mod unix;
mod vmrw;

use crate::proto::{self, ctl, shared as entry, word};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;
use linuxabi::errno;
use tessera_rt::abi::{AccInfo, SpawnOptions};
use tessera_rt::sys;
use tessera_rt::sys::calls;

pub use procs::{CpuTimes, Proc};

/// Supervisors kept idle for the next process.
const POOL_MAX: usize = 16;
/// Supervisors started ahead at boot.
const POOL_START: usize = 2;

/// How a request ends.
pub enum End {
    /// Replies with these words.
    Reply(Vec<u64>),
    /// The call stays held (answered later).
    Held,
}

fn reply(w: &[u64]) -> End {
    End::Reply(w.to_vec())
}

fn result(v: i64) -> End {
    End::Reply(alloc::vec![v as u64])
}

/// A Linux call passed here and waiting: the rendezvous it is, and the
/// process waiting in it.
#[derive(Clone, Copy, Debug)]
pub struct Held {
    pub rid: u64,
    /// The waiting process's Tessera pid.
    pub tpid: u64,
    pub pid: u32,
    /// The waiting thread's tid.
    pub tid: u32,
    pub what: Waiting,
}

#[derive(Clone, Copy, Debug)]
pub enum Waiting {
    Read {
        obj: u64,
        buf: u64,
        len: u64,
        flags: u64,
        /// Where an AF_UNIX datagram's sender's name goes, and its
        /// length (0: not wanted).
        from: (u64, u64),
    },
    Write {
        obj: u64,
        buf: u64,
        len: u64,
        done: u64,
        flags: u64,
    },
    Wait4 {
        which: i64,
        options: u64,
        status: u64,
        rusage: u64,
    },
    Waitid {
        idtype: u64,
        id: u64,
        options: u64,
        info: u64,
    },
    Vfork {
        child: u32,
    },
    /// A lock waited for (`locks.rs`): a record lock (style `locks::POSIX`),
    /// a description's (`OFD`) or a flock (`FLOCK`) of kind 0 (read,
    /// shared) or 1 (write, exclusive).
    Lock {
        file: (u64, u64),
        range: (u64, u64),
        kind: u64,
        style: u64,
        obj: u64,
    },
}

pub struct Shared {
    pub procs: procs::Table,
    pub objs: objects::Objects,
    /// Calls waiting here, in the order they came.
    pub held: Vec<Held>,
    /// Launchers waiting for a process to end: (rid, pid).
    pub launchers: Vec<(u64, u32)>,
    /// Who started each launcher's process (Linux pid, Tessera pid): only
    /// it may wait for that process (`ctl::WAIT`).
    pub starters: Vec<(u32, u64)>,
    /// Every supervisor this server started and has not seen end: only
    /// they (and, for its loop device, a mount's device server) may make
    /// its requests (`Shared::allowed`).
    supervisors: BTreeSet<u64>,
    /// Idle supervisors.
    pool: Vec<u64>,
    /// Supervisors told to end (the pool was full): reaped once ended, so
    /// that none stays behind as an ended process holding its memory.
    retired: Vec<u64>,
    /// Signal requests sent and not yet collected.
    pub(super) requests: u64,
    /// Something happened that held calls may wait for.
    pub(super) woke: bool,
    /// Real-time timers: pid → (deadline, interval) in ns since boot.
    pub timers: BTreeMap<u32, (u64, u64)>,
    alarm_at: u64,
    /// The host and domain names (Linux's start: "(none)").
    uts: [Vec<u8>; 2],
    /// The clock's NTP parameters (`adjtimex`).
    ntp: linuxabi::ntp::Ntp,
    /// Every process's record locks.
    pub locks: linuxabi::reclock::Locks,
    /// The virtual init's scheduling attributes (it has no record).
    pub init_sched: linuxabi::sched::Sched,
    /// SysV shared memory, semaphores and message queues.
    pub sysv: sysv::SysV,
    /// POSIX timers and timerfd's timers.
    pub ptimers: ptimers::PTimers,
    /// RLIMIT_CPU watches (`cpulimit.rs`).
    pub cpu_limits: cpulimit::CpuLimits,
    /// The loop block devices (`loopdev.rs`).
    pub loops: linuxabi::loopdev::Table,
    /// The mounted file systems (`mounts.rs`).
    pub mounts: mounts::Mounts,
    /// MAP_SHARED file mappings' memory (`fmap.rs`).
    pub fmaps: fmap::FileMaps,
    /// `/proc/sys/fs/pipe-max-size`: the most F_SETPIPE_SZ gives a
    /// process without CAP_SYS_RESOURCE, and the most a new pipe of one
    /// holds.
    pub pipe_max_size: u64,
    /// The key retention service (`keys.rs`).
    pub keys: linuxabi::keys::Keys,
}

impl Shared {
    fn new() -> Shared {
        Shared {
            procs: procs::Table::new(),
            objs: objects::Objects::new(),
            held: Vec::new(),
            launchers: Vec::new(),
            starters: Vec::new(),
            supervisors: BTreeSet::new(),
            pool: Vec::new(),
            retired: Vec::new(),
            requests: 0,
            woke: false,
            timers: BTreeMap::new(),
            alarm_at: 0,
            uts: [b"(none)".to_vec(), b"(none)".to_vec()],
            ntp: Default::default(),
            locks: Default::default(),
            init_sched: Default::default(),
            sysv: Default::default(),
            ptimers: Default::default(),
            cpu_limits: Default::default(),
            loops: Default::default(),
            mounts: Default::default(),
            fmaps: Default::default(),
            pipe_max_size: linuxabi::pipe::MAX_SIZE as u64,
            keys: Default::default(),
        }
    }

    /// `ctl::SYSCTL`: a setting of `/proc/sys`, read and maybe replaced.
    fn sysctl(&mut self, w: &[u64]) -> End {
        let new = (word(w, 2) != u64::MAX).then(|| word(w, 2));
        let r = match word(w, 1) {
            proto::sysctl::PID_MAX => match new {
                Some(v) => self.procs.set_pid_max(v).map(|()| v),
                None => Ok(self.procs.pid_max as u64),
            },
            proto::sysctl::PIPE_MAX_SIZE => match new.map(linuxabi::pipe::round_size) {
                // Linux refuses what rounds to nothing (beyond 2^31); more
                // than a pipe here can hold would be a limit never met.
                Some(None) => Err(errno::EINVAL),
                Some(Some(v)) if v > linuxabi::pipe::MAX_SIZE as u64 => Err(errno::EINVAL),
                Some(Some(v)) => {
                    self.pipe_max_size = v;
                    Ok(v)
                }
                None => Ok(self.pipe_max_size),
            },
            _ => Err(errno::EINVAL),
        };
        result(r.map_or_else(|e| -e, |v| v as i64))
    }

    /// `ctl::UTS`: a name of the system, read and maybe replaced (the
    /// supervisor checked the caller's right and the length).
    fn uts(&mut self, w: &[u64]) -> End {
        let Some(name) = self.uts.get_mut((word(w, 1) as usize).min(2)) else {
            return result(-errno::EINVAL);
        };
        let mut out = alloc::vec![name.len() as u64];
        out.extend(proto::name_words(name));
        let len = word(w, 2);
        if len != u64::MAX {
            let bytes = proto::bytes(w.get(3..).unwrap_or(&[]));
            let Some(new) = bytes.get(..len as usize) else {
                return result(-errno::EINVAL);
            };
            *name = new.to_vec();
        }
        End::Reply(out)
    }

    /// `ctl::NTP`: the parameters, maybe changed by a request the
    /// supervisor validated.
    fn ntp(&mut self, w: &[u64]) -> End {
        let told = match w.get(1..) {
            Some(r) if !r.is_empty() => {
                let v = |i: usize| word(r, i) as i64;
                let req = linuxabi::ntp::Request {
                    modes: v(0) as u32,
                    offset: v(1),
                    freq: v(2),
                    maxerror: v(3),
                    esterror: v(4),
                    status: v(5),
                    constant: v(6),
                    tick: v(7),
                    time: (0, 0),
                };
                self.ntp.apply(&req)
            }
            _ => None,
        };
        let mut out = alloc::vec![told.is_some() as u64, told.unwrap_or(0) as u64];
        out.extend(self.ntp.to_words());
        End::Reply(out)
    }

    /// A supervisor for a new process: an idle one, or a new one.
    pub fn supervisor(&mut self) -> Result<u64, i64> {
        self.reap_retired();
        while let Some(s) = self.pool.pop() {
            if sys::alive(s) {
                self.tell_one(s);
                return Ok(s);
            }
            self.supervisors.remove(&s);
        }
        let s = self.spawn_supervisor().ok_or(errno::EAGAIN)?;
        self.tell_one(s);
        Ok(s)
    }

    /// A new supervisor, a child of this server (so it may hand processes
    /// to its siblings and this server may end their calls).
    fn spawn_supervisor(&mut self) -> Option<u64> {
        let args: &[&str] = if crate::EAGER.load(core::sync::atomic::Ordering::Relaxed) {
            &["--supervisor", "eager"]
        } else {
            &["--supervisor"]
        };
        let s = sys::spawn("linux", args, &SpawnOptions::DEFAULT).ok()?;
        self.supervisors.insert(s);
        Some(s)
    }

    /// Whether the call `info` may be served. The requests (`CTL`,
    /// `TTY_WRITE`) act for whichever Linux process their words name, so
    /// they are taken from this server's supervisors only, except a
    /// launcher's START and its WAIT for the process it started, and a
    /// mount's device server asking for its loop device's file; a passed
    /// call (`PASS`) must be one the kernel routed from a Linux process
    /// (`ACC_ROUTED`), which its supervisor passed on. Events (`TICK`,
    /// `INPUT`) are the kernel's, never calls. Any other process could
    /// otherwise signal, reap, or change the credentials of any Linux
    /// process by naming it.
    fn allowed(&self, info: &AccInfo, rid: u64) -> bool {
        let supervisor = self.supervisors.contains(&info.caller);
        match info.entry {
            entry::CTL if supervisor => true,
            entry::CTL => {
                let n = (info.len as usize).min(info.inline.len());
                let w = proto::words(&info.inline[..n]);
                match word(&w, 0) {
                    ctl::START => true,
                    ctl::LOOP => self.mounts.is_loop_server(info.caller),
                    ctl::WAIT => self.starters.contains(&(word(&w, 1) as u32, info.caller)),
                    _ => false,
                }
            }
            entry::PASS => info.flags & tessera_rt::abi::ACC_ROUTED != 0,
            entry::TTY_WRITE => supervisor,
            _ => rid == 0,
        }
    }

    /// Supervisor `sup` is free: back to the pool, or told to end (1) if
    /// the pool is full.
    fn idle(&mut self, sup: u64) -> End {
        self.reap_retired();
        if self.pool.len() < POOL_MAX {
            self.pool.push(sup);
            result(0)
        } else {
            self.retired.push(sup);
            result(1)
        }
    }

    /// Waits for the retired supervisors that have ended (at once: they
    /// have); the others are looked at again next time.
    fn reap_retired(&mut self) {
        let supervisors = &mut self.supervisors;
        self.retired.retain(|&p| {
            if sys::alive(p) {
                return true;
            }
            let _ = sys::wait(p);
            supervisors.remove(&p);
            false
        });
    }

    /// Tells the supervisor of `pid` of signal `s` (a request: nobody
    /// waits for it).
    pub fn notify(&mut self, sup: u64, s: &proto::Signal) {
        // Named by its target: a new child's supervisor may not have its
        // state yet (the child runs, and can be named, before that).
        let mut s = *s;
        if s.target == 0 {
            s.target = self.procs.live().find(|p| p.sup == sup).map_or(0, |p| p.pid as u64);
        }
        let msg = proto::bytes(&s.to_words());
        let room = core::ptr::slice_from_raw_parts_mut(core::ptr::null_mut::<u8>(), 0);
        if calls::request(sup, proto::sup::SIGNAL, &msg, room).is_ok() {
            self.requests += 1;
        }
    }

    /// Collects the results of signal requests (nothing to learn from them).
    fn collect_requests(&mut self) {
        while self.requests > 0 {
            match sys::fetch(0) {
                Ok(_) => self.requests -= 1,
                Err(_) => break,
            }
        }
    }

    /// Ends held call `h` with `value` (a Linux return value).
    pub fn finish(&mut self, h: &Held, value: u64) {
        let _ = calls::caller_return(h.rid, value);
    }

    /// Writes `data` into the memory of the process waiting in `h`.
    pub fn put(&self, h: &Held, addr: u64, data: &[u8]) -> bool {
        calls::caller_write(h.rid, addr, data).is_ok()
    }

    /// A socket address for the waiting process: as much of `name` as
    /// the length word at `len_at` leaves room for, then its full length
    /// there.
    pub fn put_name(&self, h: &Held, (addr, len_at): (u64, u64), name: &[u8]) {
        let mut b = [0u8; 4];
        if calls::caller_read(h.rid, len_at, &mut b).is_err() {
            return;
        }
        let room = i32::from_le_bytes(b);
        if room < 0 {
            return;
        }
        let n = (room as usize).min(name.len());
        let _ = calls::caller_write(h.rid, addr, &name[..n]);
        let _ = calls::caller_write(h.rid, len_at, &(name.len() as u32).to_le_bytes());
    }

    /// The alarm: the earliest deadline of the timers and the poll waits.
    pub fn rearm(&mut self) {
        let next = self
            .timers
            .values()
            .map(|t| t.0)
            .chain(self.objs.poll_deadlines())
            .chain(self.sysv.deadline())
            .chain(self.objs.mq.deadline())
            .chain(self.ptimers.deadlines())
            .chain(self.cpu_limits.deadlines())
            .min()
            .unwrap_or(0);
        if next != self.alarm_at {
            self.alarm_at = next;
            let _ = calls::port_alarm(entry::TICK, next);
        }
    }

    fn tick(&mut self) {
        let now = sys::now_ns();
        let due: Vec<u32> = self
            .timers
            .iter()
            .filter(|(_, t)| t.0 <= now)
            .map(|(&p, _)| p)
            .collect();
        for pid in due {
            let (deadline, interval) = self.timers[&pid];
            if interval > 0 {
                let mut next = deadline + interval;
                if next <= now {
                    next = now + interval;
                }
                self.timers.insert(pid, (next, interval));
            } else {
                self.timers.remove(&pid);
            }
            self.procs_signal(pid, linuxabi::signal::SIGALRM, 0x80, 0);
        }
        self.alarm_at = 0;
        self.ptimers_tick(now);
        self.cpu_limits_tick(now);
        self.poll_timeouts(now);
        self.woke = true;
    }

    /// Signal `sig` from the kernel (code `code`) to process `pid`.
    pub fn procs_signal(&mut self, pid: u32, sig: u32, code: i64, value: u64) {
        let Some(p) = self.procs.get(pid) else { return };
        if p.zombie.is_some() {
            return;
        }
        let s = proto::Signal {
            sig: sig as u64,
            code,
            value,
            ..proto::Signal::default()
        };
        let sup = p.sup;
        self.notify(sup, &s);
    }

    /// Looks at every held call again, and again while any ended (one may
    /// let another go on: a writer its reader); then the polls.
    pub fn progress(&mut self) {
        loop {
            self.woke = false;
            let mut i = 0;
            while i < self.held.len() {
                let mut h = self.held[i];
                if self.try_complete(&mut h) {
                    self.held.remove(i);
                    self.woke = true;
                } else {
                    self.held[i] = h;
                    i += 1;
                }
            }
            if self.sysv_progress() {
                self.woke = true;
            }
            if self.mq_progress() {
                self.woke = true;
            }
            if !self.woke {
                break;
            }
        }
        self.poll_wakes();
        self.tell_watching();
    }

    /// Ends held call `h` if it can end now; false if it still waits.
    fn try_complete(&mut self, h: &mut Held) -> bool {
        match h.what {
            Waiting::Read { .. } | Waiting::Write { .. } => self.io_step(h),
            Waiting::Wait4 { .. } | Waiting::Waitid { .. } => self.wait_step(h),
            Waiting::Lock { .. } => self.lock_step(h),
            Waiting::Vfork { child } => {
                let done = self.procs.get(child).is_none_or(|c| c.zombie.is_some() || c.execed);
                if done {
                    // vfork returns the child's pid in the parent.
                    self.finish(h, child as u64);
                }
                done
            }
        }
    }

    /// The held call of thread `tid` of `pid` (0: of any of its threads)
    /// ends with -ERESTARTSYS (a signal came).
    fn interrupt(&mut self, pid: u32, tid: u32) {
        if let Some(i) = self
            .held
            .iter()
            .position(|h| h.pid == pid && (tid == 0 || h.tid == tid))
        {
            let h = self.held.remove(i);
            if let Waiting::Write { done, .. } = h.what
                && done > 0
            {
                self.finish(&h, done);
                return;
            }
            // The child exists: vfork is not made again (the signal is
            // delivered in the parent as vfork returns).
            if let Waiting::Vfork { child } = h.what {
                self.finish(&h, child as u64);
                return;
            }
            self.finish(&h, errno::fail(errno::ERESTARTSYS));
        } else if !self.sysv_interrupt(pid, tid) {
            self.mq_interrupt(pid, tid);
        }
    }

    fn ctl(&mut self, info: &AccInfo, rid: u64) -> End {
        // Most requests are whole in the inline part: words from there.
        let w = if info.len as usize <= info.inline.len() {
            proto::words(&info.inline[..info.len as usize])
        } else {
            let mut buf = alloc::vec![0u8; info.len as usize];
            if sys::rv_read(rid, 0, &mut buf).is_err() {
                return result(-errno::EFAULT);
            }
            proto::words(&buf)
        };
        match word(&w, 0) {
            ctl::START => self.start(word(&w, 1) == 0, info.caller),
            ctl::WAIT => self.launcher_wait(rid, word(&w, 1) as u32),
            ctl::FORK => self.fork(&w),
            ctl::EXEC => self.exec(&w),
            ctl::FMAP => self.fmap_ctl(&w),
            ctl::FMAP_MAPPED => self.fmap_mapped(word(&w, 1)),
            ctl::EXIT => self.exit(&w),
            ctl::CHILD_USAGE => self.child_usage(word(&w, 1) as u32),
            ctl::CPU_LIMIT => self.cpu_limit(&w),
            ctl::IDLE => self.idle(info.caller),
            ctl::EXIT_IDLE => {
                let _ = self.exit(&w);
                self.idle(info.caller)
            }
            ctl::KILL => self.kill(&w),
            ctl::SETPGID => result(
                self.procs
                    .setpgid(word(&w, 1) as u32, word(&w, 2) as u32, word(&w, 3) as u32),
            ),
            ctl::GETPGID => result(self.procs.getpgid(word(&w, 1) as u32, word(&w, 2) as u32)),
            ctl::GETSID => result(self.procs.getsid(word(&w, 1) as u32, word(&w, 2) as u32)),
            ctl::SETSID => result(self.setsid(word(&w, 1) as u32)),
            ctl::GETPPID => result(self.procs.getppid(word(&w, 1) as u32, word(&w, 2))),
            ctl::PIPE => reply(&self.objs.pipe(word(&w, 1) == 1)),
            ctl::FIFO_OPEN => reply(
                &self
                    .objs
                    .fifo_open((word(&w, 1), word(&w, 2)), word(&w, 3), word(&w, 4)),
            ),
            ctl::UNIX_BIND => End::Reply(self.objs.unix_bind(&w)),
            ctl::UNIX_LISTEN => End::Reply(self.objs.unix_listen(&w)),
            ctl::UNIX_CONNECT => {
                self.woke = true;
                End::Reply(self.objs.unix_connect(&w))
            }
            ctl::UNIX_ACCEPT => {
                // A connect may wait for the room this makes.
                self.woke = true;
                End::Reply(self.objs.unix_accept(&w))
            }
            ctl::HOLD => {
                for &o in &w[1..] {
                    self.objs.add_ref(o, 1);
                }
                result(0)
            }
            ctl::RELEASE => {
                for &o in &w[1..] {
                    self.release(o);
                }
                result(0)
            }
            ctl::OBJ_INFO => reply(&self.objs.info(word(&w, 1))),
            ctl::OBJ_SETFL => {
                self.objs.set_flags(word(&w, 1), word(&w, 2));
                result(0)
            }
            ctl::LOCK => reply(&self.lock(&w)),
            ctl::SCHED_GET => self.sched_get(&w),
            ctl::SCHED_SET => self.sched_set(&w),
            ctl::PRIO_GET => self.prio_get(&w),
            ctl::PRIO_SET => self.prio_set(&w),
            ctl::AFFINITY_SET => self.affinity_set(&w),
            ctl::UNLOCK_FILE => {
                self.locks.release_file((word(&w, 2), word(&w, 3)), word(&w, 1) as u32);
                result(0)
            }
            ctl::PIPE_SIZE => result(self.objs.pipe_size(word(&w, 1), word(&w, 2))),
            ctl::SHARE_FILE => result(self.objs.share_file(word(&w, 1), word(&w, 2)) as i64),
            ctl::PDEATHSIG => {
                let (pid, signo) = (word(&w, 1) as u32, word(&w, 2) as u32);
                result(match self.procs.get_mut(pid) {
                    Some(p) => {
                        p.pdeath = signo;
                        0
                    }
                    None => -errno::ESRCH,
                })
            }
            ctl::FLOCK => result(self.objs.flock(word(&w, 1), (word(&w, 2), word(&w, 3)), word(&w, 4))),
            ctl::FILE_POS => {
                let (id, op, value) = (word(&w, 1), word(&w, 2), word(&w, 3));
                match op {
                    3 => match self.objs.pos_take(id, info.caller, rid) {
                        Some(pos) => result(pos as i64),
                        None => End::Held,
                    },
                    4 | 5 => {
                        self.objs.pos_put(id, info.caller, (op == 4).then_some(value));
                        result(0)
                    }
                    _ => result(self.objs.file_pos(id, op, value) as i64),
                }
            }
            ctl::TTY_IOCTL => self.tty_ioctl(&w),
            ctl::TTY_CHECK => result(self.tty_check(word(&w, 1) as u32, word(&w, 2) != 0)),
            ctl::POLL => self.poll(&w, info.caller),
            ctl::INTERRUPT => {
                self.interrupt(word(&w, 1) as u32, word(&w, 2) as u32);
                result(0)
            }
            ctl::CRED => {
                if let Some(p) = self.procs.get_mut(word(&w, 1) as u32) {
                    p.uid = word(&w, 2) as u32;
                    p.euid = word(&w, 3) as u32;
                    let id = |i: usize| word(&w, i) as u32;
                    let ids = linuxabi::vmrw::Ids {
                        uid: [id(2), id(3), id(4)],
                        gid: [id(5), id(6), id(7)],
                    };
                    // commit_creds: new effective ids make it not dumpable.
                    if ids.uid[1] != p.ids.uid[1] || ids.gid[1] != p.ids.gid[1] {
                        p.dumpable = false;
                    }
                    p.ids = ids;
                }
                result(0)
            }
            ctl::DUMPABLE => match self.procs.get_mut(word(&w, 1) as u32) {
                Some(p) => {
                    if word(&w, 2) != u64::MAX {
                        p.dumpable = word(&w, 2) == 1;
                    }
                    result(p.dumpable as i64)
                }
                None => result(-errno::ESRCH),
            },
            ctl::ALARM => self.alarm(&w),
            ctl::NOCLDWAIT => {
                if let Some(p) = self.procs.get_mut(word(&w, 1) as u32) {
                    p.nocldwait = word(&w, 2) != 0;
                }
                result(0)
            }
            ctl::PIDS => End::Reply(self.procs.pids().iter().map(|&p| p as u64).collect()),
            ctl::PROC => self.proc_record(word(&w, 1) as u32),
            ctl::STOPPED => self.stopped(&w),
            ctl::UTS => self.uts(&w),
            ctl::NTP => self.ntp(&w),
            ctl::LOOP => self.loop_ctl(&w, info.caller),
            ctl::MOUNT => self.mount_ctl(&w),
            ctl::COMM => self.rename(info.caller, &w),
            ctl::SUBREAPER => match self.procs.get_mut(word(&w, 1) as u32) {
                Some(p) => {
                    let old = p.subreaper as i64;
                    if word(&w, 2) != u64::MAX {
                        p.subreaper = word(&w, 2) != 0;
                    }
                    result(old)
                }
                None => result(-errno::ESRCH),
            },
            ctl::SCHED_ATTR_SET => self.sched_attr_set(&w),
            ctl::IOPRIO => self.ioprio(&w),
            ctl::SYSCTL => self.sysctl(&w),
            ctl::KEYS => self.keys_ctl(&w),
            ctl::TPID => {
                if let Some(p) = self.procs.get_mut(word(&w, 1) as u32) {
                    p.tpid = word(&w, 2);
                }
                result(0)
            }
            ctl::THREAD_NEW => result(
                self.procs
                    .new_tid(word(&w, 1) as u32)
                    .map_or(-errno::ESRCH, |t| t as i64),
            ),
            ctl::PTIMER => self.ptimer(&w),
            ctl::TIMERFD => self.timerfd(&w),
            ctl::INOTIFY => self.inotify_ctl(&w),
            ctl::MQUEUE => self.mq_ctl(&w),
            ctl::EVENTFD => result(self.objs.eventfd(word(&w, 1), word(&w, 2) != 0) as i64),
            ctl::SYSV_SETTING => {
                let len = word(&w, 2);
                let bytes = proto::bytes(w.get(3..).unwrap_or(&[]));
                let text = (len != u64::MAX).then(|| &bytes[..(len as usize).min(bytes.len())]);
                match self.sysv_setting(word(&w, 1), text) {
                    Ok(t) => {
                        let mut out = alloc::vec![t.len() as u64];
                        out.extend(proto::name_words(&t));
                        End::Reply(out)
                    }
                    Err(e) => result(-e),
                }
            }
            ctl::SYSV_LIST => {
                let t = self.sysv_list(word(&w, 1));
                let mut out = alloc::vec![t.len() as u64];
                out.extend(proto::name_words(&t));
                End::Reply(out)
            }
            ctl::PIDFD_OPEN => self.pidfd_open(&w),
            ctl::PIDFD_PID => self.pidfd_pid(word(&w, 1)),
            ctl::PIDFD_KILL => self.pidfd_kill(&w),
            ctl::SYSV_UNDO => {
                self.sysv.ipc.exit(word(&w, 1) as u32);
                // Waiting semops may go on.
                self.woke = true;
                result(0)
            }
            ctl::THREAD_END => {
                self.procs.end_tid(word(&w, 1) as u32, word(&w, 2) as u32);
                self.keys.thread_end(word(&w, 1) as u32, word(&w, 2) as u32);
                result(0)
            }
            _ => result(-errno::ENOSYS),
        }
    }

    fn pass(&mut self, info: &AccInfo, rid: u64) {
        let n = (info.len as usize).min(info.inline.len());
        let w = proto::words(&info.inline[..n]);
        let pid = word(&w, 1) as u32;
        let tid = (word(&w, 1) >> 32) as u32;
        if matches!(word(&w, 0), proto::pass::KEY_ADD | proto::pass::KEYCTL) {
            self.keys_pass(rid, &w);
            return;
        }
        if word(&w, 0) >= proto::pass::SYSV {
            self.sysv_pass(rid, &w);
            return;
        }
        if word(&w, 0) == proto::pass::MQ {
            self.mq_pass(rid, &w);
            return;
        }
        if word(&w, 0) == proto::pass::LOCK {
            self.lock_pass(rid, info.caller, &w);
            return;
        }
        if word(&w, 0) == proto::pass::VM_RW {
            self.vm_pass(rid, &w);
            return;
        }
        if word(&w, 0) == proto::pass::FMAP {
            self.fmap_pass(rid, &w);
            return;
        }
        let what = match word(&w, 0) {
            proto::pass::READ => Waiting::Read {
                obj: word(&w, 2),
                buf: word(&w, 3),
                len: word(&w, 4),
                flags: word(&w, 5),
                from: (word(&w, 6), word(&w, 7)),
            },
            proto::pass::WRITE => Waiting::Write {
                obj: word(&w, 2),
                buf: word(&w, 3),
                len: word(&w, 4),
                done: 0,
                flags: word(&w, 5),
            },
            proto::pass::WAIT4 => Waiting::Wait4 {
                which: word(&w, 2) as i64,
                options: word(&w, 3),
                status: word(&w, 4),
                rusage: word(&w, 5),
            },
            proto::pass::WAITID => Waiting::Waitid {
                idtype: word(&w, 2),
                id: word(&w, 3),
                options: word(&w, 4),
                info: word(&w, 5),
            },
            proto::pass::VFORK_WAIT => Waiting::Vfork {
                child: word(&w, 2) as u32,
            },
            _ => {
                let _ = calls::caller_return(rid, errno::fail(errno::ENOSYS));
                return;
            }
        };
        let mut h = Held {
            rid,
            tpid: info.caller,
            pid,
            tid,
            what,
        };
        if !self.try_complete(&mut h) {
            self.held.push(h);
        }
    }

    fn serve(&mut self, info: &AccInfo, rid: u64) -> End {
        if !self.allowed(info, rid) {
            if rid != 0 {
                let _ = sys::rv_fail(rid, tessera_rt::abi::Error::Denied);
            }
            return End::Held;
        }
        match info.entry {
            entry::CTL => self.ctl(info, rid),
            entry::PASS => {
                self.pass(info, rid);
                End::Held
            }
            entry::TTY_WRITE => self.tty_write(info, rid),
            entry::TICK if rid == 0 => {
                self.tick();
                End::Held
            }
            entry::INPUT if rid == 0 => {
                self.input();
                End::Held
            }
            _ => End::Held,
        }
    }
}

pub fn main() -> i32 {
    let mut s = Shared::new();
    if let Err(e) = sys::name_register(proto::NAME, entry::ENTRIES) {
        tessera_rt::println!("linux: cannot register '{}': {e:?}", proto::NAME);
        return 1;
    }
    if let Err(e) = calls::console_attach(entry::INPUT) {
        tessera_rt::println!("linux: the console is not free ({e:?}): no terminal");
    }
    for _ in 0..POOL_START {
        if let Some(p) = s.spawn_supervisor() {
            s.pool.push(p);
        }
    }
    let mut info = AccInfo::default();
    let mut rid = 0;
    let mut out: Vec<u8> = Vec::new();
    loop {
        let got = if rid != 0 {
            sys::endr_acc(rid, &out, entry::ENTRIES, &mut info)
        } else {
            sys::acc(entry::ENTRIES, &mut info)
        };
        rid = match got {
            Ok(r) => r,
            Err(_) if rid != 0 => {
                rid = 0;
                continue;
            }
            Err(e) => {
                tessera_rt::println!("linux: acc failed: {e:?}");
                return 1;
            }
        };
        let end = s.serve(&info, rid);
        s.progress();
        s.rearm();
        s.collect_requests();
        match end {
            // Into the last reply's room: no new buffer each request.
            End::Reply(w) => {
                out.clear();
                for v in &w {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            End::Held => rid = 0,
        }
    }
}
