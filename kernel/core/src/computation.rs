//! Computation (Tender's 演算): the unit of processor allocation. A process
//! runs by holding one. It owns a kernel stack, the saved kernel context
//! used by `switch_context`, and the user's FPU/SSE state.
//!
//! This module is the mechanism only: what a computation is, which one a
//! CPU runs (`current`), and the switch from one to another with its
//! hand-over between CPUs. Which computation runs next, blocking and waking
//! are the scheduler's (crate `sched`), which works on these objects
//! through their fields and `switch_to`.

use crate::arch::x86_64::trap::TrapFrame;
use crate::cpu::{self, MAX_CPUS, PerCpu};
use crate::mm::stack::KernelStack;
use crate::owner::{Owner, OwnerKind};
use crate::sync::IrqMutex;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

core::arch::global_asm!(include_str!("arch/x86_64/switch.S"), options(att_syntax));

unsafe extern "C" {
    fn switch_context(save: *const AtomicU64, load: u64);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// On a CPU right now.
    Running,
    /// In a run queue.
    Runnable,
    /// Waiting for an event; a wake-up makes it Runnable.
    Blocked,
    /// Finished; never runs again.
    Dead,
}

/// The 512-byte `fxsave` area (x87, MMX, SSE state).
#[repr(C, align(16))]
pub struct FpuState(pub [u8; 512]);

/// A computation's saved FPU state. Only the CPU switching the computation
/// off or onto itself touches it (`switch_address_space`), and the
/// `on_cpu` hand-over orders those touches, so it needs no lock of its own.
struct FpuArea(core::cell::UnsafeCell<FpuState>);

// SAFETY: see the type's comment: one CPU at a time, ordered by `on_cpu`.
unsafe impl Sync for FpuArea {}

impl FpuArea {
    fn as_mut_ptr(&self) -> *mut u8 {
        self.0.get() as *mut u8
    }
}

/// The address space a user computation runs in, fixed when it is made.
pub struct UserSpace {
    /// Root of the page-table tree (the virtual space's PML4).
    pub root: u64,
    /// CPUs that run the space, shared with the space (TLB shootdowns
    /// go to them).
    pub active_cpus: Arc<AtomicU64>,
}

