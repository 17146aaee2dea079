//! A Linux process's system calls (`Route::Linux`). The kernel serves the
//! few that touch only the caller's own kernel state (`abi::linux::
//! KERNEL_SERVED`: its identity, the clock, its address space, its thread
//! pointer) and sends every other one to the process's supervisor as a
//! rendezvous (seed 003), the process waiting with its registers in its
//! frame until the supervisor returns a value (`caller_return`).
//!
//! What these calls do differs from Linux in places (said at each): munmap
//! and mprotect of part of an anonymous mapping copy its parts into
//! mappings of their own; of part of one whose frames another mapping
//! shares (after a fork of MAP_SHARED memory, a SysV segment), munmap
//! leaves it whole and mprotect is accepted and not applied, except that
//! it opens a PROT_NONE one.

use abi::linux::{LinuxCall, entry, nr};
use abi::{Error, RegionKind};
use ipc::process::{self as proc, Process};
use ipc::supervise::Ending;
use kcore::arch::x86_64::trap::TrapFrame;
use kcore::clock;
use kcore::mm::layout::PAGE_SIZE;
use kcore::uaccess::{self, UserRange};
use kcore::vm::space::At;
use linuxabi::mman::{
    MADV_DONTNEED, MADV_DONTNEED_LOCKED, MADV_FREE, MADV_KEEPONFORK, MADV_NORMAL, MADV_REMOVE, MADV_WIPEONFORK,
    MAP_ANONYMOUS, MAP_FIXED, MAP_FIXED_NOREPLACE, MAP_LOCKED, MAP_SHARED, MCL_CURRENT, MLOCK_ONFAULT,
    MREMAP_DONTUNMAP, MREMAP_FIXED, MREMAP_MAYMOVE, PROT_EXEC, PROT_READ, PROT_WRITE,
};
use linuxabi::ptimer::{
    CLOCK_BOOTTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE, CLOCK_MONOTONIC_RAW, CLOCK_PROCESS_CPUTIME_ID,
    CLOCK_REALTIME, CLOCK_REALTIME_COARSE, CLOCK_TAI, CLOCK_THREAD_CPUTIME_ID, TIMER_ABSTIME,
};
use resource::{ResId, mediator, vregion, vspace};

pub(crate) use linuxabi::errno;

/// A negated errno, as a system call returns it.
pub(crate) fn fail(errno: i64) -> u64 {
    errno.wrapping_neg() as u64
}

/// The Linux errno for a kernel error, negated as a call returns it.
fn errno_of(e: Error) -> u64 {
    fail(errno_num(e))
}

/// The Linux errno for a kernel error.
fn errno_num(e: Error) -> i64 {
    match e {
        Error::NoSys => errno::ENOSYS,
        Error::Fault => errno::EFAULT,
        Error::Invalid | Error::BadProgram => errno::EINVAL,
        Error::NoMemory | Error::Limit => errno::ENOMEM,
        Error::NotFound => errno::ENOENT,
        Error::Denied => errno::EPERM,
        Error::Deadlock | Error::Busy => errno::EBUSY,
    }
}

fn result(r: Result<u64, Error>) -> u64 {
    r.unwrap_or_else(errno_of)
}

