//! Signals of a Linux process, kept by its supervisor: dispositions and
//! the process's pending set, and the served thread's mask, alternate
//! stack and own pending set (`thread_signals.rs`: each thread has its
//! own). A signal comes from another process
//! (through the shared server, as a request), from the process itself, or
//! from a fault (the kernel's FAULT rendezvous). It is delivered when the
//! process is about to return to user mode: at the end of a call it made,
//! or at an attention stop the supervisor asked the kernel for. Delivery
//! writes Linux's signal frame on the process's stack and points its
//! registers at the handler; `rt_sigreturn` reads the frame back.

use super::thread_signals::Own;
use super::{Hold, Out, Sup, ret};
use crate::proto::{self, ctl};
use alloc::collections::VecDeque;
use linuxabi::errno;
use linuxabi::frame::{self, AltStack, Context, Frame, SigInfo};
use linuxabi::signal::{self as sig, Default as Act, SigAction};
use tessera_rt::abi::linux::{GeneralRegs, LinuxFault, Regs};
use tessera_rt::sys::calls;

pub struct Signals {
    pub actions: [SigAction; 64],
    /// An action may differ from the default: one was set (sigaction, a
    /// fork's state) since the last reset. A fork's state looks at the 64
    /// only then; most programs set none.
    pub actions_set: bool,
    /// The served thread's mask. The kernel keeps each thread's and
    /// serves rt_sigprocmask from it (`kernel_mask`, `thread_signals.rs`).
    pub mask: u64,
    /// The served thread's mask as the kernel holds it, as far as this
    /// supervisor knows: `mask` is written there before the thread runs
    /// again when they differ.
    pub kernel_mask: u64,
    /// The pending set last published to the kernel (`sigmask::PENDING`).
    pub published: u64,
    /// The process's pending set (kill, sigqueue: any thread takes them).
    pub pending: u64,
    /// The siginfo of each pending standard signal.
    pub infos: [SigInfo; 64],
    /// Queued real-time signals (each delivered once).
    pub queue: VecDeque<SigInfo>,
    /// The served thread's alternate stack.
    pub altstack: AltStack,
    /// The mask a handler's frame saves instead of the current one (a
    /// sigsuspend's: the mask before it), the served thread's.
    pub saved_mask: Option<u64>,
    /// The signals sent to the served thread alone.
    pub own: Own,
}

impl Default for Signals {
    fn default() -> Self {
        Signals {
            actions: [SigAction::default(); 64],
            actions_set: false,
            mask: 0,
            kernel_mask: 0,
            published: 0,
            pending: 0,
            infos: [SigInfo::default(); 64],
            queue: VecDeque::new(),
            altstack: AltStack::DISABLED,
            saved_mask: None,
            own: Own::default(),
        }
    }
}

impl Signals {
    pub fn action(&self, s: u32) -> SigAction {
        self.actions[(s - 1) as usize]
    }

    /// Pending for the served thread: its own and the process's.
    pub fn pending_all(&self) -> u64 {
        self.pending | self.own.pending
    }

    /// Pending and not blocked (SIGKILL and SIGSTOP cannot be).
    pub fn deliverable(&self) -> u64 {
        self.pending_all() & !(self.mask & !sig::UNBLOCKABLE)
    }

    /// What exec keeps: ignored dispositions, the mask, pending signals;
    /// handlers become the default, the alternate stack goes.
    pub fn exec_reset(&mut self) {
        for a in self.actions.iter_mut() {
            let ignored = a.handler == sig::SIG_IGN;
            *a = SigAction::default();
            if ignored {
                a.handler = sig::SIG_IGN;
            }
        }
        self.altstack = AltStack::DISABLED;
    }

    /// Takes pending signal `s`: its siginfo. The thread's own come
    /// first, as Linux's `dequeue_signal` takes them.
    pub(super) fn take(&mut self, s: u32) -> SigInfo {
        if let Some(info) = self.own.take(s) {
            return info;
        }
        if s >= sig::SIGRTMIN
            && let Some(i) = self.queue.iter().position(|q| q.signo == s)
        {
            let info = self.queue.remove(i).unwrap_or_default();
            if !self.queue.iter().any(|q| q.signo == s) {
                self.pending &= !sig::bit(s);
            }
            return info;
        }
        self.pending &= !sig::bit(s);
        self.infos[(s - 1) as usize]
    }

