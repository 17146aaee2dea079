//! The Linux process table: pids (Linux's own numbering, from 2; pid 1 is
//! a virtual init that adopts orphans and reaps them at once), parents and
//! children, process groups and sessions, the statuses parents wait for,
//! job control's stops, and signals sent from one process to others.

use super::{End, Held, Shared, Waiting, reply, result};
use crate::proto::{self, pass, word};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::sched::Sched;
use linuxabi::signal::{self as sig, CLD_CONTINUED, CLD_DUMPED, CLD_EXITED, CLD_KILLED, CLD_STOPPED};
use tessera_rt::sys;

/// The virtual init: parent of the first processes and of orphans.
pub const INIT: u32 = 1;

/// A report for the parent's wait (a stop or a continue not yet waited for).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    Stopped(u32),
    Continued,
}

/// CPU time in nanoseconds: `user` the process's own, `system` its
/// supervisor's serving it (the process network's system time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub system: u64,
}

impl CpuTimes {
    pub fn add(&mut self, o: CpuTimes) {
        self.user += o.user;
        self.system += o.system;
    }
}

pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    pub pgid: u32,
    pub sid: u32,
    pub sup: u64,
    /// The Tessera process running its program (0 between fork and exec
    /// report: its supervisor knows it).
    pub tpid: u64,
    pub uid: u32,
    pub euid: u32,
    /// Its real, effective and saved uids and gids (`ctl::CRED`).
    pub ids: linuxabi::vmrw::Ids,
    /// Whether it is dumpable (`ctl::DUMPABLE`).
    pub dumpable: bool,
    /// Its wait status once it ended (a zombie until its parent waits).
    pub zombie: Option<u32>,
    pub stopped: bool,
    pub report: Option<Report>,
    /// It ran exec since its fork (a vfork parent goes on).
    pub execed: bool,
    /// The signal its parent gets when it ends (clone's exit signal;
    /// 0: none). A child whose signal is not SIGCHLD is a "clone child",
    /// which only __WCLONE or __WALL waits see.
    pub exit_signal: u32,
    /// Its children are not waited for (SIGCHLD ignored, SA_NOCLDWAIT).
    pub nocldwait: bool,
    pub comm: [u64; 2],
    pub start_ns: u64,
    /// Minor faults of its children it waited for (getrusage).
    pub child_faults: u64,
    pub faults: u64,
    /// CPU time it used in user mode and its supervisor used serving it
    /// (told at its end), and the same of the children it waited for.
    pub cpu: CpuTimes,
    pub child_cpu: CpuTimes,
    /// Its command line, NUL-separated (at most 256 bytes), as words.
    pub cmdline: Vec<u64>,
    /// Its scheduling policy, priority, nice value and CPU mask.
    pub sched: Sched,
    /// The signal it gets when its parent ends (PR_SET_PDEATHSIG; 0: none).
    pub pdeath: u32,
    /// It adopts the orphans of its descendants (PR_SET_CHILD_SUBREAPER).
    pub subreaper: bool,
    /// The Tessera process whose kernel record holds `ppid` (0: none),
    /// where the kernel answers getppid: set again whenever `ppid`
    /// changes, before anyone is told of the change.
    pub ppid_in_kernel: u64,
}

impl Proc {
    /// Its Tessera process. A forked child's supervisor tells it at its
    /// first held call (so that a fork costs no message more): before,
    /// the kernel knows it by its supervisor and pid (NotFound once the
    /// process is gone).
    pub fn tessera_pid(&self) -> Result<u64, tessera_rt::abi::Error> {
        match self.tpid {
            0 => sys::calls::linux_process(self.sup, self.pid as u64),
            known => Ok(known),
        }
    }
}

/// Pids below this are given only before the first wrap (Linux's).
const RESERVED_PIDS: u32 = 300;

pub struct Table {
    procs: BTreeMap<u32, Proc>,
    /// Faults of the processes the virtual init reaped (orphans): its
    /// cminflt in /proc/1/stat, as Linux's init's.
    pub orphan_faults: u64,
    next: u32,
    /// `/proc/sys/kernel/pid_max`.
    pub pid_max: u32,
    /// The tids of threads beyond their process's first, with their pid:
    /// taken from the pids' numbering, so no pid is ever a live tid.
    tids: BTreeMap<u32, u32>,
}

impl Table {
    pub fn new() -> Table {
        Table {
            procs: BTreeMap::new(),
            orphan_faults: 0,
            next: 2,
            pid_max: linuxabi::PID_MAX,
            tids: BTreeMap::new(),
        }
    }

    pub fn get(&self, pid: u32) -> Option<&Proc> {
        self.procs.get(&pid)
    }

    pub fn get_mut(&mut self, pid: u32) -> Option<&mut Proc> {
        self.procs.get_mut(&pid)
    }

