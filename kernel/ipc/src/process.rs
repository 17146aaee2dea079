//! Processes (Tender's プロセス), as nodes of the process network: what a
//! process is while it lives (identity, parent, its computation and
//! space, its rendezvous port, fault counts, exit status), the process
//! table keyed by pid, and what happens during its life: page faults,
//! kills, exit and wait. A process is composed of resources (program,
//! computation, virtual space with its regions, work area); composing and
//! decomposing it are the resource layer's (`resource::proc`), reached at
//! its first entry and its end through hooks.

use crate::port::Port;
use abi::{Error, FaultCounts, LoadPolicy};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kcore::arch::x86_64::trap::TrapFrame;
use kcore::computation::{Computation, UserSpace};
use kcore::mm::quota::{Account, Charge};
use kcore::owner::OwnerKind;
use kcore::println;
use kcore::sync::IrqMutex;
use kcore::uaccess::UserRange;
use kcore::vm::region::Kind;
use kcore::vm::space::{At, FaultError, Resolved, SpaceRef, VirtualSpace};
use restable::ResId;
pub use sched::WaitQueue;

/// Pid of the kernel itself, as the parent of processes it starts.
pub const KERNEL_PID: u64 = 0;
/// Parent of orphans: they are reaped as soon as they exit.
pub const NO_PARENT: u64 = u64::MAX;

/// Where a process's system calls go (see docs/ARCHITECTURE.md): the
/// kernel's native handlers, or (a Linux program) the supervisor process
/// that serves them, the kernel serving itself only the few that touch
/// nothing but the caller's own kernel state (`abi::linux`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Native,
    Linux {
        /// The supervisor's pid.
        supervisor: u64,
        /// The process's pid in the Linux personality's own numbering.
        pid: u64,
    },
}

pub struct Process {
    pid: u64,
    name: String,
    parent: AtomicU64,
    /// A process was ever put in the table with it as parent (set under
    /// the table's lock): an exit without one has no children to reap or
    /// orphan and need not walk the table for them.
    had_child: AtomicBool,
    /// It registered a name once: its end has names to forget (the walk
    /// of the name table is skipped for the many processes that never do).
    named: AtomicBool,
    policy: LoadPolicy,
    route: Route,
    /// The constituents (resources): program, the plate it came from,
    /// virtual space, work area, computation.
    program: ResId,
    plate: ResId,
    space_id: ResId,
    /// Root of the virtual space's page-table tree (fixed for life).
    root: u64,
    /// The space itself, until the process ends and gives it up.
    space: IrqMutex<Option<SpaceRef>>,
    /// CPUs that run this process's space (shared with the space).
    active_cpus: Arc<AtomicU64>,
    computation: IrqMutex<Option<(ResId, Weak<Computation>)>>,
    /// Its computations beyond the first (a Linux process's threads).
    threads: IrqMutex<Vec<Thread>>,
    /// Its computations that have not ended, the first among them until
    /// it ends: the process ends with the last.
    live: AtomicU64,
    /// The status it ends with once its last computation has ended, when
    /// one ended all of them (exit_group, a kill); `NO_EXIT` until then.
    group_status: AtomicU64,
    /// The computation that ended it, if not the first: its parent waits
    /// until that one is off its CPU too.
    last: IrqMutex<Option<Weak<Computation>>>,
    /// The 4 KiB work area holding the arguments; given up after they have
    /// been copied onto the stack at the first entry, or at exit.
    work_area: IrqMutex<Option<ResId>>,
    /// Entry point of the program.
    entry: u64,
    /// Processes allowed to push containers into this one, steal from it
    /// and exchange with it (besides its parent).
    peers: IrqMutex<Vec<u64>>,
    /// Set once the process operates on resources itself (native resource
    /// API, containers): only then can it own resources beyond its own
    /// parts, and only then must its exit look for them.
    made_resources: AtomicBool,
    /// Rendezvous and requests addressed to this process.
    pub(crate) port: Port,
    faults: [AtomicU64; 7],
    /// Shared with its computation, whose waits give up when it is set.
    killed: Arc<AtomicBool>,
    /// Its parent killed it: the parent learns of the end from its wait
    /// (a mounter ending a mount's servers), so the console is not told.
    killed_by_parent: AtomicBool,
    exit_status: IrqMutex<Option<u64>>,
    /// Parents and other waiters block here until the exit status is set.
    exited: WaitQueue,
    /// Where its last anonymous placement ended: the next one looks for
    /// room from there.
    anon_next: AtomicU64,
    /// The process this one last moved an ICA to: a process moves its ICAs
    /// to the same few peers over and over, and keeping the reference spares
    /// each move a look-up in the process table. Not its space: a space
    /// must be free to go (to the pool, or deleted) when its process ends.
    /// Let go at exit.
    ica_target: IrqMutex<Option<Arc<Process>>>,
    /// Set first thing when its resources are given up, before its
    /// containers are released: a container moved to it after that would
    /// be found by nobody, so the move refuses (see `accept_resource`).
    ending: AtomicBool,
    /// The `abi::rights` it holds: given by its creator at spawn, before it runs.
    rights: AtomicU64,
    /// Composed by the kernel (`spawn`) rather than by a process from parts
    /// of its own: only then may its parts go to the pool.
    kernel_composed: bool,
    /// What the kernel memory it causes is charged to (a child of its
    /// creator's account: `kcore::mm::quota`).
    account: Arc<Account>,
    /// What it costs its creator while it exists (its records, its kernel
    /// stack), given back when the last reference to it goes.
    _cost: Charge,
    /// The registers it starts with instead of its program's entry (a
    /// forked Linux process: its parent's, at the fork).
    start_regs: IrqMutex<Option<alloc::boxed::Box<abi::linux::Regs>>>,
    /// Its supervisor asked it to stop on its next way back to user mode
    /// (a Linux process: signals to deliver).
    attention: AtomicBool,
    /// A Linux process's program break: where it started, where it is, and
    /// the end of the memory mapped for it (0 until its first `brk`).
    brk: [AtomicU64; 3],
    /// The status its supervisor ended it with (`caller_exit`), taken as
    /// it wakes from the supervisor's call; `NO_EXIT` until then.
    exit_request: AtomicU64,
    /// The process whose space was lent to it at its composition (a Linux
    /// vfork child's parent; 0: none): its end gives the space back rather
    /// than taking it apart, unless it was handed the space meanwhile.
    lender: u64,
    /// Whether its end left its space to another holder, as it began to
    /// end (`mark_ending`, under the space's lock): `KEEPS_SPACE` if not
    /// (its end takes the space apart), 0 if it gave a lent space back,
    /// else the borrower it handed the space over to.
    left_space: AtomicU64,
    /// A Linux process's parent's Linux pid, as the personality's shared
    /// server last set it (`linux_set_ppid`), which getppid answers with;
    /// 0 until then (getppid goes to the supervisor). Its threads share it,
    /// as Linux's getppid is the thread group's parent.
    linux_ppid: AtomicU64,
    /// A Linux process's pending signals as its supervisor publishes them
    /// (`linux_sigmask`): the process's and every thread's own, or more,
    /// never fewer. The kernel serves an rt_sigprocmask that changes none
    /// of them in a mask; one that does goes to the supervisor.
    linux_sig_pending: AtomicU64,
    /// The mask its first computation starts with (a fork's or an exec's:
    /// Linux keeps it across both).
    linux_start_sigmask: AtomicU64,
    /// The `kcore::cpuacct` group its computations' time goes to when
    /// they end: its program's name, native or Linux, forked or not.
    cpu_group: core::sync::atomic::AtomicU32,
    forked: AtomicBool,
}

