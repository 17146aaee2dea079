//! A Linux process's system calls (`Route::Linux`). The kernel serves the
//! few that touch only the caller's own kernel state (`abi::linux::
//! KERNEL_SERVED`: its identity, the clock, its address space, its thread
//! pointer) and sends every other one to the process's supervisor as a
//! rendezvous (seed 003), the process waiting with its registers in its
//! frame until the supervisor returns a value (`caller_return`).
//!
//! What these calls do differs from Linux in places (said at each): munmap
//! and mprotect of part of a private anonymous mapping copy its parts into
//! mappings of their own; of part of a shared one, munmap leaves it whole
//! and mprotect is accepted and not applied, except that it opens a
//! PROT_NONE one.

use abi::linux::{LinuxCall, entry, nr};
use abi::{Error, RegionKind};
use ipc::process::{self as proc, Process};
use ipc::supervise::Ending;
use kcore::arch::x86_64::trap::TrapFrame;
use kcore::clock;
use kcore::mm::layout::PAGE_SIZE;
use kcore::uaccess::{self, UserRange};
use kcore::vm::space::At;
use resource::{ResId, mediator, vregion, vspace};

/// Linux error numbers the kernel's own answers use.
pub(crate) mod errno {
    pub const EAGAIN: u64 = 11;
    pub const ETIMEDOUT: u64 = 110;
    pub const EPERM: u64 = 1;
    pub const ENOENT: u64 = 2;
    pub const ESRCH: u64 = 3;
    pub const ENOMEM: u64 = 12;
    pub const EFAULT: u64 = 14;
    pub const EBUSY: u64 = 16;
    pub const EEXIST: u64 = 17;
    pub const ENODEV: u64 = 19;
    pub const EINTR: u64 = 4;
    pub const EINVAL: u64 = 22;
    pub const ENOSYS: u64 = 38;
    pub const EOPNOTSUPP: u64 = 95;
}

/// A negated errno, as a system call returns it.
pub(crate) fn fail(errno: u64) -> u64 {
    errno.wrapping_neg()
}

/// The Linux errno for a kernel error.
fn errno_of(e: Error) -> u64 {
    fail(match e {
        Error::NoSys => errno::ENOSYS,
        Error::Fault => errno::EFAULT,
        Error::Invalid | Error::BadProgram => errno::EINVAL,
        Error::NoMemory | Error::Limit => errno::ENOMEM,
        Error::NotFound => errno::ENOENT,
        Error::Denied => errno::EPERM,
        Error::Deadlock | Error::Busy => errno::EBUSY,
    })
}

fn result(r: Result<u64, Error>) -> u64 {
    r.unwrap_or_else(errno_of)
}

/// The time Linux programs see as CLOCK_REALTIME at boot (the machine has
/// no wall clock the kernel reads; QEMU's icount runs start their guest
/// clock there too): 2024-01-01T00:00:00Z.
pub(crate) const EPOCH_AT_BOOT: u64 = 1_704_067_200;

/// Linux system calls so far, those the kernel serves and those it sends
/// to supervisors (seed 003 counted communications per system call).
pub static LINUX_CALLS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// A Linux process's system call, from the dispatcher: served, then the
/// way back to user mode, where its supervisor may have asked it to stop.
#[inline(never)]
pub fn serve_and_leave(me: &Process, frame: &mut TrapFrame, supervisor: u64, pid: u64) {
    LINUX_CALLS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    // The null system call of the benchmarks is answered before anything
    // else, in the frame of this small function: the general one's frame
    // and its copy of the arguments were a fifth of getpid's path.
    if frame.rax == nr::GETPID {
        frame.rax = pid;
        x86_64::instructions::interrupts::disable();
        // Its frame lacks registers a stop would hand the supervisor.
        return proc::leave_for_user_short(me, frame);
    }
    serve_other_and_leave(me, frame, supervisor, pid);
}

