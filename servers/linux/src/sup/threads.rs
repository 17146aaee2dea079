//! Threads of the supervised process (clone with CLONE_THREAD): each is a
//! computation of the one Tessera process, with its own registers and
//! thread pointer, and a Linux tid from the pids' numbering (the shared
//! server's). The supervisor serves every thread's calls, knowing from
//! each call which thread made it; what the threads share (descriptors,
//! working directory, credentials, dispositions) is its state as before.
//! `exit` ends one thread, the last one ending the process as
//! `exit_group` does; a signal sent to one thread (tgkill) waits for that
//! thread to come to its supervisor, asked to by the kernel. gettid,
//! set_tid_address, the clear-tid wake-up and futex are the kernel's.

use super::procs::{CLONE_CHILD_CLEARTID, CLONE_CHILD_SETTID, CLONE_PARENT_SETTID, CLONE_SETTLS};
use super::{Out, Sup, ret};
use crate::proto::ctl;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::frame::{AltStack, SigInfo};
use linuxabi::signal as sig;
use tessera_rt::abi::Error;
use tessera_rt::sys::calls;

/// The threads of the process, as its supervisor knows them.
#[derive(Default)]
pub struct Threads {
    /// Tids of its threads beyond the first, while they live.
    pub others: Vec<u32>,
    /// Its first thread (tid = pid) has exited while others go on.
    pub leader_gone: bool,
    /// The thread whose call is being served.
    pub caller: u32,
    /// Signals sent to one thread, kept until that thread comes.
    pub directed: Vec<(u32, SigInfo)>,
    /// The calls threads passed to the shared server (tid, number,
    /// arguments), kept until that thread comes back: a signal
    /// interrupts one of them, and the call restarts from it.
    pub passed: Vec<(u32, u64, [u64; 6])>,
    /// The thread whose call the supervisor holds (`Sup::held`).
    pub held_by: u32,
    /// The signal masks of the threads other than the caller (whose mask
    /// is `Signals::mask`): each thread has its own, as on Linux.
    pub masks: Vec<(u32, u64)>,
    /// Their alternate signal stacks, likewise (the caller's is
    /// `Signals::altstack`): a thread Linux starts has none.
    pub altstacks: Vec<(u32, AltStack)>,
    /// The caller's signals sent to it alone that its arrival made
    /// pending: those not delivered when another thread's call comes go
    /// back to wait for it, so that no other thread takes them.
    pub own: Vec<SigInfo>,
}

impl Threads {
    /// Threads that have not exited.
    fn live(&self) -> usize {
        self.others.len() + usize::from(!self.leader_gone)
    }

    /// The thread a signal for the process interrupts in the shared
    /// server: the first thread if it waits there (Linux's choice too),
    /// else the first that does.
    pub fn waiting_in_shared(&self, pid: u32) -> Option<u32> {
        let first = self.passed.first()?.0;
        Some(if self.passed.iter().any(|e| e.0 == pid) {
            pid
        } else {
            first
        })
    }
}

/// Addresses a thread pointer may hold (Linux: below TASK_SIZE_MAX).
const USER_END: u64 = 0x0000_7fff_ffff_f000;

impl Sup {
    /// The tids of its live threads, the first one's (the pid) first.
    pub(super) fn tids(&self) -> Vec<u32> {
        let first = (!self.threads.leader_gone).then_some(self.pid);
        first.into_iter().chain(self.threads.others.iter().copied()).collect()
    }

    /// set_robust_list: the head of the calling thread's list, whose
    /// length must be Linux's `struct robust_list_head` (24 bytes). The
    /// kernel does not walk it when a thread dies: no robust futexes yet.
    pub(super) fn set_robust_list(&mut self, head: u64, len: u64) -> Result<u64, i64> {
        if len != 24 {
            return Err(errno::EINVAL);
        }
        let tid = self.caller_tid();
        self.robust.retain(|r| r.0 != tid);
        if head != 0 {
            self.robust.push((tid, head));
        }
        Ok(0)
    }

    /// get_robust_list: a thread of this process (0: the caller), or
    /// another process whose owner the caller is (or root): its head is
    /// its supervisor's, reported as none. The length is written first,
    /// as Linux writes it.
    pub(super) fn get_robust_list(&mut self, rid: u64, pid: u64, head_at: u64, len_at: u64) -> Result<u64, i64> {
        let pid = pid as u32;
        let head = if pid == 0 || self.tids().contains(&pid) {
            let tid = if pid == 0 { self.caller_tid() } else { pid };
            self.robust.iter().find(|r| r.0 == tid).map_or(0, |r| r.1)
        } else {
            let p = self.proc_record(pid)?;
            let uid = crate::proto::word(&p, 6) as u32;
            if self.cred.euid != 0 && uid != self.cred.uid {
                return Err(errno::EPERM);
            }
            0
        };
        self.write_u64(rid, len_at, 24)?;
        self.write_u64(rid, head_at, head)?;
        Ok(0)
    }

