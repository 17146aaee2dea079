//! Processes (Tender's プロセス): a process is composed of a program, a
//! computation, a virtual space, and regions attached to that space for
//! text, data, BSS and a 64 KiB stack, plus a 4 KiB work area that carries
//! its arguments, each of them a resource (`crate::resource`). This module
//! keeps the process table (the process kind's table, keyed by pid) and
//! what happens during a process's life: page faults, kills, exit and wait.

pub mod program;
pub mod spawn;

use crate::arch::x86_64::trap::TrapFrame;
use crate::println;
use crate::resource::vspace::SpaceRef;
use crate::resource::{self, ResId};
use crate::sched::{self, computation::Computation};
use crate::sync::IrqMutex;
use crate::syscall::uaccess::UserRange;
use crate::vm::region::Kind;
use crate::vm::space::FaultError;
use abi::{Error, FaultCounts, LoadPolicy};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Pid of the kernel itself, as the parent of processes it starts.
pub const KERNEL_PID: u64 = 0;
/// Parent of orphans: they are reaped as soon as they exit.
pub const NO_PARENT: u64 = u64::MAX;

/// Where a process's system calls go (see docs/ARCHITECTURE.md). Only the
/// native handler exists so far; the Linux-ABI personality will be a server
/// reached through IPC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Native,
}

pub struct Process {
    pub pid: u64,
    pub name: String,
    pub parent: AtomicU64,
    pub policy: LoadPolicy,
    pub route: Route,
    /// The constituents (resources): program, the plate it came from,
    /// virtual space, work area, computation.
    pub program: ResId,
    pub plate: ResId,
    pub space_id: ResId,
    /// Root of the virtual space's page-table tree (fixed for life).
    pub root: u64,
    /// The space itself, until the process ends and gives it up.
    pub space: IrqMutex<Option<SpaceRef>>,
    /// CPUs that run this process's space (shared with the space).
    pub active_cpus: Arc<AtomicU64>,
    pub computation: IrqMutex<Option<(ResId, Weak<Computation>)>>,
    /// The 4 KiB work area holding the arguments; given up after they have
    /// been copied onto the stack at the first entry, or at exit.
    pub work_area: IrqMutex<Option<ResId>>,
    /// Entry point of the program.
    pub entry: u64,
    /// Processes allowed to push containers into this one, steal from it
    /// and exchange with it (besides its parent).
    pub peers: IrqMutex<Vec<u64>>,
    /// Set once the process operates on resources itself (native resource
    /// API, containers): only then can it own resources beyond its own
    /// parts, and only then must its exit look for them.
    pub made_resources: AtomicBool,
    /// Rendezvous and requests addressed to this process (`ipc`).
    pub port: crate::ipc::rendezvous::Port,
    faults: [AtomicU64; 5],
    pub killed: AtomicBool,
    pub exit_status: IrqMutex<Option<u64>>,
    /// Parents and other waiters block here until the exit status is set.
    pub exited: WaitQueue,
    pub anon_next: AtomicU64,
    /// The process this one last moved an ICA to: a process moves its ICAs
    /// to the same few peers over and over, and keeping the reference spares
    /// each move a look-up in the process table. Not its space: a space
    /// must be free to go (to the pool, or deleted) when its process ends.
    /// Let go at exit.
    pub ica_target: IrqMutex<Option<Arc<Process>>>,
    /// Set first thing when its resources are given up, before its
    /// containers are released: a container moved to it after that would
    /// be found by nobody, so the move refuses (see `container::moving`).
    pub ending: AtomicBool,
}

impl Process {
    pub fn count_fault(&self, kind: Kind) {
        let i = match kind {
            Kind::Text => 0,
            Kind::Data => 1,
            Kind::Bss => 2,
            Kind::Stack => 3,
            Kind::Heap => 4,
        };
        self.faults[i].fetch_add(1, Ordering::Relaxed);
    }

    pub fn faults(&self) -> FaultCounts {
        let f = |i: usize| self.faults[i].load(Ordering::Relaxed);
        FaultCounts {
            text: f(0),
            data: f(1),
            bss: f(2),
            stack: f(3),
            heap: f(4),
        }
    }

    pub fn resident_pages(&self) -> u64 {
        let space = self.space.lock().clone();
        space.map_or(0, |s| s.lock().resident_pages() as u64)
    }

