//! The scheduler: one run queue per CPU, preemption by the timer when a
//! computation returns to user mode, blocking and waking, sleeping, CPU
//! affinity (AnT places servers on chosen cores), and idle with `hlt`.
//!
//! Kernel code is not preempted: a computation leaves the CPU only in
//! `schedule()`, called when it blocks, yields, exits, or is about to
//! return to user mode with its time slice used up. A CPU that picks a
//! computation another CPU is still switching away from waits on its
//! `on_cpu` flag, so two CPUs never run on one kernel stack.

pub mod computation;

use crate::arch::x86_64::{apic, trap::vector};
use crate::cpu::{self, MAX_CPUS};
use crate::sync::IrqMutex;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use computation::{ANY_CPU, Computation, State};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

core::arch::global_asm!(include_str!("switch.S"), options(att_syntax));

unsafe extern "C" {
    fn switch_context(save: *const AtomicU64, load: u64);
}

struct RunQueue {
    queue: VecDeque<Arc<Computation>>,
    current: Option<Arc<Computation>>,
    idle: Option<Arc<Computation>>,
    /// When the current computation got the CPU (TSC cycles: a switch
    /// reads the counter, and leaves the conversion to whoever reports it).
    slice_start: u64,
}

static RQ: [IrqMutex<RunQueue>; MAX_CPUS] = [const {
    IrqMutex::new(RunQueue {
        queue: VecDeque::new(),
        current: None,
        idle: None,
        slice_start: 0,
    })
}; MAX_CPUS];

static NEED_RESCHED: [AtomicBool; MAX_CPUS] = [const { AtomicBool::new(false) }; MAX_CPUS];

/// Per CPU, the computation switched away from (a strong reference, from
/// `Arc::into_raw`) until the switch has completed on the other side. Only
/// its own CPU touches a slot, with interrupts off: no lock needed.
static PREV: [AtomicPtr<Computation>; MAX_CPUS] = [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_CPUS];

/// Computations that finished; their kernel stacks are freed later, from a
/// context where no switch is in progress.
static DEAD: IrqMutex<Vec<Arc<Computation>>> = IrqMutex::new(Vec::new());

/// Sleeping computations and their wake-up times.
static SLEEPERS: IrqMutex<Vec<(u64, Arc<Computation>)>> = IrqMutex::new(Vec::new());

/// Time slice: one timer period.
const SLICE_NS: u64 = 1_000_000_000 / apic::TIMER_HZ as u64;

pub static CONTEXT_SWITCHES: AtomicU64 = AtomicU64::new(0);
/// Switches that went straight to a rendezvous partner (`schedule_to`).
pub static DIRECT_SWITCHES: AtomicU64 = AtomicU64::new(0);

/// Makes the calling context (a CPU's boot stack) this CPU's idle computation.
pub fn init_cpu() {
    let me = cpu::this_cpu().index;
    let idle = Computation::new_idle(me);
    // Room up front, so that the kernel's lists do not grow (and the heap
    // with them) depending on which CPU happens to run what: leak checks
    // compare the heap before and after a workload.
    SLEEPERS.lock().reserve(64);
    DEAD.lock().reserve(64);
    let mut rq = RQ[me].lock();
    rq.queue.reserve(64);
    cpu::this_cpu()
        .current
        .store(Arc::as_ptr(&idle) as *mut Computation, Ordering::Release);
    rq.current = Some(idle.clone());
    rq.idle = Some(idle);
    rq.slice_start = crate::clock::cycles();
}

/// Runs `f` on the computation running on this CPU, without taking a
/// reference (the hot path of every system call and interrupt).
#[inline(always)]
pub fn with_current<R>(f: impl FnOnce(&Computation) -> R) -> Option<R> {
    let ptr = cpu::this_cpu().current.load(Ordering::Acquire);
    // SAFETY: while a computation runs, the run queue's `current` holds a
    // strong reference to it; while it is switched away inside `f` (blocked,
    // preempted) a run queue, wait queue or sleep list holds one. It is freed
    // only after it is Dead and reaped, and a Dead computation never resumes
    // into `f`.
    (!ptr.is_null()).then(|| f(unsafe { &*ptr }))
}

/// Like `with_current`, for the current computation's process.
#[inline(always)]
pub fn with_current_process<R>(f: impl FnOnce(&crate::proc::Process) -> R) -> Option<R> {
    with_current(|c| c.process.as_deref().map(f)).flatten()
}