/// `Process::left_space` when the process takes its space apart itself.
const KEEPS_SPACE: u64 = u64::MAX;

/// `Process::exit_request` when none was made.
const NO_EXIT: u64 = u64::MAX;

/// A computation of a process beyond its first: its resource identifier
/// and what it costs the process's account while it lives.
pub struct Thread {
    pub id: ResId,
    pub comp: Arc<Computation>,
    pub charge: Charge,
}

/// What a new process is composed of, as the resource layer hands it
/// over (the identifiers of its parts, which become its own).
pub struct Parts {
    pub name: String,
    pub parent: u64,
    pub policy: LoadPolicy,
    pub program: ResId,
    pub plate: ResId,
    pub space_id: ResId,
    pub space: SpaceRef,
    pub work_area: ResId,
    pub entry: u64,
    /// The kernel composed it (`spawn`), not a process.
    pub kernel_composed: bool,
    /// Its account, and what it costs its creator.
    pub account: Arc<Account>,
    pub cost: Charge,
    pub route: Route,
    /// `space` is this process's, lent to the new one
    /// (`VirtualSpace::lend`; 0: none).
    pub lender: u64,
}

impl Process {
    /// A process with a new pid, not yet in the table, with no computation;
    /// its space becomes its memory (Busy if it is another process's).
    pub fn new(parts: Parts) -> Result<Process, Error> {
        let port = Port::new(&parts.account)?;
        let killed = kcore::mm::heap::try_arc(AtomicBool::new(false)).map_err(|_| Error::NoMemory)?;
        let pid = next_pid();
        let (root, active_cpus) = {
            let mut s = parts.space.lock();
            let held = if parts.lender != 0 {
                s.lend(pid)
            } else {
                s.bind(pid, &parts.account)
            };
            if !held {
                return Err(Error::Busy);
            }
            (s.root(), s.active_cpus.clone())
        };
        let group_flags = match parts.route {
            Route::Linux { .. } => abi::CPU_LINUX,
            _ => 0,
        };
        let cpu_group = kcore::cpuacct::group(&parts.name, group_flags);
        Ok(Process {
            pid,
            name: parts.name,
            parent: AtomicU64::new(parts.parent),
            had_child: AtomicBool::new(false),
            named: AtomicBool::new(false),
            policy: if parts.policy == LoadPolicy::Default {
                default_policy()
            } else {
                parts.policy
            },
            route: parts.route,
            program: parts.program,
            plate: parts.plate,
            space_id: parts.space_id,
            root,
            space: IrqMutex::new(Some(parts.space)),
            active_cpus,
            computation: IrqMutex::new(None),
            threads: IrqMutex::new(Vec::new()),
            live: AtomicU64::new(1),
            group_status: AtomicU64::new(NO_EXIT),
            last: IrqMutex::new(None),
            work_area: IrqMutex::new(Some(parts.work_area)),
            entry: parts.entry,
            peers: IrqMutex::new(Vec::new()),
            made_resources: AtomicBool::new(false),
            port,
            faults: Default::default(),
            killed,
            killed_by_parent: AtomicBool::new(false),
            exit_status: IrqMutex::new(None),
            exited: WaitQueue::new(),
            anon_next: AtomicU64::new(kcore::vm::USER_ANON_BASE),
            ica_target: IrqMutex::new(None),
            ending: AtomicBool::new(false),
            rights: AtomicU64::new(0),
            kernel_composed: parts.kernel_composed,
            account: parts.account,
            _cost: parts.cost,
            start_regs: IrqMutex::new(None),
            attention: AtomicBool::new(false),
            brk: Default::default(),
            exit_request: AtomicU64::new(NO_EXIT),
            lender: parts.lender,
            left_space: AtomicU64::new(KEEPS_SPACE),
            linux_ppid: AtomicU64::new(0),
            linux_sig_pending: AtomicU64::new(0),
            linux_start_sigmask: AtomicU64::new(0),
            cpu_group: core::sync::atomic::AtomicU32::new(cpu_group),
            forked: AtomicBool::new(false),
        })
    }

    // ---- identity: fixed for the process's life ----

    #[inline(always)]
    pub fn pid(&self) -> u64 {
        self.pid
    }

    #[inline(always)]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How its program was loaded (never `Default`: that was resolved at
    /// its creation).
    #[inline(always)]
    pub fn policy(&self) -> LoadPolicy {
        self.policy
    }

    #[inline(always)]
    pub fn route(&self) -> Route {
        self.route
    }

    /// Sets the registers it starts with (before it runs).
    pub fn set_start_regs(&self, regs: alloc::boxed::Box<abi::linux::Regs>) {
        *self.start_regs.lock() = Some(regs);
    }

    pub fn take_start_regs(&self) -> Option<alloc::boxed::Box<abi::linux::Regs>> {
        self.start_regs.lock().take()
    }

    /// Its program break: (start, current, end of its mapped memory).
    pub fn brk(&self) -> (u64, u64, u64) {
        let [a, b, c] = &self.brk;
        (
            a.load(Ordering::Relaxed),
            b.load(Ordering::Relaxed),
            c.load(Ordering::Relaxed),
        )
    }

    /// Sets it (only the process itself does, in its own system calls).
    pub fn set_brk(&self, (start, cur, mapped): (u64, u64, u64)) {
        let [a, b, c] = &self.brk;
        a.store(start, Ordering::Relaxed);
        b.store(cur, Ordering::Relaxed);
        c.store(mapped, Ordering::Relaxed);
    }

    /// Its parent's Linux pid (0: not known here).
    #[inline(always)]
    pub fn linux_ppid(&self) -> u64 {
        self.linux_ppid.load(Ordering::Acquire)
    }

    /// Sets it (`supervise::set_ppid`, which checks who may).
    pub fn set_linux_ppid(&self, ppid: u64) {
        self.linux_ppid.store(ppid, Ordering::Release);
    }

    /// Its pending signals as its supervisor last published them.
    /// (SeqCst with the masks' stores: a thread that changes its mask and
    /// then reads this, and a supervisor that publishes and then reads
    /// the mask, do not both miss the other.)
    #[inline(always)]
    pub fn linux_sig_pending(&self) -> u64 {
        self.linux_sig_pending.load(Ordering::SeqCst)
    }

    pub fn set_linux_sig_pending(&self, set: u64) {
        self.linux_sig_pending.store(set, Ordering::SeqCst);
    }

    /// The mask its first computation starts with.
    pub fn linux_start_sigmask(&self) -> u64 {
        self.linux_start_sigmask.load(Ordering::Relaxed)
    }

    /// Sets it (before the process runs) and what it has pending.
    pub fn set_linux_start_signals(&self, mask: u64, pending: u64) {
        self.linux_start_sigmask.store(mask, Ordering::Relaxed);
        self.linux_sig_pending.store(pending, Ordering::SeqCst);
    }