    /// The process's virtual space, while it has one.
    pub fn space(&self) -> Option<SpaceRef> {
        self.space.lock().clone()
    }
}

/// A list of blocked computations waiting for one event.
pub struct WaitQueue {
    waiters: IrqMutex<Vec<Arc<Computation>>>,
}

impl WaitQueue {
    pub const fn new() -> Self {
        WaitQueue {
            waiters: IrqMutex::new(Vec::new()),
        }
    }

    /// Blocks the current computation until `ready()` holds. `ready` is
    /// checked under the queue's lock, and wakers take that lock too, so a
    /// wake-up between check and block cannot be lost. Returns false if the
    /// process was killed while waiting.
    pub fn wait_until(&self, ready: impl FnMut() -> bool) -> bool {
        self.wait(None, ready)
    }

    /// Like `wait_until`, but gives up at `deadline` (ns since boot).
    /// Returns whether `ready()` became true.
    pub fn wait_until_deadline(&self, deadline: u64, ready: impl FnMut() -> bool) -> bool {
        self.wait(Some(deadline), ready)
    }

    fn wait(&self, deadline: Option<u64>, mut ready: impl FnMut() -> bool) -> bool {
        let expired = || deadline.is_some_and(|d| crate::clock::nanos() >= d);
        // Nothing to wait for: no need to touch the list (ready() has no
        // effect unless it holds).
        if ready() {
            return true;
        }
        let cur = sched::current().filter(|c| !c.is_idle());
        let mut listed = false;
        loop {
            let cur = match &cur {
                Some(c) => c,
                None => {
                    // Kernel code on a CPU's idle computation (boot, tests)
                    // never blocks: it lets others run until `ready()`.
                    if ready() {
                        return true;
                    }
                    if expired() {
                        return false;
                    }
                    sched::idle_step();
                    continue;
                }
            };
            {
                let mut w = self.waiters.lock();
                if core::mem::take(&mut listed) {
                    w.retain(|c| !Arc::ptr_eq(c, cur));
                }
                let done = if ready() {
                    Some(true)
                } else if expired() || cur.process.as_ref().is_some_and(|p| p.killed.load(Ordering::Acquire)) {
                    Some(false)
                } else {
                    None
                };
                if let Some(result) = done {
                    return result;
                }
                *cur.state.lock() = sched::computation::State::Blocked;
                w.push(cur.clone());
                if let Some(d) = deadline {
                    // The timer wakes it at the deadline if nothing else does.
                    sched::wake_at(d, cur.clone());
                }
            }
            sched::schedule_to(None);
            if deadline.is_some() {
                sched::cancel_wake(cur);
            }
            // Whoever woke it may have left it on the list (a kill, the
            // timer): the next pass takes it off, under the lock it takes
            // anyway to check again.
            listed = true;
        }
    }

    pub fn wake_all(&self) {
        // One at a time, so the list keeps its room (no allocation per
        // wait); only those waiting now are woken.
        let n = self.waiters.lock().len();
        for _ in 0..n {
            let Some(c) = self.waiters.lock().pop() else { break };
            sched::wake(&c);
        }
    }
}