/// The computation running on this CPU.
pub fn current() -> Option<Arc<Computation>> {
    let ptr = cpu::try_this_cpu()?.current.load(Ordering::Acquire);
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

pub fn current_process() -> Option<Arc<crate::proc::Process>> {
    with_current(|c| c.process.clone()).flatten()
}

/// The CPU a runnable computation should go to: its pinned CPU, else the
/// online CPU with the shortest queue (ties go to the one it last ran on).
fn choose_cpu(c: &Computation) -> usize {
    let pinned = c.affinity.load(Ordering::Relaxed);
    let online = cpu::online_count();
    if pinned != ANY_CPU && pinned < online {
        return pinned;
    }
    // Load is what waits plus what runs: a CPU busy with one computation
    // and an empty queue is not as free as an idle one (counting only the
    // queue sent a woken client to a CPU whose server was computing, to
    // wait there for that server's slice to end while another CPU idled).
    let load = |rq: &RunQueue| rq.queue.len() + usize::from(rq.current.as_ref().is_some_and(|c| !c.is_idle()));
    let last = c.last_cpu.load(Ordering::Relaxed).min(online - 1);
    let mut best = (load(&RQ[last].lock()), last);
    for (i, q) in RQ.iter().enumerate().take(online) {
        let l = load(&q.lock());
        if l < best.0 {
            best = (l, i);
        }
    }
    best.1
}

/// Puts a Runnable computation on a run queue. An idle CPU is told at
/// once (IPI if it is another); a busy one takes it at the end of its
/// current time slice, so a wake-up does not preempt (a parent spawning
/// ten children keeps running until it waits for them).
pub fn enqueue(c: Arc<Computation>) {
    let target = choose_cpu(&c);
    let idle = {
        let mut rq = RQ[target].lock();
        rq.queue.push_back(c);
        rq.current.as_ref().is_none_or(|c| c.is_idle())
    };
    if !idle {
        return;
    }
    // Already asked (and interrupted, or about to look): an idle CPU takes
    // the flag down before it takes its queue, so it will find this one
    // too. A batch waking several servers on one idle CPU sends it one IPI.
    if NEED_RESCHED[target].swap(true, Ordering::AcqRel) {
        return;
    }
    let me = cpu::try_this_cpu().map(|c| c.index);
    if me != Some(target)
        && let Some(t) = cpu::get(target)
    {
        apic::send_ipi(t.apic_id, vector::RESCHEDULE);
    }
}

/// Makes a Blocked computation Runnable. Waking one that is not blocked
/// does nothing (its waiter re-checks its condition anyway).
pub fn wake(c: &Arc<Computation>) {
    let mut state = c.state.lock();
    if *state == State::Blocked {
        if c.holds_cpu.load(Ordering::Relaxed) {
            // It has blocked but not yet switched away: it just goes on
            // running there. Queueing it would let another CPU pick it up
            // while this one still runs it.
            *state = State::Running;
            return;
        }
        *state = State::Runnable;
        drop(state);
        enqueue(c.clone());
    }
}

/// Ends the current computation for good.
pub fn exit_current() -> ! {
    if let Some(c) = current() {
        *c.state.lock() = State::Dead;
        c.finished.store(true, Ordering::Relaxed);
    }
    schedule();
    unreachable!("a dead computation was scheduled");
}

/// Timer interrupt on this CPU: account time, wake sleepers, ask for a
/// switch when the slice is used up and someone else is waiting.
pub fn on_tick() {
    let me = cpu::this_cpu().index;
    let now = crate::clock::nanos();
    if me == 0 {
        wake_sleepers(now);
    }
    let rq = RQ[me].lock();
    let waiting = !rq.queue.is_empty();
    let idle = rq.current.as_ref().is_none_or(|c| c.is_idle());
    let ran = crate::clock::cycles_to_ns(crate::clock::cycles().saturating_sub(rq.slice_start));
    if waiting && (idle || ran >= SLICE_NS) {
        NEED_RESCHED[me].store(true, Ordering::Release);
    }
}

pub fn on_reschedule_ipi() {
    if let Some(c) = cpu::try_this_cpu() {
        NEED_RESCHED[c.index].store(true, Ordering::Release);
    }
}

fn wake_sleepers(now: u64) {
    let due: Vec<Arc<Computation>> = {
        let mut s = SLEEPERS.lock();
        if s.is_empty() {
            return;
        }
        let mut due = Vec::new();
        s.retain(|(t, c)| {
            if *t <= now {
                due.push(c.clone());
                false
            } else {
                true
            }
        });
        due
    };
    for c in due {
        wake(&c);
    }
}

/// Has the timer wake `c` at `deadline` (if it is still blocked then).
pub fn wake_at(deadline: u64, c: Arc<Computation>) {
    let mut s = SLEEPERS.lock();
    if s.try_reserve(1).is_ok() {
        s.push((deadline, c));
    }
}

/// Forgets a `wake_at` that is no longer needed.
pub fn cancel_wake(c: &Arc<Computation>) {
    SLEEPERS.lock().retain(|(_, s)| !Arc::ptr_eq(s, c));
}

/// Blocks the current computation until `deadline` (ns since boot).
pub fn sleep_until(deadline: u64) {
    let Some(c) = current() else { return };
    {
        let mut s = SLEEPERS.lock();
        if crate::clock::nanos() >= deadline {
            return;
        }
        *c.state.lock() = State::Blocked;
        s.push((deadline, c.clone()));
    }
    schedule();
    // A kill may wake a sleeper early; do not leave it in the list.
    SLEEPERS.lock().retain(|(_, s)| !Arc::ptr_eq(s, &c));
}

/// Switches if this CPU was asked to (slice over, new work, IPI).
#[inline(always)]
pub fn preempt_if_needed() {
    let me = cpu::this_cpu().slot();
    // Load first: the common answer is no, and a plain load is cheaper than a swap.
    if NEED_RESCHED[me].load(Ordering::Relaxed) && NEED_RESCHED[me].swap(false, Ordering::AcqRel) {
        schedule();
    }
}

/// Takes an unpinned computation from another CPU's queue.
fn steal(me: usize) -> Option<Arc<Computation>> {
    for i in (0..cpu::online_count()).filter(|&i| i != me) {
        let mut rq = RQ[i].lock();
        if let Some(pos) = rq
            .queue
            .iter()
            .position(|c| c.affinity.load(Ordering::Relaxed) == ANY_CPU)
        {
            return rq.queue.remove(pos);
        }
    }
    None
}

/// Gives the CPU to the next computation. The current one goes back to the
/// queue if it is still Running, stays out if Blocked or Dead.
pub fn schedule() {
    schedule_to(None);
}

/// Whether `c` may run on the calling CPU (its affinity allows it).
pub fn may_run_here(c: &Computation) -> bool {
    let pinned = c.affinity.load(Ordering::Relaxed);
    // Asked only from system calls, long after this CPU's data was set up.
    pinned == ANY_CPU || cpu::this_cpu().index == pinned
}

/// Claims Blocked `c` to run on CPU `me` straight away, skipping the run
/// queue: it becomes Running here. Fails if it is not blocked, is still
/// leaving another CPU's hands, or is pinned elsewhere.
#[inline(always)]
fn claim_for(c: &Computation, me: usize) -> bool {
    let pinned = c.affinity.load(Ordering::Relaxed);
    if pinned != ANY_CPU && pinned != me {
        return false;
    }
    let mut state = c.state.lock_irqs_off();
    if *state != State::Blocked || c.holds_cpu.load(Ordering::Relaxed) {
        return false;
    }
    *state = State::Running;
    c.holds_cpu.store(true, Ordering::Relaxed);
    true
}

/// `claim_for` on the calling CPU, for the rendezvous fast path, which
/// claims its partner while it still holds the lock it found it under (so
/// that it can give up, with nothing changed, if the partner cannot be
/// claimed). Interrupts must be off.
#[inline(always)]
pub fn claim_here(c: &Computation) -> bool {
    claim_for(c, cpu::this_cpu().slot())
}

/// Gives the CPU to `next`, claimed with `claim_here`, straight away (the
/// caller has normally just blocked); returns when the caller runs again.
/// Interrupts must be off, and stay off.
#[inline(always)]
pub fn switch_to_claimed(next: Arc<Computation>) {
    switch_direct(cpu::this_cpu(), next);
}

/// `schedule`, handing the CPU to `hint` when it is a Blocked computation
/// that may run here: the direct switch of a rendezvous (caller to waiting
/// server and back), with no pass through the run queue. Otherwise `hint`
/// is simply woken. A current computation that is not blocking goes back
/// to the run queue.
pub fn schedule_to(hint: Option<Arc<Computation>>) {
    let were_enabled = x86_64::instructions::interrupts::are_enabled();
    x86_64::instructions::interrupts::disable();
    let here = cpu::this_cpu();
    let me = here.slot();
    if let Some(h) = hint {
        if claim_for(&h, me) {
            switch_direct(here, h);
            if were_enabled {
                x86_64::instructions::interrupts::enable();
            }
            return;
        }
        wake(&h);
    }
    let now = crate::clock::cycles();

    let mut rq = RQ[me].lock_irqs_off();
    let Some(cur_arc) = rq.current.as_ref() else {
        drop(rq);
        if were_enabled {
            x86_64::instructions::interrupts::enable();
        }
        return;
    };
    // Borrowed, not cloned: the reference in `rq.current` keeps it alive
    // until it moves to `PREV` below, which keeps it alive past the switch.
    let cur_ptr = Arc::as_ptr(cur_arc);
    // SAFETY: see above; only this CPU replaces its own `rq.current`.
    let cur: &Computation = unsafe { &*cur_ptr };
    {
        let mut state = cur.state.lock_irqs_off();
        if *state == State::Running {
            if cur.is_idle() {
                *state = State::Runnable;
            } else if rq.queue.is_empty() {
                // Nobody else wants this CPU: keep running.
                drop(state);
                rq.slice_start = now;
                drop(rq);
                if were_enabled {
                    x86_64::instructions::interrupts::enable();
                }
                return;
            } else {
                *state = State::Runnable;
                let again = rq.current.clone().expect("current checked above");
                rq.queue.push_back(again);
            }
        }
        cur.holds_cpu.store(false, Ordering::Relaxed);
    }
    let mut next = rq.queue.pop_front();
    if next.is_none() {
        drop(rq);
        next = steal(me);
        rq = RQ[me].lock_irqs_off();
    }
    let next = next.unwrap_or_else(|| rq.idle.clone().expect("CPU without idle computation"));
    cur.cpu_cycles
        .fetch_add(now.saturating_sub(rq.slice_start), Ordering::Relaxed);
    rq.slice_start = now;
    {
        let mut state = next.state.lock_irqs_off();
        *state = State::Running;
        next.holds_cpu.store(true, Ordering::Relaxed);
    }
    if core::ptr::eq(Arc::as_ptr(&next), cur_ptr) {
        drop(rq);
        drop(next);
        if were_enabled {
            x86_64::instructions::interrupts::enable();
        }
        return;
    }
    switch_from(here, rq, cur, next);
    if were_enabled {
        x86_64::instructions::interrupts::enable();
    }
}

/// The direct switch to `next`, claimed for this CPU (`claim_for`): no run
/// queue to look at, no one else to choose. The current computation has
/// normally just blocked; if it was woken meanwhile (or never blocked) it
/// goes to the run queue. Interrupts are off.
#[inline(always)]
fn switch_direct(here: &'static cpu::PerCpu, next: Arc<Computation>) {
    DIRECT_SWITCHES.fetch_add(1, Ordering::Relaxed);
    let now = crate::clock::cycles();
    let mut rq = RQ[here.slot()].lock_irqs_off();
    let cur_ptr = match rq.current.as_ref() {
        Some(c) => Arc::as_ptr(c),
        // Only before the CPU's scheduler is set up, when nothing blocks.
        None => {
            drop(rq);
            *next.state.lock_irqs_off() = State::Blocked;
            next.holds_cpu.store(false, Ordering::Relaxed);
            wake(&next);
            return;
        }
    };
    // SAFETY: `rq.current` keeps it alive until it moves to `PREV`, which
    // keeps it alive past the switch; only this CPU replaces `rq.current`.
    let cur: &Computation = unsafe { &*cur_ptr };
    {
        let mut state = cur.state.lock_irqs_off();
        if *state == State::Running {
            *state = State::Runnable;
            if !cur.is_idle() {
                let again = rq.current.clone().expect("current checked above");
                rq.queue.push_back(again);
            }
        }
        cur.holds_cpu.store(false, Ordering::Relaxed);
    }
    cur.cpu_cycles
        .fetch_add(now.saturating_sub(rq.slice_start), Ordering::Relaxed);
    rq.slice_start = now;
    switch_from(here, rq, cur, next);
}

/// Switches from `cur` (the run queue's current computation, leaving this
/// CPU) to `next` (made Running here), and returns when `cur` runs again.
#[inline(always)]
fn switch_from(
    here: &'static cpu::PerCpu,
    mut rq: crate::sync::IrqMutexGuard<'_, RunQueue>,
    cur: &Computation,
    next: Arc<Computation>,
) {
    let me = here.slot();
    let next_ptr = Arc::as_ptr(&next);
    here.current.store(next_ptr as *mut Computation, Ordering::Release);
    // The run queue's reference to the one leaving moves to `PREV`, and the
    // one arriving moves in: no count changes on the way.
    let prev = rq
        .current
        .replace(next)
        .expect("a CPU switching has a current computation");
    drop(rq);
    PREV[me].store(Arc::into_raw(prev) as *mut Computation, Ordering::Relaxed);
    // SAFETY: `rq.current` holds it now, and only this CPU replaces that,
    // which it does not do before the switch below.
    let next: &Computation = unsafe { &*next_ptr };

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
    // `PREV` keeps the computation alive until
    // finish_switch runs on the other side.
    unsafe { switch_context(save, load) };
    finish_switch();
}

/// Loads `next`'s page tables, kernel stack for traps, and FPU state.
#[inline(always)]
fn switch_address_space(cur: &Computation, next: &Computation, here: &cpu::PerCpu) {
    let me = here.index;
    if let Some(p) = &cur.process {
        p.active_cpus.fetch_and(!(1 << me), Ordering::AcqRel);
        // SAFETY: the area belongs to `cur`, which is this CPU's until the switch.
        unsafe { core::arch::asm!("fxsave64 [{}]", in(reg) cur.fpu.as_mut_ptr(), options(nostack)) };
    }
    let root = next
        .process
        .as_ref()
        .map_or_else(crate::mm::paging::kernel_root, |p| p.root);
    if let Some(p) = &next.process {
        p.active_cpus.fetch_or(1 << me, Ordering::AcqRel);
        // SAFETY: the area holds a valid fxsave image (initialised at creation).
        unsafe { core::arch::asm!("fxrstor64 [{}]", in(reg) next.fpu.as_mut_ptr(), options(nostack)) };
    }
    let (frame, _) = x86_64::registers::control::Cr3::read_raw();
    if frame.start_address().as_u64() != root {
        // SAFETY: every virtual space shares the kernel half, which maps this code and stack.
        unsafe { crate::mm::paging::load_root(root) };
    }
    if !next.is_idle() {
        here.set_kernel_stack(next.kernel_stack_top());
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
    DEAD.lock().push(dead.clone());
}

/// First code of a new computation (see switch.S).
#[unsafe(no_mangle)]
extern "C" fn computation_started() {
    finish_switch();
    crate::proc::on_first_entry();
}

/// Frees the kernel stacks of finished computations. Called where no lock is
/// held and interrupts may be enabled (idle loop, spawn).
pub fn reap() {
    REAPING.fetch_add(1, Ordering::AcqRel);
    let dead: Vec<Arc<Computation>> = core::mem::take(&mut *DEAD.lock());
    drop(dead);
    REAPING.fetch_sub(1, Ordering::AcqRel);
}

/// Reaps currently under way on some CPU (taken from DEAD, not yet freed).
static REAPING: AtomicUsize = AtomicUsize::new(0);

/// Reaps, then waits until every other CPU has finished freeing what it
/// reaped: afterwards no finished computation holds memory, which is what
/// leak checks compare. Waits only with interrupts enabled, since freeing a
/// kernel stack may wait for this CPU to answer a TLB shootdown.
pub fn reap_all() {
    reap();
    if x86_64::instructions::interrupts::are_enabled() {
        while REAPING.load(Ordering::Acquire) != 0 {
            core::hint::spin_loop();
        }
    }
}

/// One round of waiting for kernel code that runs as a CPU's idle
/// computation: run whatever is queued, or halt until an interrupt.
pub fn idle_step() {
    let me = cpu::this_cpu().index;
    if me == 0 {
        crate::resource::pool::on_idle();
    }
    let were_enabled = x86_64::instructions::interrupts::are_enabled();
    x86_64::instructions::interrupts::disable();
    // As the idle loop does: the flag goes down before the CPU halts, or
    // a waker that finds it up would not interrupt the halt.
    if !RQ[me].lock().queue.is_empty() || NEED_RESCHED[me].swap(false, Ordering::AcqRel) {
        schedule();
    } else {
        crate::arch::x86_64::wait_for_interrupt();
    }
    if were_enabled {
        x86_64::instructions::interrupts::enable();
    }
}

/// What a CPU does when it has nothing else to run.
pub fn idle_loop() -> ! {
    let me = cpu::this_cpu().index;
    loop {
        reap();
        if me == 0 {
            // CPU 0's spare time runs the pool's adjustment (add, reduce).
            crate::resource::pool::on_idle();
        }
        x86_64::instructions::interrupts::disable();
        let has_work = !RQ[me].lock().queue.is_empty() || NEED_RESCHED[me].swap(false, Ordering::AcqRel);
        if has_work {
            schedule();
        } else {
            crate::arch::x86_64::wait_for_interrupt();
        }
        // Try to take work from busy CPUs now and then.
        if RQ[me].lock().queue.is_empty() && cpu::online_count() > 1 {
            let stolen = steal(me);
            if let Some(c) = stolen {
                RQ[me].lock().queue.push_back(c);
            }
        }
    }
}
