//! The scheduler: one run queue per CPU, preemption by the timer when a
//! computation returns to user mode, blocking and waking, sleeping, CPU
//! affinity (AnT places servers on chosen cores), and idle with `hlt`.
//!
//! Kernel code is not preempted: a computation leaves the CPU only in
//! `schedule()`, called when it blocks, yields, exits, or is about to
//! return to user mode with its time slice used up. A run queue's pick
//! passes over a computation another CPU is still switching away from
//! (its `on_cpu` flag), and the rendezvous's direct switch, which claims
//! a blocked partner, waits on that flag: two CPUs never run on one
//! kernel stack, and never wait on each other's switch.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod wait;

pub use wait::{WaitQueue, wait_in_slot};

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kcore::arch::x86_64::{apic, trap::vector};
use kcore::computation::{self, ANY_CPU, Computation, State};
use kcore::cpu::{self, MAX_CPUS};
use kcore::sync::{IrqMutex, IrqMutexGuard};

struct RunQueue {
    queue: VecDeque<Arc<Computation>>,
    /// Whether the computation this CPU runs is its idle one (the
    /// computation itself is the core's `current`; this is what other
    /// CPUs may read, under the lock, to see whether it is busy).
    running_idle: bool,
    idle: Option<Arc<Computation>>,
    /// When the current computation got the CPU (TSC cycles: a switch
    /// reads the counter, and leaves the conversion to whoever reports it):
    /// where its CPU time since is counted from.
    switched_in: u64,
    /// When the running time slice began. A rendezvous's direct switch
    /// hands the slice on with the CPU, as a donation: were the partner
    /// given a fresh one, a client and its server calling each other
    /// would never use one up, and everything else queued on their CPU
    /// would wait for ever (a thread preading in a loop through its
    /// supervisor kept its sibling off a single CPU).
    slice_start: u64,
}

static RQ: [IrqMutex<RunQueue>; MAX_CPUS] = [const {
    IrqMutex::new(RunQueue {
        queue: VecDeque::new(),
        running_idle: true,
        idle: None,
        switched_in: 0,
        slice_start: 0,
    })
}; MAX_CPUS];

/// Cycles every CPU has spent in its idle computation, up to the last
/// switch on it (a CPU idle right now adds its current stretch later).
/// Called from system calls, with interrupts on: `lock`, which turns them
/// off, never `lock_irqs_off` (a tick that came while a queue was held
/// here woke a sleeper onto that queue and spun on its lock for ever).
pub fn idle_cycles() -> u64 {
    RQ.iter()
        .filter_map(|rq| rq.lock().idle.as_ref().map(|i| i.cpu_cycles.load(Ordering::Relaxed)))
        .sum()
}

/// The CPU time (TSC cycles) `c` has used, with the stretch it is running
/// now if it holds a CPU: a computation alone on its CPU is not switched
/// at the tick, so its `cpu_cycles` alone would stand still while it
/// runs. Read under that CPU's queue lock (interrupts off as `lock`
/// takes it, as `idle_cycles`); a switch in between makes the answer at
/// most one stretch stale, never counted twice.
pub fn cycles_of(c: &Computation) -> u64 {
    let k = c.last_cpu.load(Ordering::Relaxed);
    let Some(q) = RQ.get(k) else {
        return c.cpu_cycles.load(Ordering::Relaxed);
    };
    let rq = q.lock();
    let used = c.cpu_cycles.load(Ordering::Relaxed);
    if c.holds_cpu.load(Ordering::Relaxed) {
        used + kcore::clock::cycles().saturating_sub(rq.switched_in)
    } else {
        used
    }
}

static NEED_RESCHED: [AtomicBool; MAX_CPUS] = [const { AtomicBool::new(false) }; MAX_CPUS];

/// Sleeping computations and their wake-up times.
static SLEEPERS: IrqMutex<Vec<(u64, Arc<Computation>)>> = IrqMutex::new(Vec::new());

/// Time slice: one timer period.
const SLICE_NS: u64 = 1_000_000_000 / apic::TIMER_HZ as u64;

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
    let mut rq = RQ[me].lock();
    rq.queue.reserve(64);
    computation::install_current(idle.clone());
    rq.running_idle = true;
    rq.idle = Some(idle);
    rq.switched_in = kcore::clock::cycles();
    rq.slice_start = rq.switched_in;
}

pub use kcore::computation::{current, current_here, with_current};

/// When the computation running here was switched in (TSC cycles): the
/// CPU time it has used since is not yet in its `cpu_cycles`.
pub fn switched_in() -> u64 {
    RQ[cpu::this_cpu().index].lock().switched_in
}