    /// Every pid, the virtual init's among them.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self.procs.keys().copied().collect();
        if !self.procs.contains_key(&INIT) {
            pids.insert(0, INIT);
        }
        pids
    }

    /// The next free pid after the last one given, wrapping below
    /// `pid_max` to 300 as Linux does (the low pids stay the daemons' of
    /// early boot); None when every one is taken (fork's EAGAIN).
    pub fn free_pid(&mut self) -> Option<u32> {
        for _ in 0..self.pid_max {
            if self.next >= self.pid_max {
                self.next = RESERVED_PIDS;
            }
            let p = self.next;
            self.next += 1;
            let used = self.procs.contains_key(&p)
                || self.tids.contains_key(&p)
                || self.procs.values().any(|q| q.pgid == p || q.sid == p);
            if !used {
                return Some(p);
            }
        }
        None
    }

    /// `/proc/sys/kernel/pid_max`: the pids given from now on stay below
    /// `max` (Linux's bounds: above RESERVED_PIDS, at most PID_MAX).
    pub fn set_pid_max(&mut self, max: u64) -> Result<(), i64> {
        if max <= RESERVED_PIDS as u64 || max > linuxabi::PID_MAX as u64 {
            return Err(errno::EINVAL);
        }
        self.pid_max = max as u32;
        Ok(())
    }

    /// A new tid for a thread of `pid`.
    pub fn new_tid(&mut self, pid: u32) -> Option<u32> {
        self.procs.get(&pid).filter(|p| p.zombie.is_none())?;
        let tid = self.free_pid()?;
        self.tids.insert(tid, pid);
        Some(tid)
    }

    /// Thread `tid` of process `pid` ended: its number is free again.
    pub fn end_tid(&mut self, pid: u32, tid: u32) {
        if self.tids.get(&tid) == Some(&pid) {
            self.tids.remove(&tid);
        }
    }

    /// Process `pid` ended: the tids of its threads are free again.
    pub fn end_tids_of(&mut self, pid: u32) {
        self.tids.retain(|_, p| *p != pid);
    }

    fn add(&mut self, pid: u32, ppid: u32, pgid: u32, sid: u32, sup: u64) -> u32 {
        let (pgid, sid) = if pgid == 0 { (pid, pid) } else { (pgid, sid) };
        let parent = self.procs.get(&ppid);
        let (uid, euid, comm) = parent.map_or((0, 0, [0; 2]), |p| (p.uid, p.euid, p.comm));
        let (ids, dumpable) = parent.map_or((Default::default(), true), |p| (p.ids, p.dumpable));
        let sched = parent.map_or(Sched::default(), |p| p.sched.for_child());
        self.procs.insert(
            pid,
            Proc {
                pid,
                ppid,
                pgid,
                sid,
                sup,
                tpid: 0,
                uid,
                euid,
                ids,
                dumpable,
                zombie: None,
                stopped: false,
                report: None,
                execed: false,
                nocldwait: false,
                exit_signal: sig::SIGCHLD,
                comm,
                start_ns: sys::now_ns(),
                child_faults: 0,
                faults: 0,
                cpu: CpuTimes::default(),
                child_cpu: CpuTimes::default(),
                cmdline: Vec::new(),
                sched,
                pdeath: 0,
                subreaper: false,
                ppid_in_kernel: 0,
            },
        );
        pid
    }

    /// getppid of `pid`, whose Tessera process `tpid` (0: none said)
    /// gets the answer in its kernel record, so that the kernel answers
    /// its next ones (`linux_set_ppid`; refused if `tpid` is not `pid`'s).
    pub fn getppid(&mut self, pid: u32, tpid: u64) -> i64 {
        let Some(p) = self.procs.get_mut(&pid) else {
            return 0;
        };
        if tpid != 0 && sys::calls::linux_set_ppid(tpid, pid as u64, p.ppid as u64).is_ok() {
            p.ppid_in_kernel = tpid;
        }
        p.ppid as i64
    }

    /// `pid`'s parent is `ppid` from now on, in its kernel record too:
    /// done before its end is reported to anyone, so that no wait and no
    /// signal about it comes before the child's getppid sees the new one.
    fn set_ppid(&mut self, pid: u32, ppid: u32) {
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        p.ppid = ppid;
        // A process gone from the kernel (an exec's old one) needs none;
        // its successor's record holds no parent until it asks.
        if p.ppid_in_kernel != 0 && sys::calls::linux_set_ppid(p.ppid_in_kernel, pid as u64, ppid as u64).is_err() {
            p.ppid_in_kernel = 0;
        }
    }

    /// The process a pid argument names: the caller for 0, a thread's
    /// process for its tid, the virtual init for 1 (None: no such
    /// process).
    pub fn target(&self, caller: u32, pid: u32) -> Option<u32> {
        let pid = if pid == 0 { caller } else { pid };
        let pid = self.tids.get(&pid).copied().unwrap_or(pid);
        (self.procs.contains_key(&pid) || pid == INIT).then_some(pid)
    }

    /// The pids of the processes that have not ended.
    pub fn live_pids(&self) -> Vec<u32> {
        self.live().map(|p| p.pid).collect()
    }

    pub(super) fn live(&self) -> impl Iterator<Item = &Proc> {
        self.procs.values().filter(|p| p.zombie.is_none())
    }

    fn children(&self, pid: u32) -> impl Iterator<Item = &Proc> {
        self.procs.values().filter(move |p| p.ppid == pid)
    }

    pub fn setpgid(&mut self, caller: u32, pid: u32, pgid: u32) -> i64 {
        let pid = if pid == 0 { caller } else { pid };
        let Some(c) = self.procs.get(&caller) else {
            return -errno::ESRCH;
        };
        let csid = c.sid;
        let Some(p) = self.procs.get(&pid) else {
            return -errno::ESRCH;
        };
        if pid != caller && p.ppid != caller {
            return -errno::ESRCH;
        }
        if p.sid != csid {
            return -errno::EPERM;
        }
        if pid != caller && p.execed {
            return -errno::EACCES;
        }
        if p.sid == pid {
            // A session leader stays where it is.
            return -errno::EPERM;
        }
        let pgid = if pgid == 0 { pid } else { pgid };
        if pgid != pid && !self.live().any(|q| q.pgid == pgid && q.sid == csid) {
            return -errno::EPERM;
        }
        if let Some(p) = self.procs.get_mut(&pid) {
            p.pgid = pgid;
        }
        0
    }

    /// The virtual init leads a session and group of its own.
    pub fn getpgid(&self, caller: u32, pid: u32) -> i64 {
        let pid = if pid == 0 { caller } else { pid };
        match self.procs.get(&pid) {
            Some(p) => p.pgid as i64,
            None if pid == INIT => INIT as i64,
            None => -errno::ESRCH,
        }
    }

    pub fn getsid(&self, caller: u32, pid: u32) -> i64 {
        let pid = if pid == 0 { caller } else { pid };
        match self.procs.get(&pid) {
            Some(p) => p.sid as i64,
            None if pid == INIT => INIT as i64,
            None => -errno::ESRCH,
        }
    }

    /// The process that adopts the orphans of a process whose parent is
    /// `from`: the nearest living subreaper from `from` up, else init.
    pub fn reaper_above(&self, mut from: u32) -> u32 {
        // A chain of parents is at most as long as the table.
        for _ in 0..=self.procs.len() {
            match self.procs.get(&from) {
                Some(p) if p.subreaper && p.zombie.is_none() => return from,
                Some(p) if p.ppid != from => from = p.ppid,
                _ => break,
            }
        }
        INIT
    }

    /// Whether process group `pgid` is orphaned: no member has a parent
    /// in another group of the same session.
    pub fn orphaned(&self, pgid: u32) -> bool {
        !self.live().filter(|p| p.pgid == pgid).any(|p| {
            self.procs
                .get(&p.ppid)
                .is_some_and(|q| q.zombie.is_none() && q.pgid != pgid && q.sid == p.sid)
        })
    }
}