    pub(super) fn discard(&mut self, s: u32) {
        self.pending &= !sig::bit(s);
        self.queue.retain(|q| q.signo != s);
    }
}

/// What delivery did to the call it ran at.
pub enum Delivered {
    /// Nothing: the call ends as it would have.
    None,
    /// Handler frames were set up (or the call restarts): the call ends
    /// with this value in rax.
    Frames(u64),
    /// The call is over already: the process ended or stopped.
    Ended,
}

fn context_of(r: &Regs) -> Context {
    Context {
        r8: r.r8,
        r9: r.r9,
        r10: r.r10,
        r11: r.r11,
        r12: r.r12,
        r13: r.r13,
        r14: r.r14,
        r15: r.r15,
        rdi: r.rdi,
        rsi: r.rsi,
        rbp: r.rbp,
        rbx: r.rbx,
        rdx: r.rdx,
        rax: r.rax,
        rcx: r.rcx,
        rsp: r.rsp,
        rip: r.rip,
        eflags: r.rflags,
    }
}

/// How long a call on the waiting process's frame is tried again while
/// the frame is busy, in ns.
const BUSY_PATIENCE_NS: u64 = 2_000_000_000;

/// Runs `f` (a call on the waiting process's frame) until the frame is not
/// Busy. The kernel lends the frame only while the process is blocked in
/// its call, and it is not blocked yet when its supervisor, on another
/// CPU, takes the call before the process has gone to sleep, nor for a
/// moment after a signal's attention request woke it (it looks, then
/// waits on). How long that lasts depends on the process's CPU alone
/// (interrupts, or a virtual CPU the host does not run): a number of
/// tries proves nothing, only time does. A process that ends meanwhile
/// makes `f` fail otherwise (its call is no longer held).
pub fn patiently<T>(mut f: impl FnMut() -> Result<T, tessera_rt::abi::Error>) -> Result<T, tessera_rt::abi::Error> {
    let mut r = f();
    let mut deadline = None;
    while r.as_ref().err() == Some(&tessera_rt::abi::Error::Busy) {
        let now = tessera_rt::sys::now_ns();
        let end = *deadline.get_or_insert(now.saturating_add(BUSY_PATIENCE_NS));
        if now >= end {
            break;
        }
        tessera_rt::sys::yield_now();
        r = f();
    }
    r
}

/// The interrupted call `call` runs again: the instruction before
/// (syscall) with its number in rax.
fn restart_call(regs: &mut Regs, call: Option<u64>) {
    match call {
        Some(nr) => {
            regs.rax = nr;
            regs.rip -= 2;
        }
        None => regs.rax = errno::fail(errno::EINTR),
    }
}

fn regs_of(c: &Context, fs_base: u64) -> Regs {
    Regs {
        general: GeneralRegs {
            r15: c.r15,
            r14: c.r14,
            r13: c.r13,
            r12: c.r12,
            r11: c.r11,
            rbp: c.rbp,
            rbx: c.rbx,
            rcx: c.rcx,
            rax: c.rax,
            rdi: c.rdi,
            rsi: c.rsi,
            rdx: c.rdx,
            r10: c.r10,
            r8: c.r8,
            r9: c.r9,
        },
        rip: c.rip,
        rflags: c.eflags,
        rsp: c.rsp,
        fs_base,
    }
}

/// Whether a status says a core was dumped: Linux says so only for a core
/// it wrote (none under its default RLIMIT_CORE of 0), and Tessera writes
/// none.
const CORE_DUMPED: bool = false;

const ERESTARTSYS: u64 = errno::fail(errno::ERESTARTSYS);
const ERESTARTNOINTR: u64 = errno::fail(errno::ERESTARTNOINTR);

impl Sup {
    /// The waiting process's registers; None if they cannot be had (it
    /// ended, or its frame stayed busy): never zeros in their place, which
    /// would build a signal frame at address 0 or start a child at 0.
    pub fn regs(&self, rid: u64) -> Option<Regs> {
        let mut r = Regs::default();
        patiently(|| calls::caller_regs(rid, &mut r)).ok().map(|_| r)
    }

