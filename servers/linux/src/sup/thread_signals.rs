//! A thread's own signal state, as Linux keeps it in each task: its mask,
//! its alternate stack, the mask a sigsuspend or ppoll put aside, and the
//! signals sent to it alone (tgkill, tkill, its faults, SIGPIPE of its
//! write), besides the process's shared set (kill, sigqueue). The
//! supervisor serves one thread at a time: the served thread's state is in
//! `Signals` (`mask`, `altstack`, `saved_mask`, `own`), every other live
//! thread's in `Threads::sigs`, and they are swapped when the supervisor
//! acts for another thread (its call arrives, its held call ends). A
//! process-directed signal goes to one thread that does not block it, the
//! first thread first, as Linux's `complete_signal` chooses.

use super::Sup;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::frame::{AltStack, SigInfo};
use linuxabi::signal as sig;
use tessera_rt::abi::linux::sigmask;
use tessera_rt::sys::calls;

/// Signals sent to one thread alone: each standard one once, each
/// real-time one as often as sent, in the order they came.
#[derive(Default, Clone, Debug)]
pub struct Own {
    pub pending: u64,
    infos: Vec<SigInfo>,
}

impl Own {
    /// Adds a signal; false if it is a standard one already pending (not
    /// queued twice, as Linux's `legacy_queue`).
    pub fn add(&mut self, info: SigInfo) -> bool {
        let s = info.signo;
        if s < sig::SIGRTMIN && self.pending & sig::bit(s) != 0 {
            return false;
        }
        self.infos.push(info);
        self.pending |= sig::bit(s);
        true
    }

    /// Takes the first pending signal `s`.
    pub fn take(&mut self, s: u32) -> Option<SigInfo> {
        if self.pending & sig::bit(s) == 0 {
            return None;
        }
        let i = self.infos.iter().position(|q| q.signo == s)?;
        let info = self.infos.remove(i);
        if !self.infos.iter().any(|q| q.signo == s) {
            self.pending &= !sig::bit(s);
        }
        Some(info)
    }

    pub fn discard(&mut self, s: u32) {
        self.pending &= !sig::bit(s);
        self.infos.retain(|q| q.signo != s);
    }

    /// Signals queued with their information (RLIMIT_SIGPENDING).
    pub fn queued(&self) -> usize {
        self.infos.len()
    }
}

/// What a thread other than the served one keeps of its signals.
#[derive(Clone, Debug)]
pub struct ThreadSig {
    pub tid: u32,
    pub mask: u64,
    /// `Signals::kernel_mask` of this thread.
    pub kernel_mask: u64,
    pub altstack: AltStack,
    pub saved_mask: Option<u64>,
    pub own: Own,
}

impl ThreadSig {
    /// A thread clone starts: its creator's mask, no alternate stack
    /// (CLONE_VM clears it), nothing pending.
    pub fn new(tid: u32, mask: u64) -> ThreadSig {
        ThreadSig {
            tid,
            mask,
            kernel_mask: mask,
            altstack: AltStack::DISABLED,
            saved_mask: None,
            own: Own::default(),
        }
    }

    fn blocks(&self, s: u32) -> bool {
        self.mask & sig::bit(s) & !sig::UNBLOCKABLE != 0
    }
}

impl Sup {
    /// Whether thread `tid` of the process lives.
    pub(super) fn thread_lives(&self, tid: u32) -> bool {
        if tid == self.pid {
            !self.threads.leader_gone
        } else {
            self.threads.others.contains(&tid)
        }
    }

    /// The served thread becomes `tid`: its signal state comes into
    /// `Signals`, the one served until now is kept for it (none for a
    /// thread that has exited).
    pub(super) fn switch_thread(&mut self, tid: u32) {
        let old = self.served_tid();
        if tid == old || tid == 0 {
            return;
        }
        let i = self.threads.sigs.iter().position(|t| t.tid == tid);
        let mine = i.map(|i| self.threads.sigs.swap_remove(i));
        if self.thread_lives(old) {
            self.threads.sigs.push(ThreadSig {
                tid: old,
                mask: self.sig.mask,
                kernel_mask: self.sig.kernel_mask,
                altstack: self.sig.altstack,
                saved_mask: self.sig.saved_mask.take(),
                own: core::mem::take(&mut self.sig.own),
            });
        }
        if let Some(t) = mine {
            self.sig.mask = t.mask;
            self.sig.kernel_mask = t.kernel_mask;
            self.sig.altstack = t.altstack;
            self.sig.saved_mask = t.saved_mask;
            self.sig.own = t.own;
        }
        self.threads.caller = tid;
    }