impl Default for Table {
    fn default() -> Self {
        Self::new()
    }
}

impl Shared {
    /// A launcher's new process: a session of its own, on the terminal if
    /// `on_tty` (else the console is no session's controlling terminal).
    /// `starter` (its Tessera pid) alone may wait for it.
    pub(super) fn start(&mut self, on_tty: bool, starter: u64) -> End {
        let Some(pid) = self.procs.free_pid() else {
            return result(-errno::EAGAIN);
        };
        let sup = match self.supervisor() {
            Ok(s) => s,
            Err(e) => return result(-e),
        };
        let pid = self.procs.add(pid, INIT, 0, 0, sup);
        self.starters.push((pid, starter));
        if on_tty {
            self.objs.tty.session = pid;
            self.objs.tty.fg_pgrp = pid;
        }
        self.objs.add_ref(proto::obj::TTY_ID, 3);
        reply(&[pid as u64, sup])
    }

    pub(super) fn launcher_wait(&mut self, rid: u64, pid: u32) -> End {
        match self.procs.get(pid) {
            None => result(-errno::ECHILD),
            Some(p) if p.zombie.is_some() => {
                let (st, start_ns) = (p.zombie.unwrap_or(0), p.start_ns);
                self.forget(pid);
                self.pidfds_moved(pid, start_ns, super::pidfd::State::Reaped);
                result(st as i64)
            }
            Some(_) => {
                self.launchers.push((rid, pid));
                End::Held
            }
        }
    }