    /// A signal for the process: kept pending (or dropped if ignored), and
    /// one thread that does not block it made to notice. The kernel learns
    /// it may be pending before the threads' masks are read, and what is
    /// pending after.
    pub fn post(&mut self, info: SigInfo) {
        let s = info.signo;
        if !sig::valid(s) {
            return;
        }
        if self.masks_still() {
            // Published when the thread goes on (`sync_signals`).
            return self.post_now(info);
        }
        // One ignored and not blocked is dropped on the masks read now;
        // one kept is announced first, the masks read after.
        self.refresh_masks();
        let dropped = s != sig::SIGKILL && self.sig.action(s).ignores(s) && self.wanting_thread(s).is_some();
        if !dropped {
            self.announce(sig::bit(s));
        }
        self.post_now(info);
        self.publish_pending();
    }

    fn post_now(&mut self, info: SigInfo) {
        let s = info.signo;
        let a = self.sig.action(s);
        let target = self.wanting_thread(s);
        let blocked = target.is_none();
        if s == sig::SIGCONT {
            self.discard_all(sig::SIGSTOP);
            for t in [sig::SIGTSTP, sig::SIGTTIN, sig::SIGTTOU] {
                self.discard_all(t);
            }
            self.resume();
        }
        if sig::default_action(s) == Act::Stop {
            self.discard_all(sig::SIGCONT);
        }
        // SA_NOCLDSTOP: a child's stop or continue sends no SIGCHLD.
        let cld_stop = info.code == sig::CLD_STOPPED || info.code == sig::CLD_CONTINUED;
        if s == sig::SIGCHLD && cld_stop && a.flags & sig::SA_NOCLDSTOP != 0 {
            return;
        }
        if s == sig::SIGKILL {
            self.sig.pending |= sig::bit(s);
            self.kick();
            return;
        }
        if a.ignores(s) && !blocked {
            return;
        }
        if s >= sig::SIGRTMIN {
            // Past RLIMIT_SIGPENDING a real-time signal already pending
            // is not queued again (`sigqueue.rs`).
            if !(self.queue_full() && self.sig.pending & sig::bit(s) != 0) {
                self.sig.queue.push_back(info);
            }
        } else if self.sig.pending & sig::bit(s) == 0 {
            self.sig.infos[(s - 1) as usize] = info;
        }
        self.sig.pending |= sig::bit(s);
        if self.held.is_some() && self.as_thread(self.threads.held_by, |me| me.sigwait_take(s)) {
            return;
        }
        if let Some(t) = target {
            self.kick_thread(t);
        }
        self.signalfd_posted();
    }

    /// A signal of the set a held sigtimedwait waits for ends the wait:
    /// taken there, blocked or not, not delivered (Linux's
    /// do_sigtimedwait unblocks the set while it waits and dequeues what
    /// comes).
    pub(super) fn sigwait_take(&mut self, s: u32) -> bool {
        let Some((set, info_at, _)) = self.waiting_set else {
            return false;
        };
        let Some((rid, Hold::Poll { .. })) = self.held else {
            return false;
        };
        if set & sig::bit(s) == 0 {
            return false;
        }
        self.waiting_set = None;
        self.held = None;
        let info = self.sig.take(s);
        let v = if info_at != 0
            && self
                .write_mem(rid, info_at, &SigInfo { signo: s, ..info }.to_bytes())
                .is_err()
        {
            errno::fail(errno::EFAULT)
        } else {
            s as u64
        };
        self.answer(rid, v);
        true
    }

    pub(super) fn signal_posted(&mut self, s: proto::Signal) {
        self.post(SigInfo {
            signo: s.sig as u32,
            code: s.code as i32,
            pid: s.pid as u32,
            uid: s.uid as u32,
            status: s.status as i32,
            value: s.value,
            ..SigInfo::default()
        });
    }

