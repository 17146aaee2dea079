//! SysV IPC (shared memory, semaphores, message queues) for every Linux
//! process: the records are `linuxabi::sysv`'s, held here; a segment's
//! memory is a mapping of this server's own, which the kernel shares into
//! a process at shmat (`caller_share`) and counts the attachments of
//! (`map_sharers`). Supervisors pass each call here (`pass::SYSV` plus
//! the call's number): this server reads and writes the caller's memory
//! itself and ends the call, at once or, for a semop, msgsnd or msgrcv
//! that must wait, when another call lets it go on, its deadline passes,
//! a signal comes (EINTR) or the object goes (EIDRM).

use super::Shared;
use crate::proto::word;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::nr;
use linuxabi::sysv::{self as v, Ipc, SemOp, SemStep, Who};
use tessera_rt::abi::Error;
use tessera_rt::sys;
use tessera_rt::sys::calls;

/// Bytes of messages queued in all queues at most: the server's heap
/// holds them (past it, msgsnd is ENOMEM rather than the server failing).
const MSG_BYTES_MAX: u64 = 16 << 20;
/// Semaphores in all sets at most (each a few bytes of the server's).
const SEMS_MAX: u64 = 1 << 20;
/// Pages of all segments at most: their frames are this server's (filled
/// at a segment's first shmat), so one process cannot take the machine's
/// memory through it; past it shmget is ENOSPC, as past shmall.
const SHM_PAGES_MAX: u64 = (256 << 20) / 4096;

/// A call passed here: [nr, pid, who, the call's arguments...].
#[derive(Clone, Debug)]
pub struct Call {
    pub rid: u64,
    pub pid: u32,
    /// The calling thread's tid.
    pub tid: u32,
    pub who: Who,
    pub nr: u64,
    pub a: [u64; 5],
    /// What a waiting call keeps: its operations or its message.
    pub ops: Vec<SemOp>,
    pub data: Vec<u8>,
    /// Nanoseconds since boot it gives up at (u64::MAX: never).
    pub deadline: u64,
}

#[derive(Default)]
pub struct SysV {
    pub ipc: Ipc,
    /// Calls waiting, in the order they came.
    pub waits: Vec<Call>,
}

/// How a call ends now, or that it waits.
enum Step {
    Ret(i64),
    Wait,
}

fn done(r: Result<i64, i64>) -> Step {
    Step::Ret(r.unwrap_or_else(|e| -e))
}

impl SysV {
    /// The earliest deadline of a waiting call.
    pub fn deadline(&self) -> Option<u64> {
        self.waits.iter().map(|c| c.deadline).filter(|&d| d != u64::MAX).min()
    }
}

fn now_s() -> i64 {
    v::seconds(sys::now_ns())
}

fn read(rid: u64, addr: u64, len: usize) -> Result<Vec<u8>, i64> {
    let mut buf = Vec::new();
    buf.try_reserve_exact(len).map_err(|_| errno::ENOMEM)?;
    buf.resize(len, 0);
    if len > 0 {
        calls::caller_read(rid, addr, &mut buf).map_err(|_| errno::EFAULT)?;
    }
    Ok(buf)
}

fn write(rid: u64, addr: u64, data: &[u8]) -> Result<(), i64> {
    calls::caller_write(rid, addr, data)
        .map(|_| ())
        .map_err(|_| errno::EFAULT)
}

impl Shared {
    /// A SysV call passed on by a supervisor (`w`: the message's words).
    pub(super) fn sysv_pass(&mut self, rid: u64, w: &[u64]) {
        let who = word(w, 2);
        let c = Call {
            rid,
            pid: word(w, 1) as u32,
            tid: (word(w, 1) >> 32) as u32,
            who: Who {
                uid: who as u32,
                gid: (who >> 32) as u32,
            },
            nr: word(w, 0) - crate::proto::pass::SYSV,
            a: [word(w, 3), word(w, 4), word(w, 5), word(w, 6), word(w, 7)],
            ops: Vec::new(),
            data: Vec::new(),
            deadline: u64::MAX,
        };
        self.sysv_sweep();
        let mut c = c;
        if let Step::Ret(r) = self.sysv_first(&mut c) {
            let _ = calls::caller_return(rid, r as u64);
        } else {
            self.sysv.waits.push(c);
        }
    }