    pub(super) fn fork(&mut self, w: &[u64]) -> End {
        let parent = word(w, 1) as u32;
        let Some(p) = self.procs.get(parent) else {
            return result(-errno::ESRCH);
        };
        let (pgid, sid) = (p.pgid, p.sid);
        // CLONE_PARENT: the child is its caller's sibling, and ends with
        // the signal its caller would end with.
        let sibling = word(w, 2) & crate::proto::fork_flags::SIBLING != 0;
        let (ppid, exit_signal) = if sibling {
            (p.ppid, p.exit_signal)
        } else {
            (parent, ((word(w, 2) >> 8) & 0xff) as u32)
        };
        let Some(pid) = self.procs.free_pid() else {
            return result(-errno::EAGAIN);
        };
        let sup = match self.supervisor() {
            Ok(s) => s,
            Err(e) => return result(-e),
        };
        let pid = self.procs.add(pid, ppid, pgid, sid, sup);
        self.fmap_fork(parent, pid);
        self.keys.fork(parent, pid);
        if let Some(c) = self.procs.get_mut(pid) {
            c.exit_signal = exit_signal;
        }
        for &o in w.get(3..).unwrap_or(&[]) {
            self.objs.add_ref(o, 1);
        }
        reply(&[pid as u64, sup])
    }

    pub(super) fn exec(&mut self, w: &[u64]) -> End {
        let pid = word(w, 1) as u32;
        if let Some(p) = self.procs.get_mut(pid) {
            p.tpid = word(w, 2);
            p.execed = true;
            p.comm = [word(w, 3), word(w, 4)];
            p.cmdline = w.get(5..).unwrap_or(&[]).to_vec();
            // setup_new_exec: a program run with other effective ids than
            // the real ones is not dumpable.
            p.dumpable = p.ids.uid[1] == p.ids.uid[0] && p.ids.gid[1] == p.ids.gid[0];
        }
        self.ptimers_exit(pid, true);
        self.fmap_exit(pid);
        self.keys.exec(pid);
        result(0)
    }

    /// `prctl(PR_SET_NAME)`: the name /proc shows for `pid` (only its own
    /// supervisor may change it).
    pub(super) fn rename(&mut self, caller: u64, w: &[u64]) -> End {
        match self.procs.get_mut(word(w, 1) as u32) {
            Some(p) if p.sup == caller => {
                p.comm = [word(w, 2), word(w, 3)];
                result(0)
            }
            _ => result(errno::ESRCH),
        }
    }

    pub(super) fn release(&mut self, obj: u64) {
        self.objs.release(obj);
        self.locks_released(obj);
    }

    /// What the children `pid` waited for used: [minor faults, user ns,
    /// system ns] (getrusage RUSAGE_CHILDREN, times).
    pub(super) fn child_usage(&self, pid: u32) -> End {
        match self.procs.get(pid) {
            Some(p) => End::Reply(alloc::vec![p.child_faults, p.child_cpu.user, p.child_cpu.system]),
            None => result(-errno::ESRCH),
        }
    }