    /// A stopped process goes on (SIGCONT).
    fn resume(&mut self) {
        if let Some((rid, Hold::Stopped)) = self.held {
            self.held = None;
            self.ctl(&[ctl::STOPPED, self.pid as u64, 0, sig::SIGCONT as u64]);
            let v = core::mem::take(&mut self.stopped_value);
            // Stopped at an attention stop, its frame's rax is the
            // program's: the call to restart is the one the stop noted.
            self.gave_up = self.stopped_call.take();
            self.answer(rid, v);
            self.gave_up = None;
        }
    }

    /// Makes the process come to its supervisor so a signal is delivered
    /// (SIGKILL): a call held here ends, one waiting in the shared server
    /// is interrupted, a running process stops on its way back to user
    /// mode.
    pub(super) fn kick(&mut self) {
        if self.held.is_some() {
            self.as_thread(self.threads.held_by, |me| me.interrupt_held());
            return;
        }
        if self.in_call {
            return;
        }
        // A thread waiting in the shared server is the one to stop
        // (its own attention: not another thread's sleep or return),
        // its call interrupted.
        match self.threads.waiting_in_shared(self.pid) {
            Some(tid) => {
                if calls::linux_attention_thread(self.tpid, tid as u64).is_err() {
                    let _ = calls::linux_attention(self.tpid);
                }
                self.ctl(&[ctl::INTERRUPT, self.pid as u64, tid as u64]);
            }
            None => {
                let _ = calls::linux_attention(self.tpid);
            }
        }
    }

    /// The call held (the served thread's) ends for a signal: EINTR, or
    /// a restart where Linux restarts it; a stopped process ends only for
    /// SIGKILL.
    pub(super) fn interrupt_held(&mut self) {
        match self.held {
            Some((rid, Hold::Pause)) | Some((rid, Hold::Poll { .. })) | Some((rid, Hold::SignalRead { .. })) => {
                // A socket call restarts under SA_RESTART, as Linux's.
                // A FIFO's open too, as Linux's wait_for_partner. A
                // batch with messages done ends with their count.
                let done = self.mmsg_interrupted();
                let e = if self.sock_held() || self.fifo_cancel() || self.splice_cancel() {
                    errno::ERESTARTSYS
                } else {
                    errno::EINTR
                };
                self.held = None;
                // A signal wait ends here too: its set must not outlive
                // it into a later poll's hold.
                self.waiting_set = None;
                self.answer(rid, done.unwrap_or(errno::fail(e)));
            }
            Some((rid, Hold::Stopped)) if self.sig.pending & sig::bit(sig::SIGKILL) != 0 => {
                self.held = None;
                self.exit(rid, sig::killed_status(sig::SIGKILL, false));
            }
            _ => {}
        }
    }

