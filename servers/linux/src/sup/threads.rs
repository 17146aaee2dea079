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
use super::thread_signals::ThreadSig;
use super::{Out, Sup, ret};
use crate::proto::ctl;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::frame::SigInfo;
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
    /// The calls threads passed to the shared server (tid, number,
    /// arguments), kept until that thread comes back: a signal
    /// interrupts one of them, and the call restarts from it.
    pub passed: Vec<(u32, u64, [u64; 6])>,
    /// The thread whose call the supervisor holds (`Sup::held`).
    pub held_by: u32,
    /// The signal state of the live threads other than the served one
    /// (`thread_signals.rs`).
    pub sigs: Vec<ThreadSig>,
    /// The call being served: its rendezvous and thread (a return to
    /// it is made as that thread, whichever thread was served since).
    pub serving: (u64, u32),
    /// The rendezvous of the call held for `held_by`.
    pub held_rid: u64,
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
        let tid = self.served_tid();
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
            let tid = if pid == 0 { self.served_tid() } else { pid };
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

    /// A call of thread `tid` arrives (in rendezvous `rid`): it is the
    /// thread served, with its own signal state.
    pub(super) fn thread_arrives(&mut self, rid: u64, tid: u64) {
        use tessera_rt::abi::linux::SIGMASK_NEWS;
        let news = tid & SIGMASK_NEWS != 0;
        let tid = tid & !SIGMASK_NEWS;
        let tid = if tid == 0 { self.pid } else { tid as u32 };
        self.switch_thread(tid);
        self.threads.caller = tid;
        self.threads.serving = (rid, tid);
        if news {
            self.mask_news();
        }
        // Back from the shared server if it passed a call there: a stop
        // now may restart that call.
        let back = self.threads.passed.iter().position(|e| e.0 == tid);
        self.passed = back.map(|i| {
            let (_, nr, a) = self.threads.passed.swap_remove(i);
            (nr, a)
        });
    }

    /// The thread whose call `rid` is: the one served, or the one whose
    /// call is held.
    pub(super) fn thread_of(&self, rid: u64) -> Option<u32> {
        if rid == self.threads.serving.0 {
            Some(self.threads.serving.1)
        } else if self.held.is_some_and(|h| h.0 == rid) || rid == self.threads.held_rid {
            Some(self.threads.held_by)
        } else {
            None
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
        // The kernel gives the thread its creator's mask as it holds it.
        self.sync_signals();
        match calls::linux_thread(rid, &regs, tid as u64, clear) {
            Ok(_) => {
                self.threads.others.push(tid);
                // A new thread starts with its creator's mask, with no
                // alternate stack and nothing pending.
                self.threads.sigs.push(ThreadSig::new(tid, self.sig.mask));
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
        self.threads.passed.retain(|e| e.0 != me);
        // Its own pending signals go with it; the process's that it
        // would have taken go to another thread.
        // (It stays the served thread, gone: the next thread that comes
        // keeps nothing of it.)
        self.sig.own = Default::default();
        self.sig.saved_mask = None;
        self.retarget(!0);
        let _ = calls::caller_exit_thread(rid);
        Out::Done
    }

    /// tgkill and tkill to one thread of this process, the first one too,
    /// alone or not: the signal is that thread's (None: not one, the
    /// usual path decides).
    pub(super) fn thread_kill(&mut self, tgid: i64, tid: i64, s: u64) -> Option<Result<u64, i64>> {
        let leader = tid == self.pid as i64;
        if leader && self.threads.leader_gone {
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
        self.post_thread(tid, info);
        Some(Ok(0))
    }

    /// Makes thread `tid` come for the signals sent to it: its call that
    /// the supervisor holds ends, one it passed to the shared server is
    /// interrupted, one the kernel serves gives up its wait.
    pub(super) fn kick_thread(&mut self, tid: u32) {
        // The served thread's own call takes them as it ends.
        if self.in_call && tid == self.served_tid() {
            return;
        }
        if self.held.is_some() && self.threads.held_by == tid {
            self.as_thread(tid, |s| s.interrupt_held());
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