/// Blocks the current computation until `ready` holds for the data under
/// `lock`, waiting in the one-computation slot `slot` of that data: the
/// rendezvous's waits (a caller for its call, a server for its port, a
/// batch's caller for its last member), whose wakers take the same lock
/// anyway to make `ready` hold and take the waiter out of the slot. Check and block happen under the lock, so no
/// wake-up is lost; after a hand-over, one pass under the lock both checks
/// and leaves the slot. `partner` is a computation the waiter has just made
/// ready to run (taken from a wait queue, not yet woken): if the waiter
/// must block, it hands its CPU to `partner` directly (the rendezvous's
/// direct switch); otherwise `partner` is woken the ordinary way. Returns
/// false if the process was killed while waiting.
pub fn wait_in_slot<T>(
    lock: &IrqMutex<T>,
    mut partner: Option<Arc<Computation>>,
    mut ready: impl FnMut(&mut T) -> bool,
    slot: impl Fn(&mut T) -> &mut Option<Arc<Computation>>,
) -> bool {
    let wake_partner = |p: &mut Option<Arc<Computation>>| {
        if let Some(p) = p.take() {
            sched::wake(&p);
        }
    };
    // Compared by address: a reference is taken only to block (most
    // waits of a busy server find their call already there).
    let me = sched::with_current(|c| (c as *const Computation, c.is_idle()));
    let Some((me, false)) = me else {
        // Kernel code on a CPU's idle computation never blocks.
        wake_partner(&mut partner);
        while !ready(&mut lock.lock()) {
            sched::idle_step();
        }
        return true;
    };
    // One stretch with interrupts off: every lock below is then taken
    // without saving and restoring the flags, and the direct switch needs
    // them off anyway.
    let were_enabled = x86_64::instructions::interrupts::are_enabled();
    x86_64::instructions::interrupts::disable();
    let done = loop {
        let other = {
            let mut g = lock.lock_irqs_off();
            let s = slot(&mut g);
            // Woken by someone else than the one who takes the slot (a
            // kill): leave the slot, it is for a blocked waiter only.
            let other = match s.take() {
                Some(c) if !core::ptr::eq(Arc::as_ptr(&c), me) => Some(c),
                _ => None,
            };
            if ready(&mut g) {
                *slot(&mut g) = other;
                drop(g);
                wake_partner(&mut partner);
                break true;
            }
            // (`current` is `me`: it was found running here above.)
            let cur = sched::current().filter(|c| core::ptr::eq(Arc::as_ptr(c), me));
            let Some(cur) = cur.filter(|c| !c.process.as_ref().is_some_and(|p| p.killed.load(Ordering::Acquire)))
            else {
                *slot(&mut g) = other;
                drop(g);
                wake_partner(&mut partner);
                break false;
            };
            *cur.state.lock_irqs_off() = sched::computation::State::Blocked;
            *slot(&mut g) = Some(cur);
            other
        };
        // The slot holds one waiter; one that was there already (never so
        // for a process's single computation) is woken to check again
        // rather than forgotten.
        if let Some(o) = other {
            sched::wake(&o);
        }
        sched::schedule_to(partner.take());
    };
    if were_enabled {
        x86_64::instructions::interrupts::enable();
    }
    done
}

static PROCESSES: IrqMutex<BTreeMap<u64, Arc<Process>>> = IrqMutex::new(BTreeMap::new());
static NEXT_PID: AtomicU64 = AtomicU64::new(1);
/// System default loading policy (Tender's eager loading unless changed).
static DEFAULT_POLICY: AtomicU64 = AtomicU64::new(LoadPolicy::Eager as u64);
/// Pid that Ctrl-C on the console kills (0: none).
static FOREGROUND: AtomicU64 = AtomicU64::new(0);

pub fn default_policy() -> LoadPolicy {
    LoadPolicy::from_u64(DEFAULT_POLICY.load(Ordering::Relaxed)).unwrap_or(LoadPolicy::Eager)
}

pub fn set_default_policy(p: LoadPolicy) -> LoadPolicy {
    let p = if p == LoadPolicy::Default { LoadPolicy::Eager } else { p };
    LoadPolicy::from_u64(DEFAULT_POLICY.swap(p as u64, Ordering::Relaxed)).unwrap_or(LoadPolicy::Eager)
}

pub fn get(pid: u64) -> Option<Arc<Process>> {
    PROCESSES.lock().get(&pid).cloned()
}

pub fn pids() -> Vec<u64> {
    PROCESSES.lock().keys().copied().collect()
}

pub fn count() -> usize {
    PROCESSES.lock().len()
}

pub fn set_foreground(pid: u64) {
    FOREGROUND.store(pid, Ordering::Release);
}

/// Ctrl-C on the console: kill the foreground process, if any. Returns
/// whether one was killed.
pub fn interrupt_foreground() -> bool {
    let pid = FOREGROUND.swap(0, Ordering::AcqRel);
    pid != 0 && kill(pid).is_ok()
}

/// Marks `pid` killed; it exits the next time it would return to user mode
/// (or wakes from a wait).
pub fn kill(pid: u64) -> Result<(), Error> {
    let p = get(pid).ok_or(Error::NotFound)?;
    if p.exit_status.lock().is_some() {
        return Ok(());
    }
    p.killed.store(true, Ordering::Release);
    let c = p.computation.lock().as_ref().and_then(|c| c.1.upgrade());
    if let Some(c) = c {
        sched::wake(&c);
        // If it runs on another CPU, interrupt it so it notices soon.
        let cpu = c.last_cpu.load(Ordering::Relaxed);
        if let Some(target) = crate::cpu::get(cpu) {
            crate::arch::x86_64::apic::send_ipi(target.apic_id, crate::arch::x86_64::trap::vector::RESCHEDULE);
        }
    }
    Ok(())
}