    /// Delivers what can be delivered to the process waiting in `rid`,
    /// whose call returns `value` (None: an attention stop or a fault,
    /// where rax is the program's own).
    pub fn deliver(&mut self, rid: u64, value: Option<u64>) -> Delivered {
        // Without its registers nothing is delivered now: the signals stay
        // pending for its next call or stop.
        let Some(mut regs) = self.regs(rid) else {
            return Delivered::None;
        };
        // The call a restart runs again: one answered now still has its
        // number in rax (its frame is the kernel's until it returns); at
        // an attention stop, the one the kernel says gave up. Nothing
        // else is ever restarted: a program's own rax at a stop or a
        // fault may hold any value, -512 too.
        let call = match value {
            Some(v) => self.gave_up.or(Some(core::mem::replace(&mut regs.rax, v))),
            None => self.gave_up,
        };
        if let Some(v) = value {
            regs.rax = v;
        }
        let restart = call.is_some() && (regs.rax == ERESTARTSYS || regs.rax == ERESTARTNOINTR);
        if self.sig.deliverable() == 0 && !restart {
            return Delivered::None;
        }
        let original = regs;
        let mut frames = 0;
        let mut fpu = [0u8; frame::FPU_LEN];
        let mut fpu_read = false;
        while let Some(s) = sig::lowest(self.sig.deliverable()) {
            let info = self.sig.take(s);
            let a = self.sig.action(s);
            if s == sig::SIGKILL || a.handler == sig::SIG_DFL {
                match sig::default_action(s) {
                    Act::Ignore | Act::Continue => continue,
                    Act::Stop => {
                        self.stopped_call = call;
                        if self.stop(rid, s, regs.rax) {
                            return Delivered::Ended;
                        }
                        continue;
                    }
                    Act::Terminate | Act::Core => {
                        self.exit(rid, sig::killed_status(s, CORE_DUMPED));
                        return Delivered::Ended;
                    }
                }
            }
            if a.handler == sig::SIG_IGN {
                continue;
            }
            // A handler: a restart is decided by its SA_RESTART.
            if restart && regs.rax == ERESTARTSYS {
                if a.flags & sig::SA_RESTART != 0 {
                    restart_call(&mut regs, call);
                } else {
                    regs.rax = errno::fail(errno::EINTR);
                }
            } else if restart && regs.rax == ERESTARTNOINTR {
                restart_call(&mut regs, call);
            }
            if !fpu_read {
                let _ = patiently(|| calls::caller_fpu(rid, &mut fpu));
                fpu_read = true;
            }
            match self.push_frame(rid, &mut regs, s, a, info, &fpu) {
                Ok(()) => frames += 1,
                Err(_) => {
                    // No room for the frame: SIGSEGV, which kills.
                    self.exit(rid, sig::killed_status(sig::SIGSEGV, CORE_DUMPED));
                    return Delivered::Ended;
                }
            }
        }
        if frames == 0 {
            if restart && (regs.rax == ERESTARTSYS || regs.rax == ERESTARTNOINTR) {
                restart_call(&mut regs, call);
            }
            if regs == original {
                return Delivered::None;
            }
        }
        // A handler's entry changed the mask: it goes with the registers.
        let mask = self.sig.mask;
        if patiently(|| calls::caller_set_signal_regs(rid, &regs, mask)).is_ok() {
            self.sig.kernel_mask = mask;
        }
        Delivered::Frames(regs.rax)
    }

    /// Stops the process on signal `s`; the call it waits in ends with
    /// `value` when it is continued.
    /// False if the shared server refused: a terminal's stop signal to a
    /// member of an orphaned process group is discarded, as on Linux.
    fn stop(&mut self, rid: u64, s: u32, value: u64) -> bool {
        let r = self.ctl(&[ctl::STOPPED, self.pid as u64, 1, s as u64]);
        if proto::word(&r, 0) == 1 {
            return false;
        }
        self.held = Some((rid, Hold::Stopped));
        self.threads.held_by = self.served_tid();
        self.threads.held_rid = rid;
        self.stopped_value = value;
        true
    }

    /// Writes a frame for handler `a` of signal `s` below the stack (or on
    /// the alternate stack) and points `regs` at the handler.
    fn push_frame(
        &mut self,
        rid: u64,
        regs: &mut Regs,
        s: u32,
        a: SigAction,
        info: SigInfo,
        fpu: &[u8; frame::FPU_LEN],
    ) -> Result<(), i64> {
        let st = self.sig.altstack;
        let on_alt = st.contains(regs.rsp);
        let sp = if a.flags & sig::SA_ONSTACK != 0 && st.flags & sig::SS_DISABLE == 0 && !on_alt {
            st.sp + st.size
        } else {
            regs.rsp
        };
        let (at, info_at, uc_at) = frame::place(sp).ok_or(errno::EFAULT)?;
        let mask = self.sig.saved_mask.take().unwrap_or(self.sig.mask);
        let f = Frame {
            restorer: a.restorer,
            context: context_of(regs),
            mask,
            stack: AltStack {
                flags: if on_alt { sig::SS_ONSTACK } else { st.flags },
                ..st
            },
            info: SigInfo { signo: s, ..info },
            fpu: *fpu,
            trapno: self.fault_trap.0,
            err: self.fault_trap.1,
            cr2: info.addr,
        };
        self.write_mem(rid, at, &f.to_bytes(at))?;
        regs.rsp = at;
        regs.rip = a.handler;
        regs.rdi = s as u64;
        regs.rsi = if a.flags & sig::SA_SIGINFO != 0 { info_at } else { 0 };
        regs.rdx = if a.flags & sig::SA_SIGINFO != 0 { uc_at } else { 0 };
        regs.rax = 0;
        // The direction flag clear, as the ABI wants at a call.
        regs.rflags &= !0x400;
        let mut add = a.mask;
        if a.flags & sig::SA_NODEFER == 0 {
            add |= sig::bit(s);
        }
        self.sig.mask = (self.sig.mask | add) & !sig::UNBLOCKABLE;
        if a.flags & sig::SA_RESETHAND != 0 {
            // Only the handler goes back to the default: sigaction still
            // reports the flags and mask (Linux's SA_ONESHOT).
            self.sig.actions[(s - 1) as usize].handler = sig::SIG_DFL;
        }
        Ok(())
    }