/// `serve_and_leave` for every call but getpid.
#[inline(never)]
fn serve_other_and_leave(me: &Process, frame: &mut TrapFrame, supervisor: u64, pid: u64) {
    let n = frame.rax;
    frame.rax = serve(me, frame, supervisor, pid);
    let gave_up = crate::pipes::gave_up(frame.rax);
    if gave_up {
        crate::pipes::note_restart(n);
    }
    x86_64::instructions::interrupts::disable();
    if abi::linux::takes_short_frame(n) {
        proc::leave_for_user_short(me, frame);
    } else {
        proc::leave_for_user_stopping(me, frame);
        if gave_up {
            crate::pipes::restart_unclaimed(frame);
        }
    }
}

/// Serves system call `frame.rax` of Linux process `me`, whose supervisor
/// is `supervisor` and Linux pid `pid`; returns what its rax gets.
#[inline(always)]
fn serve(me: &Process, frame: &mut TrapFrame, supervisor: u64, pid: u64) -> u64 {
    let n = frame.rax;
    let a = *frame.syscall_args();
    match n {
        nr::GETPID => pid,
        nr::GETTID => proc::linux_tid(pid),
        nr::SET_TID_ADDRESS => {
            sched::with_current(|c| c.clear_word.store(a[0], core::sync::atomic::Ordering::Relaxed));
            proc::linux_tid(pid)
        }
        nr::FUTEX => crate::futex::futex(me, a),
        nr::SCHED_YIELD => {
            sched::schedule();
            0
        }
        nr::CLOCK_GETTIME => result(clock_gettime(a[0], a[1])),
        nr::CLOCK_GETRES => result(clock_getres(a[0], a[1])),
        nr::TIME => time(a[0]),
        nr::NANOSLEEP => result(nanosleep(me, a[0], a[1])),
        nr::CLOCK_NANOSLEEP => clock_nanosleep(me, a[0], a[1], a[2], a[3]),
        nr::GETTIMEOFDAY => result(gettimeofday(a[0], a[1])),
        nr::ARCH_PRCTL => arch_prctl(a[0], a[1]),
        nr::BRK => brk(me, a[0]),
        nr::MMAP if a[3] & MAP_ANONYMOUS != 0 => mmap_anonymous(me, a[0], a[1], a[2], a[3]),
        nr::MUNMAP => result(munmap(me, a[0], a[1])),
        nr::MPROTECT => result(mprotect(me, a[0], a[1], a[2])),
        nr::READ | nr::WRITE | nr::READV | nr::WRITEV | nr::SENDTO | nr::RECVFROM | nr::SENDMSG | nr::RECVMSG
            if let Some(v) = crate::pipes::serve(me, n, &a) =>
        {
            v
        }
        nr::PREAD64 if let Some(v) = crate::pipes::serve_pread(me, supervisor, &a) => v,
        _ => forward(
            me,
            supervisor,
            LinuxCall {
                nr: n,
                args: a,
                pid: proc::linux_tid(pid),
            },
        ),
    }
}

/// The call to the supervisor. The supervisor may end the process
/// instead of returning; a process whose supervisor is gone cannot go on,
/// and is ended.
fn forward(me: &Process, supervisor: u64, call: LinuxCall) -> u64 {
    match ipc::supervise::to_supervisor(me, supervisor, entry::SYSCALL, proc::as_bytes(&call)) {
        Ok(v) => v,
        Err(Ending::Exit(status)) => proc::exit_current(status),
        Err(Ending::Thread) => proc::exit_thread(0),
        Err(Ending::Gone) => {
            if !me.is_killed() {
                kcore::println!("process {} ({}): its supervisor is gone", me.pid(), me.name());
            }
            proc::exit_current(abi::KILLED_STATUS)
        }
    }
}

const CLOCK_REALTIME: u64 = 0;
const CLOCK_MONOTONIC: u64 = 1;
const CLOCK_PROCESS_CPUTIME_ID: u64 = 2;
const CLOCK_THREAD_CPUTIME_ID: u64 = 3;
const CLOCK_MONOTONIC_RAW: u64 = 4;
const CLOCK_REALTIME_COARSE: u64 = 5;
const CLOCK_MONOTONIC_COARSE: u64 = 6;
const CLOCK_BOOTTIME: u64 = 7;
const CLOCK_TAI: u64 = 11;
pub(crate) const NS: u64 = 1_000_000_000;