/// Ends the current process with `status`: its space and regions are
/// released, its parent is told, and its computation never runs again.
/// Callers must not hold an `Arc` of the process or its computation: this
/// function does not return, so such a reference would never be dropped.
pub fn exit_current(status: u64) -> ! {
    let p = sched::current_process().expect("exit outside a process");
    // Leave the process's page tables before they are freed.
    // SAFETY: the kernel tree maps this code and every kernel stack.
    unsafe { crate::mm::paging::load_root(crate::mm::paging::kernel_root()) };
    let me = crate::cpu::this_cpu().index;
    p.active_cpus.fetch_and(!(1 << me), Ordering::AcqRel);
    end_resources(&p);
    if FOREGROUND.load(Ordering::Acquire) == p.pid {
        FOREGROUND.store(0, Ordering::Release);
    }
    // Children: reap the finished ones, orphan the rest.
    {
        let mut table = PROCESSES.lock();
        let children: Vec<u64> = table
            .values()
            .filter(|c| c.parent.load(Ordering::Relaxed) == p.pid)
            .map(|c| c.pid)
            .collect();
        for pid in children {
            let done = table.get(&pid).is_some_and(|c| c.exit_status.lock().is_some());
            if done {
                table.remove(&pid);
            } else if let Some(c) = table.get(&pid) {
                c.parent.store(NO_PARENT, Ordering::Relaxed);
            }
        }
    }
    {
        let _w = p.exited.waiters.lock();
        *p.exit_status.lock() = Some(status);
    }
    p.exited.wake_all();
    if p.parent.load(Ordering::Relaxed) == NO_PARENT {
        PROCESSES.lock().remove(&p.pid);
    }
    drop(p);
    sched::exit_current()
}

/// Waits for process `pid`, which must be a child of `parent`, to exit,
/// removes it from the table and returns its status.
pub fn wait(parent: u64, pid: u64) -> Result<u64, Error> {
    let p = get(pid).ok_or(Error::NotFound)?;
    if p.parent.load(Ordering::Relaxed) != parent {
        return Err(if pid == parent { Error::Deadlock } else { Error::Denied });
    }
    let mut status = None;
    let ok = p.exited.wait_until(|| {
        status = *p.exit_status.lock();
        status.is_some()
    });
    if !ok {
        return Err(Error::Denied);
    }
    // The child's CPU may still be switching away from it: wait until it
    // has, so that everything the child held can be reaped from now on.
    let comp = p.computation.lock().as_ref().and_then(|c| c.1.upgrade());
    if let Some(c) = comp {
        while c.on_cpu.load(Ordering::Acquire) {
            core::hint::spin_loop();
        }
    }
    PROCESSES.lock().remove(&pid);
    Ok(status.unwrap_or(abi::KILLED_STATUS))
}

/// Gives up a process's resources: its parts go to the pool or are
/// deleted, its computation is deleted, and whatever else it owned goes.
fn end_resources(p: &Process) {
    crate::ipc::rendezvous::on_exit(p);
    // Its containers first: their memory is attached to its space, which
    // must be bare of them before it goes to the pool or is deleted. The
    // mark comes before the look at `made_resources`, and a move sets that
    // before it looks at the mark (both sequentially consistent): either
    // the move sees the mark and refuses, or this sees the container.
    p.ending.store(true, Ordering::SeqCst);
    if p.made_resources.load(Ordering::SeqCst) {
        resource::container::release_owned_by(p.pid);
    }
    spawn::decompose(p);
    let comp = p.computation.lock().as_ref().map(|c| c.0);
    if let Some(id) = comp {
        let _ = resource::mediator::invoke(resource::KERNEL, resource::mediator::Op::Delete { id });
    }
    // Scanning every table costs time proportional to the resources alive
    // (the pool holds many); most processes never made any of their own.
    if p.made_resources.load(Ordering::Acquire) {
        resource::release_owned_by(p.pid);
    }
}