    /// The thread whose call is served.
    fn caller_tid(&self) -> u32 {
        if self.threads.caller == 0 {
            self.pid
        } else {
            self.threads.caller
        }
    }

    /// A call of thread `tid` arrives: it is the caller, and the signals
    /// sent to it alone become pending, to be delivered as its call ends.
    pub(super) fn thread_arrives(&mut self, tid: u64) {
        let tid = if tid == 0 { self.pid } else { tid as u32 };
        if tid != self.threads.caller {
            self.give_back_own();
            self.switch_mask(tid);
        }
        self.threads.caller = tid;
        // Back from the shared server if it passed a call there: a stop
        // now may restart that call.
        let back = self.threads.passed.iter().position(|e| e.0 == tid);
        self.passed = back.map(|i| {
            let (_, nr, a) = self.threads.passed.swap_remove(i);
            (nr, a)
        });
        self.take_directed(tid);
    }

    /// `Signals::mask` and `altstack` become thread `tid`'s, the caller's
    /// kept for it (none kept for a caller that has exited).
    fn switch_mask(&mut self, tid: u32) {
        let old = self.threads.caller;
        let i = self.threads.masks.iter().position(|m| m.0 == tid);
        let mine = i.map(|i| self.threads.masks.swap_remove(i).1);
        let i = self.threads.altstacks.iter().position(|m| m.0 == tid);
        let stack = i.map(|i| self.threads.altstacks.swap_remove(i).1);
        let old_lives = old == self.pid && !self.threads.leader_gone || self.threads.others.contains(&old);
        if old != 0 && old_lives {
            self.threads.masks.push((old, self.sig.mask));
            self.threads.altstacks.push((old, self.sig.altstack));
        }
        if let Some(m) = mine {
            self.sig.mask = m;
        }
        if let Some(st) = stack {
            self.sig.altstack = st;
        }
    }

    /// The caller's own signals still pending wait again for it alone
    /// (another thread's call comes).
    fn give_back_own(&mut self) {
        let old = self.threads.caller;
        for info in core::mem::take(&mut self.threads.own) {
            let s = info.signo;
            let still = if s >= sig::SIGRTMIN {
                match self.sig.queue.iter().position(|q| *q == info) {
                    Some(i) => {
                        self.sig.queue.remove(i);
                        if !self.sig.queue.iter().any(|q| q.signo == s) {
                            self.sig.pending &= !sig::bit(s);
                        }
                        true
                    }
                    None => false,
                }
            } else if self.sig.pending & sig::bit(s) != 0 {
                self.sig.pending &= !sig::bit(s);
                true
            } else {
                false
            };
            if still && old != 0 {
                self.threads.directed.push((old, info));
            }
        }
    }

    /// The signals sent to thread `tid` alone become pending.
    fn take_directed(&mut self, tid: u32) {
        if self.threads.directed.is_empty() {
            return;
        }
        let mine: Vec<SigInfo> = self
            .threads
            .directed
            .iter()
            .filter(|(t, _)| *t == tid)
            .map(|(_, i)| *i)
            .collect();
        self.threads.directed.retain(|(t, _)| *t != tid);
        for info in mine {
            let s = info.signo;
            if s >= sig::SIGRTMIN {
                self.sig.queue.push_back(info);
                self.threads.own.push(info);
            } else if self.sig.pending & sig::bit(s) == 0 {
                self.sig.infos[(s - 1) as usize] = info;
                self.threads.own.push(info);
            }
            self.sig.pending |= sig::bit(s);
        }
    }

    /// clone with CLONE_THREAD (the flags were checked): a new thread of
    /// the process on stack `newsp`, returning its tid.
    pub(super) fn clone_thread(&mut self, rid: u64, a: [u64; 6]) -> Out {
        let (flags, newsp, ptid, ctid, tls) = (a[0], a[1], a[2], a[3], a[4]);
        if flags & CLONE_SETTLS != 0 && tls >= USER_END {
            return ret(Err(errno::EPERM));
        }
        let tid = match self.ctl1(&[ctl::THREAD_NEW, self.pid as u64]) {
            Ok(t) => t as u32,
            Err(_) => return ret(Err(errno::EAGAIN)),
        };
        let Some(mut regs) = self.regs(rid) else {
            self.ctl(&[ctl::THREAD_END, self.pid as u64, tid as u64]);
            return ret(Err(errno::EAGAIN));
        };
        regs.rax = 0;
        if newsp != 0 {
            regs.rsp = newsp;
        }
        if flags & CLONE_SETTLS != 0 {
            regs.fs_base = tls;
        }
        // Both words lie in the memory the thread shares; Linux ignores a
        // word it cannot write.
        if flags & CLONE_PARENT_SETTID != 0 {
            let _ = self.write_u32(rid, ptid, tid);
        }
        if flags & CLONE_CHILD_SETTID != 0 {
            let _ = self.write_u32(rid, ctid, tid);
        }
        let clear = if flags & CLONE_CHILD_CLEARTID != 0 { ctid } else { 0 };
        match calls::linux_thread(rid, &regs, tid as u64, clear) {
            Ok(_) => {
                self.threads.others.push(tid);
                // A new thread starts with its creator's mask, and with
                // no alternate stack.
                self.threads.masks.push((tid, self.sig.mask));
                self.threads.altstacks.push((
                    tid,
                    AltStack {
                        sp: 0,
                        flags: sig::SS_DISABLE,
                        size: 0,
                    },
                ));
                Out::Ret(tid as u64)
            }
            Err(e) => {
                self.ctl(&[ctl::THREAD_END, self.pid as u64, tid as u64]);
                ret(Err(match e {
                    Error::Invalid => errno::EINVAL,
                    _ => errno::EAGAIN,
                }))
            }
        }
    }

