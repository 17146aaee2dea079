//! The native system calls: each call's arguments are decoded and checked
//! here, then served by the layer it belongs to (resources through the
//! mediator, rendezvous and batches in `ipc`). Numbers and structures come
//! from the `abi` crate, shared with the user runtime.
//!
//! A process's calls are routed by `Process::route`: today every process
//! uses the native handler below; the Linux-ABI personality will route a
//! process's calls to a server instead (see docs/ARCHITECTURE.md).
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod console;
mod container;
pub mod inspect;
mod rendezvous;

use abi::{Error, LoadPolicy, Sys};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use ipc::process::{self as proc, Route};
use kcore::arch::x86_64::trap::TrapFrame;
use kcore::uaccess;
use kcore::{clock, cpu};
use resource::mediator;
use resource::vspace::{self, At};
use resource::{
    KERNEL, ResId, computation, container as containers, container_box, physmem, plate, process, program, vkspace,
    vregion,
};

pub use console::input_ready;

/// System calls made since boot.
pub static SYSCALLS: AtomicU64 = AtomicU64::new(0);

/// The system-call hook (registered with the core at boot, called by the
/// entry with interrupts off): decodes and serves one call, then leaves for
/// user mode.
pub extern "C" fn dispatch(frame: &mut TrapFrame) {
    // The frame is saved and this is the computation's kernel stack:
    // interrupts may come in (long calls stay preemptible by IRQs).
    x86_64::instructions::interrupts::enable();
    SYSCALLS.fetch_add(1, Ordering::Relaxed);
    let number = frame.rax;
    // `me` is borrowed, not counted: exit, which never returns, leaves
    // no reference behind. It is at hand for the way back to user mode too.
    let done = proc::with_current(|me| {
        frame.rax = match me.route {
            Route::Native => native(number, frame.syscall_args(), me),
        };
        x86_64::instructions::interrupts::disable();
        proc::leave_for_user(me, frame);
    });
    if done.is_none() {
        frame.rax = Error::Denied.as_ret();
        x86_64::instructions::interrupts::disable();
        proc::on_return_to_user(frame);
    }
}

/// Longest path, argument list or setting a call passes by pointer.
const MAX_TEXT: usize = 4096;

type Handler = fn(&proc::Process, &[u64; 6]) -> Result<u64, Error>;

/// Room for every system-call number (numbers are grouped by subsystem).
const TABLE_SIZE: usize = 96;

/// The native system-call table: the handler of `Sys` number `n` is
/// `TABLE[n]`; numbers nobody defines answer `NoSys`.
static TABLE: [Handler; TABLE_SIZE] = {
    let mut t: [Handler; TABLE_SIZE] = [sys_nosys; TABLE_SIZE];
    let mut i = 0;
    while i < Sys::ALL.len() {
        t[Sys::ALL[i] as usize] = handler(Sys::ALL[i]);
        i += 1;
    }
    t
};

fn sys_nosys(_: &proc::Process, _: &[u64; 6]) -> Result<u64, Error> {
    Err(Error::NoSys)
}