    /// The waiting calls that can go on now, again while any did; true if
    /// any ended.
    pub(super) fn sysv_progress(&mut self) -> bool {
        let mut any = false;
        // Looked at after every request: the clock only when a call waits.
        while !self.sysv.waits.is_empty() {
            let now = sys::now_ns();
            let mut ended = false;
            let mut i = 0;
            while i < self.sysv.waits.len() {
                let mut c = self.sysv.waits[i].clone();
                let step = match self.sysv_again(&mut c) {
                    Step::Wait if now >= c.deadline => Step::Ret(-errno::EAGAIN),
                    s => s,
                };
                match step {
                    Step::Ret(r) => {
                        self.sysv.waits.remove(i);
                        let _ = calls::caller_return(c.rid, r as u64);
                        ended = true;
                    }
                    Step::Wait => i += 1,
                }
            }
            if !ended {
                return any;
            }
            any = true;
        }
        any
    }

    /// A signal came for thread `tid` of `pid` (0: any of its threads):
    /// its waiting call ends with EINTR (SysV calls are not restarted).
    /// False if it had none here.
    pub(super) fn sysv_interrupt(&mut self, pid: u32, tid: u32) -> bool {
        match self
            .sysv
            .waits
            .iter()
            .position(|c| c.pid == pid && (tid == 0 || c.tid == tid))
        {
            Some(i) => {
                let c = self.sysv.waits.remove(i);
                let _ = calls::caller_return(c.rid, errno::fail(errno::EINTR));
                true
            }
            None => false,
        }
    }

    /// Whether `pid` waits in a SysV call (it is asleep: 'S' in `/proc`).
    pub(super) fn sysv_waits(&self, pid: u32) -> bool {
        self.sysv.waits.iter().any(|c| c.pid == pid)
    }

    /// `pid` ended: its calls go, its undo values are applied, and the
    /// removed segments nobody maps any more give their memory back.
    pub(super) fn sysv_exit(&mut self, pid: u32) {
        self.sysv.waits.retain(|c| c.pid != pid);
        self.sysv.ipc.exit(pid);
        self.sysv_sweep();
    }

    /// Segments removed while attached go once nothing maps them.
    fn sysv_sweep(&mut self) {
        let gone: Vec<(i64, u64)> = self
            .sysv
            .ipc
            .shm
            .iter()
            .filter(|(_, (p, s))| p.mode & v::SHM_DEST != 0 && calls::map_sharers(s.at).unwrap_or(0) == 0)
            .map(|(id, (_, s))| (id, s.at))
            .collect();
        for (id, at) in gone {
            let _ = sys::unmap(at, 0);
            self.sysv.ipc.shm.remove(id);
        }
    }

    /// `/proc/sys/kernel`'s IPC setting `index` (`v::SETTINGS`): its text,
    /// after setting it from `text` if there is one.
    pub(super) fn sysv_setting(&mut self, index: u64, text: Option<&[u8]>) -> Result<Vec<u8>, i64> {
        let name = v::SETTINGS.get(index as usize).ok_or(errno::ENOENT)?;
        if let Some(t) = text {
            self.sysv.ipc.limits.set(name, t)?;
        }
        Ok(self.sysv.ipc.limits.text(name).unwrap_or_default().into_bytes())
    }