/// The time Linux programs see as CLOCK_REALTIME at boot (the machine has
/// no wall clock the kernel reads; QEMU's icount runs start their guest
/// clock there too): 2024-01-01T00:00:00Z.
pub(crate) use linuxabi::ptimer::EPOCH_AT_BOOT;

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
        // 0: not known here yet; the supervisor answers (the last arm).
        nr::GETPPID if let ppid @ 1.. = me.linux_ppid() => ppid,
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
        // A mapping's limits refuse it (`filemap`): EACCES, not EPERM.
        nr::MPROTECT => match mprotect(me, a[0], a[1], a[2]) {
            Err(Error::Denied) => fail(errno::EACCES),
            r => result(r),
        },
        nr::MREMAP => mremap(me, a[0], a[1], a[2], a[3], a[4]),
        nr::MINCORE => mincore(me, a[0], a[1], a[2]),
        nr::MADVISE => madvise(me, a[0], a[1], a[2]),
        nr::MLOCK | nr::MUNLOCK | nr::MLOCK2 | nr::MLOCKALL | nr::MUNLOCKALL => {
            let mut args = a;
            args[abi::linux::MLOCK_MAPPED_ARG] = if n == nr::MLOCKALL {
                me.space()
                    .map_or(0, |s| s.lock().regions().map(|r| r.region.size()).sum())
            } else {
                range_mapped(me, a[0], a[1]) as u64
            };
            let call = LinuxCall {
                nr: n,
                args,
                pid: proc::linux_tid(pid),
            };
            let v = forward(me, supervisor, call);
            if v == 0 {
                mark_locked(me, n, a);
            }
            // A locked range's pages are present, as Linux faults them in
            // (not with MLOCK_ONFAULT).
            if v == 0 && (n == nr::MLOCK || (n == nr::MLOCK2 && a[2] & MLOCK_ONFAULT == 0)) {
                populate(me, a[0], a[1]);
            }
            v
        }
        nr::READ | nr::WRITE | nr::READV | nr::WRITEV | nr::SENDTO | nr::RECVFROM | nr::SENDMSG | nr::RECVMSG
            if let Some(v) = crate::pipes::serve(me, n, &a) =>
        {
            v
        }
        nr::RT_SIGPROCMASK => rt_sigprocmask(me, supervisor, pid, a),
        nr::PREAD64 if let Some(v) = crate::pipes::serve_pread(me, supervisor, &a) => v,
        nr::FSTAT | nr::NEWFSTATAT if let Some(v) = crate::pipes::serve_fstat(me, supervisor, n, &a) => v,
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
fn forward(me: &Process, supervisor: u64, mut call: LinuxCall) -> u64 {
    // The supervisor reads the thread's mask again if the kernel changed
    // it meanwhile (a kernel-served rt_sigprocmask).
    call.pid |= proc::take_sigmask_news();
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

/// rt_sigprocmask on the thread's mask the kernel keeps, in Linux's
/// order: the size (EINVAL), the set read (EFAULT), `how` (EINVAL), the
/// old mask written (EFAULT, the change made all the same). SIGKILL and
/// SIGSTOP are never blocked. A change that blocks or unblocks a signal
/// the supervisor published as pending is the supervisor's (a delivery on
/// the way back to user mode, or a move to another thread): the call goes
/// to it as before, with its set read, the mask unchanged here. So does
/// a set the kernel cannot read (EFAULT there, as before).
fn rt_sigprocmask(me: &Process, supervisor: u64, pid: u64, a: [u64; 6]) -> u64 {
    use abi::linux::sigmask::UNBLOCKABLE;
    use core::sync::atomic::Ordering::{Relaxed, Release, SeqCst};
    use linuxabi::signal::{SIG_BLOCK, SIG_SETMASK, SIG_UNBLOCK};
    let (how, set_at, old_at, size) = (a[0], a[1], a[2], a[3]);
    if size != 8 {
        return fail(errno::EINVAL);
    }
    let to_supervisor = |set: Option<u64>| {
        let mut args = a;
        (args[abi::linux::SIGSET_ARG], args[abi::linux::SIGSET_READ_ARG]) = match set {
            Some(set) => (set, abi::linux::SIGSET_READ),
            None => (0, 0),
        };
        let call = LinuxCall {
            nr: nr::RT_SIGPROCMASK,
            args,
            pid: proc::linux_tid(pid),
        };
        forward(me, supervisor, call)
    };
    let Some(thread) = sched::current() else {
        return to_supervisor(None);
    };
    let old = thread.sigmask.load(Relaxed);
    if set_at != 0 {
        let Ok(set) = uaccess::read::<u64>(set_at) else {
            return to_supervisor(None);
        };
        let new = match how {
            SIG_BLOCK => old | set,
            SIG_UNBLOCK => old & !set,
            SIG_SETMASK => set,
            _ => return fail(errno::EINVAL),
        } & !UNBLOCKABLE;
        if new != old {
            // The mask first, then the pending set (`sigmask::PENDING`):
            // a signal published meanwhile is seen here, or its sender
            // sees the new mask.
            thread.sigmask.store(new, SeqCst);
            if (old ^ new) & me.linux_sig_pending() != 0 {
                // A supervisor that read the mask meanwhile read `new`:
                // the call says so, and it reads `old` again.
                thread.sigmask.store(old, SeqCst);
                thread.sigmask_news.store(true, SeqCst);
                drop(thread);
                return to_supervisor(Some(set));
            }
            thread.sigmask_news.store(true, Release);
        }
    }
    drop(thread);
    if old_at != 0 && uaccess::write(old_at, &old).is_err() {
        return fail(errno::EFAULT);
    }
    0
}

pub(crate) const NS: u64 = 1_000_000_000;

/// The time on `clock_id`, in nanoseconds.
fn now_on(clock_id: u64) -> Result<u64, Error> {
    Ok(match clock_id {
        CLOCK_REALTIME | CLOCK_REALTIME_COARSE | CLOCK_TAI => crate::wallclock::now(),
        CLOCK_MONOTONIC | CLOCK_MONOTONIC_RAW | CLOCK_MONOTONIC_COARSE | CLOCK_BOOTTIME => clock::nanos(),
        CLOCK_PROCESS_CPUTIME_ID | CLOCK_THREAD_CPUTIME_ID => {
            let c = sched::current().ok_or(Error::NotFound)?;
            let ran = clock::cycles_to_ns(c.cpu_cycles.load(core::sync::atomic::Ordering::Relaxed));
            // What it has run since it was last switched in counts too.
            ran + clock::cycles_to_ns(clock::cycles().saturating_sub(sched::switched_in()))
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
    let s = crate::wallclock::now() / NS;
    if to != 0 && uaccess::write(to, &s).is_err() {
        return fail(errno::EFAULT);
    }
    s
}

/// A `struct timespec` from user memory, checked as Linux checks it.
pub(crate) fn read_timespec(at: u64) -> Result<u64, i64> {
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

/// `clock_nanosleep` returns its error number (not -1 and errno).
fn clock_nanosleep(me: &Process, clock_id: u64, flags: u64, req: u64, rem: u64) -> u64 {
    // The clock's distance from the kernel's (a constant: reading both
    // and subtracting could go below zero by the time between readings).
    let base = match clock_id {
        CLOCK_THREAD_CPUTIME_ID => return fail(errno::EOPNOTSUPP),
        CLOCK_PROCESS_CPUTIME_ID => return fail(errno::EINVAL),
        CLOCK_REALTIME | CLOCK_REALTIME_COARSE | CLOCK_TAI => crate::wallclock::base(),
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
        let ns = crate::wallclock::now();
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

/// `map_into`: at `addr` exactly, failing if anything is there (the
/// program break's growth; not a Linux flag).
const EXACT: u64 = 1 << 63;

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
    let region = vregion::create_for(p.memory_owner(), RegionKind::Heap, pages, writable, executable)?;
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
            resource::set_owner(a.id, p.memory_owner());
            resource::set_owner(region, p.memory_owner());
            let unreadable = !none && prot & PROT_READ == 0;
            if (flags & MAP_SHARED != 0 || none || unreadable)
                && let Some(space) = p.space()
                && let Some(at) = space.lock().attachment_mut(a.id, 0)
            {
                at.region.fork_shares = flags & MAP_SHARED != 0;
                at.region.no_access = none;
                at.region.linux.set_unreadable(unreadable);
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
        return locked_if_asked(me, map_into(me, addr, len, prot, flags | EXACT), len, flags);
    }
    locked_if_asked(me, map_into(me, addr, len, prot, flags), len, flags)
}

/// MAP_LOCKED: the new mapping is locked and its pages present, as mlock
/// makes them.
fn locked_if_asked(p: &Process, made: Result<u64, Error>, len: u64, flags: u64) -> u64 {
    if let Ok(at) = made
        && flags & MAP_LOCKED != 0
    {
        mark_locked(p, nr::MLOCK, [at, len, 0, 0, 0, 0]);
        populate(p, at, len);
    }
    result(made)
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

/// What the kernel keeps of a mapping's Linux flags on its region and its
/// attachment, carried over to the mappings it is cut into or moved to.
#[derive(Clone, Copy)]
struct LinuxFlags {
    none: bool,
    shares: bool,
    marks: kcore::vm::region::LinuxMarks,
    file_end: kcore::vm::region::FileEnd,
}

impl LinuxFlags {
    fn of(a: &kcore::vm::space::Attached) -> LinuxFlags {
        let g = &a.region;
        LinuxFlags {
            none: g.no_access,
            shares: g.fork_shares,
            marks: g.linux,
            file_end: a.file_end,
        }
    }

    /// Gives them to attachment `link` of `s`.
    fn apply(self, s: &mut kcore::vm::space::VirtualSpace, link: ResId) {
        if let Some(at) = s.attachment_mut(link, 0) {
            let g = &mut at.region;
            (g.no_access, g.fork_shares, g.linux) = (self.none, self.shares, self.marks);
        }
        s.set_file_end_of(link, self.file_end);
    }

    /// The flags of a part cut out of the mapping from its page `skip`.
    fn for_part_at(self, skip: u64) -> LinuxFlags {
        LinuxFlags {
            file_end: self.file_end.for_part_at(skip as usize),
            ..self
        }
    }
}

/// Cuts `[addr, end)` out of the anonymous mapping at `base`: the
/// parts outside the range (and the part inside it with `keep_inside`)
/// become mappings of their own at the same addresses, with its
/// protection and its present pages' bytes (a page never touched stays
/// absent, zero when touched). The bytes are copied, so the cost is that
/// of the pages kept; a mapping whose frames others share (MAP_SHARED
/// memory after a fork, a SysV segment) or a pager fills is left whole.
fn cut(p: &Process, base: u64, addr: u64, end: u64, keep_inside: bool) -> Result<(), Error> {
    let space = p.space().ok_or(Error::NotFound)?;
    let (link, old, rend, writable, executable, linux) = {
        let s = space.lock();
        let Some(r) = s.region_at(base) else {
            return Ok(());
        };
        let g = &r.region;
        if g.is_paged() || g.is_nvm() || g.is_device() {
            return Ok(());
        }
        // A MAP_SHARED mapping no fork has shared yet is the process's
        // alone: its pieces may be copies. One whose frames others share
        // (a forked child, the shared server's file object, a segment) is
        // cut into parts over the same frames.
        if g.sharers() != 0 {
            drop(s);
            return cut_shared(p, base, addr, end, keep_inside);
        }
        (
            r.link_id,
            r.region_id,
            r.end(),
            g.writable,
            g.executable,
            LinuxFlags::of(r),
        )
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
        let region = match vregion::create_for(p.memory_owner(), RegionKind::Heap, pages, writable, executable) {
            Ok(r) => r,
            Err(e) => {
                drop_made(&made);
                return Err(e);
            }
        };
        *slot = Some((region, from));
        for i in 0..pages {
            let at = from + i * PAGE_SIZE;
            // A private file mapping's page still the file's stays so in
            // the part (the same frame, read-only until written); any
            // other present page is copied.
            let (present, file_page) = {
                let s = space.lock();
                s.region_at(at).map_or((false, None), |r| {
                    let index = ((at - r.base) / PAGE_SIZE) as usize;
                    // Counted once more until adopted, so that the frame
                    // stays though another thread's truncation lets go of
                    // it meanwhile.
                    let file_page = r
                        .region
                        .frame(index)
                        .filter(|&pa| r.region.is_file_page(index) && kcore::mm::frames::share_all(&[pa]).is_ok());
                    let present = file_page.is_some()
                        || (r.region.frame(index).is_some() && r.region.read_at(index * PAGE_SIZE as usize, &mut page));
                    (present, file_page)
                })
            };
            if !present {
                continue;
            }
            if let Some(pa) = file_page {
                let adopted = vregion::with_detached(resource::KERNEL, region, |g| g.adopt_file_page(i as usize, pa));
                kcore::mm::frames::release(pa);
                if adopted == Ok(true) {
                    continue;
                }
            }
            if file_page.is_some() {
                let s = space.lock();
                let read = s.region_at(at).is_some_and(|r| {
                    let index = ((at - r.base) / PAGE_SIZE) as usize;
                    r.region.read_at(index * PAGE_SIZE as usize, &mut page)
                });
                if !read {
                    continue;
                }
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
        resource::set_owner(a.id, p.memory_owner());
        resource::set_owner(region, p.memory_owner());
        if let Some(space) = p.space() {
            linux
                .for_part_at((from - base) / PAGE_SIZE)
                .apply(&mut space.lock(), a.id);
        }
    }
    Ok(())
}

/// `cut` of a mapping whose frames are shared: the parts kept become
/// mappings over the same frames (`Region::share_part`), so the bytes
/// stay shared with every other holder, and the frames go only with the
/// last holder of any part.
fn cut_shared(p: &Process, base: u64, addr: u64, end: u64, keep_inside: bool) -> Result<(), Error> {
    let space = p.space().ok_or(Error::NotFound)?;
    let (link, old, parts, file_end) = {
        let s = space.lock();
        let Some(r) = s.region_at(base).filter(|r| r.base == base) else {
            return Ok(());
        };
        let rend = r.end();
        let inside = if keep_inside {
            (addr.max(base), end.min(rend))
        } else {
            (0, 0)
        };
        let pieces = [(base, addr.min(rend)), inside, (end.max(base), rend)];
        let mut parts: [Option<(kcore::vm::region::Region, u64)>; 3] = [None, None, None];
        for (slot, &(from, to)) in parts.iter_mut().zip(pieces.iter()) {
            if from < to {
                let first = ((from - base) / PAGE_SIZE) as usize;
                let part = r
                    .region
                    .share_part(first, ((to - from) / PAGE_SIZE) as usize)
                    .map_err(|_| Error::NoMemory)?;
                *slot = Some((part, from));
            }
        }
        (r.link_id, r.region_id, parts, r.file_end)
    };
    mediator::delete(resource::KERNEL, link)?;
    mediator::delete(resource::KERNEL, old)?;
    for (part, from) in parts.into_iter().flatten() {
        let (region, link, _, _) =
            vspace::attach_memory(p.space_id(), part, At::Address(from), ResId::NONE, p.memory_owner())
                .map_err(|(e, _)| e)?;
        resource::set_owner(link, p.memory_owner());
        resource::set_owner(region, p.memory_owner());
        space
            .lock()
            .set_file_end_of(link, file_end.for_part_at(((from - base) / PAGE_SIZE) as usize));
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
pub fn mprotect(p: &Process, addr: u64, len: u64, prot: u64) -> Result<u64, Error> {
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
    // A mapping whose limits refuse `prot` (a shared one of a file opened
    // read-only asked to be writable): as Linux, the mappings before it
    // change, it and those after it do not, and the call is EACCES (a
    // hole before it is ENOMEM, with nothing changed).
    let refused = {
        let s = space.lock();
        let stop = crate::filemap::refused_at(&s, addr, end, prot);
        if !s.covers(addr, stop.unwrap_or(end)) {
            return Err(Error::NoMemory);
        }
        stop
    };
    if let Some(stop) = refused {
        if stop > addr {
            mprotect(p, addr, stop - addr, prot)?;
        }
        return Err(Error::Denied);
    }
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
    // What /proc/PID/maps shows of the mappings `protect` changed.
    let changed = resource::try_collect(
        s.regions()
            .filter(|r| r.region.kind == kcore::vm::region::Kind::Heap && r.base >= addr && r.end() <= end)
            .map(|r| r.link_id),
    )?;
    for link in changed {
        if let Some(at) = s.attachment_mut(link, 0) {
            at.region.linux.set_unreadable(!none && prot & PROT_READ == 0);
        }
    }
    Ok(0)
}

/// The program break: starts above the highest writable segment of the
/// program, grows by mappings of its own, and shrinking unmaps the whole
/// ones above it (memory that comes back is zeroed, as Linux's is); a
/// request it cannot meet leaves it where it was.
fn brk(p: &Process, want: u64) -> u64 {
    let holder = break_holder(p);
    let b = holder.as_deref().unwrap_or(p);
    let (mut base, mut cur, mut mapped) = b.brk();
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
        b.set_brk((base, cur, mapped));
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
    b.set_brk((base, want, mapped));
    want
}

/// The process whose program break `p` moves: the user of the space
/// lent to it, if it is a borrower (Linux's break is its memory's, one
/// for every task sharing it); None: its own.
fn break_holder(p: &Process) -> Option<alloc::sync::Arc<Process>> {
    if p.lender() == 0 {
        return None;
    }
    let user = p.memory_owner();
    (user != p.pid()).then(|| proc::get(user)).flatten()
}

/// `len` rounded up to whole pages; 0 when that overflows, as Linux's
/// PAGE_ALIGN wraps.
fn page_align(len: u64) -> u64 {
    len.checked_next_multiple_of(PAGE_SIZE).unwrap_or(0)
}

/// Linux's mremap, in its order of checks (mm/mremap.c), for the
/// anonymous mappings the kernel made (private or shared memory, and the
/// copies of files the supervisor maps). The pages move: their frames
/// change hands (`relocate`), nothing is copied but the parts of a
/// mapping outside the range (`cut`).
fn mremap(p: &Process, addr: u64, old_len: u64, new_len: u64, flags: u64, new_addr: u64) -> u64 {
    if flags & !(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP) != 0
        || (flags & MREMAP_FIXED != 0 && flags & MREMAP_MAYMOVE == 0)
        || (flags & MREMAP_DONTUNMAP != 0 && (flags & MREMAP_MAYMOVE == 0 || old_len != new_len))
        || !addr.is_multiple_of(PAGE_SIZE)
    {
        return fail(errno::EINVAL);
    }
    let (old_len, new_len) = (page_align(old_len), page_align(new_len));
    if new_len == 0 {
        return fail(errno::EINVAL);
    }
    let Some(space) = p.space() else {
        return fail(errno::EFAULT);
    };
    if space.lock().region_at(addr).is_none() {
        return fail(errno::EFAULT);
    }
    if flags & (MREMAP_FIXED | MREMAP_DONTUNMAP) != 0 {
        return mremap_to(p, addr, old_len, new_len, flags, new_addr).unwrap_or_else(fail);
    }
    if old_len >= new_len {
        if old_len > new_len
            && let Err(e) = munmap(p, addr + new_len, old_len - new_len)
        {
            return errno_of(e);
        }
        return addr;
    }
    let end = match resizable(p, addr, old_len) {
        Ok(end) => end,
        Err(e) => return fail(e),
    };
    let grown = addr.checked_add(new_len).filter(|&e| e <= kcore::vm::USER_END);
    if addr + old_len == end
        && let Some(grown) = grown
        && is_free(&space.lock(), end, grown)
    {
        return relocate(p, addr, old_len, new_len, addr, false).unwrap_or_else(fail);
    }
    if flags & MREMAP_MAYMOVE == 0 {
        return fail(errno::ENOMEM);
    }
    relocate(p, addr, old_len, new_len, 0, false).unwrap_or_else(fail)
}

/// mremap with MREMAP_FIXED or MREMAP_DONTUNMAP (Linux's `mremap_to`).
fn mremap_to(p: &Process, addr: u64, old_len: u64, new_len: u64, flags: u64, new_addr: u64) -> Result<u64, i64> {
    if !new_addr.is_multiple_of(PAGE_SIZE)
        || new_len > kcore::vm::USER_END
        || new_addr > kcore::vm::USER_END - new_len
        || (addr.saturating_add(old_len) > new_addr && new_addr + new_len > addr)
    {
        return Err(errno::EINVAL);
    }
    if flags & MREMAP_FIXED != 0 {
        munmap(p, new_addr, new_len).map_err(errno_num)?;
    }
    let mut old_len = old_len;
    if old_len > new_len {
        munmap(p, addr + new_len, old_len - new_len).map_err(errno_num)?;
        old_len = new_len;
    }
    resizable(p, addr, old_len)?;
    // Without MREMAP_FIXED, new_addr is a hint, taken if free.
    let at = if flags & MREMAP_FIXED != 0
        || (new_addr != 0
            && p.space()
                .is_some_and(|s| is_free(&s.lock(), new_addr, new_addr + new_len)))
    {
        new_addr
    } else {
        0
    };
    relocate(p, addr, old_len, new_len, at, flags & MREMAP_DONTUNMAP != 0)
}

/// Linux's `vma_to_resize`: the mapping at `addr` must hold the whole old
/// range, and a private one cannot be "duplicated" with an old length of
/// 0. Returns the mapping's end.
fn resizable(p: &Process, addr: u64, old_len: u64) -> Result<u64, i64> {
    let space = p.space().ok_or(errno::EFAULT)?;
    let s = space.lock();
    let r = s.region_at(addr).ok_or(errno::EFAULT)?;
    if old_len > r.end() - addr {
        return Err(errno::EFAULT);
    }
    if old_len == 0 && !r.region.fork_shares {
        return Err(errno::EINVAL);
    }
    if r.region.kind != kcore::vm::region::Kind::Heap {
        // Program segments and stacks are not the kernel's anonymous
        // mappings: Linux could move them, Tessera cannot.
        return Err(errno::EFAULT);
    }
    Ok(r.end())
}

/// Moves the `old_len` bytes of mapping at `addr` to a mapping of
/// `new_len` at `to` (0: wherever there is room; `to` itself must be free
/// but for the old range), its pages handed over
/// (`Region::move_pages_from`); the grown part reads as zeros. With
/// `keep_old` the old range stays mapped, empty (MREMAP_DONTUNMAP: zero
/// pages at its next touch). Where the frames cannot change hands (in
/// blocks, shared with another process) the bytes are copied; a mapping
/// shared with another process cannot move (ENOMEM: Linux would keep the
/// sharing). A thread touching the range while it moves finds it unmapped.
fn relocate(p: &Process, addr: u64, old_len: u64, new_len: u64, to: u64, keep_old: bool) -> Result<u64, i64> {
    let space = p.space().ok_or(errno::EFAULT)?;
    let (base, end) = space
        .lock()
        .region_at(addr)
        .map(|r| (r.base, r.end()))
        .ok_or(errno::EFAULT)?;
    if (base, end) != (addr, addr + old_len) {
        // The range becomes a mapping of its own.
        cut(p, base, addr, addr + old_len, true).map_err(errno_num)?;
    }
    let (link, old, writable, executable, linux, sharers) = {
        let s = space.lock();
        let r = s.region_at(addr).ok_or(errno::EFAULT)?;
        if r.base != addr || r.end() != addr + old_len {
            return Err(errno::ENOMEM);
        }
        let g = &r.region;
        (
            r.link_id,
            r.region_id,
            g.writable,
            g.executable,
            LinuxFlags::of(r),
            g.sharers(),
        )
    };
    if sharers != 0 || (keep_old && linux.shares) {
        return Err(errno::ENOMEM);
    }
    // Where it goes is chosen while the old range is still mapped, so
    // that it is never the old range (which MREMAP_DONTUNMAP keeps).
    let to = if to != 0 {
        to
    } else {
        let found = space.lock().place(p.free_place(), new_len);
        found.map(|(at, _)| at).ok_or(errno::ENOMEM)?
    };
    let pages = new_len / PAGE_SIZE;
    let kept = (old_len.min(new_len) / PAGE_SIZE) as usize;
    // Linux's one limit here is room in the address space: ENOMEM.
    let region = vregion::create_for(p.memory_owner(), RegionKind::Heap, pages, writable, executable)
        .map_err(|_| errno::ENOMEM)?;
    if let Err(e) = mediator::delete(resource::KERNEL, link) {
        let _ = mediator::delete(resource::KERNEL, region);
        return Err(errno_num(e));
    }
    // Both detached now: no page table maps the frames that change hands.
    let moved = match vregion::take(resource::KERNEL, old) {
        Ok(mut from) => {
            let ok = vregion::with_detached(resource::KERNEL, region, |g| {
                g.move_pages_from(&mut from, 0, 0, kept) || copy_pages(&from, g, kept)
            });
            vregion::put_back(old, from);
            ok == Ok(true)
        }
        Err(_) => false,
    };
    let placed = moved
        .then(|| vspace::attach(resource::KERNEL, p.space_id(), region, At::Address(to)).ok())
        .flatten();
    let Some(a) = placed else {
        // Back as it was: its frames to the old region, at its address.
        if moved {
            let _ = vregion::take(resource::KERNEL, region).map(|mut from| {
                let _ = vregion::with_detached(resource::KERNEL, old, |g| g.move_pages_from(&mut from, 0, 0, kept));
                vregion::put_back(region, from);
            });
        }
        let _ = mediator::delete(resource::KERNEL, region);
        reattach(p, old, addr, linux);
        return Err(errno::ENOMEM);
    };
    resource::set_owner(a.id, p.memory_owner());
    resource::set_owner(region, p.memory_owner());
    linux.apply(&mut space.lock(), a.id);
    if keep_old {
        reattach(p, old, addr, linux);
    } else {
        let _ = mediator::delete(resource::KERNEL, old);
    }
    Ok(a.base)
}

/// Attaches detached region `region` of `p` at `addr` again, with the
/// Linux flags its attachment had.
fn reattach(p: &Process, region: ResId, addr: u64, linux: LinuxFlags) {
    match vspace::attach(resource::KERNEL, p.space_id(), region, At::Address(addr)) {
        Ok(a) => {
            resource::set_owner(a.id, p.memory_owner());
            if let Some(space) = p.space() {
                linux.apply(&mut space.lock(), a.id);
            }
        }
        Err(_) => {
            let _ = mediator::delete(resource::KERNEL, region);
        }
    }
}

/// Copies the first `pages` present pages of `from` into `to` (the frames
/// of one or the other cannot change hands).
fn copy_pages(from: &kcore::vm::region::Region, to: &mut kcore::vm::region::Region, pages: usize) -> bool {
    let mut page = alloc::vec![0u8; PAGE_SIZE as usize];
    (0..pages).all(|i| {
        let at = i * PAGE_SIZE as usize;
        from.frame(i).is_none() || (from.read_at(at, &mut page) && to.populate(i).is_ok() && to.write_at(at, &page))
    })
}

/// The most mincore answers per pass (Linux's: a page of them).
const MINCORE_CHUNK: u64 = PAGE_SIZE;

/// Linux's mincore: one byte per page of `[addr, addr + len)`, 1 where
/// the page is present (it has a frame, so a touch does not fault it in).
/// A range with a page not mapped is ENOMEM, the answers for the mapped
/// pages before it written; a `vec` outside user space is EFAULT.
fn mincore(p: &Process, addr: u64, len: u64, vec: u64) -> u64 {
    if !addr.is_multiple_of(PAGE_SIZE) {
        return fail(errno::EINVAL);
    }
    if addr.checked_add(len).is_none_or(|e| e > kcore::vm::USER_END) {
        return fail(errno::ENOMEM);
    }
    let pages = len.div_ceil(PAGE_SIZE);
    if vec.checked_add(pages).is_none_or(|e| e > kcore::vm::USER_END) {
        return fail(errno::EFAULT);
    }
    let Some(space) = p.space() else {
        return fail(errno::ENOMEM);
    };
    let mut done = 0;
    let mut answers = alloc::vec::Vec::new();
    while done < pages {
        let n = (pages - done).min(MINCORE_CHUNK);
        answers.clear();
        let hole = {
            let s = space.lock();
            let mut at = addr + done * PAGE_SIZE;
            let end = at + n * PAGE_SIZE;
            loop {
                if at >= end {
                    break false;
                }
                let Some(r) = s.region_at(at) else { break true };
                let upto = r.end().min(end);
                answers.extend(
                    (((at - r.base) / PAGE_SIZE)..((upto - r.base) / PAGE_SIZE))
                        .map(|i| r.region.frame(i as usize).is_some() as u8),
                );
                at = upto;
            }
        };
        if !answers.is_empty() && uaccess::copy_to_user(vec + done, &answers).is_err() {
            return fail(errno::EFAULT);
        }
        if hole {
            return fail(errno::ENOMEM);
        }
        done += n;
    }
    0
}

/// The advice Linux 6.1 knows when built without KSM or memory-failure
/// injection (MADV_MERGEABLE, MADV_HWPOISON and the like are EINVAL, as
/// there: Tessera merges no pages and poisons none).
fn madvice_known(advice: u64) -> bool {
    matches!(advice, MADV_NORMAL..=MADV_DONTNEED | MADV_FREE..=11 | 14..=25)
}

/// Linux's madvise. MADV_DONTNEED and MADV_FREE let the private anonymous
/// pages of the range go (`VirtualSpace::discard`): they read as zeros at
/// their next touch (MADV_FREE's pages are taken at once, as Linux may).
/// MADV_WIPEONFORK and MADV_KEEPONFORK mark the mappings (a fork's child
/// gets zero pages there, `vspace::copy`). The rest is advice Tessera,
/// which never pages out, has no use for,
/// checked as Linux checks it. A range with a page not mapped is ENOMEM,
/// once the mapped parts are advised.
fn madvise(p: &Process, start: u64, len_in: u64, advice: u64) -> u64 {
    if !madvice_known(advice) || !start.is_multiple_of(PAGE_SIZE) {
        return fail(errno::EINVAL);
    }
    let len = page_align(len_in);
    if len_in != 0 && len == 0 {
        return fail(errno::EINVAL);
    }
    let Some(end) = start.checked_add(len) else {
        return fail(errno::EINVAL);
    };
    if end == start {
        return 0;
    }
    let Some(space) = p.space() else {
        return fail(errno::ENOMEM);
    };
    let mut s = space.lock();
    for r in s.regions().filter(|r| r.base < end && start < r.end()) {
        let g = &r.region;
        let anonymous = !g.linux.of_file() && g.kind != kcore::vm::region::Kind::Text;
        let refused = match advice {
            MADV_DONTNEED => g.linux.locked(),
            MADV_FREE => !anonymous || g.fork_shares || g.linux.locked(),
            MADV_REMOVE => !g.fork_shares || g.linux.locked(),
            MADV_WIPEONFORK | MADV_KEEPONFORK => g.linux.of_file() || g.fork_shares,
            _ => false,
        };
        if refused {
            return fail(errno::EINVAL);
        }
    }
    if matches!(advice, MADV_DONTNEED | MADV_DONTNEED_LOCKED | MADV_FREE) {
        s.discard(start, end);
    }
    let covered = s.covers(start, end);
    drop(s);
    if matches!(advice, MADV_WIPEONFORK | MADV_KEEPONFORK) {
        mark_range(p, start, end, |m| m.set_wipe_on_fork(advice == MADV_WIPEONFORK));
    }
    if covered { 0 } else { fail(errno::ENOMEM) }
}

/// Whether every page of `[addr, addr + len)` (page-rounded outward, as
/// mlock rounds) is mapped: what the supervisor, which keeps the locking
/// bookkeeping and RLIMIT_MEMLOCK, is told with mlock, munlock and mlock2
/// in their sixth argument (`MLOCK_MAPPED_ARG`), so that it answers ENOMEM for
/// a hole in Linux's order of checks.
fn range_mapped(p: &Process, addr: u64, len: u64) -> bool {
    let start = addr & !(PAGE_SIZE - 1);
    let Some(end) = (addr % PAGE_SIZE)
        .checked_add(len)
        .map(page_align)
        .and_then(|l| start.checked_add(l))
    else {
        return false;
    };
    end <= kcore::vm::USER_END && p.space().is_some_and(|s| s.lock().covers(start, end))
}

/// Marks the mapping at `at` as the supervisor's copy of a file's bytes
/// (`LinuxMarks::of_file`).
pub fn mark_file_copy(p: &Process, at: u64) {
    if let Some(space) = p.space() {
        let mut s = space.lock();
        let link = s.region_at(at).map(|r| r.link_id);
        if let Some(link) = link
            && let Some(a) = s.attachment_mut(link, 0)
        {
            a.region.linux.set_of_file(true);
        }
    }
}

/// Makes every page of `[addr, addr + len)` present where its mapping
/// allows the process to read it (mlock): a fault's work, done now.
fn populate(p: &Process, addr: u64, len: u64) {
    let Some(space) = p.space() else { return };
    let start = addr & !(PAGE_SIZE - 1);
    let end = addr.saturating_add(len).min(kcore::vm::USER_END);
    let mut at = start;
    while at < end {
        let _ = space.lock().resolve_fault(at, false, false);
        at += PAGE_SIZE;
    }
}

/// The mappings of `p` that start at `from` or above, in address order, at
/// most `max` (`proc_maps`): start, end, `abi::linux::MAPS_*` flags and
/// present pages.
pub fn maps_of(p: &Process, from: u64, max: usize) -> Result<alloc::vec::Vec<[u64; abi::linux::MAPS_WORDS]>, Error> {
    use abi::linux::{
        MAPS_BRK, MAPS_EXEC, MAPS_FILE, MAPS_LOCKED, MAPS_PROGRAM, MAPS_READ, MAPS_SHARED, MAPS_STACK, MAPS_WRITE,
    };
    use kcore::vm::region::Kind;
    let space = p.space().ok_or(Error::NotFound)?;
    let (brk_base, _, brk_end) = break_holder(p).as_deref().unwrap_or(p).brk();
    let mut all = alloc::vec::Vec::new();
    {
        let s = space.lock();
        all.try_reserve_exact(s.region_count()).map_err(|_| Error::NoMemory)?;
        for r in s.regions().filter(|r| r.base >= from) {
            let g = &r.region;
            let mut flags = 0;
            if !g.no_access {
                flags |= if g.linux.unreadable() { 0 } else { MAPS_READ };
                flags |= if g.writable { MAPS_WRITE } else { 0 };
                flags |= if g.executable { MAPS_EXEC } else { 0 };
            }
            if g.fork_shares || g.sharers() != 0 {
                flags |= MAPS_SHARED;
            }
            if g.linux.locked() {
                flags |= MAPS_LOCKED;
            }
            if g.linux.of_file() {
                flags |= MAPS_FILE;
            }
            flags |= match g.kind {
                Kind::Stack => MAPS_STACK,
                Kind::Text | Kind::Data | Kind::Bss => MAPS_PROGRAM,
                Kind::Heap if r.base >= brk_base && r.end() <= brk_end && brk_base != 0 => MAPS_BRK,
                Kind::Heap => 0,
            };
            all.push([r.base, r.end(), flags, g.resident_pages() as u64]);
        }
    }
    all.sort_unstable_by_key(|m| m[0]);
    all.truncate(max);
    Ok(all)
}

/// Marks what a successful mlock, mlock2, munlock, mlockall(MCL_CURRENT)
/// or munlockall locked or unlocked (`LinuxMarks::locked`).
fn mark_locked(p: &Process, n: u64, a: [u64; 6]) {
    let (start, end, on) = match n {
        nr::MLOCKALL if a[0] & MCL_CURRENT != 0 => (0, u64::MAX, true),
        nr::MUNLOCKALL => (0, u64::MAX, false),
        nr::MLOCK | nr::MLOCK2 | nr::MUNLOCK => {
            let start = a[0] & !(PAGE_SIZE - 1);
            let Some(end) = (a[0] % PAGE_SIZE)
                .checked_add(a[1])
                .and_then(|l| l.checked_next_multiple_of(PAGE_SIZE))
                .and_then(|l| start.checked_add(l))
            else {
                return;
            };
            (start, end, n != nr::MUNLOCK)
        }
        _ => return,
    };
    if start != end {
        mark_range(p, start, end, |m| m.set_locked(on));
    }
}

/// Sets a Linux mark of the mappings `[start, end)` meets (`set`). A
/// mapping only partly in the range is cut first (`cut`), as Linux splits
/// an area, so that the mark is exact where a mapping can be cut.
fn mark_range(p: &Process, start: u64, end: u64, set: impl Fn(&mut kcore::vm::region::LinuxMarks)) {
    let Some(space) = p.space() else { return };
    let Ok(across) = resource::try_collect(
        space
            .lock()
            .regions()
            .filter(|r| r.region.kind == kcore::vm::region::Kind::Heap)
            .filter(|r| r.base < end && start < r.end() && (r.base < start || r.end() > end))
            .map(|r| r.base),
    ) else {
        return;
    };
    for base in across {
        let _ = cut(p, base, start, end, true);
    }
    let mut s = space.lock();
    let Ok(inside) = resource::try_collect(
        s.regions()
            .filter(|r| r.base < end && start < r.end())
            .map(|r| r.link_id),
    ) else {
        return;
    };
    for link in inside {
        if let Some(at) = s.attachment_mut(link, 0) {
            set(&mut at.region.linux);
        }
    }
}