const fn handler(sys: Sys) -> Handler {
    match sys {
        Sys::AbiVersion => sys_abi_version,
        Sys::Exit => sys_exit,
        Sys::Spawn => sys_spawn,
        Sys::Wait => sys_wait,
        Sys::GetPid => sys_getpid,
        Sys::Yield => sys_yield,
        Sys::Sleep => sys_sleep,
        Sys::Clock => sys_clock,
        Sys::ConsoleWrite => sys_console_write,
        Sys::ConsoleRead => sys_console_read,
        Sys::Map => sys_map,
        Sys::Unmap => sys_unmap,
        Sys::ProcInfo => sys_proc_info,
        Sys::ProcList => sys_proc_list,
        Sys::SetPolicy => sys_set_policy,
        Sys::Kill => sys_kill,
        Sys::SetAffinity => sys_set_affinity,
        Sys::SysInfo => sys_sys_info,
        Sys::ResCreate => sys_res_create,
        Sys::ResDelete => sys_res_delete,
        Sys::ResQuery => sys_res_query,
        Sys::ResLoad => sys_res_load,
        Sys::PlateFind => sys_plate_find,
        Sys::ProcessStart => sys_process_start,
        Sys::WorkAreaWrite => sys_work_area_write,
        Sys::Inspect => sys_inspect,
        Sys::PoolSet => sys_pool_set,
        Sys::PoolFlush => sys_pool_flush,
        Sys::PlateRead => sys_plate_read,
        Sys::ProgramSegment => sys_program_segment,
        Sys::ContainerCreate => container::sys_container_create,
        Sys::BoxCreate => container::sys_box_create,
        Sys::BoxGrant => container::sys_box_grant,
        Sys::ContainerSend => container::sys_send,
        Sys::ContainerReceive => container::sys_receive,
        Sys::ContainerPush => container::sys_push,
        Sys::ContainerSteal => container::sys_steal,
        Sys::ContainerExchange => container::sys_exchange,
        Sys::PeerGrant => container::sys_peer_grant,
        Sys::ContainerStats => container::sys_stats,
        Sys::NameRegister => rendezvous::sys_name_register,
        Sys::NameLookup => rendezvous::sys_name_lookup,
        Sys::Call => rendezvous::sys_call,
        Sys::Acc => rendezvous::sys_acc,
        Sys::Endr => rendezvous::sys_endr,
        Sys::EndrAcc => rendezvous::sys_endr_acc,
        Sys::ForwardAcc => rendezvous::sys_forward_acc,
        Sys::AccMany => rendezvous::sys_acc_many,
        Sys::ForwardMany => rendezvous::sys_forward_many,
        Sys::RingSetup => rendezvous::sys_ring_setup,
        Sys::RingSubmit => rendezvous::sys_ring_submit,
        Sys::RingWait => rendezvous::sys_ring_wait,
        Sys::RvRead => rendezvous::sys_rv_read,
        Sys::RvWrite => rendezvous::sys_rv_write,
        Sys::Forward => rendezvous::sys_forward,
        Sys::Request => rendezvous::sys_request,
        Sys::Fetch => rendezvous::sys_fetch,
        Sys::RvFail => rendezvous::sys_rv_fail,
        Sys::NCallSync => rendezvous::sys_ncallsync,
        Sys::IcaCreate => container::sys_ica_create,
        Sys::IcaMove => container::sys_ica_move,
    }
}

// ---- resources: decoded here, checked and performed by the mediator ----

fn id(raw: u64) -> ResId {
    ResId::from_raw(raw)
}

fn sys_res_create(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    use abi::ResKind as K;
    let me = me.pid;
    let id = match K::from_u64(a[0]).ok_or(Error::Invalid)? {
        K::Program => program::create(me, id(a[1]))?,
        K::VirtualSpace => vspace::create(me)?,
        K::VirtualRegion => {
            let kind = abi::RegionKind::from_u64(a[2]).ok_or(Error::Invalid)?;
            let (writable, executable) = (a[3] & abi::prot::WRITE != 0, a[3] & abi::prot::EXEC != 0);
            vregion::create(me, kind, a[1], writable, executable)?
        }
        K::VirtualUserSpace => vspace::attach(me, id(a[1]), id(a[2]), At::Address(a[3]))?.id,
        K::VirtualKernelSpace => vkspace::create(me, id(a[1]))?,
        K::PhysicalMemory => physmem::create(me, a[1])?,
        K::Process => {
            let policy = LoadPolicy::from_u64(a[4]).ok_or(Error::Invalid)?;
            process::create(me, id(a[1]), id(a[2]), id(a[3]), policy, me)?
        }
        K::Computation => computation::create(me, id(a[1]), a[2])?,
        K::Container => containers::create(me, a[1], a[2])?,
        K::ContainerBox => container_box::create(me, a[1], a[2], a[3], a[4], 0)?,
        K::Plate => return Err(Error::Denied),
    };
    Ok(id.raw())
}

fn sys_res_delete(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    mediator::delete(me.pid, id(a[0])).map(|()| 0)
}

fn sys_res_query(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let info = mediator::query(me.pid, id(a[0]))?;
    uaccess::write(a[1], &info).map(|()| 0)
}

fn sys_res_load(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    vregion::load(me.pid, id(a[0]), id(a[1]), a[2] as usize, true).map(|()| 0)
}