/// The time on `clock_id`, in nanoseconds.
fn now_on(clock_id: u64) -> Result<u64, Error> {
    Ok(match clock_id {
        CLOCK_REALTIME | CLOCK_REALTIME_COARSE | CLOCK_TAI => clock::nanos() + EPOCH_AT_BOOT * NS,
        CLOCK_MONOTONIC | CLOCK_MONOTONIC_RAW | CLOCK_MONOTONIC_COARSE | CLOCK_BOOTTIME => clock::nanos(),
        CLOCK_PROCESS_CPUTIME_ID | CLOCK_THREAD_CPUTIME_ID => {
            let c = sched::current().ok_or(Error::NotFound)?;
            let ran = clock::cycles_to_ns(c.cpu_cycles.load(core::sync::atomic::Ordering::Relaxed));
            // What it has run since it was last switched in counts too.
            ran + clock::cycles_to_ns(clock::cycles().saturating_sub(sched::slice_start()))
        }
        _ => return Err(Error::Invalid),
    })
}

fn clock_gettime(clock_id: u64, to: u64) -> Result<u64, Error> {
    let ns = now_on(clock_id)?;
    uaccess::write(to, &[ns / NS, ns % NS])?;
    Ok(0)
}

/// The coarse clocks move with the timer's tick (Linux: 250 Hz, 4 ms);
/// the others by the nanosecond.
fn clock_getres(clock_id: u64, to: u64) -> Result<u64, Error> {
    now_on(clock_id)?;
    let res: u64 = match clock_id {
        CLOCK_REALTIME_COARSE | CLOCK_MONOTONIC_COARSE => 4_000_000,
        _ => 1,
    };
    if to != 0 {
        uaccess::write(to, &[0u64, res])?;
    }
    Ok(0)
}

/// `time`: seconds on CLOCK_REALTIME, stored too if `to` is not null.
fn time(to: u64) -> u64 {
    let s = (clock::nanos() + EPOCH_AT_BOOT * NS) / NS;
    if to != 0 && uaccess::write(to, &s).is_err() {
        return fail(errno::EFAULT);
    }
    s
}

/// A `struct timespec` from user memory, checked as Linux checks it.
pub(crate) fn read_timespec(at: u64) -> Result<u64, u64> {
    let ts: [u64; 2] = uaccess::read(at).map_err(|_| errno::EFAULT)?;
    // (Signed fields: a negative one is above 2^63 here.)
    if ts[0] >> 63 != 0 || ts[1] >= NS {
        return Err(errno::EINVAL);
    }
    Ok(ts[0].saturating_mul(NS).saturating_add(ts[1]))
}

/// Sleeps until `deadline` (ns since boot) unless the process, or this
/// thread of it alone (a signal sent to the thread), is asked to stop for
/// its supervisor (a signal to deliver) or killed: then false.
fn sleep_until(me: &Process, deadline: u64) -> bool {
    let own = || sched::with_current(|c| c.attention.load(core::sync::atomic::Ordering::Acquire)).unwrap_or(false);
    loop {
        if clock::nanos() >= deadline {
            return true;
        }
        if me.attention_pending() || own() || me.is_killed() {
            return false;
        }
        sched::sleep_until(deadline);
    }
}

/// An interrupted relative sleep: what is left goes to `rem` (if given).
fn interrupted(deadline: u64, rem: u64) -> u64 {
    if rem != 0 {
        let left = deadline.saturating_sub(clock::nanos());
        if uaccess::write(rem, &[left / NS, left % NS]).is_err() {
            return fail(errno::EFAULT);
        }
    }
    fail(errno::EINTR)
}

/// `nanosleep` served here: a sleep touches nothing but the sleeper, and
/// a signal for it ends the sleep through its attention stop.
fn nanosleep(me: &Process, req: u64, rem: u64) -> Result<u64, Error> {
    let ns = match read_timespec(req) {
        Ok(ns) => ns,
        Err(e) => return Ok(fail(e)),
    };
    let deadline = clock::nanos().saturating_add(ns);
    Ok(if sleep_until(me, deadline) {
        0
    } else {
        interrupted(deadline, rem)
    })
}