/// Composes a process (not yet running) from a program, a virtual space
/// with the program's regions attached, and a work area holding its name
/// and arguments. The parts become the new process's.
pub fn create(
    caller: u64,
    program: ResId,
    space_id: ResId,
    work_area: ResId,
    policy: LoadPolicy,
    parent: u64,
) -> Result<Arc<Process>, Error> {
    let prog = resource::program::get(program)?;
    let space = resource::vspace::get(caller, space_id)?;
    let (root, active_cpus) = {
        let s = space.lock();
        (s.root(), s.active_cpus.clone())
    };
    let parent = if caller == resource::KERNEL { parent } else { caller };
    let pid = next_pid();
    let p = Arc::new(Process {
        pid,
        name: prog.name.clone(),
        parent: AtomicU64::new(parent),
        policy: if policy == LoadPolicy::Default {
            default_policy()
        } else {
            policy
        },
        route: Route::Native,
        program,
        plate: prog.plate,
        space_id,
        root,
        space: IrqMutex::new(Some(space)),
        active_cpus,
        computation: IrqMutex::new(None),
        work_area: IrqMutex::new(Some(work_area)),
        entry: prog.entry,
        peers: IrqMutex::new(Vec::new()),
        made_resources: AtomicBool::new(false),
        port: crate::ipc::rendezvous::Port::new(),
        faults: Default::default(),
        killed: AtomicBool::new(false),
        exit_status: IrqMutex::new(None),
        exited: WaitQueue::new(),
        anon_next: AtomicU64::new(crate::vm::USER_ANON_BASE),
        ica_target: IrqMutex::new(None),
        ending: AtomicBool::new(false),
    });
    for id in [program, space_id, work_area] {
        resource::set_owner(id, pid);
    }
    PROCESSES.lock().insert(pid, p.clone());
    Ok(p)
}

/// Lets a composed process run: its computation joins a run queue.
pub fn start(caller: u64, id: ResId) -> Result<(), Error> {
    let p = resource::process::get(caller, id)?;
    let c = p
        .computation
        .lock()
        .as_ref()
        .and_then(|c| c.1.upgrade())
        .ok_or(Error::Invalid)?;
    if *c.state.lock() != sched::computation::State::Runnable
        || c.on_cpu.load(Ordering::Relaxed)
        || c.started.swap(true, Ordering::AcqRel)
    {
        return Err(Error::Busy);
    }
    sched::enqueue(c);
    Ok(())
}

/// Undoes a process that was composed but never ran.
pub fn abandon(pid: u64) {
    if let Some(p) = PROCESSES.lock().remove(&pid) {
        end_resources(&p);
    }
}

fn next_pid() -> u64 {
    NEXT_PID.fetch_add(1, Ordering::Relaxed)
}

/// Called just before every return to user mode: switch if asked to, and
/// exit if the process was killed.
#[inline(always)]
pub fn on_return_to_user(frame: &mut TrapFrame) {
    if sched::with_current_process(|p| leave_for_user(p, frame)).is_none() {
        sched::preempt_if_needed();
        sanitize_flags(frame);
    }
}

/// `on_return_to_user` for `p`, the process running here (a system call
/// has it at hand already). A switch away and back leaves `p` the one
/// running: this kernel stack is its computation's.
#[inline(always)]
pub fn leave_for_user(p: &Process, frame: &mut TrapFrame) {
    sched::preempt_if_needed();
    if p.killed.load(Ordering::Acquire) {
        killed(p);
    }
    sanitize_flags(frame);
}

#[cold]
fn killed(p: &Process) -> ! {
    println!("process {} ({}) killed", p.pid, p.name);
    exit_current(abi::KILLED_STATUS)
}

/// User code may not change privileged flags; keep IF on.
#[inline(always)]
fn sanitize_flags(frame: &mut TrapFrame) {
    frame.rflags = (frame.rflags & 0x0000_0000_0000_0cd5) | 0x202;
}