    /// Asks it to stop on its next way back to user mode.
    pub fn ask_attention(&self) {
        self.attention.store(true, Ordering::Release);
    }

    /// Whether it was asked to stop and has not stopped yet (a sleep the
    /// kernel serves it ends early for that).
    #[inline(always)]
    pub fn attention_pending(&self) -> bool {
        self.attention.load(Ordering::Acquire)
    }

    /// Its supervisor ends it with `status` once it wakes (`caller_exit`).
    pub fn request_exit(&self, status: u64) {
        self.exit_request.store(status.min(NO_EXIT - 1), Ordering::Release);
    }

    /// The status its supervisor ended it with, taken.
    pub fn take_exit_request(&self) -> Option<u64> {
        match self.exit_request.swap(NO_EXIT, Ordering::AcqRel) {
            NO_EXIT => None,
            s => Some(s),
        }
    }

    /// Whether it is a Linux process (its supervisor reports its end).
    #[inline(always)]
    pub fn is_linux(&self) -> bool {
        matches!(self.route, Route::Linux { .. })
    }

    /// Whether it was asked to stop, taking the request.
    #[inline(always)]
    pub fn take_attention(&self) -> bool {
        self.attention.load(Ordering::Relaxed) && self.attention.swap(false, Ordering::AcqRel)
    }

    #[inline(always)]
    pub fn program(&self) -> ResId {
        self.program
    }

    #[inline(always)]
    pub fn plate(&self) -> ResId {
        self.plate
    }

    #[inline(always)]
    pub fn space_id(&self) -> ResId {
        self.space_id
    }

    /// The process that lent it its space (see `lender`; 0: none).
    #[inline(always)]
    pub fn lender(&self) -> u64 {
        self.lender
    }

    /// The pid whose memory its space is (its own, or its lender's while
    /// the space is lent to it): what owns the memory it maps, so that
    /// the lender's fork and end find it.
    pub fn memory_owner(&self) -> u64 {
        // A process composed in a space of its own is its user while it
        // lives.
        if self.lender == 0 {
            return self.pid;
        }
        match self.space().map(|s| s.lock().user()) {
            Some(user) if user != 0 => user,
            _ => self.pid,
        }
    }

    #[inline(always)]
    pub fn root(&self) -> u64 {
        self.root
    }

    #[inline(always)]
    pub fn entry(&self) -> u64 {
        self.entry
    }

    /// Whether the kernel composed it (only then are its parts pooled).
    pub fn kernel_composed(&self) -> bool {
        self.kernel_composed
    }

    /// The account the kernel memory it causes is charged to.
    #[inline(always)]
    pub fn account(&self) -> &Arc<Account> {
        &self.account
    }

    /// Its space as a computation runs in it: the page-table root and the
    /// CPUs running it, shared with the space.
    pub fn user_space(&self) -> UserSpace {
        UserSpace {
            root: self.root,
            active_cpus: self.active_cpus.clone(),
        }
    }

    /// Rendezvous and requests addressed to it.
    #[inline(always)]
    pub fn port(&self) -> &Port {
        &self.port
    }

    // ---- family and exit ----

    /// The pid that may wait for it (`NO_PARENT` once orphaned).
    #[inline(always)]
    pub fn parent(&self) -> u64 {
        self.parent.load(Ordering::Relaxed)
    }

    #[inline(always)]
    pub fn is_child_of(&self, pid: u64) -> bool {
        self.parent() == pid
    }

    /// Whether process `pid` is this one or its parent: the processes that
    /// may manage it.
    #[inline(always)]
    pub fn answers_to(&self, pid: u64) -> bool {
        self.pid == pid || self.is_child_of(pid)
    }

    /// It registered a name (`names::register`).
    pub(crate) fn mark_named(&self) {
        self.named.store(true, Ordering::Release);
    }

    /// Its parent ended first: it is reaped as soon as it exits.
    fn orphan(&self) {
        self.parent.store(NO_PARENT, Ordering::Relaxed);
    }

    /// Its exit status, once it has exited.
    pub fn exit_status(&self) -> Option<u64> {
        *self.exit_status.lock()
    }

    pub fn has_exited(&self) -> bool {
        self.exit_status.lock().is_some()
    }

    /// Whether it has been killed: it exits the next time it would return
    /// to user mode.
    #[inline(always)]
    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// The mark `kill` sets, for its computation to share: its waits give
    /// up when it is set.
    pub fn kill_mark(&self) -> Arc<AtomicBool> {
        self.killed.clone()
    }

    // ---- its parts, as they come and go ----

    /// The process's virtual space, while it has one.
    pub fn space(&self) -> Option<SpaceRef> {
        self.space.lock().clone()
    }

    /// `space` with interrupts already off (the caller keeps them off).
    #[inline(always)]
    pub fn space_irqs_off(&self) -> Option<SpaceRef> {
        self.space.lock_irqs_off().clone()
    }

    /// Its space, given up as it ends.
    pub fn take_space(&self) -> Option<SpaceRef> {
        self.space.lock().take()
    }

    pub fn resident_pages(&self) -> u64 {
        let space = self.space.lock().clone();
        space.map_or(0, |s| s.lock().resident_pages() as u64)
    }