    pub(super) fn exit(&mut self, w: &[u64]) -> End {
        let pid = word(w, 1) as u32;
        let status = word(w, 2) as u32;
        let faults = word(w, 3);
        let cpu = CpuTimes {
            user: word(w, 4),
            system: word(w, 5),
        };
        for &o in w.get(6..).unwrap_or(&[]) {
            self.release(o);
        }
        self.timers.remove(&pid);
        self.procs.end_tids_of(pid);
        self.locks.release_all(pid);
        self.locks_exit(pid);
        self.objs.polls.retain(|p| p.pid != pid);
        self.sysv_exit(pid);
        self.mq_exit(pid);
        self.keys.exit(pid);
        self.fmap_exit(pid);
        self.ptimers_exit(pid, false);
        self.cpu_limit_exit(pid);
        // The groups this end may orphan: its own and its children's. Only
        // those not orphaned before it can be orphaned by it (Linux's
        // will_become_orphaned_pgrp); a group orphaned already gets no
        // SIGHUP when a member ends, a member stopped or not.
        let linked: Vec<u32> = {
            let own = self.procs.get(pid).map(|p| p.pgid);
            let mut gs: Vec<u32> = own
                .into_iter()
                .chain(self.procs.children(pid).map(|c| c.pgid))
                .collect();
            gs.sort_unstable();
            gs.dedup();
            gs.retain(|&g| !self.procs.orphaned(g));
            gs
        };
        let Some(p) = self.procs.get_mut(pid) else {
            return result(-errno::ESRCH);
        };
        p.zombie = Some(status);
        p.faults = faults;
        p.cpu = cpu;
        p.stopped = false;
        p.report = None;
        let (ppid, pgid, sid, start_ns) = (p.ppid, p.pgid, p.sid, p.start_ns);
        self.pidfds_moved(pid, start_ns, super::pidfd::State::Exited);
        // Its children go to the nearest living subreaper above it, else
        // to init, which reaps them.
        let reaper = self.procs.reaper_above(ppid);
        let orphans: Vec<u32> = self.procs.children(pid).map(|c| c.pid).collect();
        let mut bereaved = Vec::new();
        for c in orphans {
            self.procs.set_ppid(c, reaper);
            if let Some(cp) = self.procs.get_mut(c) {
                if let Some(status) = cp.zombie {
                    if reaper == INIT {
                        self.reap(c);
                    } else {
                        self.tell_parent(c, reaper, status);
                    }
                } else if cp.pdeath != 0 {
                    bereaved.push((cp.sup, cp.pdeath));
                }
            }
        }
        for (sup, signo) in bereaved {
            let s = proto::Signal {
                sig: signo as u64,
                pid: pid as u64,
                ..proto::Signal::default()
            };
            self.notify(sup, &s);
        }
        // The session's controlling process ended: the terminal hangs up
        // on its foreground group.
        if self.objs.tty.session == pid && sid == pid {
            let fg = self.objs.tty.fg_pgrp;
            self.objs.tty.session = 0;
            self.objs.tty.fg_pgrp = 0;
            if fg != 0 && fg != pgid {
                self.signal_group(fg, sig::SIGHUP, 0x80, 0, 0);
            }
        }
        // Groups this end orphaned with stopped members get SIGHUP, SIGCONT.
        for g in linked {
            let stopped = self.procs.live().any(|q| q.pgid == g && q.stopped);
            if stopped && self.procs.orphaned(g) {
                self.signal_group(g, sig::SIGHUP, 0x80, 0, 0);
                self.signal_group(g, sig::SIGCONT, 0x80, 0, 0);
            }
        }
        self.tell_parent(pid, ppid, status);
        // A launcher waiting for it.
        if let Some(i) = self.launchers.iter().position(|&(_, p)| p == pid) {
            let (rid, _) = self.launchers.remove(i);
            let _ = sys::endr(rid, &proto::bytes(&[status as u64]));
            self.forget(pid);
            self.pidfds_moved(pid, start_ns, super::pidfd::State::Reaped);
        }
        result(0)
    }

    /// Tells parent `ppid` that `pid` ended with `status` (SIGCHLD), or
    /// reaps it if nobody will wait.
    fn tell_parent(&mut self, pid: u32, ppid: u32, status: u32) {
        let launcher = self.launchers.iter().any(|&(_, p)| p == pid);
        let signo = self.procs.get(pid).map_or(sig::SIGCHLD, |c| c.exit_signal);
        let parent = self.procs.get(ppid).filter(|p| p.zombie.is_none());
        match parent {
            Some(p) => {
                let sup = p.sup;
                let nowait = p.nocldwait;
                let (code, st) = if status & 0x7f == 0 {
                    (CLD_EXITED, ((status >> 8) & 0xff) as i64)
                } else if status & 0x80 != 0 {
                    (CLD_DUMPED, (status & 0x7f) as i64)
                } else {
                    (CLD_KILLED, (status & 0x7f) as i64)
                };
                let s = proto::Signal {
                    sig: signo as u64,
                    code: code as i64,
                    pid: pid as u64,
                    uid: 0,
                    status: st,
                    value: 0,
                    target: ppid as u64,
                };
                if signo != 0 {
                    self.notify(sup, &s);
                }
                if nowait {
                    self.reap(pid);
                }
            }
            None if !launcher => self.reap(pid),
            None => {}
        }
    }

    /// Removes zombie `pid`, counting its faults into its parent's.
    /// Process `pid` is reaped: its record goes, and so does its starter's
    /// right to wait for it (the pid may be given again).
    fn forget(&mut self, pid: u32) -> Option<Proc> {
        self.starters.retain(|&(p, _)| p != pid);
        self.procs.procs.remove(&pid)
    }

    fn reap(&mut self, pid: u32) {
        let Some(p) = self.forget(pid) else {
            return;
        };
        self.pidfds_moved(pid, p.start_ns, super::pidfd::State::Reaped);
        let faults = p.faults + p.child_faults;
        let mut cpu = p.cpu;
        cpu.add(p.child_cpu);
        match self.procs.get_mut(p.ppid) {
            Some(parent) => {
                parent.child_faults += faults;
                parent.child_cpu.add(cpu);
            }
            None if p.ppid == INIT => self.procs.orphan_faults += faults,
            None => {}
        }
    }