const TIMER_ABSTIME: u64 = 1;

/// `clock_nanosleep` returns its error number (not -1 and errno).
fn clock_nanosleep(me: &Process, clock_id: u64, flags: u64, req: u64, rem: u64) -> u64 {
    // The clock's distance from the kernel's (a constant: reading both
    // and subtracting could go below zero by the time between readings).
    let base = match clock_id {
        CLOCK_THREAD_CPUTIME_ID => return fail(errno::EOPNOTSUPP),
        CLOCK_PROCESS_CPUTIME_ID => return fail(errno::EINVAL),
        CLOCK_REALTIME | CLOCK_REALTIME_COARSE | CLOCK_TAI => EPOCH_AT_BOOT * NS,
        CLOCK_MONOTONIC | CLOCK_MONOTONIC_RAW | CLOCK_MONOTONIC_COARSE | CLOCK_BOOTTIME => 0,
        _ => return fail(errno::EINVAL),
    };
    let ns = match read_timespec(req) {
        Ok(ns) => ns,
        Err(e) => return fail(e),
    };
    let deadline = if flags & TIMER_ABSTIME != 0 {
        ns.saturating_sub(base)
    } else {
        clock::nanos().saturating_add(ns)
    };
    match sleep_until(me, deadline) {
        true => 0,
        false if flags & TIMER_ABSTIME != 0 => fail(errno::EINTR),
        false => interrupted(deadline, rem),
    }
}

fn gettimeofday(to: u64, zone: u64) -> Result<u64, Error> {
    if to != 0 {
        let ns = clock::nanos() + EPOCH_AT_BOOT * 1_000_000_000;
        uaccess::write(to, &[ns / 1_000_000_000, (ns % 1_000_000_000) / 1000])?;
    }
    // The time zone: UTC (two zero words: minutes west, no daylight saving time).
    if zone != 0 {
        uaccess::write(zone, &0u64)?;
    }
    Ok(0)
}

const ARCH_SET_FS: u64 = 0x1002;
const ARCH_GET_FS: u64 = 0x1003;
const ARCH_SET_GS: u64 = 0x1001;
const ARCH_GET_GS: u64 = 0x1004;
const ARCH_GET_CPUID: u64 = 0x1011;
const ARCH_SET_CPUID: u64 = 0x1012;

fn arch_prctl(code: u64, addr: u64) -> u64 {
    let Some(c) = sched::current() else {
        return fail(errno::ESRCH);
    };
    match code {
        ARCH_SET_FS if c.set_fs_base(addr) => 0,
        ARCH_SET_FS => fail(errno::EPERM),
        ARCH_GET_FS => result(uaccess::write(addr, &c.fs_base()).map(|()| 0)),
        ARCH_SET_GS if c.set_gs_base(addr) => 0,
        ARCH_SET_GS => fail(errno::EPERM),
        ARCH_GET_GS => result(uaccess::write(addr, &c.gs_base()).map(|()| 0)),
        // CPUID always executes: the kernel does not use the processor's
        // CPUID faulting, so it cannot be turned off (Linux on a CPU
        // without the feature).
        ARCH_GET_CPUID => 1,
        ARCH_SET_CPUID => fail(errno::ENODEV),
        _ => fail(errno::EINVAL),
    }
}

const MAP_SHARED: u64 = 0x01;
const MAP_FIXED: u64 = 0x10;
/// At `addr` exactly, refused (EEXIST) if anything is mapped there.
const MAP_FIXED_NOREPLACE: u64 = 0x100000;
/// `map_into`: at `addr` exactly, failing if anything is there (the
/// program break's growth; not a Linux flag).
const EXACT: u64 = 1 << 63;
const MAP_ANONYMOUS: u64 = 0x20;
const PROT_READ: u64 = 1;
const PROT_WRITE: u64 = 2;
const PROT_EXEC: u64 = 4;