    /// Where an anonymous placement in its space goes when it names no
    /// address: the first free place from where its last one ended.
    #[inline(always)]
    pub fn free_place(&self) -> At<'_> {
        At::Free(&self.anon_next)
    }

    /// The computation it runs by, while it has one.
    pub fn computation(&self) -> Option<Arc<Computation>> {
        self.computation.lock().as_ref().and_then(|c| c.1.upgrade())
    }

    /// Its computation's resource identifier, once it has one.
    pub fn computation_id(&self) -> Option<ResId> {
        self.computation.lock().as_ref().map(|c| c.0)
    }

    /// Whether `comp` waits for calls at this process's port (in `acc`).
    pub fn waits_for_calls(&self, comp: &Computation) -> bool {
        self.port
            .queued
            .lock()
            .waiter
            .as_ref()
            .is_some_and(|w| core::ptr::eq(Arc::as_ptr(w), comp))
    }

    pub fn has_computation(&self) -> bool {
        self.computation.lock().is_some()
    }

    /// It runs by `comp`, resource `id`, from now on.
    pub fn set_computation(&self, id: ResId, comp: &Arc<Computation>) {
        comp.group
            .store(self.cpu_group.load(Ordering::Relaxed), Ordering::Relaxed);
        *self.computation.lock() = Some((id, Arc::downgrade(comp)));
    }

    /// It is a Linux fork's (or vfork's) copy of its parent: its time is
    /// counted apart from the processes its program's exec starts.
    pub fn mark_forked(&self) {
        let g = kcore::cpuacct::group(&self.name, abi::CPU_LINUX | abi::CPU_FORKED);
        self.cpu_group.store(g, Ordering::Relaxed);
        self.forked.store(true, Ordering::Relaxed);
        if let Some(c) = self.computation() {
            c.group.store(g, Ordering::Relaxed);
        }
    }

    /// Its `kcore::cpuacct` group's flags (`abi::CPU_LINUX`, `CPU_FORKED`).
    pub fn cpu_flags(&self) -> u64 {
        match self.route {
            Route::Linux { .. } if self.is_forked() => abi::CPU_LINUX | abi::CPU_FORKED,
            Route::Linux { .. } => abi::CPU_LINUX,
            _ => 0,
        }
    }

    fn is_forked(&self) -> bool {
        self.forked.load(Ordering::Relaxed)
    }

    /// Its computations' CPU time so far and the kernel's part of it, in
    /// TSC cycles (a running one's current stretch as of its last switch
    /// or entry: exact for everyone but the caller).
    pub fn cpu_cycles(&self) -> (u64, u64) {
        let mut total = (0, 0);
        let mut add = |c: &Computation| {
            // An ended one whose time went to its group is counted there.
            if c.finished.load(Ordering::Relaxed) && c.group.load(Ordering::Relaxed) == 0 {
                return;
            }
            total.0 += sched::cycles_of(c);
            total.1 += c.kernel_cycles.load(Ordering::Relaxed);
        };
        if let Some(c) = self.computation() {
            add(&c);
        }
        for t in self.threads.lock().iter() {
            add(&t.comp);
        }
        total
    }

    /// Adds `t` to its computations (it starts after); refused once the
    /// process was killed or has begun to end. The kill sets its mark
    /// before it looks at the list under its lock, and this looks at the
    /// mark under that lock: either the kill finds the new computation,
    /// or the computation is refused.
    pub fn add_thread(&self, t: Thread) -> Result<(), Error> {
        let mut list = self.threads.lock();
        if self.is_killed() || self.is_ending() || self.live.load(Ordering::Acquire) == 0 {
            return Err(Error::NotFound);
        }
        list.try_reserve(1).map_err(|_| Error::NoMemory)?;
        self.live.fetch_add(1, Ordering::AcqRel);
        t.comp
            .group
            .store(self.cpu_group.load(Ordering::Relaxed), Ordering::Relaxed);
        list.push(t);
        Ok(())
    }

    /// How many of its computations have not ended.
    pub fn live_computations(&self) -> u64 {
        self.live.load(Ordering::Acquire)
    }

    /// Its computation labelled `label` (`Computation::label`; 0: the
    /// first), while it lives.
    pub fn computation_labelled(&self, label: u64) -> Option<Arc<Computation>> {
        if label == 0 {
            return self.computation().filter(|c| !c.finished.load(Ordering::Acquire));
        }
        let list = self.threads.lock();
        list.iter()
            .find(|t| t.comp.label.load(Ordering::Relaxed) == label)
            .map(|t| t.comp.clone())
    }

    /// Its first computation beyond the first, if any lives.
    pub fn first_thread(&self) -> Option<Arc<Computation>> {
        self.threads.lock().first().map(|t| t.comp.clone())
    }

    /// Wakes every computation of it and interrupts those running, so
    /// that each looks at its kill mark soon (`kill`, `exit_current`).
    fn kick_all(&self) {
        let kick = |c: &Arc<Computation>| {
            sched::wake(c);
            let cpu = c.last_cpu.load(Ordering::Relaxed);
            if let Some(target) = kcore::cpu::get(cpu) {
                kcore::arch::x86_64::apic::send_ipi(target.apic_id, kcore::arch::x86_64::trap::vector::RESCHEDULE);
            }
        };
        if let Some(c) = self.computation() {
            kick(&c);
        }
        for t in self.threads.lock().iter() {
            kick(&t.comp);
        }
    }

    /// Its work area, given up once: after its arguments have been
    /// delivered, or as it ends.
    pub fn take_work_area(&self) -> Option<ResId> {
        self.work_area.lock().take()
    }

    // ---- whom it lets in, and what it may do ----

    /// Lets process `pid` (or `abi::ANY_PID`, anyone) push containers into
    /// it, steal from it and exchange with it.
    pub fn grant_peer(&self, pid: u64) -> Result<(), Error> {
        let mut peers = self.peers.lock();
        if !peers.contains(&pid) {
            peers.try_reserve(1).map_err(|_| Error::NoMemory)?;
            peers.push(pid);
        }
        Ok(())
    }

    /// Whether process `pid` was granted (`grant_peer`) to touch its
    /// containers.
    pub fn may_push_from(&self, pid: u64) -> bool {
        let peers = self.peers.lock();
        peers.contains(&pid) || peers.contains(&abi::ANY_PID)
    }

    /// Whether it holds every right of `rights` (`abi::rights`).
    #[inline(always)]
    pub fn holds_rights(&self, rights: u64) -> bool {
        rights & !self.rights.load(Ordering::Relaxed) == 0
    }

    /// Gives it `rights`: by its creator at spawn, before it runs.
    pub fn give_rights(&self, rights: u64) {
        self.rights.store(rights, Ordering::Relaxed);
    }

    // ---- resources beyond its parts, and its end ----

    /// It operates on resources itself (native resource API, containers):
    /// its exit must look for what it owns. Tested first, so the common
    /// case writes nothing.
    #[inline(always)]
    pub fn mark_maker(&self) {
        if !self.made_resources.load(Ordering::Acquire) {
            self.made_resources.store(true, Ordering::Release);
        }
    }

    /// Whether it may own resources beyond its parts (see `mark_maker`).
    pub fn made_resources(&self) -> bool {
        self.made_resources.load(Ordering::Acquire)
    }

    /// It is about to own a resource it did not make (a container moved
    /// to it): marks it a maker, so that its exit finds the resource, then
    /// says whether it may take it, that is whether it has not begun to
    /// end. The mark comes before the look at `ending`, and `mark_ending`
    /// sets that before it looks at the mark (all four sequentially
    /// consistent): either the move sees the end and refuses, or the end
    /// sees the mark. The caller holds the lock under which the end's
    /// release looks for the resource.
    #[inline(always)]
    pub fn accept_resource(&self) -> bool {
        self.made_resources.store(true, Ordering::SeqCst);
        !self.ending.load(Ordering::SeqCst)
    }

    /// First thing as its resources are given up, before its containers
    /// are released: it is ending, resources moved to it from now on are
    /// refused (see `accept_resource`), and its space is no longer its
    /// memory (copies into it are refused: see `memory_of`). Returns
    /// whether it had made or been given resources by then, whose release
    /// must look for them.
    #[must_use]
    pub fn mark_ending(&self) -> bool {
        self.ending.store(true, Ordering::SeqCst);
        if let Some(space) = self.space() {
            let mut s = space.lock();
            if s.user() == self.pid {
                // Lent: a borrower keeps it (`hand_over`); the resource
                // layer hands the memory's ownership over too.
                match s.hand_over() {
                    Some(to) => self.left_space.store(to, Ordering::Release),
                    None => s.unbind(),
                }
            } else if s.give_back(self.pid) {
                self.left_space.store(0, Ordering::Release);
            }
        }
        self.made_resources.load(Ordering::SeqCst)
    }

    /// Whom its end left its space to (see `left_space`): None if it
    /// takes the space apart itself, Some(0) if it gave it back to its
    /// lender, Some(pid) if it handed it over to borrower `pid`.
    pub fn space_left_to(&self) -> Option<u64> {
        match self.left_space.load(Ordering::Acquire) {
            KEEPS_SPACE => None,
            to => Some(to),
        }
    }

    /// Whether it has begun to end.
    pub fn is_ending(&self) -> bool {
        self.ending.load(Ordering::SeqCst)
    }

    /// Moves an ICA to process `target` through `f`, given that process:
    /// the one it moved to last if that is `target`, else looked up and
    /// kept for the next move. The lock on the kept reference is held
    /// through `f`: it is the first lock of the move and turns interrupts
    /// off for all of it (its guard turns them back on).
    #[inline(always)]
    pub fn with_ica_target<R>(&self, target: u64, f: impl FnOnce(&Process) -> Result<R, Error>) -> Result<R, Error> {
        let mut last = self.ica_target.lock();
        if last.as_ref().is_none_or(|p| p.pid != target) {
            *last = Some(get(target).ok_or(Error::NotFound)?);
        }
        let to_p = last.as_deref().ok_or(Error::NotFound)?;
        f(to_p)
    }

    /// Lets go of the process it moved an ICA to last (as it ends).
    pub fn forget_ica_target(&self) {
        drop(self.ica_target.lock().take());
    }

    // ---- faults ----

    pub fn count_fault(&self, fault: Resolved) {
        let i = match fault.kind {
            _ if fault.nvm => 5,
            Kind::Text => 0,
            Kind::Data => 1,
            Kind::Bss => 2,
            Kind::Stack => 3,
            Kind::Heap => 4,
        };
        self.faults[i].fetch_add(1, Ordering::Relaxed);
        if fault.paged {
            self.faults[6].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a page a pager supplied at creation (eager loading): read
    /// from storage, though no fault asked for it.
    pub fn count_paged(&self, pages: u64) {
        self.faults[6].fetch_add(pages, Ordering::Relaxed);
    }

    pub fn faults(&self) -> FaultCounts {
        let f = |i: usize| self.faults[i].load(Ordering::Relaxed);
        FaultCounts {
            text: f(0),
            data: f(1),
            bss: f(2),
            stack: f(3),
            heap: f(4),
            nvm_text: f(5),
            paged: f(6),
        }
    }
}

/// What the resource layer does at a process's first entry and at its end
/// (its constituents are resources): registered by the kernel at boot.
pub struct Hooks {
    /// Its first entry, before it leaves for user mode through `frame`:
    /// its arguments go from the work area onto its stack. False if they
    /// could not.
    pub first_entry: fn(&Process, &mut TrapFrame) -> bool,
    /// It ends: its resources go to the pool or are deleted.
    pub end: fn(&Process),
    /// One of its computations beyond the first ended: the resource goes.
    pub end_computation: fn(ResId),
}

static HOOKS: spin::Once<Hooks> = spin::Once::new();

pub fn register_hooks(h: Hooks) {
    HOOKS.call_once(|| h);
}

fn hooks() -> &'static Hooks {
    HOOKS.get().expect("process hooks registered at boot")
}