pub struct Computation {
    /// What it runs for (the process), for the layers above; None for a
    /// CPU's idle computation.
    owner: Option<Owner>,
    user: Option<UserSpace>,
    /// Set when its process is killed (shared by the process's
    /// computations): it ends at the next return to user mode, and its
    /// waits give up.
    killed: Option<Arc<AtomicBool>>,
    pub state: IrqMutex<State>,
    /// Saved kernel stack pointer while not running.
    saved_rsp: AtomicU64,
    /// Set while some CPU still runs on this computation's stack; a CPU that
    /// picks it waits until it is clear (the previous CPU is done with it).
    pub on_cpu: AtomicBool,
    /// Set while it is a CPU's current computation and has not yet decided
    /// (in `schedule`) to leave it. A wake-up in the window between blocking
    /// and switching away lets it continue where it is, instead of queueing
    /// it elsewhere while it still runs here. Changed only with `state` held.
    pub holds_cpu: AtomicBool,
    /// Set with the state Dead: read where the state's lock would cost too
    /// much (every switch checks whether the one it leaves has finished).
    pub finished: AtomicBool,
    /// Set when the computation was first made runnable (a process starts once).
    pub started: AtomicBool,
    /// CPU index it is pinned to, or `ANY_CPU`.
    pub affinity: AtomicUsize,
    /// CPU it last ran on.
    pub last_cpu: AtomicUsize,
    fpu: FpuArea,
    /// The user's FS base (thread-local storage of Linux programs), loaded
    /// into the CPU when the computation is switched in.
    fs_base: AtomicU64,
    /// The user's GS base (`arch_prctl(ARCH_SET_GS)`; 0 unless set).
    gs_base: AtomicU64,
    /// Every register is kept in its system-call frames (a Linux process).
    full_frame: bool,
    /// What `PerCpu::full_frame` holds while it runs (see there), worked
    /// out once here so that a switch only copies it.
    frame_calls: u64,
    /// The number the layers above know it by among its process's
    /// computations (a Linux thread's tid; 0: the first computation).
    pub label: AtomicU64,
    /// Asked to stop on its next way back to user mode (a signal for this
    /// computation alone), besides what its process was asked.
    pub attention: AtomicBool,
    /// A user word cleared, and its waiters woken, when the computation
    /// ends while others go on in its space (Linux's clear-child-tid).
    pub clear_word: AtomicU64,
    /// A Linux thread's signal mask (Linux's `blocked`): the kernel serves
    /// rt_sigprocmask from it; the supervisor reads and writes it
    /// (`linux_sigmask`) wherever a signal's delivery depends on it.
    pub sigmask: AtomicU64,
    /// The kernel changed `sigmask` since the supervisor last read or set
    /// it: the next rendezvous tells it so (`linux::SIGMASK_NEWS`).
    pub sigmask_news: AtomicBool,
    /// The Linux system call a wait the kernel served gave up for a
    /// signal (its number with `RESTART_MARK`; 0: none): the supervisor
    /// restarts it or fails it with EINTR, as the handler's SA_RESTART
    /// says, at the attention stop that follows.
    pub restart_call: AtomicU64,
    /// Its supervisor ended it alone: it ends as it wakes, its process
    /// going on.
    pub ends_alone: AtomicBool,
    /// CPU time consumed, in TSC cycles (`clock::cycles_to_ns` converts).
    pub cpu_cycles: AtomicU64,
    /// Times it left a CPU it could have gone on using because the CPU
    /// was asked to switch (its slice over, new work): Linux's
    /// nonvoluntary_ctxt_switches (a yield is not one).
    pub preemptions: AtomicU64,
    /// The part of `cpu_cycles` spent in the kernel (`cpuacct`).
    pub kernel_cycles: AtomicU64,
    /// The `cpuacct` group its time goes to when it ends (0: none).
    pub group: core::sync::atomic::AtomicU32,
    /// How far into the frame allocator's reserve it may go
    /// (`mm::frames::Reserve`): a computation's, not a CPU's, since what
    /// may use it (a system call's access to user memory) may block.
    pub(crate) frame_reserve: core::sync::atomic::AtomicU8,
    /// Held only to be freed with the computation; a switch uses `stack_top`.
    _stack: Option<KernelStack>,
    /// `stack`'s top (0 without one), kept so that a switch need not work it out.
    stack_top: u64,
    /// The next in the list of finished computations (`DEAD`), once it is
    /// in it: a link of its own, so that setting it aside allocates nothing.
    next_dead: AtomicPtr<Computation>,
}

pub const ANY_CPU: usize = usize::MAX;

/// `Computation::restart_call` holds a call number with this bit.
pub const RESTART_MARK: u64 = 1 << 63;

/// Where a user computation starts, and for whom.
pub struct UserStart {
    pub owner: Owner,
    pub user: UserSpace,
    pub killed: Arc<AtomicBool>,
    pub rip: u64,
    pub rsp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub affinity: usize,
    /// Every register is kept in its system-call frames (see `entry.S`).
    pub full_frame: bool,
    /// Every general register at the start, instead of `rdi` and `rsi`
    /// alone (a thread starts with its creator's, as clone returns).
    pub regs: Option<abi::linux::GeneralRegs>,
    /// Its user FS base at the start.
    pub fs_base: u64,
}