    /// `rt_sigreturn`: the registers, mask and FPU state a frame saved.
    pub(super) fn sigreturn(&mut self, rid: u64) -> Out {
        let Some(now) = self.regs(rid) else {
            return Out::Ret(errno::fail(errno::EFAULT));
        };
        let mut uc = [0u8; frame::UCONTEXT_LEN];
        if calls::caller_read(rid, now.rsp, &mut uc).is_err() {
            return self.force_segv(rid);
        }
        let r = frame::restore(&uc);
        if r.context.rip >= 0x8000_0000_0000 || r.context.rsp >= 0x8000_0000_0000 {
            return self.force_segv(rid);
        }
        self.sig.mask = r.mask & !sig::UNBLOCKABLE;
        if r.stack.flags & sig::SS_ONSTACK == 0 {
            let mut st = r.stack;
            st.flags &= sig::SS_DISABLE;
            if st.flags & sig::SS_DISABLE != 0 || st.size >= sig::MINSIGSTKSZ {
                self.sig.altstack = st;
            }
        }
        if r.fpstate != 0 {
            let mut fpu = [0u8; frame::FPU_LEN];
            if calls::caller_read(rid, r.fpstate, &mut fpu).is_ok() {
                let _ = patiently(|| calls::caller_set_fpu(rid, &fpu));
            }
        }
        let regs = regs_of(&r.context, now.fs_base);
        let mask = self.sig.mask;
        if patiently(|| calls::caller_set_signal_regs(rid, &regs, mask)).is_ok() {
            self.sig.kernel_mask = mask;
        }
        Out::Ret(r.context.rax)
    }

    fn force_segv(&mut self, rid: u64) -> Out {
        self.exit(rid, sig::killed_status(sig::SIGSEGV, CORE_DUMPED));
        Out::Done
    }

    /// A fault the process cannot go on from: its signal, forced (a
    /// blocked or ignored one kills, as Linux's).
    pub(super) fn on_fault(&mut self, rid: u64, f: &LinuxFault) {
        const KERNEL_HALF: u64 = 0x8000_0000_0000;
        use tessera_rt::abi::linux::FAULT_PAST_END;
        let (s, code, addr) = match f.vector {
            14 if f.address >= KERNEL_HALF => (sig::SIGSEGV, sig::SEGV_MAPERR, f.address),
            14 if f.error_code & FAULT_PAST_END != 0 => (sig::SIGBUS, sig::BUS_ADRERR, f.address),
            14 if f.error_code & 1 != 0 => (sig::SIGSEGV, sig::SEGV_ACCERR, f.address),
            14 => (sig::SIGSEGV, sig::SEGV_MAPERR, f.address),
            0 => (sig::SIGFPE, sig::FPE_INTDIV, f.rip),
            16 | 19 => (sig::SIGFPE, 0, f.rip),
            6 => (sig::SIGILL, sig::ILL_ILLOPN, f.rip),
            3 => (sig::SIGTRAP, sig::SI_KERNEL, 0),
            1 => (sig::SIGTRAP, sig::TRAP_BRKPT, f.rip),
            17 => (sig::SIGBUS, 1, f.rip),
            11 | 12 => (sig::SIGBUS, sig::SI_KERNEL, 0),
            _ => (sig::SIGSEGV, sig::SI_KERNEL, 0),
        };
        let a = self.sig.action(s);
        let blocked = self.sig.mask & sig::bit(s) != 0;
        if blocked || a.handler == sig::SIG_IGN {
            self.sig.actions[(s - 1) as usize] = SigAction::default();
            self.sig.mask &= !sig::bit(s);
        }
        self.fault_trap = (f.vector, f.error_code & !FAULT_PAST_END);
        // The faulting thread's alone, delivered at once.
        self.sig.own.add(SigInfo {
            signo: s,
            code,
            addr,
            ..SigInfo::default()
        });
        // A fault without an address (SI_KERNEL) still reads 0.
        let d = self.deliver(rid, None);
        self.fault_trap = (0, 0);
        match d {
            Delivered::Ended => {}
            _ => {
                self.sync_signals();
                let _ = calls::caller_return(rid, 0);
            }
        }
    }