/// Processes as the owners of their computations.
pub static OWNER: OwnerKind<Process> = OwnerKind::new();

/// Runs `f` on the process the current computation runs for, without
/// taking a reference (the hot path of every system call).
#[inline(always)]
pub fn with_current<R>(f: impl FnOnce(&Process) -> R) -> Option<R> {
    sched::with_current(|c| c.owner(&OWNER).map(f)).flatten()
}

/// The process the current computation runs for.
pub fn current() -> Option<Arc<Process>> {
    sched::with_current(|c| c.owner_arc(&OWNER)).flatten()
}

static PROCESSES: IrqMutex<BTreeMap<u64, Arc<Process>>> = IrqMutex::new(BTreeMap::new());
static NEXT_PID: AtomicU64 = AtomicU64::new(1);
/// System default loading policy (Tender's eager loading unless changed).
static DEFAULT_POLICY: AtomicU64 = AtomicU64::new(LoadPolicy::Eager as u64);
/// Pid that Ctrl-C on the console kills (0: none).
static FOREGROUND: AtomicU64 = AtomicU64::new(0);

/// The kernel memory a process the kernel starts may cause (and its
/// descendants with it): a quarter of the memory. Init's tree holds the
/// file server's published pages, a page cache as Linux's is: an eighth
/// (64 MiB of 512 MiB) did not hold a 64 MiB file's 16,384 pages.
pub fn default_kernel_limit() -> u64 {
    kcore::mm::frames::stats().managed as u64 * 4096 / 4
}

/// `bytes` of kernel memory charged to process `pid` (nothing for the
/// kernel's own, pid 0); `Limit` if its account, or one above it, would
/// pass its limit.
pub fn charge(pid: u64, bytes: u64) -> Result<Charge, Error> {
    if pid == KERNEL_PID {
        return Ok(Charge::NONE);
    }
    let account = match with_current(|p| (p.pid == pid).then(|| p.account.clone())).flatten() {
        Some(a) => a,
        None => get(pid).ok_or(Error::NotFound)?.account.clone(),
    };
    Charge::on_own(account, bytes).map_err(|_| Error::Limit)
}

pub fn default_policy() -> LoadPolicy {
    LoadPolicy::from_u64(DEFAULT_POLICY.load(Ordering::Relaxed)).unwrap_or(LoadPolicy::Eager)
}

pub fn set_default_policy(p: LoadPolicy) -> LoadPolicy {
    let p = if p == LoadPolicy::Default { LoadPolicy::Eager } else { p };
    LoadPolicy::from_u64(DEFAULT_POLICY.swap(p as u64, Ordering::Relaxed)).unwrap_or(LoadPolicy::Eager)
}

/// Processes looked up lately, one slot per pid modulo their number: a
/// supervisor's every kernel call names the process it serves, several
/// times (its call, its space, a copy's two ends), and a look-up in the
/// table's tree costs about 150 instructions where a slot costs 30. A
/// slot is filled and emptied only under the table's lock, so it only
/// ever holds a process the table holds (pids are never reused).
static RECENT: [IrqMutex<Option<Arc<Process>>>; RECENT_SLOTS] = [const { IrqMutex::new(None) }; RECENT_SLOTS];
const RECENT_SLOTS: usize = 32;

fn recent(pid: u64) -> &'static IrqMutex<Option<Arc<Process>>> {
    &RECENT[pid as usize % RECENT_SLOTS]
}

/// Forgets `pid` in its slot; the table's lock is held (it just left the
/// table).
fn forget_recent(pid: u64) {
    let mut slot = recent(pid).lock();
    if slot.as_ref().is_some_and(|p| p.pid == pid) {
        *slot = None;
    }
}

pub fn get(pid: u64) -> Option<Arc<Process>> {
    if let Some(p) = recent(pid).lock().as_ref().filter(|p| p.pid == pid) {
        return Some(p.clone());
    }
    let table = PROCESSES.lock();
    let p = table.get(&pid).cloned()?;
    // The one it replaces is still in the table: not its last reference.
    *recent(pid).lock() = Some(p.clone());
    Some(p)
}