fn sys_plate_find(_: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let name = uaccess::read_str(a[0], a[1], MAX_TEXT)?;
    Ok(plate::find(KERNEL, &name)?.raw())
}

fn sys_process_start(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    process::start(me.pid, id(a[0]))?;
    Ok(id(a[0]).index() as u64)
}

fn sys_work_area_write(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let args = uaccess::read_bytes(a[1], a[2], MAX_TEXT)?;
    // The first NUL-terminated string is the program name.
    let (name, rest) = match args.iter().position(|&b| b == 0) {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (&args[..], &[][..]),
    };
    vkspace::write(me.pid, id(a[0]), name, rest).map(|()| 0)
}

/// A plate's bytes. Plates are the archive's files, read-only and never
/// deleted: the read checks the identifier (kind, slot, generation) in the
/// plates' table and copies, with no operation of the mediator's to make.
fn sys_plate_read(_: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    // One read returns at most MAX_COPY bytes; the buffer is checked whole.
    let buf = uaccess::UserRange::new(a[2], (a[3] as usize).min(uaccess::MAX_COPY))?;
    let data = resource::plate::content(id(a[0]))?;
    let from = usize::try_from(a[1]).unwrap_or(usize::MAX).min(data.len());
    let n = buf.len().min(data.len() - from);
    buf.prefix(n).write(&data[from..from + n])?;
    Ok(n as u64)
}

fn sys_inspect(_: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let topic = abi::Topic::from_u64(a[0]).ok_or(Error::Invalid)?;
    inspect::serve(topic, a[1], a[2], a[3], a[4], a[5])
}

fn sys_program_segment(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let s = program::segment(me.pid, id(a[0]), a[1] as usize)?;
    uaccess::write(a[2], &s).map(|()| 0)
}

/// The system's global settings need `rights::SYSTEM`.
fn system(me: &proc::Process) -> Result<(), Error> {
    if me.rights.load(Ordering::Relaxed) & abi::rights::SYSTEM == 0 {
        return Err(Error::Denied);
    }
    Ok(())
}

fn sys_pool_set(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    use abi::{MAX_POOL_RULES, PoolRule};
    system(me)?;
    let settings: abi::PoolSettings = uaccess::read(a[0])?;
    if a[2] > MAX_POOL_RULES {
        return Err(Error::Limit);
    }
    let mut buf = core::mem::MaybeUninit::<[PoolRule; MAX_POOL_RULES as usize]>::uninit();
    let list = uaccess::UserRange::new(a[1], a[2] as usize * core::mem::size_of::<PoolRule>())?;
    let rules = uaccess::read_list(&mut buf, list)?;
    let settings = resource::pool::settings_from(&settings, rules)?;
    let adds = !settings.add.is_empty();
    resource::pool::set(settings);
    if !adds {
        return Ok(0);
    }
    resource::pool::add().map(|n| n as u64)
}

fn sys_pool_flush(me: &proc::Process, _: &[u64; 6]) -> Result<u64, Error> {
    system(me)?;
    Ok(resource::pool::flush() as u64)
}

/// The raw result of system call `number` (a value, or a negated error).
#[inline(always)]
fn native(number: u64, a: &[u64; 6], me: &proc::Process) -> u64 {
    // The two calls of every rendezvous (a client's call, a server's loop
    // step) are called directly, and inlined: no table call, no frame.
    if number == Sys::Call as u64 {
        return rendezvous::sys_call_raw(me, a);
    }
    if number == Sys::EndrAcc as u64 {
        return rendezvous::sys_endr_acc_raw(me, a);
    }
    // AnT's ICA move, the other call a message exchange repeats: inlined
    // too (a table call and its frame were a tenth of a one-page move).
    if number == Sys::IcaMove as u64 {
        return match container::sys_ica_move(me, a) {
            Ok(v) => v,
            Err(e) => e.as_ret(),
        };
    }
    let result = match TABLE.get(number as usize) {
        Some(handler) => handler(me, a),
        None => Err(Error::NoSys),
    };
    match result {
        Ok(v) => v,
        Err(e) => e.as_ret(),
    }
}

fn sys_abi_version(_: &proc::Process, _: &[u64; 6]) -> Result<u64, Error> {
    Ok(abi::ABI_VERSION)
}

fn sys_exit(_: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    proc::exit_current(a[0])
}