/// The CPU a runnable computation should go to: its pinned CPU, else the
/// online CPU with the shortest queue (ties go to the one it last ran on).
fn choose_cpu(c: &Computation) -> usize {
    let pinned = c.affinity.load(Ordering::Relaxed);
    let online = cpu::online_count();
    if pinned != ANY_CPU && pinned < online {
        return pinned;
    }
    // One CPU: no queue to weigh (two queue locks saved per wake-up, a
    // pipe round trip has two).
    if online <= 1 {
        return 0;
    }
    // Load is what waits plus what runs: a CPU busy with one computation
    // and an empty queue is not as free as an idle one (counting only the
    // queue sent a woken client to a CPU whose server was computing, to
    // wait there for that server's slice to end while another CPU idled).
    let load = |rq: &RunQueue| rq.queue.len() + usize::from(!rq.running_idle);
    let last = c.last_cpu.load(Ordering::Relaxed).min(online - 1);
    let mut best = (load(&RQ[last].lock()), last);
    for (i, q) in RQ.iter().enumerate().take(online).filter(|&(i, _)| i != last) {
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
        rq.running_idle
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

/// Makes computation `c` come back to the kernel soon if it is running
/// on another CPU (an interrupt there: its way back to user mode looks at
/// what it was asked). One that is not running looks when it next runs.
pub fn kick(c: &Computation) {
    if *c.state.lock() != kcore::computation::State::Running {
        return;
    }
    let there = c.last_cpu.load(Ordering::Relaxed);
    let me = cpu::try_this_cpu().map(|c| c.index);
    if me != Some(there)
        && let Some(t) = cpu::get(there)
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
    let now = kcore::clock::nanos();
    if me == 0 {
        wake_sleepers(now);
    }
    let rq = RQ[me].lock();
    let waiting = !rq.queue.is_empty();
    let ran = kcore::clock::cycles_to_ns(kcore::clock::cycles().saturating_sub(rq.slice_start));
    if waiting && (rq.running_idle || ran >= SLICE_NS) {
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
        if kcore::clock::nanos() >= deadline {
            return;
        }
        // A kill sets its flag, then wakes what it finds blocked, under
        // the state's lock: looked at under that lock, the flag is either
        // seen here or the kill finds this computation blocked. (Checked
        // before, a kill falling in between was lost: a sleeper killed as
        // it went to sleep slept on.)
        let mut state = c.state.lock();
        if c.killed() {
            return;
        }
        *state = State::Blocked;
        drop(state);
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
        switch_away(None, true);
    }
}

/// Whether `c` is off every CPU, so that a CPU may commit to switching to
/// it. One that another CPU is still switching away from (`on_cpu`) stays
/// queued until a later pick: a CPU that took it would spin in
/// `switch_to`, interrupts off, until that CPU is done, and that CPU may be
/// spinning the same way for this one's computation (each switching to
/// the one the other leaves: both spun for good, and so did every CPU
/// then waiting for their answer to a TLB shootdown).
fn switched_off(c: &Computation) -> bool {
    !c.on_cpu.load(Ordering::Acquire)
}

/// Takes the first computation of `queue` that may run now (`switched_off`,
/// or `cur`, which runs here already).
/// Nearly always the first may: it is popped, which costs a fraction of
/// `remove`'s general shuffle (a switch's path, twice per pipe or futex
/// round trip).
#[inline(always)]
fn take_next(queue: &mut VecDeque<Arc<Computation>>, cur: &Computation) -> Option<Arc<Computation>> {
    let may_run = |c: &Arc<Computation>| core::ptr::eq(Arc::as_ptr(c), cur) || switched_off(c);
    if may_run(queue.front()?) {
        return queue.pop_front();
    }
    let pos = queue.iter().skip(1).position(may_run)? + 1;
    queue.remove(pos)
}

/// Takes an unpinned computation from another CPU's queue.
fn steal(me: usize) -> Option<Arc<Computation>> {
    for i in (0..cpu::online_count()).filter(|&i| i != me) {
        let mut rq = RQ[i].lock();
        if let Some(pos) = rq
            .queue
            .iter()
            .position(|c| c.affinity.load(Ordering::Relaxed) == ANY_CPU && switched_off(c))
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
    switch_direct(cpu::this_cpu().slot(), next);
}

/// `schedule`, handing the CPU to `hint` when it is a Blocked computation
/// that may run here: the direct switch of a rendezvous (caller to waiting
/// server and back), with no pass through the run queue. Otherwise `hint`
/// is simply woken. A current computation that is not blocking goes back
/// to the run queue.
pub fn schedule_to(hint: Option<Arc<Computation>>) {
    switch_away(hint, false);
}

/// `schedule_to`; `asked` when the CPU was asked to switch (its slice
/// over, new work), which makes a switch away from a computation that
/// could go on a preemption.
#[inline(always)]
fn switch_away(hint: Option<Arc<Computation>>, asked: bool) {
    let were_enabled = x86_64::instructions::interrupts::are_enabled();
    x86_64::instructions::interrupts::disable();
    let me = cpu::this_cpu().slot();
    if let Some(h) = hint {
        if claim_for(&h, me) {
            switch_direct(me, h);
            if were_enabled {
                x86_64::instructions::interrupts::enable();
            }
            return;
        }
        wake(&h);
    }
    let now = kcore::clock::cycles();
    // Borrowed, not counted: the core's `current` slot keeps it alive
    // until the switch, and whoever holds it while it is away keeps it
    // alive until it is back here.
    with_current(|cur| {
        let mut rq = RQ[me].lock_irqs_off();
        let mut preempted = false;
        {
            let mut state = cur.state.lock_irqs_off();
            if *state == State::Running {
                if cur.is_idle() {
                    *state = State::Runnable;
                } else if rq.queue.is_empty() {
                    // Nobody else wants this CPU: keep running.
                    rq.slice_start = now;
                    return;
                } else {
                    *state = State::Runnable;
                    preempted = asked;
                    if let Some(again) = current() {
                        rq.queue.push_back(again);
                    }
                }
            }
            cur.holds_cpu.store(false, Ordering::Relaxed);
        }
        let mut next = take_next(&mut rq.queue, cur);
        if next.is_none() {
            drop(rq);
            next = steal(me);
            rq = RQ[me].lock_irqs_off();
        }
        let next = next.unwrap_or_else(|| rq.idle.clone().expect("CPU without idle computation"));
        cur.cpu_cycles
            .fetch_add(now.saturating_sub(rq.switched_in), Ordering::Relaxed);
        kcore::cpuacct::switching_maybe_last(cur, now);
        rq.switched_in = now;
        rq.slice_start = now;
        {
            let mut state = next.state.lock_irqs_off();
            *state = State::Running;
            next.holds_cpu.store(true, Ordering::Relaxed);
        }
        if core::ptr::eq(Arc::as_ptr(&next), cur) {
            return;
        }
        if preempted {
            cur.preemptions.fetch_add(1, Ordering::Relaxed);
        }
        switch_from(rq, next);
    });
    if were_enabled {
        x86_64::instructions::interrupts::enable();
    }
}

/// The direct switch to `next`, claimed for this CPU (`claim_for`): no run
/// queue to look at, no one else to choose. The current computation has
/// normally just blocked; if it was woken meanwhile (or never blocked) it
/// goes to the run queue. Interrupts are off.
#[inline(always)]
fn switch_direct(me: usize, next: Arc<Computation>) {
    DIRECT_SWITCHES.fetch_add(1, Ordering::Relaxed);
    let now = kcore::clock::cycles();
    let mut rq = RQ[me].lock_irqs_off();
    let requeue = with_current(|cur| {
        let mut state = cur.state.lock_irqs_off();
        let again = *state == State::Running;
        if again {
            *state = State::Runnable;
        }
        cur.holds_cpu.store(false, Ordering::Relaxed);
        cur.cpu_cycles
            .fetch_add(now.saturating_sub(rq.switched_in), Ordering::Relaxed);
        kcore::cpuacct::switching(cur, now);
        again && !cur.is_idle()
    });
    let Some(requeue) = requeue else {
        // Only before the CPU's scheduler is set up, when nothing blocks.
        drop(rq);
        *next.state.lock_irqs_off() = State::Blocked;
        next.holds_cpu.store(false, Ordering::Relaxed);
        wake(&next);
        return;
    };
    if requeue && let Some(cur) = current() {
        rq.queue.push_back(cur);
    }
    rq.switched_in = now;
    switch_from(rq, next);
}

/// Switches from the computation running here (leaving this CPU) to `next`
/// (made Running here), and returns when the one leaving runs again.
#[inline(always)]
fn switch_from(mut rq: IrqMutexGuard<'_, RunQueue>, next: Arc<Computation>) {
    rq.running_idle = next.is_idle();
    drop(rq);
    computation::switch_to(next);
}

/// One round of waiting for kernel code that runs as a CPU's idle
/// computation: run whatever is queued, or halt until an interrupt.
pub fn idle_step() {
    let me = cpu::this_cpu().index;
    if me == 0 {
        run_idle_hook();
    }
    let were_enabled = x86_64::instructions::interrupts::are_enabled();
    x86_64::instructions::interrupts::disable();
    // As the idle loop does: the flag goes down before the CPU halts, or
    // a waker that finds it up would not interrupt the halt.
    if !RQ[me].lock().queue.is_empty() || NEED_RESCHED[me].swap(false, Ordering::AcqRel) {
        schedule();
    } else {
        kcore::arch::x86_64::wait_for_interrupt();
    }
    if were_enabled {
        x86_64::instructions::interrupts::enable();
    }
}

/// What CPU 0 does with its spare time (the pool's adjustment, registered
/// by the kernel at boot): the scheduler does not know what it is.
static IDLE_HOOK: spin::Once<fn()> = spin::Once::new();

pub fn set_idle_hook(f: fn()) {
    IDLE_HOOK.call_once(|| f);
}

fn run_idle_hook() {
    if let Some(f) = IDLE_HOOK.get() {
        f();
    }
}

/// What a CPU does when it has nothing else to run.
pub fn idle_loop() -> ! {
    let me = cpu::this_cpu().index;
    loop {
        // Nothing to run: the kernel stacks kept for the next
        // computations go back too, so that an idle system holds no frame
        // nobody uses.
        computation::reap_idle();
        if me == 0 {
            run_idle_hook();
        }
        x86_64::instructions::interrupts::disable();
        let has_work = !RQ[me].lock().queue.is_empty() || NEED_RESCHED[me].swap(false, Ordering::AcqRel);
        if has_work {
            schedule();
        } else {
            kcore::arch::x86_64::wait_for_interrupt();
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