    // ---- the calls ----

    pub(super) fn rt_sigaction(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let s = a[0] as u32;
        if a[3] != 8 || !sig::valid(s) {
            return Err(errno::EINVAL);
        }
        if a[1] != 0 && (s == sig::SIGKILL || s == sig::SIGSTOP) {
            return Err(errno::EINVAL);
        }
        let new = if a[1] != 0 {
            let b = self.read_mem(rid, a[1], SigAction::LEN)?;
            let mut arr = [0u8; 32];
            arr.copy_from_slice(&b);
            Some(SigAction::from_bytes(&arr))
        } else {
            None
        };
        let old = self.sig.action(s);
        if a[2] != 0 {
            self.write_mem(rid, a[2], &old.to_bytes())?;
        }
        if let Some(mut n) = new {
            n.mask &= !sig::UNBLOCKABLE;
            self.sig.actions[(s - 1) as usize] = n;
            self.sig.actions_set = true;
            if n.ignores(s) {
                self.discard_all(s);
            }
            if s == sig::SIGCHLD {
                let nowait = n.handler == sig::SIG_IGN || n.flags & sig::SA_NOCLDWAIT != 0;
                let was = old.handler == sig::SIG_IGN || old.flags & sig::SA_NOCLDWAIT != 0;
                if nowait != was {
                    self.ctl(&[ctl::NOCLDWAIT, self.pid as u64, nowait as u64]);
                }
            }
        }
        Ok(0)
    }

    pub(super) fn rt_sigprocmask(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        if a[3] != 8 {
            return Err(errno::EINVAL);
        }
        // Here only when the kernel did not serve it: the change blocks or
        // unblocks a pending signal, or the set was not readable there.
        let old = self.sig.mask;
        if a[1] != 0 {
            use tessera_rt::abi::linux::{SIGSET_ARG, SIGSET_READ, SIGSET_READ_ARG};
            let set = match a[SIGSET_READ_ARG] {
                SIGSET_READ => a[SIGSET_ARG],
                _ => self.read_u64(rid, a[1])?,
            };
            self.sig.mask = match a[0] {
                sig::SIG_BLOCK => old | set,
                sig::SIG_UNBLOCK => old & !set,
                sig::SIG_SETMASK => set,
                _ => return Err(errno::EINVAL),
            } & !sig::UNBLOCKABLE;
            // What the process has pending and this thread now blocks
            // goes to a thread that takes it.
            let blocked_now = self.sig.mask & !old;
            if blocked_now & self.sig.pending != 0 {
                self.retarget(blocked_now);
            }
        }
        if a[2] != 0 {
            self.write_u64(rid, a[2], old)?;
        }
        Ok(0)
    }

    pub(super) fn rt_sigpending(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        if a[1] != 8 {
            return Err(errno::EINVAL);
        }
        // The thread's own and the process's, those blocked.
        self.write_u64(rid, a[0], self.sig.pending_all() & self.sig.mask)?;
        Ok(0)
    }

    pub(super) fn rt_sigsuspend(&mut self, rid: u64, a: [u64; 6]) -> Out {
        if a[1] != 8 {
            return ret(Err(errno::EINVAL));
        }
        let set = match self.read_u64(rid, a[0]) {
            Ok(s) => s,
            Err(e) => return ret(Err(e)),
        };
        let old = self.sig.mask;
        self.sig.mask = set & !sig::UNBLOCKABLE;
        self.sig.saved_mask = Some(old);
        if self.sig.deliverable() != 0 {
            return Out::Ret(errno::fail(errno::EINTR));
        }
        self.held = Some((rid, Hold::Pause));
        Out::Done
    }