fn sys_spawn(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let path = uaccess::read_str(a[0], a[1], MAX_TEXT)?;
    let args = uaccess::read_bytes(a[2], a[3], MAX_TEXT)?;
    let options: abi::SpawnOptions = if a[4] == 0 {
        abi::SpawnOptions::DEFAULT
    } else {
        uaccess::read(a[4])?
    };
    // A process passes on only rights it holds.
    if options.rights & !me.rights.load(Ordering::Relaxed) != 0 {
        return Err(Error::Denied);
    }
    resource::proc::spawn::spawn(&path, &args, &options, me.pid)
}

fn sys_wait(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    proc::wait(me.pid, a[0])
}

fn sys_getpid(me: &proc::Process, _: &[u64; 6]) -> Result<u64, Error> {
    Ok(me.pid)
}

fn sys_yield(_: &proc::Process, _: &[u64; 6]) -> Result<u64, Error> {
    sched::schedule();
    Ok(0)
}

fn sys_sleep(_: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    sched::sleep_until(clock::nanos().saturating_add(a[0]));
    Ok(0)
}

fn sys_clock(_: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let c = abi::Clock {
        cycles: clock::cycles(),
        nanos: clock::nanos(),
        tsc_hz: clock::tsc_hz(),
    };
    uaccess::write(a[0], &c)?;
    Ok(0)
}

fn sys_console_write(_: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let len = (a[1] as usize).min(uaccess::MAX_COPY);
    let mut buf = Vec::new();
    buf.try_reserve_exact(len).map_err(|_| Error::NoMemory)?;
    buf.resize(len, 0);
    uaccess::copy_from_user(&mut buf, a[0])?;
    kcore::console::write_bytes(&buf);
    Ok(len as u64)
}

fn sys_console_read(_: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    uaccess::check_range(a[0], a[1] as usize)?;
    if a[1] == 0 {
        return Ok(0);
    }
    let mut buf = [0u8; 256];
    let want = (a[1] as usize).min(buf.len());
    let n = console::read(&mut buf[..want]).ok_or(Error::Denied)?;
    uaccess::copy_to_user(a[0], &buf[..n])?;
    Ok(n as u64)
}

fn sys_map(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    map_anonymous(me, a[1], a[2])
}

fn sys_unmap(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let space = me.space().ok_or(Error::Denied)?;
    let found = space
        .lock()
        .region_at(a[0])
        .filter(|r| r.base == a[0] && r.region.kind == kcore::vm::region::Kind::Heap)
        .map(|r| (r.link_id, r.region_id));
    let (link, region) = found.ok_or(Error::Invalid)?;
    mediator::delete(me.pid, link)?;
    mediator::delete(me.pid, region)?;
    Ok(0)
}

fn sys_proc_info(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let pid = if a[0] == 0 { me.pid } else { a[0] };
    let info = proc_info(pid)?;
    uaccess::write(a[1], &info)?;
    Ok(0)
}

fn sys_proc_list(_: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    uaccess::check_range(a[0], (a[1] as usize).saturating_mul(8))?;
    let pids = proc::pids();
    for (i, pid) in pids.iter().take(a[1] as usize).enumerate() {
        uaccess::write(a[0] + 8 * i as u64, pid)?;
    }
    Ok(pids.len() as u64)
}

fn sys_set_policy(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    system(me)?;
    let p = LoadPolicy::from_u64(a[0]).ok_or(Error::Invalid)?;
    Ok(proc::set_default_policy(p) as u64)
}

fn sys_kill(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let target = proc::get(a[0]).ok_or(Error::NotFound)?;
    if target.parent.load(Ordering::Relaxed) != me.pid && target.pid != me.pid {
        return Err(Error::Denied);
    }
    proc::kill(a[0]).map(|_| 0)
}