    /// Runs `f` as thread `tid` (its held call ends, a signal it waits
    /// for comes), the served thread served again after (or, if that one
    /// has exited, `tid`'s state kept for it).
    pub(super) fn as_thread<R>(&mut self, tid: u32, f: impl FnOnce(&mut Sup) -> R) -> R {
        let back = self.served_tid();
        if tid == 0 || tid == back || !self.thread_lives(tid) {
            return f(self);
        }
        self.switch_thread(tid);
        let r = f(self);
        if self.active && self.threads.caller == tid {
            self.switch_thread(back);
        }
        r
    }

    /// The thread a signal for the process goes to: the first thread
    /// unless it blocks it, else the first other that does not (None:
    /// every thread blocks it, and it waits for one to unblock it).
    pub(super) fn wanting_thread(&self, s: u32) -> Option<u32> {
        let me = self.served_tid();
        let blocks = |tid: u32| {
            if tid == me {
                self.sig.mask & sig::bit(s) & !sig::UNBLOCKABLE != 0
            } else {
                self.threads
                    .sigs
                    .iter()
                    .find(|t| t.tid == tid)
                    .is_some_and(|t| t.blocks(s))
            }
        };
        self.tids().into_iter().find(|&t| !blocks(t))
    }

    /// The thread served now (the first one before any other came).
    pub(super) fn served_tid(&self) -> u32 {
        if self.threads.caller == 0 {
            self.pid
        } else {
            self.threads.caller
        }
    }

    /// A signal for thread `tid` alone. It waits in that thread's own set
    /// (a standard one already there is not sent twice) and the thread is
    /// made to come for it unless it blocks it.
    pub(super) fn post_thread(&mut self, tid: u32, info: SigInfo) {
        if !sig::valid(info.signo) {
            return;
        }
        if self.masks_still() {
            return self.post_thread_now(tid, info);
        }
        self.announce(sig::bit(info.signo));
        self.post_thread_now(tid, info);
        self.publish_pending();
    }

    fn post_thread_now(&mut self, tid: u32, info: SigInfo) {
        let s = info.signo;
        // Stopping, continuing and killing act on the whole process.
        if s == sig::SIGKILL || s == sig::SIGSTOP || s == sig::SIGCONT {
            self.post(info);
            return;
        }
        if sig::default_action(s) == sig::Default::Stop {
            self.discard_all(sig::SIGCONT);
        }
        if self.sig.action(s).ignores(s) && self.mask_of(tid) & sig::bit(s) == 0 {
            return;
        }
        let me = self.served_tid();
        if tid == me {
            if !self.sig.own.add(info) {
                return;
            }
        } else {
            let Some(t) = self.threads.sigs.iter_mut().find(|t| t.tid == tid) else {
                return;
            };
            if !t.own.add(info) {
                return;
            }
        }
        // A sigtimedwait of the thread takes it, blocked or not.
        if self.held.is_some() && self.threads.held_by == tid && self.as_thread(tid, |s2| s2.sigwait_take(s)) {
            return;
        }
        if self.mask_of(tid) & sig::bit(s) & !sig::UNBLOCKABLE == 0 {
            self.kick_thread(tid);
        }
        self.signalfd_posted();
    }

    /// Thread `tid`'s mask.
    fn mask_of(&self, tid: u32) -> u64 {
        if tid == self.served_tid() {
            self.sig.mask
        } else {
            self.threads.sigs.iter().find(|t| t.tid == tid).map_or(0, |t| t.mask)
        }
    }

    /// The process's pending signals in `set` that the served thread no
    /// longer takes (it blocked them, or it exits) go to a thread that
    /// would, as Linux's `retarget_shared_pending`.
    pub(super) fn retarget(&mut self, set: u64) {
        let mut left = self.sig.pending & set;
        if left != 0 {
            self.refresh_masks();
        }
        while let Some(s) = sig::lowest(left) {
            left &= !sig::bit(s);
            if let Some(t) = self.wanting_thread(s)
                && t != self.served_tid()
            {
                self.kick_thread(t);
            }
        }
    }

    /// Signal `s` is discarded from the process's set and every thread's
    /// (ignored now, or a stop undone by SIGCONT).
    pub(super) fn discard_all(&mut self, s: u32) {
        self.sig.discard(s);
        self.sig.own.discard(s);
        for t in self.threads.sigs.iter_mut() {
            t.own.discard(s);
        }
    }

    /// Signals every thread has queued with their information.
    pub(super) fn threads_queued(&self) -> usize {
        self.sig.own.queued() + self.threads.sigs.iter().map(|t| t.own.queued()).sum::<usize>()
    }