    pub(super) fn setsid(&mut self, caller: u32) -> i64 {
        if self.procs.live().any(|p| p.pgid == caller) {
            return -errno::EPERM;
        }
        match self.procs.get_mut(caller) {
            Some(p) => {
                p.pgid = caller;
                p.sid = caller;
                caller as i64
            }
            None => -errno::ESRCH,
        }
    }

    /// Signal `signo` to every live member of group `pgid`.
    pub fn signal_group(&mut self, pgid: u32, signo: u32, code: i64, pid: u32, uid: u32) {
        let sups: Vec<u64> = self.procs.live().filter(|p| p.pgid == pgid).map(|p| p.sup).collect();
        let s = proto::Signal {
            sig: signo as u64,
            code,
            pid: pid as u64,
            uid: uid as u64,
            ..proto::Signal::default()
        };
        for sup in sups {
            self.notify(sup, &s);
        }
    }

    /// kill / tgkill / sigqueue from process `sender`.
    pub(super) fn kill(&mut self, w: &[u64]) -> End {
        let sender = word(w, 1) as u32;
        let target = word(w, 2) as i64 as i32;
        let signo = word(w, 3) as u32;
        let code = word(w, 4) as i64;
        let value = word(w, 5);
        let Some(me) = self.procs.get(sender) else {
            return result(-errno::ESRCH);
        };
        let (my_pgid, my_uid, my_euid) = (me.pgid, me.uid, me.euid);
        if signo > sig::NSIG {
            return result(-errno::EINVAL);
        }
        // The virtual init (root's) takes no signal it has no handler
        // for, as Linux's init: others may not send, root sends nothing.
        if target == INIT as i32 && self.procs.get(INIT).is_none() {
            return result(if my_euid == 0 { 0 } else { -errno::EPERM });
        }
        let targets: Vec<u32> = match target {
            // A thread's tid names its process, as on Linux.
            t if t > 0 => self
                .procs
                .target(sender, t as u32)
                .and_then(|p| self.procs.get(p))
                .map(|p| p.pid)
                .into_iter()
                .collect(),
            0 => self.procs.live().filter(|p| p.pgid == my_pgid).map(|p| p.pid).collect(),
            -1 => self
                .procs
                .live()
                .filter(|p| p.pid != sender && p.pid != INIT)
                .map(|p| p.pid)
                .collect(),
            t => self
                .procs
                .live()
                .filter(|p| p.pgid == (-t) as u32)
                .map(|p| p.pid)
                .collect(),
        };
        if targets.is_empty() {
            return result(-errno::ESRCH);
        }
        let allowed = |p: &super::Proc| my_euid == 0 || my_uid == p.uid || my_euid == p.uid || my_uid == p.euid;
        let mut sent = 0;
        let mut self_hit = 0;
        let mut denied = false;
        for t in targets {
            let Some(p) = self.procs.get(t) else { continue };
            let same_session = p.sid == self.procs.get(sender).map_or(0, |s| s.sid);
            if !(allowed(p) || signo == sig::SIGCONT && same_session) {
                denied = true;
                continue;
            }
            sent += 1;
            if p.zombie.is_some() || signo == 0 {
                continue;
            }
            if t == sender {
                // The sender's supervisor delivers it before the call returns.
                self_hit = 1;
                continue;
            }
            let s = proto::Signal {
                sig: signo as u64,
                code,
                pid: sender as u64,
                uid: my_uid as u64,
                status: 0,
                value,
                target: t as u64,
            };
            let sup = p.sup;
            self.notify(sup, &s);
        }
        if sent == 0 && denied {
            return result(-errno::EPERM);
        }
        reply(&[0, self_hit])
    }

    /// Job control: `pid` stopped (or continued) on signal `signo`.
    pub(super) fn stopped(&mut self, w: &[u64]) -> End {
        let pid = word(w, 1) as u32;
        let stopped = word(w, 2) != 0;
        let signo = word(w, 3) as u32;
        let pgid = self.procs.get(pid).map_or(0, |p| p.pgid);
        // A terminal's stop signal does not stop a member of an orphaned
        // group (nobody could continue it): refused (1), discarded.
        if stopped && sig::valid(signo) && sig::bit(signo) & sig::TTY_STOPS != 0 && self.procs.orphaned(pgid) {
            return result(1);
        }
        let Some(p) = self.procs.get_mut(pid) else {
            return result(-errno::ESRCH);
        };
        if p.stopped == stopped {
            return result(0);
        }
        p.stopped = stopped;
        p.report = Some(if stopped {
            Report::Stopped(signo)
        } else {
            Report::Continued
        });
        let ppid = p.ppid;
        if let Some(parent) = self.procs.get(ppid) {
            let s = proto::Signal {
                sig: sig::SIGCHLD as u64,
                code: if stopped { CLD_STOPPED } else { CLD_CONTINUED } as i64,
                pid: pid as u64,
                uid: 0,
                status: if stopped { signo as i64 } else { sig::SIGCONT as i64 },
                value: 0,
                target: ppid as u64,
            };
            let sup = parent.sup;
            self.notify(sup, &s);
        }
        result(0)
    }