    /// `/proc/sysvipc/{shm,sem,msg}` (`which` 0, 1, 2): a heading and a
    /// line per object, as Linux prints them.
    pub(super) fn sysv_list(&self, which: u64) -> Vec<u8> {
        use alloc::format;
        let ipc = &self.sysv.ipc;
        let mut s = alloc::string::String::new();
        match which {
            0 => {
                s += "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n";
                for (id, (p, g)) in ipc.shm.iter() {
                    let n = calls::map_sharers(g.at).unwrap_or(0);
                    s += &format!(
                        "{:10} {:10}  {:4o} {:21} {:5} {:5}  {:5} {:5} {:5} {:5} {:5} {:10} {:10} {:10} {:21} {:21}\n",
                        p.key,
                        id,
                        p.mode,
                        g.size,
                        g.cpid,
                        g.lpid,
                        n,
                        p.uid,
                        p.gid,
                        p.cuid,
                        p.cgid,
                        g.atime,
                        g.dtime,
                        g.ctime,
                        g.size,
                        0
                    );
                }
            }
            1 => {
                s += "       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime\n";
                for (id, (p, m)) in ipc.sem.iter() {
                    s += &format!(
                        "{:10} {:10}  {:4o} {:10} {:5} {:5} {:5} {:5} {:10} {:10}\n",
                        p.key,
                        id,
                        p.mode,
                        m.vals.len(),
                        p.uid,
                        p.gid,
                        p.cuid,
                        p.cgid,
                        m.otime,
                        m.ctime
                    );
                }
            }
            _ => {
                s += "       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  cgid      stime      rtime      ctime\n";
                for (id, (p, q)) in ipc.msg.iter() {
                    s += &format!(
                        "{:10} {:10}  {:4o}  {:10} {:10} {:5} {:5} {:5} {:5} {:5} {:5} {:10} {:10} {:10}\n",
                        p.key,
                        id,
                        p.mode,
                        q.bytes,
                        q.msgs.len(),
                        q.lspid,
                        q.lrpid,
                        p.uid,
                        p.gid,
                        p.cuid,
                        p.cgid,
                        q.stime,
                        q.rtime,
                        q.ctime
                    );
                }
            }
        }
        s.into_bytes()
    }

    fn sysv_first(&mut self, c: &mut Call) -> Step {
        let [a0, a1, a2, a3, a4] = c.a;
        match c.nr {
            nr::SHMGET => done(self.shmget(c, a0 as i32, a1, a2)),
            nr::SHMAT => done(self.shmat(c, a0 as i32 as i64, a1, a2)),
            nr::SHMDT => done(self.shmdt(c, a0)),
            nr::SHMCTL => done(self.shmctl(c, a0 as i32 as i64, a1, a2)),
            nr::SEMGET => {
                let (who, now) = (c.who, now_s());
                done(self.semget(a0 as i32, a1 as i32 as i64, a2, who, now))
            }
            nr::SEMTIMEDOP => match self.semop_start(c, a0 as i32 as i64, a1, a2, a3) {
                Ok(()) => self.sysv_again(c),
                Err(e) => Step::Ret(-e),
            },
            nr::SEMCTL => done(self.semctl(c, a0 as i32 as i64, a1, a2, a3)),
            nr::MSGGET => {
                let now = now_s();
                done(self.sysv.ipc.msgget(a0 as i32, a1, c.who, now))
            }
            nr::MSGSND => match self.msgsnd_start(c, a0 as i32 as i64, a1, a2, a3) {
                Ok(()) => self.sysv_again(c),
                Err(e) => Step::Ret(-e),
            },
            nr::MSGRCV => match self.msgrcv_check(c, a0 as i32 as i64, a2, a4) {
                Ok(()) => self.sysv_again(c),
                Err(e) => Step::Ret(-e),
            },
            nr::MSGCTL => done(self.msgctl(c, a0 as i32 as i64, a1, a2)),
            _ => Step::Ret(-errno::ENOSYS),
        }
    }

    /// A call that may wait, tried (again).
    fn sysv_again(&mut self, c: &mut Call) -> Step {
        match c.nr {
            nr::SEMTIMEDOP => self.semop_step(c),
            nr::MSGSND => self.msgsnd_step(c),
            nr::MSGRCV => self.msgrcv_step(c),
            _ => Step::Ret(-errno::EINVAL),
        }
    }

    // ---- shared memory ----