    /// rt_tgsigqueueinfo: a signal with its information to one thread;
    /// one of this process's is queued for that thread alone, as Linux's
    /// `do_rt_tgsigqueueinfo` (another process's goes by its pid).
    pub(super) fn tgsigqueue(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let (tgid, tid, s) = (a[0] as i32 as i64, a[1] as i32 as i64, a[2]);
        if tgid <= 0 || tid <= 0 {
            return Err(errno::EINVAL);
        }
        let tid32 = tid as u32;
        if tgid != self.pid as i64 || !self.thread_lives(tid32) {
            return self.sigqueue(rid, tgid, s, a[3]);
        }
        let b = self.read_mem(rid, a[3], SigInfo::LEN)?;
        let given = SigInfo::from_bytes(&b);
        // Codes the kernel alone sends only to the caller itself.
        if (given.code >= 0 || given.code == sig::SI_TKILL) && tid32 != self.served_tid() {
            return Err(errno::EPERM);
        }
        if s > sig::NSIG as u64 {
            return Err(errno::EINVAL);
        }
        if s == 0 {
            return Ok(0);
        }
        if self.queue_refuses(s as u32, given.code) {
            return Err(errno::EAGAIN);
        }
        self.post_thread(
            tid32,
            SigInfo {
                signo: s as u32,
                code: given.code,
                pid: self.pid,
                uid: self.cred.uid,
                value: given.value,
                ..Default::default()
            },
        );
        Ok(0)
    }

    // ---- the masks and the pending set the kernel keeps ----

    /// Every signal pending: the process's and each thread's own.
    pub(super) fn pending_union(&self) -> u64 {
        self.threads
            .sigs
            .iter()
            .fold(self.sig.pending | self.sig.own.pending, |u, t| u | t.own.pending)
    }

    /// The served thread's mask and the pending set go to the kernel if
    /// they changed: before a thread the supervisor holds runs again (its
    /// call answered, passed on, a stop or fault over), since the kernel
    /// serves its rt_sigprocmask from then on.
    pub(super) fn sync_signals(&mut self) {
        if self.tpid == 0 {
            return;
        }
        if self.sig.mask != self.sig.kernel_mask {
            let tid = self.served_tid() as u64;
            let _ = calls::linux_sigmask(sigmask::SET, self.tpid, tid, self.sig.mask);
            self.sig.kernel_mask = self.sig.mask;
        }
        self.publish_pending();
    }

    /// The pending set goes to the kernel if it changed.
    pub(super) fn publish_pending(&mut self) {
        let now = self.pending_union();
        if now != self.sig.published && self.tpid != 0 {
            let _ = calls::linux_sigmask(sigmask::PENDING, self.tpid, 0, now);
            self.sig.published = now;
        }
    }

    /// A signal in `set` may become pending: the kernel learns so first
    /// (a thread unblocking it then comes here), and only then are the
    /// threads' masks read, as they may have changed in calls the kernel
    /// served.
    pub(super) fn announce(&mut self, set: u64) {
        if self.tpid == 0 {
            return;
        }
        let now = self.pending_union() | set;
        // (The served thread's mask cannot change while its call is served.)
        let tid = if self.in_call { 0 } else { self.served_tid() as u64 };
        let mask = calls::linux_sigmask(sigmask::PENDING, self.tpid, tid, now);
        self.sig.published = now;
        if let Ok(m) = mask
            && tid != 0
            && self.sig.mask == self.sig.kernel_mask
        {
            self.sig.mask = m;
            self.sig.kernel_mask = m;
        }
        self.refresh_others();
    }

    /// Whether no thread can change its mask now: the process's only
    /// thread waits here (its call served now, or held).
    pub(super) fn masks_still(&self) -> bool {
        self.threads.sigs.is_empty() && (self.in_call || self.held.is_some())
    }

    /// Every thread's mask read again from the kernel, but where the
    /// supervisor changed one not yet written there (a thread it holds).
    pub(super) fn refresh_masks(&mut self) {
        if self.tpid == 0 {
            return;
        }
        if !self.in_call
            && self.sig.mask == self.sig.kernel_mask
            && let Ok(m) = calls::linux_sigmask(sigmask::GET, self.tpid, self.served_tid() as u64, 0)
        {
            self.sig.mask = m;
            self.sig.kernel_mask = m;
        }
        self.refresh_others();
    }

    fn refresh_others(&mut self) {
        let tpid = self.tpid;
        for t in self.threads.sigs.iter_mut().filter(|t| t.mask == t.kernel_mask) {
            if let Ok(m) = calls::linux_sigmask(sigmask::GET, tpid, t.tid as u64, 0) {
                t.mask = m;
                t.kernel_mask = m;
            }
        }
    }

    /// The served thread's mask read again, if the kernel says it changed
    /// it (`SIGMASK_NEWS` on the thread's rendezvous).
    pub(super) fn mask_news(&mut self) {
        if let Ok(m) = calls::linux_sigmask(sigmask::GET, self.tpid, self.served_tid() as u64, 0) {
            self.sig.mask = m;
            self.sig.kernel_mask = m;
        }
    }
}