    pub(super) fn pause(&mut self, rid: u64) -> Out {
        self.held = Some((rid, Hold::Pause));
        Out::Done
    }

    pub(super) fn sigaltstack(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let sp = self.regs(rid).ok_or(errno::EFAULT)?.rsp;
        let cur = self.sig.altstack;
        let on = cur.contains(sp);
        if a[0] != 0 {
            let b = self.read_mem(rid, a[0], 24)?;
            let mut arr = [0u8; 24];
            arr.copy_from_slice(&b);
            let new = AltStack::from_bytes(&arr);
            if on {
                return Err(errno::EPERM);
            }
            if new.flags & !(sig::SS_DISABLE | sig::SS_ONSTACK | 0x8000_0000) != 0 {
                return Err(errno::EINVAL);
            }
            if new.flags & sig::SS_DISABLE == 0 && new.size < sig::MINSIGSTKSZ {
                return Err(errno::ENOMEM);
            }
            if a[1] != 0 {
                self.write_old_stack(rid, a[1], cur, on)?;
            }
            self.sig.altstack = if new.flags & sig::SS_DISABLE != 0 {
                AltStack::DISABLED
            } else {
                AltStack { flags: 0, ..new }
            };
            return Ok(0);
        }
        if a[1] != 0 {
            self.write_old_stack(rid, a[1], cur, on)?;
        }
        Ok(0)
    }

    fn write_old_stack(&self, rid: u64, at: u64, cur: AltStack, on: bool) -> Result<(), i64> {
        let shown = AltStack {
            flags: if on { sig::SS_ONSTACK } else { cur.flags },
            ..cur
        };
        self.write_mem(rid, at, &shown.to_bytes())
    }

    /// `rt_sigtimedwait`: a pending signal of `set` taken without its
    /// handler; waits (up to the timeout) for one.
    pub(super) fn sigtimedwait(&mut self, rid: u64, a: [u64; 6]) -> Out {
        if a[3] != 8 {
            return ret(Err(errno::EINVAL));
        }
        let set = match self.read_u64(rid, a[0]) {
            Ok(s) => s & !sig::UNBLOCKABLE,
            Err(e) => return ret(Err(e)),
        };
        if let Some(s) = sig::lowest(self.sig.pending_all() & set) {
            let info = self.sig.take(s);
            if a[1] != 0
                && self
                    .write_mem(rid, a[1], &SigInfo { signo: s, ..info }.to_bytes())
                    .is_err()
            {
                return ret(Err(errno::EFAULT));
            }
            return Out::Ret(s as u64);
        }
        let deadline = if a[2] != 0 {
            match self.read_mem(rid, a[2], 16) {
                Ok(b) => {
                    let s = linuxabi::structs::u64_at(&b, 0);
                    let ns = linuxabi::structs::u64_at(&b, 8);
                    if s >> 63 != 0 || ns >= 1_000_000_000 {
                        return ret(Err(errno::EINVAL));
                    }
                    tessera_rt::sys::now_ns()
                        .saturating_add(s.saturating_mul(1_000_000_000))
                        .saturating_add(ns)
                }
                Err(e) => return ret(Err(e)),
            }
        } else {
            u64::MAX
        };
        if deadline <= tessera_rt::sys::now_ns() {
            return ret(Err(errno::EAGAIN));
        }
        // Wait: the set unblocked meanwhile makes a signal of it come here
        // (as an interruption), then it is taken as Linux takes it.
        self.sig.saved_mask = None;
        let token = self.wait_until(deadline);
        self.waiting_set = Some((set, a[1], deadline));
        self.held = Some((rid, Hold::Poll { token }));
        Out::Done
    }

    /// Registers a wake at `deadline` with the shared server: its token.
    pub(super) fn wait_until(&self, deadline: u64) -> u64 {
        proto::word(&self.ctl(&[ctl::POLL, self.pid as u64, deadline]), 1)
    }
}