fn sys_set_affinity(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let pid = if a[0] == 0 { me.pid } else { a[0] };
    let target = proc::get(pid).ok_or(Error::NotFound)?;
    // A process places itself and its children; the holder of the system
    // right places any process (the shell moves the servers init started).
    if target.pid != me.pid && target.parent.load(Ordering::Relaxed) != me.pid {
        system(me)?;
    }
    let cpu = match a[1] {
        abi::ANY_CPU => kcore::computation::ANY_CPU,
        c if (c as usize) < cpu::online_count() => c as usize,
        _ => return Err(Error::Invalid),
    };
    let comp = target
        .computation
        .lock()
        .as_ref()
        .and_then(|c| c.1.upgrade())
        .ok_or(Error::NotFound)?;
    comp.affinity.store(cpu, Ordering::Relaxed);
    drop(comp);
    drop(target);
    if pid == me.pid && cpu != kcore::computation::ANY_CPU && cpu != cpu::this_cpu().index {
        // Move now: give up the CPU; the next enqueue honours the pin.
        sched::schedule();
    }
    Ok(0)
}

fn sys_sys_info(_: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let f = kcore::mm::frames::stats();
    let h = kcore::mm::heap::stats();
    let info = abi::SysInfo {
        cpus: cpu::online_count() as u64,
        frames_total: f.managed as u64,
        frames_free: f.free as u64,
        heap_size: h.size as u64,
        heap_used: h.used as u64,
        processes: proc::count() as u64,
        default_policy: proc::default_policy() as u64,
        syscalls: SYSCALLS.load(Ordering::Relaxed),
        pool_bytes: resource::pool::bytes(),
        resource_ops: resource::mediator::total_calls(),
        context_switches: kcore::computation::CONTEXT_SWITCHES.load(Ordering::Relaxed),
        ipis: kcore::arch::x86_64::apic::IPIS_SENT.load(Ordering::Relaxed),
        heap_allocations: h.allocations,
    };
    uaccess::write(a[0], &info)?;
    Ok(0)
}

/// Anonymous memory: a region created and attached through the mediator
/// at the first free place, paged in at first touch.
fn map_anonymous(me: &proc::Process, len: u64, prot: u64) -> Result<u64, Error> {
    use kcore::mm::layout::PAGE_SIZE;
    if len == 0 || len > (1 << 36) || prot & !(abi::prot::READ | abi::prot::WRITE | abi::prot::EXEC) != 0 {
        return Err(Error::Invalid);
    }
    let (writable, executable) = (prot & abi::prot::WRITE != 0, prot & abi::prot::EXEC != 0);
    let pages = len.div_ceil(PAGE_SIZE);
    let region = vregion::create(me.pid, abi::RegionKind::Heap, pages, writable, executable)?;
    match vspace::attach(me.pid, me.space_id, region, At::Free(&me.anon_next)) {
        Ok(a) => Ok(a.base),
        Err(e) => {
            let _ = mediator::delete(me.pid, region);
            Err(e)
        }
    }
}

pub fn proc_info(pid: u64) -> Result<abi::ProcInfo, Error> {
    let p = proc::get(pid).ok_or(Error::NotFound)?;
    let comp = p.computation.lock().as_ref().and_then(|c| c.1.upgrade());
    let exit = *p.exit_status.lock();
    let mut info = abi::ProcInfo {
        pid: p.pid,
        parent: p.parent.load(Ordering::Relaxed),
        policy: p.policy as u64,
        faults: p.faults(),
        resident_pages: p.resident_pages(),
        exit_status: exit.unwrap_or(0),
        ..abi::ProcInfo::default()
    };
    if let Some(c) = comp {
        info.state = match *c.state.lock() {
            kcore::computation::State::Running => abi::state::RUNNING,
            kcore::computation::State::Runnable => abi::state::RUNNABLE,
            kcore::computation::State::Blocked => abi::state::BLOCKED,
            kcore::computation::State::Dead => abi::state::EXITED,
        };
        info.cpu = c.last_cpu.load(Ordering::Relaxed) as u64;
        let aff = c.affinity.load(Ordering::Relaxed);
        info.affinity = if aff == kcore::computation::ANY_CPU {
            abi::ANY_CPU
        } else {
            aff as u64
        };
        info.cpu_ns = kcore::clock::cycles_to_ns(c.cpu_cycles.load(Ordering::Relaxed));
    } else {
        info.state = abi::state::EXITED;
    }
    if exit.is_some() {
        info.state = abi::state::EXITED;
    }
    let n = p.name.len().min(info.name.len());
    info.name[..n].copy_from_slice(&p.name.as_bytes()[..n]);
    Ok(info)
}