    fn shmget(&mut self, c: &Call, key: i32, size: u64, flags: u64) -> Result<i64, i64> {
        let l = self.sysv.ipc.limits;
        if flags & v::SHM_HUGETLB != 0 {
            // No huge page size is mounted: Linux's hugetlb_file_setup
            // answers that before it looks at the caller.
            return Err(errno::ENOENT);
        }
        let pages_in_use: u64 = self.sysv.ipc.shm.iter().map(|(_, (_, s))| s.size.div_ceil(4096)).sum();
        let now = now_s();
        let pid = c.pid;
        self.sysv.ipc.shm.lookup_or_make(
            key,
            flags,
            c.who,
            (l.shmmni, &mut self.sysv.ipc.limits.next_id[0]),
            |s| if size > s.size { Err(errno::EINVAL) } else { Ok(()) },
            || {
                if size < 1 || size > l.shmmax {
                    return Err(errno::EINVAL);
                }
                if pages_in_use.saturating_add(size.div_ceil(4096)) > l.shmall.min(SHM_PAGES_MAX) {
                    return Err(errno::ENOSPC);
                }
                let at = sys::map(size, 3).map_err(|_| errno::ENOMEM)?;
                Ok(v::Segment {
                    size,
                    at,
                    ctime: now,
                    cpid: pid,
                    ..v::Segment::default()
                })
            },
        )
    }

    fn shmat(&mut self, c: &Call, id: i64, addr: u64, flags: u64) -> Result<i64, i64> {
        let (perm, seg) = *self.sysv.ipc.shm.get(id)?;
        let mut want = if flags & v::SHM_RDONLY != 0 { 0o444 } else { 0o666 };
        if flags & v::SHM_EXEC != 0 {
            want |= 0o111;
        }
        if !perm.allows(c.who, want) {
            return Err(errno::EACCES);
        }
        let mut at = addr;
        if !at.is_multiple_of(v::SHMLBA) {
            if flags & v::SHM_RND == 0 {
                return Err(errno::EINVAL);
            }
            at &= !(v::SHMLBA - 1);
        }
        if at == 0 && flags & v::SHM_REMAP != 0 {
            return Err(errno::EINVAL);
        }
        let how = if at != 0 { 0x10 } else { 0 } | (flags & v::SHM_RDONLY);
        let got = calls::caller_share(c.rid, at, seg.at, how).map_err(|e| match e {
            Error::NoMemory | Error::Limit => errno::ENOMEM,
            _ => errno::EINVAL,
        })?;
        if let Ok((_, s)) = self.sysv.ipc.shm.get_mut(id) {
            s.atime = now_s();
            s.lpid = c.pid;
            s.present = true;
        }
        Ok(got as i64)
    }

    fn shmdt(&mut self, c: &Call, addr: u64) -> Result<i64, i64> {
        if !addr.is_multiple_of(v::SHMLBA) {
            return Err(errno::EINVAL);
        }
        let before: Vec<(i64, u64)> = self
            .sysv
            .ipc
            .shm
            .iter()
            .map(|(id, (_, s))| (id, calls::map_sharers(s.at).unwrap_or(0)))
            .collect();
        calls::caller_unshare(c.rid, addr).map_err(|_| errno::EINVAL)?;
        let now = now_s();
        for (id, n) in before {
            if let Ok((_, s)) = self.sysv.ipc.shm.get_mut(id)
                && calls::map_sharers(s.at).unwrap_or(0) < n
            {
                s.dtime = now;
                s.lpid = c.pid;
            }
        }
        self.sysv_sweep();
        Ok(0)
    }