impl Computation {
    /// A computation that starts in user mode at `start.rip` with stack
    /// `start.rsp` and registers `rdi`, `rsi`, in `start.user`'s space.
    pub fn new_user(start: UserStart) -> Result<Arc<Computation>, crate::mm::paging::MapError> {
        let stack = KernelStack::new(crate::mm::stack::DEFAULT_PAGES)?;
        let top = stack.top();
        let frame_size = core::mem::size_of::<TrapFrame>() as u64;
        let frame_at = top - frame_size;
        if !crate::vm::is_canonical(start.fs_base) {
            return Err(crate::mm::paging::MapError::NotCanonical);
        }
        let frame = TrapFrame {
            regs: start.regs.unwrap_or(abi::linux::GeneralRegs {
                rdi: start.rdi,
                rsi: start.rsi,
                ..Default::default()
            }),
            rip: start.rip,
            rsp: start.rsp,
            cs: crate::arch::x86_64::gdt::USER_CS as u64,
            ss: crate::arch::x86_64::gdt::USER_DS as u64,
            rflags: 0x202, // IF
            ..TrapFrame::default()
        };
        unsafe extern "C" {
            fn computation_start();
        }
        // Below the trap frame: the return address for switch_context's `ret`
        // and six zeroed callee-saved registers.
        let ret_at = frame_at - 8;
        let rsp0 = ret_at - 6 * 8;
        // SAFETY: the stack was just mapped for this computation alone.
        unsafe {
            (frame_at as *mut TrapFrame).write(frame);
            (ret_at as *mut u64).write(computation_start as *const () as u64);
            core::ptr::write_bytes(rsp0 as *mut u64, 0, 6);
        }
        let mut fpu = FpuState([0; 512]);
        // Default FPU state: x87 control word 0x37f, MXCSR 0x1f80 (all masked).
        fpu.0[0..2].copy_from_slice(&0x037fu16.to_le_bytes());
        fpu.0[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
        crate::mm::heap::try_arc(Computation {
            owner: Some(start.owner),
            user: Some(start.user),
            killed: Some(start.killed),
            saved_rsp: AtomicU64::new(rsp0),
            affinity: AtomicUsize::new(start.affinity),
            fs_base: AtomicU64::new(start.fs_base),
            gs_base: AtomicU64::new(0),
            full_frame: start.full_frame,
            frame_calls: if start.full_frame {
                abi::linux::SHORT_FRAME_CALLS.as_ptr() as u64
            } else {
                0
            },
            _stack: Some(stack),
            stack_top: top,
            ..Computation::blank(false, 0, fpu)
        })
        .map_err(|_| crate::mm::paging::MapError::OutOfMemory)
    }

    /// The computation a CPU's boot context becomes: its idle loop.
    pub fn new_idle(cpu: usize) -> Arc<Computation> {
        Arc::new(Computation::blank(true, cpu, FpuState([0; 512])))
    }

    /// A computation of nobody on `cpu` with FPU state `fpu`, every counter
    /// and flag at its start: running there already (a CPU's boot context)
    /// or not yet started.
    fn blank(running: bool, cpu: usize, fpu: FpuState) -> Computation {
        Computation {
            owner: None,
            user: None,
            killed: None,
            state: IrqMutex::new(if running { State::Running } else { State::Runnable }),
            saved_rsp: AtomicU64::new(0),
            on_cpu: AtomicBool::new(running),
            holds_cpu: AtomicBool::new(running),
            finished: AtomicBool::new(false),
            started: AtomicBool::new(running),
            affinity: AtomicUsize::new(cpu),
            last_cpu: AtomicUsize::new(cpu),
            fpu: FpuArea(core::cell::UnsafeCell::new(fpu)),
            fs_base: AtomicU64::new(0),
            gs_base: AtomicU64::new(0),
            full_frame: false,
            frame_calls: 0,
            label: AtomicU64::new(0),
            attention: AtomicBool::new(false),
            clear_word: AtomicU64::new(0),
            sigmask: AtomicU64::new(0),
            sigmask_news: AtomicBool::new(false),
            restart_call: AtomicU64::new(0),
            ends_alone: AtomicBool::new(false),
            cpu_cycles: AtomicU64::new(0),
            preemptions: AtomicU64::new(0),
            kernel_cycles: AtomicU64::new(0),
            group: core::sync::atomic::AtomicU32::new(0),
            frame_reserve: core::sync::atomic::AtomicU8::new(0),
            _stack: None,
            stack_top: 0,
            next_dead: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    pub fn kernel_stack_top(&self) -> u64 {
        self.stack_top
    }

    pub fn is_idle(&self) -> bool {
        self.owner.is_none()
    }

    /// What it runs for, if that is of `kind` (the process, for the layer
    /// that defines it).
    #[inline(always)]
    pub fn owner<T: Send + Sync + 'static>(&self, kind: &'static OwnerKind<T>) -> Option<&T> {
        self.owner.as_ref()?.get(kind)
    }

    /// Its owner as a new strong reference, if that is of `kind`.
    pub fn owner_arc<T: Send + Sync + 'static>(&self, kind: &'static OwnerKind<T>) -> Option<Arc<T>> {
        self.owner.as_ref()?.get_arc(kind)
    }

    /// Sets the user's FS base (`arch_prctl(ARCH_SET_FS)`), now if this is
    /// the computation running here, else when it is next switched in.
    /// A non-canonical address is refused.
    pub fn set_fs_base(&self, base: u64) -> bool {
        if !crate::vm::is_canonical(base) {
            return false;
        }
        self.fs_base.store(base, Ordering::Relaxed);
        // The MSR and this CPU's note of it change together, or a switch to
        // a computation with the old value would skip the write.
        x86_64::instructions::interrupts::without_interrupts(|| {
            if core::ptr::eq(current_ptr(), self) {
                cpu::this_cpu().user_fs_base.store(base, Ordering::Relaxed);
                x86_64::registers::model_specific::FsBase::write(x86_64::VirtAddr::new_truncate(base));
            }
        });
        true
    }

    pub fn fs_base(&self) -> u64 {
        self.fs_base.load(Ordering::Relaxed)
    }

    /// Sets the user's GS base (`arch_prctl(ARCH_SET_GS)`), as
    /// `set_fs_base` does the FS base. While the kernel runs, the user's
    /// value is in the kernel GS base MSR (the entry's `swapgs` put it
    /// there and the way out puts it back).
    pub fn set_gs_base(&self, base: u64) -> bool {
        if !crate::vm::is_canonical(base) {
            return false;
        }
        self.gs_base.store(base, Ordering::Relaxed);
        x86_64::instructions::interrupts::without_interrupts(|| {
            if core::ptr::eq(current_ptr(), self) {
                cpu::this_cpu().user_gs_base.store(base, Ordering::Relaxed);
                x86_64::registers::model_specific::KernelGsBase::write(x86_64::VirtAddr::new_truncate(base));
            }
        });
        true
    }

    pub fn gs_base(&self) -> u64 {
        self.gs_base.load(Ordering::Relaxed)
    }

    /// Whether its system-call frames hold every register.
    pub fn full_frame(&self) -> bool {
        self.full_frame
    }

    /// Runs `f` on the frame of its current entry from user mode (a system
    /// call or a trap: the frame at the top of its kernel stack) while it
    /// waits there: blocked, and held so by its state's lock for as long as
    /// `f` runs. None if it is not blocked (running, or never ran).
    pub fn with_waiting_frame<R>(&self, f: impl FnOnce(&mut TrapFrame) -> R) -> Option<R> {
        let state = self.state.lock();
        if *state != State::Blocked || self.stack_top == 0 || !self.started.load(Ordering::Acquire) {
            return None;
        }
        let frame_at = self.stack_top - core::mem::size_of::<TrapFrame>() as u64;
        // SAFETY: the frame is the one its entry from user mode pushed at the
        // top of its own kernel stack, which lives as long as it does; it is
        // blocked (and stays so: waking it takes this lock), so nothing else
        // reads or writes the frame meanwhile.
        Some(f(unsafe { &mut *(frame_at as *mut TrapFrame) }))
    }

    /// Runs `f` on its saved FPU state (fxsave's 512 bytes) while it waits
    /// as `with_waiting_frame` requires: blocked, held so by its state's
    /// lock, and switched off its CPU (which saved the state). None if it
    /// is not blocked.
    pub fn with_waiting_fpu<R>(&self, f: impl FnOnce(&mut [u8; 512]) -> R) -> Option<R> {
        loop {
            // A CPU switching it off saves the state, then clears `on_cpu`.
            while self.on_cpu.load(Ordering::Acquire) {
                core::hint::spin_loop();
            }
            let state = self.state.lock();
            if *state != State::Blocked || self.stack_top == 0 || !self.started.load(Ordering::Acquire) {
                return None;
            }
            if self.on_cpu.load(Ordering::Acquire) {
                continue;
            }
            // SAFETY: it is blocked and off every CPU, and stays so while
            // the state's lock is held (waking it takes the lock; only a CPU
            // switching it on or off touches the area, see `FpuArea`).
            let area = unsafe { &mut (*self.fpu.0.get()).0 };
            return Some(f(area));
        }
    }

    /// Whether its process was killed.
    #[inline(always)]
    pub fn killed(&self) -> bool {
        self.killed.as_ref().is_some_and(|k| k.load(Ordering::Acquire))
    }

    /// The trap frame a new computation leaves for user mode through, at
    /// the top of its kernel stack: its user registers until it has run.
    /// Only the computation itself, on its first entry (`first_entry`),
    /// may change it.
    pub fn with_first_frame<R>(&self, f: impl FnOnce(&mut TrapFrame) -> R) -> Option<R> {
        let me = current_ptr();
        if self.stack_top == 0 || !core::ptr::eq(me, self) {
            return None;
        }
        let frame_at = self.stack_top - core::mem::size_of::<TrapFrame>() as u64;
        // SAFETY: the trap frame at the top of this computation's stack is
        // the one computation_start returns through; the computation runs
        // here (checked above), before it has left for user mode, and
        // nothing else refers to the frame.
        Some(f(unsafe { &mut *(frame_at as *mut TrapFrame) }))
    }
}

// ---- which computation a CPU runs --------------------------------------

/// The pointer in `PerCpu::current`: a strong reference (from
/// `Arc::into_raw`) that the slot owns while the computation runs there.
#[inline(always)]
fn current_ptr() -> *const Computation {
    cpu::this_cpu().current.load(Ordering::Acquire) as *const Computation
}

/// Runs `f` on the computation running on this CPU, without taking a
/// reference (the hot path of every system call and interrupt).
#[inline(always)]
pub fn with_current<R>(f: impl FnOnce(&Computation) -> R) -> Option<R> {
    let ptr = current_ptr();
    // SAFETY: while a computation runs, this CPU's `current` slot holds a
    // strong reference to it; while it is switched away inside `f`
    // (blocked, preempted) a run queue, wait queue or sleep list holds one
    // (it could not resume into `f` otherwise). It is freed only after it
    // is Dead and reaped, and a Dead computation never resumes into `f`.
    (!ptr.is_null()).then(|| f(unsafe { &*ptr }))
}

/// The computation running on this CPU, as a new strong reference.
#[inline]
pub fn current() -> Option<Arc<Computation>> {
    if !cpu::ready() {
        return None;
    }
    current_here()
}

/// `current` for code that runs only once this CPU is set up, as
/// `with_current` does (a system call's: the rendezvous paths take the
/// waiter's reference with it, without `current`'s check).
#[inline(always)]
pub fn current_here() -> Option<Arc<Computation>> {
    let ptr = current_ptr();
    if ptr.is_null() {
        return None;
    }
    // SAFETY: as in with_current; the new strong reference is balanced by
    // the Arc returned.
    unsafe {
        Arc::increment_strong_count(ptr);
        Some(Arc::from_raw(ptr))
    }
}

/// Makes `c` the computation this CPU runs, without a switch: the boot
/// context of a CPU becoming its idle computation.
pub fn install_current(c: Arc<Computation>) {
    let old = cpu::this_cpu()
        .current
        .swap(Arc::into_raw(c) as *mut Computation, Ordering::AcqRel);
    if !old.is_null() {
        // SAFETY: the slot held a strong reference from `Arc::into_raw`.
        drop(unsafe { Arc::from_raw(old) });
    }
}

/// The current computation gives up its user space for good (its process
/// is ending and the space is about to go): this CPU leaves the space's
/// page tables for the kernel's and no longer counts as running it.
pub fn leave_user_space() {
    with_current(|c| {
        if let Some(u) = &c.user {
            // SAFETY: the kernel tree maps this code and every kernel stack.
            unsafe { crate::mm::paging::load_root(crate::mm::paging::kernel_root()) };
            u.active_cpus.fetch_and(!(1 << cpu::this_cpu().index), Ordering::AcqRel);
        }
    });
}

// ---- the switch ----------------------------------------------------------

/// Per CPU, the computation switched away from (a strong reference, from
/// the `current` slot) until the switch has completed on the other side.
/// Only its own CPU touches a slot, with interrupts off: no lock needed.
static PREV: [AtomicPtr<Computation>; MAX_CPUS] = [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_CPUS];

/// Computations that finished, linked through `next_dead` (each link a
/// strong reference from `Arc::into_raw`); their kernel stacks are freed
/// later, from a context where no switch is in progress. A list with its
/// links in its members: a switch away from a finished computation must
/// not allocate (with memory gone, a list that grows panicked there).
/// Pushed one at a time and taken whole, so no member is ever taken alone
/// and the exchange cannot mistake one list for another.
static DEAD: AtomicPtr<Computation> = AtomicPtr::new(core::ptr::null_mut());

pub static CONTEXT_SWITCHES: AtomicU64 = AtomicU64::new(0);

/// Switches this CPU from the computation running here to `next` (made
/// Running for this CPU by the scheduler), and returns when the one
/// running now runs again. Interrupts must be off.
#[inline(always)]
pub fn switch_to(next: Arc<Computation>) {
    let here = cpu::this_cpu();
    let me = here.slot();
    let next_ptr = Arc::as_ptr(&next);
    // The slot's reference to the one leaving moves to `PREV`, and the one
    // arriving moves in: no count changes on the way.
    let prev = here
        .current
        .swap(Arc::into_raw(next) as *mut Computation, Ordering::AcqRel);
    debug_assert!(!prev.is_null(), "a CPU switching has a current computation");
    PREV[me].store(prev, Ordering::Relaxed);
    // SAFETY: `PREV` holds a strong reference to `prev` and the `current`
    // slot one to `next`; only this CPU replaces either, and it does not
    // before the switch below has come back.
    let (cur, next): (&Computation, &Computation) = unsafe { (&*prev, &*next_ptr) };

    // The previous CPU of `next` may still be on its stack.
    while next.on_cpu.load(Ordering::Acquire) {
        core::hint::spin_loop();
    }
    next.on_cpu.store(true, Ordering::Relaxed);
    next.last_cpu.store(me, Ordering::Relaxed);
    switch_address_space(cur, next, here);
    CONTEXT_SWITCHES.fetch_add(1, Ordering::Relaxed);
    let save = &cur.saved_rsp as *const AtomicU64;
    let load = next.saved_rsp.load(Ordering::Acquire);
    // SAFETY: `load` is the saved stack pointer of a computation that is not
    // running anywhere (on_cpu was clear); `save` outlives the switch because
    // `PREV` keeps the computation alive until finish_switch runs on the
    // other side.
    unsafe { switch_context(save, load) };
    finish_switch();
}

/// Loads `next`'s page tables, kernel stack for traps, and FPU state.
#[inline(always)]
fn switch_address_space(cur: &Computation, next: &Computation, here: &PerCpu) {
    let me = here.index;
    if let Some(u) = &cur.user {
        u.active_cpus.fetch_and(!(1 << me), Ordering::AcqRel);
        // SAFETY: the area belongs to `cur`, which is this CPU's until the switch.
        unsafe { core::arch::asm!("fxsave64 [{}]", in(reg) cur.fpu.as_mut_ptr(), options(nostack)) };
    }
    let root = next
        .user
        .as_ref()
        .map_or_else(crate::mm::paging::kernel_root, |u| u.root);
    if let Some(u) = &next.user {
        u.active_cpus.fetch_or(1 << me, Ordering::AcqRel);
        // SAFETY: the area holds a valid fxsave image (initialised at creation).
        unsafe { core::arch::asm!("fxrstor64 [{}]", in(reg) next.fpu.as_mut_ptr(), options(nostack)) };
        // Only a Linux process (a full frame) sets an FS or GS base: a
        // native program's code never reads either, so the MSRs are left
        // as they are for it (a native switch pays one test for both), and
        // written only when the value changes on this CPU. The GS base's
        // MSR is the kernel one: the way out's `swapgs` makes it the user's.
        if next.full_frame {
            let fs = next.fs_base.load(Ordering::Relaxed);
            if fs != here.user_fs_base.load(Ordering::Relaxed) {
                here.user_fs_base.store(fs, Ordering::Relaxed);
                x86_64::registers::model_specific::FsBase::write(x86_64::VirtAddr::new_truncate(fs));
            }
            let gs = next.gs_base.load(Ordering::Relaxed);
            if gs != here.user_gs_base.load(Ordering::Relaxed) {
                here.user_gs_base.store(gs, Ordering::Relaxed);
                x86_64::registers::model_specific::KernelGsBase::write(x86_64::VirtAddr::new_truncate(gs));
            }
        }
    }
    let (frame, _) = x86_64::registers::control::Cr3::read_raw();
    if frame.start_address().as_u64() != root {
        // SAFETY: every virtual space shares the kernel half, which maps this code and stack.
        unsafe { crate::mm::paging::load_root(root) };
    }
    if !next.is_idle() {
        here.set_kernel_stack(next.kernel_stack_top(), next.frame_calls);
    }
}

/// Completes a switch on the new computation's side: the previous one may
/// now be picked by another CPU, and a finished one is set aside for reaping.
/// Inlined: it is on the way back of every switch.
#[inline(always)]
fn finish_switch() {
    // Read again, not passed in: the computation may resume on another CPU.
    let me = cpu::this_cpu().slot();
    let prev = PREV[me].swap(core::ptr::null_mut(), Ordering::Relaxed);
    if !prev.is_null() {
        // SAFETY: the slot held a strong reference from `Arc::into_raw`,
        // taken back exactly once, here.
        let prev = unsafe { Arc::from_raw(prev) };
        // A finished computation is set aside before it is declared off
        // the CPU, so whoever waits for that sees it ready to be reaped.
        if prev.finished.load(Ordering::Relaxed) {
            set_aside(&prev);
        }
        prev.on_cpu.store(false, Ordering::Release);
    }
}

/// Out of line: once per computation, not once per switch.
#[cold]
#[inline(never)]
fn set_aside(dead: &Arc<Computation>) {
    let me = Arc::into_raw(dead.clone()).cast_mut();
    let mut head = DEAD.load(Ordering::Relaxed);
    loop {
        dead.next_dead.store(head, Ordering::Relaxed);
        match DEAD.compare_exchange_weak(head, me, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(now) => head = now,
        }
    }
}

/// First code of a new computation (see switch.S): finish the switch, then
/// the layers above prepare its first entry to user mode.
#[unsafe(no_mangle)]
extern "C" fn computation_started() {
    finish_switch();
    (crate::hooks::get().first_entry)();
}

/// Lets go of the kernel stacks of finished computations (freed, or a few
/// kept mapped for the next: `stack::release_kept`). Called where no lock
/// is held and interrupts may be enabled (idle loop, spawn).
pub fn reap() {
    reap_then(|| ());
}

/// `reap`, then the kernel stacks kept for the next computations freed
/// too (`stack::release_kept`): what a CPU with nothing to run does, in
/// one reap as `reap_all` sees it, so that a leak check on another CPU
/// never finds stacks between the two.
pub fn reap_idle() {
    reap_then(crate::mm::stack::release_kept);
}

fn reap_then(then: impl FnOnce()) {
    REAPING.fetch_add(1, Ordering::AcqRel);
    let mut next = DEAD.swap(core::ptr::null_mut(), Ordering::Acquire);
    while !next.is_null() {
        // SAFETY: every link is a strong reference from `Arc::into_raw`
        // (`set_aside`), and the whole list was taken off `DEAD` above, so
        // each is taken back exactly once, here.
        let dead = unsafe { Arc::from_raw(next) };
        next = dead.next_dead.load(Ordering::Relaxed);
        drop(dead);
    }
    then();
    REAPING.fetch_sub(1, Ordering::AcqRel);
}

/// Reaps currently under way on some CPU (taken from DEAD, not yet freed).
static REAPING: AtomicUsize = AtomicUsize::new(0);

/// Reaps, then waits until every other CPU has finished freeing what it
/// reaped: afterwards no finished computation holds memory, nor a kernel
/// stack kept for the next (`stack::release_kept`), which is what leak
/// checks compare. Waits only with interrupts enabled, since freeing a
/// kernel stack may wait for this CPU to answer a TLB shootdown.
pub fn reap_all() {
    reap();
    if x86_64::instructions::interrupts::are_enabled() {
        while REAPING.load(Ordering::Acquire) != 0 {
            core::hint::spin_loop();
        }
    }
    crate::mm::stack::release_kept();
}