fn pages_of(len: u64) -> Result<u64, Error> {
    if len == 0 || len > 1 << 40 {
        return Err(Error::Invalid);
    }
    Ok(len.div_ceil(PAGE_SIZE))
}

/// Anonymous zeroed memory in `p`'s space: at `addr` with MAP_FIXED (whole
/// mappings already there are unmapped first), else wherever there is room.
pub fn map_into(p: &Process, addr: u64, len: u64, prot: u64, flags: u64) -> Result<u64, Error> {
    let pages = pages_of(len)?;
    let fixed = flags & MAP_FIXED != 0;
    if fixed {
        if !addr.is_multiple_of(PAGE_SIZE) {
            return Err(Error::Invalid);
        }
        UserRange::new(addr, (pages * PAGE_SIZE) as usize)?;
        munmap(p, addr, pages * PAGE_SIZE)?;
    }
    // PROT_NONE memory is a reservation a later mprotect opens (a thread's
    // stack below its guard page): writable once opened.
    let none = prot & (PROT_READ | PROT_WRITE | PROT_EXEC) == 0;
    let writable = prot & PROT_WRITE != 0 || none;
    let executable = prot & PROT_EXEC != 0;
    let region = vregion::create(resource::KERNEL, RegionKind::Heap, pages, writable, executable)?;
    // A hint is taken when its range is free (as Linux's), else the
    // mapping goes wherever there is room.
    let hinted = addr != 0
        && addr.is_multiple_of(PAGE_SIZE)
        && UserRange::new(addr, (pages * PAGE_SIZE) as usize).is_ok()
        && p.space()
            .is_some_and(|s| is_free(&s.lock(), addr, addr + pages * PAGE_SIZE));
    let at = if fixed || hinted || flags & EXACT != 0 {
        At::Address(addr)
    } else {
        p.free_place()
    };
    match vspace::attach(resource::KERNEL, p.space_id(), region, at) {
        Ok(a) => {
            resource::set_owner(a.id, p.pid());
            resource::set_owner(region, p.pid());
            if (flags & MAP_SHARED != 0 || none)
                && let Some(space) = p.space()
                && let Some(at) = space.lock().attachment_mut(a.id, 0)
            {
                at.region.fork_shares = flags & MAP_SHARED != 0;
                at.region.no_access = none;
            }
            Ok(a.base)
        }
        Err(e) => {
            let _ = mediator::delete(resource::KERNEL, region);
            Err(e)
        }
    }
}

fn mmap_anonymous(me: &Process, addr: u64, len: u64, prot: u64, flags: u64) -> u64 {
    // Linux asks for one of the two kinds (MAP_SHARED_VALIDATE is both).
    if flags & 0x3 == 0 {
        return fail(errno::EINVAL);
    }
    if len > kcore::vm::USER_END {
        return fail(errno::ENOMEM);
    }
    if flags & MAP_FIXED_NOREPLACE != 0 && flags & MAP_FIXED == 0 {
        let pages = match pages_of(len) {
            Ok(n) => n,
            Err(e) => return errno_of(e),
        };
        if !addr.is_multiple_of(PAGE_SIZE) || UserRange::new(addr, (pages * PAGE_SIZE) as usize).is_err() {
            return fail(errno::EINVAL);
        }
        let end = addr + pages * PAGE_SIZE;
        if !me.space().is_some_and(|s| is_free(&s.lock(), addr, end)) {
            return fail(errno::EEXIST);
        }
        return result(map_into(me, addr, len, prot, flags | EXACT));
    }
    result(map_into(me, addr, len, prot, flags))
}

/// Whether no mapping of `s` meets `[start, end)`.
fn is_free(s: &kcore::vm::space::VirtualSpace, start: u64, end: u64) -> bool {
    !s.regions().any(|r| r.base < end && start < r.end())
}