    fn shmctl(&mut self, c: &Call, id: i64, cmd: u64, buf: u64) -> Result<i64, i64> {
        let cmd = cmd & !v::IPC_64;
        let ipc = &mut self.sysv.ipc;
        match cmd {
            v::IPC_INFO => {
                write(c.rid, buf, &v::shminfo(&ipc.limits))?;
                return Ok(ipc.shm.max_index() as i64);
            }
            v::SHM_INFO => {
                let pages = |present: bool| {
                    ipc.shm
                        .iter()
                        .filter(|(_, (_, s))| s.present || !present)
                        .map(|(_, (_, s))| s.size.div_ceil(4096))
                        .sum()
                };
                write(
                    c.rid,
                    buf,
                    &v::shm_info(ipc.shm.count() as u32, pages(false), pages(true)),
                )?;
                return Ok(ipc.shm.max_index() as i64);
            }
            v::SHM_STAT | v::SHM_STAT_ANY => {
                let (id, (p, s)) = ipc.shm.at_index(id)?;
                if cmd == v::SHM_STAT && !p.allows(c.who, 0o444) {
                    return Err(errno::EACCES);
                }
                let n = calls::map_sharers(s.at).unwrap_or(0);
                write(c.rid, buf, &s.ds(p, n))?;
                return Ok(id);
            }
            _ => {}
        }
        let (p, s) = ipc.shm.get_mut(id)?;
        match cmd {
            v::IPC_STAT => {
                if !p.allows(c.who, 0o444) {
                    return Err(errno::EACCES);
                }
                let n = calls::map_sharers(s.at).unwrap_or(0);
                write(c.rid, buf, &s.ds(p, n))?;
                Ok(0)
            }
            v::IPC_SET => {
                let ds = read(c.rid, buf, 112)?;
                if !p.may_change(c.who) {
                    return Err(errno::EPERM);
                }
                p.set_from(&ds);
                s.ctime = now_s();
                Ok(0)
            }
            v::IPC_RMID => {
                if !p.may_change(c.who) {
                    return Err(errno::EPERM);
                }
                // The memory stays while attached; the key is free at once.
                p.mode |= v::SHM_DEST;
                p.key = v::IPC_PRIVATE;
                s.ctime = now_s();
                self.sysv_sweep();
                Ok(0)
            }
            v::SHM_LOCK | v::SHM_UNLOCK => {
                if !p.may_change(c.who) {
                    return Err(errno::EPERM);
                }
                if cmd == v::SHM_LOCK {
                    p.mode |= v::SHM_LOCKED;
                } else {
                    p.mode &= !v::SHM_LOCKED;
                }
                Ok(0)
            }
            _ => Err(errno::EINVAL),
        }
    }

    // ---- semaphores ----

    fn semget(&mut self, key: i32, nsems: i64, flags: u64, who: Who, now: i64) -> Result<i64, i64> {
        let total: u64 = self.sysv.ipc.sem.iter().map(|(_, (_, s))| s.vals.len() as u64).sum();
        if key == v::IPC_PRIVATE || flags & v::IPC_CREAT != 0 {
            // Only a new set can pass the server's own bound.
            let fresh = key == v::IPC_PRIVATE || self.sysv.ipc.sem.iter().all(|(_, (p, _))| p.key != key);
            if fresh && nsems > 0 && total + nsems as u64 > SEMS_MAX {
                return Err(errno::ENOSPC);
            }
        }
        self.sysv.ipc.semget(key, nsems, flags, who, now)
    }

    fn semop_start(&mut self, c: &mut Call, id: i64, sops: u64, nsops: u64, deadline: u64) -> Result<(), i64> {
        let l = self.sysv.ipc.limits;
        if nsops < 1 || id < 0 {
            return Err(errno::EINVAL);
        }
        if nsops > l.sem[2] {
            return Err(errno::E2BIG);
        }
        c.ops = SemOp::parse(&read(c.rid, sops, nsops as usize * 6)?);
        c.deadline = deadline;
        let (p, s) = self.sysv.ipc.sem.get(id)?;
        if c.ops.iter().any(|o| o.num as usize >= s.vals.len()) {
            return Err(errno::EFBIG);
        }
        let alter = c.ops.iter().any(|o| o.op != 0);
        if !p.allows(c.who, if alter { 0o222 } else { 0o444 }) {
            return Err(errno::EACCES);
        }
        Ok(())
    }