/// First entry of a new process (on its own kernel stack): move the
/// arguments from the work area onto the user stack.
pub fn on_first_entry() {
    let Some(p) = sched::current_process() else {
        return;
    };
    let Some(stack_top) = sched::current().map(|c| c.kernel_stack_top()) else {
        return;
    };
    let frame_at = stack_top - core::mem::size_of::<TrapFrame>() as u64;
    // SAFETY: the trap frame at the top of this computation's stack is the
    // one computation_start returns through, and nothing else refers to it.
    let frame = unsafe { &mut *(frame_at as *mut TrapFrame) };
    let area = p.work_area.lock().take();
    let failed = area.is_some_and(|area| {
        let r = spawn::push_arguments(area, frame);
        spawn::release_work_area(area);
        r.is_err()
    });
    if failed {
        println!("process {} ({}): cannot set up its arguments", p.pid, p.name);
    }
    drop(p);
    if failed {
        exit_current(abi::KILLED_STATUS);
    }
    on_return_to_user(frame);
}

/// Fills `buf` from the start of `from` in the memory of process `pid`:
/// through the current page tables if `pid` runs this, else through its
/// own; demand pages are faulted in, and the range must be readable.
/// Inlined: the rendezvous path reads the caller's own memory so on every
/// call it makes.
#[inline(always)]
pub fn read_user_of(pid: u64, from: UserRange, buf: &mut [u8]) -> Result<(), Error> {
    if sched::with_current_process(|p| p.pid) == Some(pid) {
        return from.read(buf);
    }
    read_other_user(pid, from, buf)
}

/// `read_user_of` for a process other than the current one.
#[inline(never)]
fn read_other_user(pid: u64, from: UserRange, buf: &mut [u8]) -> Result<(), Error> {
    if buf.len() > from.len() {
        return Err(Error::Invalid);
    }
    let p = get(pid).ok_or(Error::NotFound)?;
    let space = p.space().ok_or(Error::NotFound)?;
    let r = space.lock().copy_out(from.addr(), buf);
    r.map_err(|_| Error::Fault)
}

/// Copies `data` to the start of `to` in the memory of process `pid`, as
/// `read_user_of` reads; the range must be writable by that process.
pub fn write_user_of(pid: u64, to: UserRange, data: &[u8]) -> Result<(), Error> {
    if sched::with_current_process(|p| p.pid) == Some(pid) {
        return to.write(data);
    }
    if data.len() > to.len() {
        return Err(Error::Invalid);
    }
    let p = get(pid).ok_or(Error::NotFound)?;
    let space = p.space().ok_or(Error::NotFound)?;
    let r = space.lock().copy_in(to.addr(), data);
    r.map_err(|_| Error::Fault)
}

/// A page fault at user address `addr`, from user mode or from the kernel
/// touching user memory. Resolves it (demand paging) or says why not.
pub fn resolve_user_fault(addr: u64, error_code: u64) -> Result<(), FaultError> {
    let p = sched::current_process().ok_or(FaultError::Unmapped)?;
    let write = error_code & 2 != 0;
    let exec = error_code & 16 != 0;
    let space = p.space().ok_or(FaultError::Unmapped)?;
    let kind = space.lock().resolve_fault(addr, write, exec)?;
    p.count_fault(kind);
    Ok(())
}

/// A fault in user mode that cannot be resolved: the process dies alone.
pub fn kill_for_fault(frame: &TrapFrame, cr2: u64, why: &str) -> ! {
    let Some(p) = sched::current_process() else {
        panic!("user-mode fault without a process: {why} at RIP={:#x}", frame.rip);
    };
    let address = if frame.vector == 14 {
        alloc::format!(" address {cr2:#x}")
    } else {
        String::new()
    };
    println!(
        "process {} ({}) killed: {} at RIP={:#x}{}",
        p.pid, p.name, why, frame.rip, address
    );
    drop(p);
    exit_current(abi::KILLED_STATUS)
}

/// Describes an unresolved page fault for the kill message.
pub fn describe_page_fault(addr: u64, error_code: u64, err: FaultError) -> &'static str {
    match err {
        FaultError::StackOverflow => "stack overflow",
        FaultError::OutOfMemory => "out of memory while paging in",
        FaultError::Protection if error_code & 16 != 0 => "execute of non-executable memory",
        FaultError::Protection if error_code & 2 != 0 => "write to read-only memory",
        FaultError::Protection => "protection violation",
        FaultError::Unmapped if addr < 0x1000 => "null pointer dereference",
        FaultError::Unmapped if addr >= crate::vm::USER_END => "access to kernel memory",
        FaultError::Unmapped => "access to unmapped memory",
    }
}