/// Unmaps every whole anonymous mapping in the range, and cuts the range
/// out of a private one only partly in it (`cut`); a shared one only
/// partly in it stays whole (Linux would split it).
fn munmap(p: &Process, addr: u64, len: u64) -> Result<u64, Error> {
    if !addr.is_multiple_of(PAGE_SIZE) || len == 0 {
        return Err(Error::Invalid);
    }
    let end = addr
        .checked_add(len)
        .and_then(|e| e.checked_next_multiple_of(PAGE_SIZE))
        .ok_or(Error::Invalid)?;
    let space = p.space().ok_or(Error::NotFound)?;
    let (inside, across) = {
        let s = space.lock();
        let anon = |r: &&kcore::vm::space::Attached| r.region.kind == kcore::vm::region::Kind::Heap;
        let inside = resource::try_collect(
            s.regions()
                .filter(anon)
                .filter(|r| r.base >= addr && r.end() <= end)
                .map(|r| (r.link_id, r.region_id)),
        )?;
        let across = resource::try_collect(
            s.regions()
                .filter(anon)
                .filter(|r| r.base < end && addr < r.end() && !(r.base >= addr && r.end() <= end))
                .map(|r| r.base),
        )?;
        (inside, across)
    };
    for (link, region) in inside {
        mediator::delete(resource::KERNEL, link)?;
        mediator::delete(resource::KERNEL, region)?;
    }
    for base in across {
        cut(p, base, addr, end, false)?;
    }
    Ok(0)
}

/// Cuts `[addr, end)` out of the private anonymous mapping at `base`: the
/// parts outside the range (and the part inside it with `keep_inside`)
/// become mappings of their own at the same addresses, with its
/// protection and its present pages' bytes (a page never touched stays
/// absent, zero when touched). The bytes are copied, so the cost is that
/// of the pages kept; a mapping whose frames others share (MAP_SHARED, a
/// SysV segment) or a pager fills is left whole.
fn cut(p: &Process, base: u64, addr: u64, end: u64, keep_inside: bool) -> Result<(), Error> {
    let space = p.space().ok_or(Error::NotFound)?;
    let (link, old, rend, writable, executable, none) = {
        let s = space.lock();
        let Some(r) = s.region_at(base) else {
            return Ok(());
        };
        let g = &r.region;
        if g.fork_shares || g.sharers() != 0 || g.is_paged() || g.is_nvm() || g.is_device() {
            return Ok(());
        }
        (r.link_id, r.region_id, r.end(), g.writable, g.executable, g.no_access)
    };
    let inside = if keep_inside {
        (addr.max(base), end.min(rend))
    } else {
        (0, 0)
    };
    let pieces = [(base, addr.min(rend)), inside, (end.max(base), rend)];
    let mut made: [Option<(ResId, u64)>; 3] = [None, None, None];
    let mut page = alloc::vec![0u8; PAGE_SIZE as usize];
    for (slot, &(from, to)) in made.iter_mut().zip(pieces.iter()) {
        if from >= to {
            continue;
        }
        let pages = (to - from) / PAGE_SIZE;
        let region = match vregion::create(resource::KERNEL, RegionKind::Heap, pages, writable, executable) {
            Ok(r) => r,
            Err(e) => {
                drop_made(&made);
                return Err(e);
            }
        };
        *slot = Some((region, from));
        for i in 0..pages {
            let at = from + i * PAGE_SIZE;
            let present = {
                let s = space.lock();
                s.region_at(at).is_some_and(|r| {
                    let index = ((at - r.base) / PAGE_SIZE) as usize;
                    r.region.frame(index).is_some() && r.region.read_at(index * PAGE_SIZE as usize, &mut page)
                })
            };
            if !present {
                continue;
            }
            let copied = vregion::with_detached(resource::KERNEL, region, |g| {
                g.populate(i as usize).is_ok() && g.write_at((i * PAGE_SIZE) as usize, &page)
            });
            if copied != Ok(true) {
                drop_made(&made);
                return Err(Error::NoMemory);
            }
        }
    }
    mediator::delete(resource::KERNEL, link)?;
    mediator::delete(resource::KERNEL, old)?;
    for &(region, from) in made.iter().flatten() {
        let a = vspace::attach(resource::KERNEL, p.space_id(), region, At::Address(from))?;
        resource::set_owner(a.id, p.pid());
        resource::set_owner(region, p.pid());
        if none
            && let Some(space) = p.space()
            && let Some(at) = space.lock().attachment_mut(a.id, 0)
        {
            at.region.no_access = true;
        }
    }
    Ok(())
}