    fn semop_step(&mut self, c: &mut Call) -> Step {
        let id = c.a[0] as i32 as i64;
        let ipc = &mut self.sysv.ipc;
        let mut undo = ipc.undo.0.get(&(c.pid, id)).cloned().unwrap_or_default();
        let Ok((_, s)) = ipc.sem.get_mut(id) else {
            return Step::Ret(-errno::EIDRM);
        };
        match s.apply(&c.ops, c.pid, &mut undo) {
            Ok(SemStep::Done) => {
                s.otime = now_s();
                if undo.iter().any(|&u| u != 0) || ipc.undo.0.contains_key(&(c.pid, id)) {
                    *ipc.undo_of(c.pid, id) = undo;
                }
                Step::Ret(0)
            }
            Ok(SemStep::Wait { num, zero }) => {
                let nowait = c
                    .ops
                    .iter()
                    .find(|o| o.num == num && (o.op == 0) == zero)
                    .is_some_and(|o| o.flags as u64 & v::IPC_NOWAIT != 0);
                if nowait { Step::Ret(-errno::EAGAIN) } else { Step::Wait }
            }
            Err(e) => Step::Ret(-e),
        }
    }

    /// How many calls wait for semaphore `num` of set `id` to grow (false)
    /// or to be zero (true).
    fn sem_waiters(&self, id: i64, num: u64, zero: bool) -> i64 {
        let Ok((_, s)) = self.sysv.ipc.sem.get(id) else {
            return 0;
        };
        self.sysv
            .waits
            .iter()
            .filter(|c| c.nr == nr::SEMTIMEDOP && c.a[0] as i32 as i64 == id)
            .filter(|c| {
                let mut probe = s.clone();
                let mut undo = Vec::new();
                matches!(probe.apply(&c.ops, 0, &mut undo), Ok(SemStep::Wait { num: n, zero: z }) if n as u64 == num && z == zero)
            })
            .count() as i64
    }

    fn semctl(&mut self, c: &Call, id: i64, num: u64, cmd: u64, arg: u64) -> Result<i64, i64> {
        let cmd = cmd & !v::IPC_64;
        let now = now_s();
        match cmd {
            v::IPC_INFO | v::SEM_INFO => {
                let ipc = &self.sysv.ipc;
                let info = (cmd == v::SEM_INFO).then(|| {
                    let sems: usize = ipc.sem.iter().map(|(_, (_, s))| s.vals.len()).sum();
                    (ipc.sem.count() as u32, sems as u32)
                });
                write(c.rid, arg, &v::seminfo(&ipc.limits, info))?;
                return Ok(ipc.sem.max_index() as i64);
            }
            v::SEM_STAT | v::SEM_STAT_ANY => {
                let (id, (p, s)) = self.sysv.ipc.sem.at_index(id)?;
                if cmd == v::SEM_STAT && !p.allows(c.who, 0o444) {
                    return Err(errno::EACCES);
                }
                write(c.rid, arg, &s.ds(p))?;
                return Ok(id);
            }
            v::GETNCNT | v::GETZCNT => {
                let (p, s) = self.sysv.ipc.sem.get(id)?;
                if num as usize >= s.vals.len() {
                    return Err(errno::EINVAL);
                }
                if !p.allows(c.who, 0o444) {
                    return Err(errno::EACCES);
                }
                return Ok(self.sem_waiters(id, num, cmd == v::GETZCNT));
            }
            _ => {}
        }
        let ipc = &mut self.sysv.ipc;
        let (p, s) = ipc.sem.get_mut(id)?;
        let read_ok = p.allows(c.who, 0o444);
        let alter_ok = p.allows(c.who, 0o222);
        let one = |s: &v::SemSet| {
            if num as usize >= s.vals.len() {
                Err(errno::EINVAL)
            } else {
                Ok(num as usize)
            }
        };
        match cmd {
            v::IPC_STAT => {
                if !read_ok {
                    return Err(errno::EACCES);
                }
                write(c.rid, arg, &s.ds(p))?;
                Ok(0)
            }
            v::IPC_SET => {
                let ds = read(c.rid, arg, 104)?;
                if !p.may_change(c.who) {
                    return Err(errno::EPERM);
                }
                p.set_from(&ds);
                s.ctime = now;
                Ok(0)
            }
            v::IPC_RMID => {
                if !p.may_change(c.who) {
                    return Err(errno::EPERM);
                }
                ipc.sem.remove(id);
                ipc.forget_set(id);
                Ok(0)
            }
            v::GETVAL | v::GETPID => {
                let n = one(s)?;
                if !read_ok {
                    return Err(errno::EACCES);
                }
                Ok(if cmd == v::GETVAL {
                    s.vals[n] as i64
                } else {
                    s.pids[n] as i64
                })
            }
            v::GETALL => {
                if !read_ok {
                    return Err(errno::EACCES);
                }
                let b: Vec<u8> = s.vals.iter().flat_map(|&x| (x as u16).to_le_bytes()).collect();
                write(c.rid, arg, &b)?;
                Ok(0)
            }
            v::SETVAL => {
                let n = one(s)?;
                let val = arg as i32;
                if !(0..=v::SEMVMX).contains(&val) {
                    return Err(errno::ERANGE);
                }
                if !alter_ok {
                    return Err(errno::EACCES);
                }
                s.vals[n] = val;
                s.pids[n] = c.pid;
                s.ctime = now;
                ipc.undo.clear(id, Some(n));
                Ok(0)
            }
            v::SETALL => {
                if !alter_ok {
                    return Err(errno::EACCES);
                }
                let b = read(c.rid, arg, s.vals.len() * 2)?;
                let vals: Vec<i32> = b
                    .chunks_exact(2)
                    .map(|x| u16::from_le_bytes([x[0], x[1]]) as i32)
                    .collect();
                if vals.iter().any(|&x| x > v::SEMVMX) {
                    return Err(errno::ERANGE);
                }
                s.vals = vals;
                s.pids.iter_mut().for_each(|q| *q = c.pid);
                s.ctime = now;
                ipc.undo.clear(id, None);
                Ok(0)
            }
            _ => Err(errno::EINVAL),
        }
    }