    /// The children of `parent` that a wait for `which` (wait4's pid
    /// argument) with `options` considers: __WALL all, __WCLONE the
    /// clone children alone, else the others.
    fn waitable(&self, parent: u32, which: i64, options: u64) -> Vec<u32> {
        const WCLONE: u64 = 0x8000_0000;
        const WALL: u64 = 0x4000_0000;
        let pgid = self.procs.get(parent).map_or(0, |p| p.pgid);
        self.procs
            .children(parent)
            .filter(|c| options & WALL != 0 || (c.exit_signal != sig::SIGCHLD) == (options & WCLONE != 0))
            .filter(|c| match which {
                w if w > 0 => c.pid == w as u32,
                -1 => true,
                0 => c.pgid == pgid,
                w => c.pgid == (-w) as u32,
            })
            .map(|c| c.pid)
            .collect()
    }

    /// What child `c` has to report to a wait with `want` (exited,
    /// stopped, continued): (wait status, siginfo code, siginfo status).
    fn report_of(&self, c: u32, exited: bool, stopped: bool, continued: bool) -> Option<(u32, i32, i32)> {
        let p = self.procs.get(c)?;
        if let Some(st) = p.zombie {
            if !exited {
                return None;
            }
            let (code, s) = if st & 0x7f == 0 {
                (CLD_EXITED, ((st >> 8) & 0xff) as i32)
            } else if st & 0x80 != 0 {
                (CLD_DUMPED, (st & 0x7f) as i32)
            } else {
                (CLD_KILLED, (st & 0x7f) as i32)
            };
            return Some((st, code, s));
        }
        match p.report {
            Some(Report::Stopped(s)) if stopped => Some((sig::stopped_status(s), CLD_STOPPED, s as i32)),
            Some(Report::Continued) if continued => Some((sig::CONTINUED_STATUS, CLD_CONTINUED, sig::SIGCONT as i32)),
            _ => None,
        }
    }

    /// A held wait4 or waitid: ends it if a child has something to say,
    /// or there is nothing to wait for.
    pub(super) fn wait_step(&mut self, h: &Held) -> bool {
        const WNOHANG: u64 = 1;
        const WUNTRACED: u64 = 2;
        const WEXITED: u64 = 4;
        const WCONTINUED: u64 = 8;
        const WNOWAIT: u64 = 0x0100_0000;
        let (which, options, waitid) = match h.what {
            Waiting::Wait4 { which, options, .. } => (which, options | WEXITED, false),
            Waiting::Waitid {
                idtype, id, options, ..
            } => {
                let which = match idtype {
                    0 => -1,
                    1 => id as i64,
                    2 if id == 0 => 0,
                    2 => -(id as i64),
                    _ => {
                        self.finish(h, errno::fail(errno::EINVAL));
                        return true;
                    }
                };
                (which, options, true)
            }
            _ => return true,
        };
        let children = self.waitable(h.pid, which, options);
        if children.is_empty() {
            if let Waiting::Waitid { info, .. } = h.what
                && info != 0
                && !self.put(h, info, &[0u8; 128])
            {
                self.finish(h, errno::fail(errno::EFAULT));
                return true;
            }
            self.finish(h, errno::fail(errno::ECHILD));
            return true;
        }
        let found = children.iter().find_map(|&c| {
            self.report_of(
                c,
                options & WEXITED != 0,
                options & WUNTRACED != 0,
                options & WCONTINUED != 0,
            )
            .map(|r| (c, r))
        });
        let Some((child, (status, code, st))) = found else {
            if options & WNOHANG != 0 {
                if let Waiting::Waitid { info, .. } = h.what
                    && info != 0
                    && !self.put(h, info, &[0u8; 128])
                {
                    self.finish(h, errno::fail(errno::EFAULT));
                    return true;
                }
                let none = if options & pass::WAIT_EAGAIN != 0 {
                    errno::fail(errno::EAGAIN)
                } else {
                    0
                };
                self.finish(h, none);
                return true;
            }
            return false;
        };
        let uid = self.procs.get(child).map_or(0, |p| p.uid);
        let zombie = self.procs.get(child).is_some_and(|p| p.zombie.is_some());
        let keep = waitid && options & WNOWAIT != 0;
        let mut ok = true;
        match h.what {
            Waiting::Wait4 { status: at, rusage, .. } => {
                if at != 0 {
                    ok &= self.put(h, at, &status.to_le_bytes());
                }
                if rusage != 0 {
                    // The child's own and that of the children it waited
                    // for, as Linux's wait4.
                    let (faults, cpu) = self.procs.get(child).map_or((0, CpuTimes::default()), |p| {
                        let mut cpu = p.cpu;
                        cpu.add(p.child_cpu);
                        (p.faults + p.child_faults, cpu)
                    });
                    ok &= self.put(h, rusage, &linuxabi::structs::rusage(cpu.user, cpu.system, faults));
                }
            }
            Waiting::Waitid { info, .. } if info != 0 => {
                let si = linuxabi::frame::SigInfo {
                    signo: sig::SIGCHLD,
                    code,
                    pid: child,
                    uid,
                    status: st,
                    ..Default::default()
                };
                ok &= self.put(h, info, &si.to_bytes());
            }
            _ => {}
        }
        if !keep {
            if zombie {
                self.reap(child);
            } else if let Some(p) = self.procs.get_mut(child) {
                p.report = None;
            }
        }
        let value = if !ok {
            errno::fail(errno::EFAULT)
        } else if waitid {
            0
        } else {
            child as u64
        };
        self.finish(h, value);
        true
    }