/// Every process's pid; NoMemory if the heap has no room for the list (a
/// system call's).
pub fn pids() -> Result<Vec<u64>, Error> {
    let p = PROCESSES.lock();
    let mut v = Vec::new();
    v.try_reserve_exact(p.len()).map_err(|_| Error::NoMemory)?;
    v.extend(p.keys().copied());
    Ok(v)
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
    kill_by(pid, KERNEL_PID)
}

/// `kill`, asked by process `killer`.
pub fn kill_by(pid: u64, killer: u64) -> Result<(), Error> {
    let p = get(pid).ok_or(Error::NotFound)?;
    if p.has_exited() {
        return Ok(());
    }
    if killer != KERNEL_PID && p.is_child_of(killer) {
        p.killed_by_parent.store(true, Ordering::Relaxed);
    }
    p.killed.store(true, Ordering::Release);
    // Every computation, wherever it runs: waits give up, and one in user
    // mode on another CPU is interrupted so it notices soon.
    p.kick_all();
    Ok(())
}

/// Ends the current process with `status`: its other computations are
/// stopped (each ends on its way back to user mode or as its wait gives
/// up), and the last to end releases its space and regions and tells its
/// parent. Callers must not hold an `Arc` of the process or its
/// computation: this function does not return, so such a reference would
/// never be dropped.
pub fn exit_current(status: u64) -> ! {
    if let Some(p) = current()
        && p.live.load(Ordering::Acquire) > 1
    {
        let _ = p
            .group_status
            .compare_exchange(NO_EXIT, status, Ordering::AcqRel, Ordering::Acquire);
        // The first to end them all wakes the others; those that end
        // after a kill need not (a process of thousands of threads).
        if !p.killed.swap(true, Ordering::AcqRel) {
            p.kick_all();
        }
    }
    end_computation(status)
}

/// Ends the current computation alone (a thread's exit): its process goes
/// on while others live, and ends with `status` if it was the last.
pub fn exit_thread(status: u64) -> ! {
    end_computation(status)
}

/// The current computation ends; the last of its process ends the process.
fn end_computation(status: u64) -> ! {
    let p = current().expect("exit outside a process");
    let me = sched::current().expect("exit outside a computation");
    let (last, mine) = {
        let mut list = p.threads.lock();
        let left = p.live.fetch_sub(1, Ordering::AcqRel).saturating_sub(1);
        let mine = list
            .iter()
            .position(|t| Arc::ptr_eq(&t.comp, &me))
            .map(|i| list.swap_remove(i));
        (left == 0, mine)
    };
    if !last {
        // Others go on in its space: its clear-tid word is cleared and
        // its waiters woken (they learn it has ended).
        let word = me.clear_word.load(Ordering::Relaxed);
        if word != 0 {
            // The word may need a page fault (interrupts off on the way
            // back to user mode, where a kill ends it; on here).
            let off = !x86_64::instructions::interrupts::are_enabled();
            x86_64::instructions::interrupts::enable();
            if kcore::uaccess::write(word, &0u32).is_ok() {
                crate::futex::wake_word(&p, word, 1);
            }
            if off {
                x86_64::instructions::interrupts::disable();
            }
        }
        if let Some(t) = mine {
            (hooks().end_computation)(t.id);
        }
        drop(me);
        drop(p);
        sched::exit_current()
    }
    if let Some(t) = mine {
        *p.last.lock() = Some(Arc::downgrade(&t.comp));
        (hooks().end_computation)(t.id);
    }
    drop(me);
    let status = match p.group_status.load(Ordering::Acquire) {
        NO_EXIT => status,
        s => s,
    };
    // Leave the process's page tables before they are freed.
    kcore::computation::leave_user_space();
    end(&p);
    if FOREGROUND.load(Ordering::Acquire) == p.pid {
        FOREGROUND.store(0, Ordering::Release);
    }
    // Children: reap the finished ones, orphan the rest (in place: an
    // exit must work with the heap full).
    {
        let mut table = PROCESSES.lock();
        if p.had_child.load(Ordering::Relaxed) {
            reap_and_orphan(&mut table, p.pid);
        }
    }
    p.exited.update(|| *p.exit_status.lock() = Some(status));
    p.exited.wake_all();
    // Looked at under the table's lock, which a parent's exit holds while
    // it reaps and orphans: either it saw this exit, or this sees it gone.
    {
        let mut table = PROCESSES.lock();
        if p.parent() == NO_PARENT {
            table.remove(&p.pid);
            forget_recent(p.pid);
        }
    }
    drop(p);
    sched::exit_current()
}

/// The children of `parent` (ending): those that exited are reaped, the
/// rest orphaned.
fn reap_and_orphan(table: &mut BTreeMap<u64, Arc<Process>>, parent: u64) {
    table.retain(|&pid, c| {
        let keep = !(c.is_child_of(parent) && c.has_exited());
        if !keep {
            forget_recent(pid);
        }
        keep
    });
    for c in table.values().filter(|c| c.is_child_of(parent)) {
        c.orphan();
    }
}