    // ---- message queues ----

    fn msgsnd_start(&mut self, c: &mut Call, id: i64, msgp: u64, size: u64, flags: u64) -> Result<(), i64> {
        let l = self.sysv.ipc.limits;
        if size > l.msgmax || (size as i64) < 0 || id < 0 {
            return Err(errno::EINVAL);
        }
        let t = read(c.rid, msgp, 8)?;
        let typ = i64::from_le_bytes(t.try_into().unwrap_or([0; 8]));
        if typ < 1 {
            return Err(errno::EINVAL);
        }
        let (p, _) = self.sysv.ipc.msg.get(id)?;
        if !p.allows(c.who, 0o222) {
            return Err(errno::EACCES);
        }
        c.data = read(c.rid, msgp.wrapping_add(8), size as usize)?;
        c.a[4] = typ as u64;
        c.a[3] = flags;
        Ok(())
    }

    fn msgsnd_step(&mut self, c: &mut Call) -> Step {
        let id = c.a[0] as i32 as i64;
        let queued: u64 = self.sysv.ipc.msg.iter().map(|(_, (_, q))| q.bytes).sum();
        let Ok((_, q)) = self.sysv.ipc.msg.get_mut(id) else {
            return Step::Ret(-errno::EIDRM);
        };
        let len = c.data.len() as u64;
        if !q.has_room(len) {
            return if c.a[3] & v::IPC_NOWAIT != 0 {
                Step::Ret(-errno::EAGAIN)
            } else {
                Step::Wait
            };
        }
        if queued + len > MSG_BYTES_MAX {
            return Step::Ret(-errno::ENOMEM);
        }
        q.push(c.a[4] as i64, core::mem::take(&mut c.data));
        q.lspid = c.pid;
        q.stime = now_s();
        Step::Ret(0)
    }