    /// The record `/proc` and `ps` show of `pid`. A process is sleeping
    /// when a call of its waits here, or its first computation is blocked
    /// in the kernel (a futex, a sleep, a call its supervisor holds).
    pub(super) fn proc_record(&self, pid: u32) -> End {
        let Some(p) = self.procs.get(pid) else {
            return if pid == INIT {
                self.virtual_init_record()
            } else {
                result(-errno::ESRCH)
            };
        };
        let tpid = if p.zombie.is_none() {
            p.tessera_pid().unwrap_or(0)
        } else {
            p.tpid
        };
        let state = if p.zombie.is_some() {
            b'Z'
        } else if p.stopped {
            b'T'
        } else if self.held.iter().any(|h| h.pid == pid)
            || self.sysv_waits(pid)
            || self.mq_waits(pid)
            || (asleep(tpid) && !at_work(p.sup))
        {
            b'S'
        } else {
            b'R'
        };
        let mut r = alloc::vec![
            0,
            p.ppid as u64,
            p.pgid as u64,
            p.sid as u64,
            state as u64,
            tpid,
            p.uid as u64,
            self.objs.tty.fg_pgrp as u64,
            p.start_ns,
            p.comm[0],
            p.comm[1],
            p.child_faults,
            self.objs.tty.session as u64,
        ];
        r.extend_from_slice(&p.cmdline);
        End::Reply(r)
    }

    /// The virtual init's record (no Tessera process: `u64::MAX`), asleep,
    /// root's, in the terminal's session, with the faults of the orphans it
    /// reaped.
    fn virtual_init_record(&self) -> End {
        let comm = u64::from_le_bytes(*b"init\0\0\0\0");
        End::Reply(alloc::vec![
            0,
            0,
            INIT as u64,
            INIT as u64,
            b'S' as u64,
            u64::MAX,
            0,
            self.objs.tty.fg_pgrp as u64,
            0,
            comm,
            0,
            self.procs.orphan_faults,
            self.objs.tty.session as u64,
        ])
    }

    /// Its real-time timer: set to fire in `value` ns (0: off), then every
    /// `interval`; returns what was left of the old one.
    pub(super) fn alarm(&mut self, w: &[u64]) -> End {
        let pid = word(w, 1) as u32;
        let (value, interval) = (word(w, 2), word(w, 3));
        let now = sys::now_ns();
        let old = self
            .timers
            .get(&pid)
            .map_or((0, 0), |&(d, i)| (d.saturating_sub(now).max(1), i));
        if value == u64::MAX {
            // Only a look (getitimer).
        } else if value == 0 {
            self.timers.remove(&pid);
        } else {
            self.timers.insert(pid, (now + value, interval));
        }
        reply(&[old.0, old.1])
    }
}

/// Whether Tessera process `tpid` is blocked (waiting in the kernel).
fn asleep(tpid: u64) -> bool {
    use tessera_rt::abi::state;
    tpid != 0 && sys::calls::proc_state(tpid).is_ok_and(|s| s == state::BLOCKED || s == state::WAITING)
}

/// Whether supervisor `sup` is still serving a call: a process blocked
/// in a call its supervisor is serving is running on Linux's terms (its
/// kernel works for it), not asleep, even while the supervisor waits for
/// a server (the file server reading an execve's program, the shared
/// server). A call that sleeps on Linux's terms is one the supervisor
/// holds, going back to wait for calls, or one a server holds.
fn at_work(sup: u64) -> bool {
    use tessera_rt::abi::state;
    sys::calls::proc_state(sup).is_ok_and(|s| s != state::WAITING && s != state::EXITED)
}