/// Deletes the detached regions `cut` made before it gave up.
fn drop_made(made: &[Option<(ResId, u64)>]) {
    for &(region, _) in made.iter().flatten() {
        let _ = mediator::delete(resource::KERNEL, region);
    }
}

/// Applied to the anonymous mappings the range covers whole
/// (`VirtualSpace::protect` says what else): PROT_NONE makes one
/// unreachable, so that a call given its address is EFAULT and a touch
/// SIGSEGV, as on Linux. A range with a page not mapped is ENOMEM.
fn mprotect(p: &Process, addr: u64, len: u64, prot: u64) -> Result<u64, Error> {
    if !addr.is_multiple_of(PAGE_SIZE) || prot & !(PROT_READ | PROT_WRITE | PROT_EXEC) != 0 {
        // PROT_GROWSDOWN and PROT_GROWSUP too: they name a mapping that
        // grows, which Tessera's are not.
        return Err(Error::Invalid);
    }
    if len == 0 {
        return Ok(0);
    }
    // Any length in user space (a thread's whole stack, megabytes).
    let end = addr
        .checked_add(len)
        .and_then(|e| e.checked_next_multiple_of(PAGE_SIZE))
        .ok_or(Error::NoMemory)?;
    if end > kcore::vm::USER_END {
        return Err(Error::NoMemory);
    }
    let space = p.space().ok_or(Error::NotFound)?;
    let across = {
        let s = space.lock();
        if !s.covers(addr, end) {
            return Err(Error::NoMemory);
        }
        resource::try_collect(
            s.regions()
                .filter(|r| r.region.kind == kcore::vm::region::Kind::Heap)
                .filter(|r| r.base < end && addr < r.end() && (r.base < addr || r.end() > end))
                .map(|r| r.base),
        )?
    };
    // Part of a private mapping becomes one of its own, so that the
    // change applies to it alone.
    for base in across {
        cut(p, base, addr, end, true)?;
    }
    let mut s = space.lock();
    let none = prot & (PROT_READ | PROT_WRITE | PROT_EXEC) == 0;
    s.protect(addr, end, prot & PROT_WRITE != 0, prot & PROT_EXEC != 0, none);
    Ok(0)
}

/// The program break: starts above the highest writable segment of the
/// program, grows by mappings of its own, and shrinking unmaps the whole
/// ones above it (memory that comes back is zeroed, as Linux's is); a
/// request it cannot meet leaves it where it was.
fn brk(p: &Process, want: u64) -> u64 {
    let (mut base, mut cur, mut mapped) = p.brk();
    if base == 0 {
        let Ok(prog) = resource::program::get(p.program()) else {
            return 0;
        };
        base = prog
            .segments
            .iter()
            .filter(|s| s.writable)
            .map(|s| s.vaddr + s.memsz)
            .max()
            .unwrap_or(0)
            .next_multiple_of(PAGE_SIZE);
        (cur, mapped) = (base, base);
        p.set_brk((base, cur, mapped));
    }
    if want < base || want == cur {
        return cur;
    }
    let want_to = want.next_multiple_of(PAGE_SIZE);
    if want_to > mapped {
        // The break stays a page below the next mapping, as Linux's.
        if p.space()
            .is_none_or(|s| !is_free(&s.lock(), mapped, want_to + PAGE_SIZE))
        {
            return cur;
        }
        if map_into(p, mapped, want_to - mapped, PROT_WRITE | 1, EXACT) != Ok(mapped) {
            return cur;
        }
        mapped = want_to;
    } else if want_to < mapped {
        let _ = munmap(p, want_to, mapped - want_to);
        // A mapping `cut` could not cut stays whole.
        mapped = p
            .space()
            .and_then(|s| s.lock().region_at(want_to).map(|r| r.end()))
            .unwrap_or(want_to);
    }
    p.set_brk((base, want, mapped));
    want
}