    /// `exit`: the calling thread ends; the last one ends the process
    /// with its status, as `exit_group` would.
    pub(super) fn exit_thread(&mut self, rid: u64, code: u64) -> Out {
        if self.threads.live() <= 1 {
            return self.exit_group(rid, code);
        }
        let me = self.threads.caller;
        if me == self.pid {
            self.threads.leader_gone = true;
        } else {
            self.threads.others.retain(|&t| t != me);
            self.ctl(&[ctl::THREAD_END, self.pid as u64, me as u64]);
        }
        self.threads.directed.retain(|(t, _)| *t != me);
        self.threads.passed.retain(|e| e.0 != me);
        self.threads.masks.retain(|m| m.0 != me);
        self.threads.altstacks.retain(|m| m.0 != me);
        self.threads.own.clear();
        self.threads.caller = 0;
        let _ = calls::caller_exit_thread(rid);
        Out::Done
    }

    /// tgkill and tkill to one thread of this process while it has
    /// several, the first one too (None: not one, the usual path decides).
    pub(super) fn thread_kill(&mut self, tgid: i64, tid: i64, s: u64) -> Option<Result<u64, i64>> {
        let leader = tid == self.pid as i64;
        if leader && (self.threads.others.is_empty() || self.threads.leader_gone) {
            return None;
        }
        if tgid != tid && tgid != self.pid as i64 {
            return None;
        }
        let tid = u32::try_from(tid).ok()?;
        if !leader && !self.threads.others.contains(&tid) {
            return (tgid == self.pid as i64).then_some(Err(errno::ESRCH));
        }
        if s > sig::NSIG as u64 {
            return Some(Err(errno::EINVAL));
        }
        if s == 0 {
            return Some(Ok(0));
        }
        if self.queue_refuses(s as u32, sig::SI_TKILL) {
            return Some(Err(errno::EAGAIN));
        }
        let info = SigInfo {
            signo: s as u32,
            code: sig::SI_TKILL,
            pid: self.pid,
            uid: self.cred.uid,
            ..Default::default()
        };
        if tid == self.threads.caller {
            // Its own: pending for it alone, delivered as this call ends
            // unless it blocks the signal.
            self.threads.directed.push((tid, info));
            self.take_directed(tid);
            self.signalfd_posted();
        } else {
            let s = s as u32;
            // A standard signal already waiting for the thread is not
            // sent twice; a blocked one waits without stopping it (it
            // takes its signals whenever it comes).
            let waiting = self.threads.directed.iter().any(|(t, i)| *t == tid && i.signo == s);
            if s < sig::SIGRTMIN && waiting {
                return Some(Ok(0));
            }
            self.threads.directed.push((tid, info));
            let mask = self.threads.masks.iter().find(|m| m.0 == tid).map_or(0, |m| m.1);
            if mask & sig::bit(s) & !sig::UNBLOCKABLE == 0 {
                self.kick_thread(tid);
            }
        }
        Some(Ok(0))
    }

    /// Makes thread `tid` come for the signals sent to it: its call that
    /// the supervisor holds ends, one it passed to the shared server is
    /// interrupted, one the kernel serves gives up its wait.
    fn kick_thread(&mut self, tid: u32) {
        if self.held.is_some() && self.threads.held_by == tid {
            self.take_directed(tid);
            self.kick();
            return;
        }
        let _ = calls::linux_attention_thread(self.tpid, tid as u64);
        if self.threads.passed.iter().any(|e| e.0 == tid) {
            self.ctl(&[ctl::INTERRUPT, self.pid as u64, tid as u64]);
        }
    }

    /// The process ended or ran exec: its threads are gone.
    pub(super) fn threads_end(&mut self) {
        for t in core::mem::take(&mut self.threads.others) {
            self.ctl(&[ctl::THREAD_END, self.pid as u64, t as u64]);
        }
        self.threads = Threads::default();
    }
}