/// Waits for process `pid`, which must be a child of `parent`, to exit,
/// removes it from the table and returns its status.
pub fn wait(parent: u64, pid: u64) -> Result<u64, Error> {
    let p = get(pid).ok_or(Error::NotFound)?;
    if !p.is_child_of(parent) {
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
    let last = p.last.lock().as_ref().and_then(Weak::upgrade);
    for c in p.computation().into_iter().chain(last) {
        while c.on_cpu.load(Ordering::Acquire) {
            core::hint::spin_loop();
        }
    }
    {
        let mut table = PROCESSES.lock();
        table.remove(&pid);
        forget_recent(pid);
    }
    Ok(status.unwrap_or(abi::KILLED_STATUS))
}

/// Its end, for the layers: its names and port first (callers released,
/// nothing more delivered), then its resources.
pub fn end(p: &Process) {
    if p.named.load(Ordering::Acquire) {
        crate::names::forget(p.pid);
    }
    crate::port::close(p);
    (hooks().end)(p);
}

/// A new pid; pids are never reused.
fn next_pid() -> u64 {
    NEXT_PID.fetch_add(1, Ordering::Relaxed)
}

/// Makes `p` a process of the table (composed; it runs once started).
pub fn insert(p: Arc<Process>) {
    let mut table = PROCESSES.lock();
    if let Some(parent) = table.get(&p.parent()) {
        parent.had_child.store(true, Ordering::Relaxed);
    }
    table.insert(p.pid, p);
}

/// Takes `pid` out of the table (a composition undone before it ran).
pub fn remove(pid: u64) -> Option<Arc<Process>> {
    let mut table = PROCESSES.lock();
    let p = table.remove(&pid);
    forget_recent(pid);
    p
}

/// Called just before every return to user mode: switch if asked to, and
/// exit if the process was killed.
#[inline(always)]
pub fn on_return_to_user(frame: &mut TrapFrame) {
    if with_current(|p| leave_for_user_stopping(p, frame)).is_none() {
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
    if p.is_killed() {
        killed(p);
    }
    sanitize_flags(frame);
    kcore::cpuacct::leaving_kernel();
}

/// `leave_for_user` for a process whose supervisor may have asked it to
/// stop (an interrupt's way back, a Linux process's system call): a
/// native process's system call never looks.
pub fn leave_for_user_stopping(p: &Process, frame: &mut TrapFrame) {
    if p.take_attention() || take_own_attention() {
        stop_for_supervisor(p);
    }
    leave_for_user(p, frame);
}

/// `leave_for_user_stopping` from a system call whose frame is short
/// (`abi::linux::SHORT_FRAME`): a stop asked meanwhile cannot be made from
/// it, so it is left asked and an interrupt to this CPU, taken as soon as
/// the process is back in user mode, makes it with a whole frame.
/// Interrupts are off.
#[inline(always)]
pub fn leave_for_user_short(p: &Process, frame: &mut TrapFrame) {
    let own = || sched::with_current(|c| c.attention.load(Ordering::Relaxed)).unwrap_or(false);
    if p.attention.load(Ordering::Relaxed) || own() {
        stop_soon();
    }
    leave_for_user(p, frame);
}

#[cold]
fn stop_soon() {
    let here = kcore::cpu::this_cpu();
    kcore::arch::x86_64::apic::send_ipi(here.apic_id, kcore::arch::x86_64::trap::vector::RESCHEDULE);
}

/// Whether the current computation alone was asked to stop, taking the
/// request.
#[inline(always)]
fn take_own_attention() -> bool {
    sched::with_current(|c| c.attention.load(Ordering::Relaxed) && c.attention.swap(false, Ordering::AcqRel))
        .unwrap_or(false)
}

/// A Linux process its supervisor asked to stop: an ATTENTION rendezvous
/// (the supervisor may change its registers: a signal handler's entry).
/// Interrupts are off on the way to user mode; the rendezvous needs them.
#[cold]
fn stop_for_supervisor(p: &Process) {
    let Route::Linux { supervisor, pid } = p.route else {
        return;
    };
    // A call the kernel gave up for this stop goes with it (args[0]),
    // for the supervisor to restart or fail.
    let restart = sched::with_current(|c| c.restart_call.swap(0, Ordering::AcqRel)).unwrap_or(0);
    let stop = abi::linux::LinuxCall {
        nr: abi::linux::NO_CALL,
        args: [restart, 0, 0, 0, 0, 0],
        pid: linux_tid_told(pid),
    };
    x86_64::instructions::interrupts::enable();
    let r = crate::supervise::to_supervisor(p, supervisor, abi::linux::entry::ATTENTION, as_bytes(&stop));
    x86_64::instructions::interrupts::disable();
    match r {
        Ok(_) => sched::preempt_if_needed(),
        Err(crate::supervise::Ending::Exit(status)) => exit_current(status),
        Err(crate::supervise::Ending::Thread) => exit_thread(0),
        Err(crate::supervise::Ending::Gone) => p.killed.store(true, Ordering::Release),
    }
}

/// The Linux tid of the computation running here, in a process whose
/// Linux pid is `pid` (its first computation's tid).
#[inline(always)]
pub fn linux_tid(pid: u64) -> u64 {
    match sched::with_current(|c| c.label.load(Ordering::Relaxed)) {
        Some(0) | None => pid,
        Some(tid) => tid,
    }
}

/// `linux_tid`, as a rendezvous with the supervisor names the caller:
/// with `abi::linux::SIGMASK_NEWS` if the kernel changed the thread's
/// mask since the supervisor last read or set it.
pub fn linux_tid_told(pid: u64) -> u64 {
    linux_tid(pid) | take_sigmask_news()
}

/// `abi::linux::SIGMASK_NEWS` if the kernel changed the running thread's
/// mask since its supervisor last read or set it (then no longer), else 0.
#[inline(always)]
pub fn take_sigmask_news() -> u64 {
    let news =
        sched::with_current(|c| c.sigmask_news.load(Ordering::Relaxed) && c.sigmask_news.swap(false, Ordering::AcqRel));
    if news == Some(true) {
        abi::linux::SIGMASK_NEWS
    } else {
        0
    }
}

/// A plain record's bytes, for an inline message.
pub fn as_bytes<T: kcore::uaccess::Pod>(v: &T) -> &[u8] {
    kcore::uaccess::pod_bytes(v)
}

#[cold]
fn killed(p: &Process) -> ! {
    // A Linux process's end is its supervisor's to report.
    if !p.is_linux() && !p.killed_by_parent.load(Ordering::Relaxed) {
        println!("process {} ({}) killed", p.pid, p.name);
    }
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
    let Some(p) = current() else {
        return;
    };
    sched::with_current(|c| {
        c.with_first_frame(|frame| {
            let ok = (hooks().first_entry)(&p, frame);
            if !ok {
                println!("process {} ({}): cannot set up its arguments", p.pid, p.name);
            }
            drop(p);
            if !ok {
                exit_current(abi::KILLED_STATUS);
            }
            on_return_to_user(frame);
        })
    });
}

/// Fills `buf` from the start of `from` in the memory of process `pid`:
/// through the current page tables if `pid` runs this, else through its
/// own; demand pages are faulted in, and the range must be readable.
/// Inlined: the rendezvous path reads the caller's own memory so on every
/// call it makes.
#[inline(always)]
pub fn read_user_of(pid: u64, from: UserRange, buf: &mut [u8]) -> Result<(), Error> {
    if runs_here(pid) {
        return from.read(buf);
    }
    read_other_user(pid, from, buf)
}

/// `read_user_of` for a process other than the current one.
#[inline(never)]
fn read_other_user(pid: u64, from: UserRange, buf: &mut [u8]) -> Result<(), Error> {
    let space = other_space(pid, buf.len(), from)?;
    let mut s = space.lock();
    memory_of(&s, pid)?;
    s.copy_out(from.addr(), buf).map_err(|_| Error::Fault)
}

/// Copies `len` bytes from `from` (pid, range) to `to` (pid, range) of
/// two processes, straight from frame to frame (no buffer between): a page
/// piece at a time, each under both spaces' locks, taken in address order
/// as every path that holds two spaces takes them.
pub fn copy_between(from: (u64, UserRange), to: (u64, UserRange), len: usize) -> Result<(), Error> {
    let space_of = |pid| get(pid).and_then(|p| p.space()).ok_or(Error::NotFound);
    copy_between_spaces((&space_of(from.0)?, &space_of(to.0)?), from, to, len)
}

/// `copy_between` with the two processes' spaces (`from`'s, `to`'s)
/// found by the caller: several copies between the same two look them
/// up once. Each piece still checks that the spaces are the processes'
/// memory (`memory_of`), so a space that has gone on to another
/// process meanwhile is not reached.
pub fn copy_between_spaces(
    (src, dst): (&SpaceRef, &SpaceRef),
    from: (u64, UserRange),
    to: (u64, UserRange),
    len: usize,
) -> Result<(), Error> {
    if len > from.1.len() || len > to.1.len() {
        return Err(Error::Invalid);
    }
    if Arc::ptr_eq(src, dst) {
        return Err(Error::Invalid);
    }
    let (src_addr, dst_addr) = (from.1.addr(), to.1.addr());
    // All or nothing: a copy of more than one piece first makes sure every
    // page is there, so that a fault part way leaves the destination as it
    // was (a server that reads a message into its cache keeps old data).
    let one_piece = (src_addr % 4096).max(dst_addr % 4096) as usize + len <= 4096;
    if !one_piece {
        let ok = src.lock().prepare(src_addr, len, false).is_ok() && dst.lock().prepare(dst_addr, len, true).is_ok();
        if !ok {
            return Err(Error::Fault);
        }
    }
    let mut done = 0;
    while done < len {
        let (s, d) = (src_addr + done as u64, dst_addr + done as u64);
        let n = (4096 - (s % 4096).max(d % 4096) as usize).min(len - done);
        let (mut a, mut b) = if Arc::as_ptr(src) < Arc::as_ptr(dst) {
            let a = src.lock();
            (a, dst.lock())
        } else {
            let b = dst.lock();
            (src.lock(), b)
        };
        memory_of(&a, from.0)?;
        memory_of(&b, to.0)?;
        VirtualSpace::copy_between(&mut a, s, &mut b, d, n).map_err(|_| Error::Fault)?;
        done += n;
    }
    Ok(())
}

/// Copies `data` to the start of `to` in the memory of process `pid`, as
/// `read_user_of` reads; the range must be writable by that process.
pub fn write_user_of(pid: u64, to: UserRange, data: &[u8]) -> Result<(), Error> {
    if runs_here(pid) {
        return to.write(data);
    }
    let space = other_space(pid, data.len(), to)?;
    let mut s = space.lock();
    memory_of(&s, pid)?;
    s.copy_in(to.addr(), data).map_err(|_| Error::Fault)
}

/// Whether process `pid` is the one running here.
#[inline(always)]
fn runs_here(pid: u64) -> bool {
    with_current(|p| p.pid) == Some(pid)
}

/// The space of process `pid` (not the one running here), for a copy of
/// `len` bytes to or from the start of `range`. The space may stop being
/// that process's memory at any moment (its end unbinds it, the pool
/// hands it to another process): the copy checks `memory_of` under the
/// space's lock, which it holds for the copy.
fn other_space(pid: u64, len: usize, range: UserRange) -> Result<SpaceRef, Error> {
    if len > range.len() {
        return Err(Error::Invalid);
    }
    let p = get(pid).ok_or(Error::NotFound)?;
    let space = p.space().ok_or(Error::NotFound)?;
    drop(p);
    kcore::ktest::window(kcore::ktest::Window::OtherSpace);
    Ok(space)
}

/// Whether `space` (locked) is still process `pid`'s memory: a process
/// that has begun to end is given nothing, not even bytes.
#[inline(always)]
fn memory_of(space: &VirtualSpace, pid: u64) -> Result<(), Error> {
    if space.holds(pid) { Ok(()) } else { Err(Error::NotFound) }
}

/// A page fault at user address `addr`, from user mode or from the kernel
/// touching user memory. Resolves it (demand paging) or says why not.
/// A page whose bytes are in a file is asked of its pager (`pager.rs`),
/// the process waiting, when the interrupted code `may_block`.
#[inline(always)]
pub fn resolve_user_fault(addr: u64, error_code: u64, may_block: bool) -> Result<(), FaultError> {
    let p = current().ok_or(FaultError::Unmapped)?;
    let write = error_code & 2 != 0;
    let exec = error_code & 16 != 0;
    let space = p.space().ok_or(FaultError::Unmapped)?;
    let resolved = space.lock().resolve_fault(addr, write, exec);
    let fault = match resolved {
        Err(FaultError::PageIn(req)) if may_block => {
            x86_64::instructions::interrupts::enable();
            let got = crate::pager::page_in(&p, &req);
            x86_64::instructions::interrupts::disable();
            let frame = got.map_err(|_| FaultError::PageInFailed)?;
            space.lock().supply(addr & !0xfff, frame.into_raw(), &req)?
        }
        r => r?,
    };
    p.count_fault(fault);
    Ok(())
}

/// Makes present every page of `len` bytes at `addr` of process `pid`'s
/// memory that a pager must supply, asking it from the current process
/// (which waits: no lock held): what a copy into or out of that memory
/// from elsewhere (a supervisor's) needs first, since such a copy holds
/// the space's lock and cannot wait.
pub fn page_in_range(pid: u64, addr: u64, len: usize) -> Result<(), Error> {
    let target = get(pid).ok_or(Error::NotFound)?;
    page_in_range_of(&target, addr, len)
}

/// `page_in_range` of process `target`, found already.
pub fn page_in_range_of(target: &Process, addr: u64, len: usize) -> Result<(), Error> {
    let pid = target.pid();
    let space = target.space().ok_or(Error::NotFound)?;
    let end = addr.saturating_add(len as u64);
    let mut from = addr;
    let mut wanted = Vec::new();
    while from < end {
        wanted.clear();
        from = {
            let s = space.lock();
            memory_of(&s, pid)?;
            // Nearly always so (no file mapped by pages): no look at
            // each region for pages to ask for.
            if !s.has_paged() {
                return Ok(());
            }
            s.pending_pages((from, end), &mut wanted, 16)
        };
        for &(va, req) in &wanted {
            if let Some(resolved) = space.lock().map_cached(va) {
                target.count_fault(resolved);
                continue;
            }
            // Only a pager's page needs the process asking (it waits).
            let me = current().ok_or(Error::Invalid)?;
            let frame = crate::pager::page_in(&me, &req)?;
            let resolved = space
                .lock()
                .supply(va, frame.into_raw(), &req)
                .map_err(|_| Error::Fault)?;
            target.count_fault(resolved);
        }
    }
    Ok(())
}

/// A fault in user mode that cannot be resolved: the process dies alone.
pub fn kill_for_fault(frame: &mut TrapFrame, cr2: u64, why: &str) {
    let Some(p) = current() else {
        panic!("user-mode fault without a process: {why} at RIP={:#x}", frame.rip);
    };
    // A Linux process's fault is its supervisor's to handle: a signal, or
    // its end.
    if let Route::Linux { supervisor, pid } = p.route {
        let fault = abi::linux::LinuxFault {
            vector: frame.vector,
            error_code: frame.error_code,
            address: cr2,
            rip: frame.rip,
            pid: linux_tid_told(pid),
        };
        x86_64::instructions::interrupts::enable();
        let served = crate::supervise::to_supervisor(&p, supervisor, abi::linux::entry::FAULT, as_bytes(&fault));
        x86_64::instructions::interrupts::disable();
        match served {
            Ok(_) => return,
            Err(crate::supervise::Ending::Exit(status)) => {
                drop(p);
                exit_current(status)
            }
            Err(crate::supervise::Ending::Thread) => {
                drop(p);
                exit_thread(0)
            }
            Err(crate::supervise::Ending::Gone) if p.is_killed() => {
                drop(p);
                exit_current(abi::KILLED_STATUS)
            }
            Err(crate::supervise::Ending::Gone) => {}
        }
    }
    // Printed without a String: a process may fault because memory ran
    // out, and its end must not need the heap.
    if frame.vector == 14 {
        println!(
            "process {} ({}) killed: {} at RIP={:#x} address {:#x}",
            p.pid, p.name, why, frame.rip, cr2
        );
    } else {
        println!("process {} ({}) killed: {} at RIP={:#x}", p.pid, p.name, why, frame.rip);
    }
    drop(p);
    exit_current(abi::KILLED_STATUS)
}