    fn msgrcv_check(&mut self, c: &Call, id: i64, size: u64, flags: u64) -> Result<(), i64> {
        if (size as i64) < 0 || id < 0 {
            return Err(errno::EINVAL);
        }
        if flags & v::MSG_COPY != 0 && (flags & v::IPC_NOWAIT == 0 || flags & v::MSG_EXCEPT != 0) {
            return Err(errno::EINVAL);
        }
        let (p, _) = self.sysv.ipc.msg.get(id)?;
        if !p.allows(c.who, 0o444) {
            return Err(errno::EACCES);
        }
        Ok(())
    }

    fn msgrcv_step(&mut self, c: &mut Call) -> Step {
        let [id, msgp, size, typ, flags] = c.a;
        let id = id as i32 as i64;
        let Ok((_, q)) = self.sysv.ipc.msg.get_mut(id) else {
            return Step::Ret(-errno::EIDRM);
        };
        let found = if flags & v::MSG_COPY != 0 {
            usize::try_from(typ as i64).ok().filter(|&i| i < q.msgs.len())
        } else {
            q.find(typ as i64, flags)
        };
        let Some(i) = found else {
            return if flags & v::IPC_NOWAIT != 0 {
                Step::Ret(-errno::ENOMSG)
            } else {
                Step::Wait
            };
        };
        let (t, data) = &q.msgs[i];
        if data.len() as u64 > size && flags & v::MSG_NOERROR == 0 {
            return Step::Ret(-errno::E2BIG);
        }
        let n = (data.len() as u64).min(size) as usize;
        let mut out = Vec::new();
        if out.try_reserve_exact(8 + n).is_err() {
            return Step::Ret(-errno::ENOMEM);
        }
        out.extend_from_slice(&t.to_le_bytes());
        out.extend_from_slice(&data[..n]);
        // Linux takes the message off the queue before copying it out: a
        // fault loses it.
        if flags & v::MSG_COPY == 0 {
            q.take(i);
            q.lrpid = c.pid;
            q.rtime = now_s();
        }
        if write(c.rid, msgp, &out).is_err() {
            return Step::Ret(-errno::EFAULT);
        }
        Step::Ret(n as i64)
    }

    fn msgctl(&mut self, c: &Call, id: i64, cmd: u64, buf: u64) -> Result<i64, i64> {
        let cmd = cmd & !v::IPC_64;
        let ipc = &mut self.sysv.ipc;
        match cmd {
            v::IPC_INFO | v::MSG_INFO => {
                let info = (cmd == v::MSG_INFO).then(|| {
                    let msgs: usize = ipc.msg.iter().map(|(_, (_, q))| q.msgs.len()).sum();
                    let bytes: u64 = ipc.msg.iter().map(|(_, (_, q))| q.bytes).sum();
                    (ipc.msg.count() as u32, msgs as u32, bytes as u32)
                });
                write(c.rid, buf, &v::msginfo(&ipc.limits, info))?;
                return Ok(ipc.msg.max_index() as i64);
            }
            v::MSG_STAT | v::MSG_STAT_ANY => {
                let (id, (p, q)) = ipc.msg.at_index(id)?;
                if cmd == v::MSG_STAT && !p.allows(c.who, 0o444) {
                    return Err(errno::EACCES);
                }
                write(c.rid, buf, &q.ds(p))?;
                return Ok(id);
            }
            _ => {}
        }
        let limits = ipc.limits;
        let (p, q) = ipc.msg.get_mut(id)?;
        match cmd {
            v::IPC_STAT => {
                if !p.allows(c.who, 0o444) {
                    return Err(errno::EACCES);
                }
                write(c.rid, buf, &q.ds(p))?;
                Ok(0)
            }
            v::IPC_SET => {
                let ds = read(c.rid, buf, 120)?;
                if !p.may_change(c.who) {
                    return Err(errno::EPERM);
                }
                q.qbytes = v::msg_set_qbytes(&ds, &limits, c.who)?;
                p.set_from(&ds);
                q.ctime = now_s();
                Ok(0)
            }
            v::IPC_RMID => {
                if !p.may_change(c.who) {
                    return Err(errno::EPERM);
                }
                ipc.msg.remove(id);
                Ok(0)
            }
            _ => Err(errno::EINVAL),
        }
    }
}
