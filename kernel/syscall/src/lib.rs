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

use abi::{Error, LoadPolicy, Sys, call};
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
        frame.rax = match me.route() {
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

// ---- resources: decoded here, checked and performed by the mediator ----

fn id(raw: u64) -> ResId {
    ResId::from_raw(raw)
}

fn sys_res_create(me: &proc::Process, c: call::ResCreate) -> Result<u64, Error> {
    use abi::ResKind as K;
    let me = me.pid();
    let id = match c.kind {
        K::Program => program::create(me, id(c.a))?,
        K::VirtualSpace => vspace::create(me)?,
        K::VirtualRegion => {
            let kind = abi::RegionKind::from_u64(c.b).ok_or(Error::Invalid)?;
            let (writable, executable) = (c.c & abi::prot::WRITE != 0, c.c & abi::prot::EXEC != 0);
            vregion::create(me, kind, c.a, writable, executable)?
        }
        K::VirtualUserSpace => vspace::attach(me, id(c.a), id(c.b), At::Address(c.c))?.id,
        K::VirtualKernelSpace => vkspace::create(me, id(c.a))?,
        K::PhysicalMemory => physmem::create(me, c.a)?,
        K::Process => {
            let policy = LoadPolicy::from_u64(c.d).ok_or(Error::Invalid)?;
            process::create(me, id(c.a), id(c.b), id(c.c), policy, me)?
        }
        K::Computation => computation::create(me, id(c.a), c.b)?,
        K::Container => containers::create(me, c.a, c.b)?,
        K::ContainerBox => container_box::create(me, c.a, c.b, c.c, c.d, 0)?,
        K::Plate => return Err(Error::Denied),
    };
    Ok(id.raw())
}

fn sys_work_area_write(me: &proc::Process, a: call::WorkAreaWrite) -> Result<u64, Error> {
    let args = uaccess::read_arg_bytes(a.strings, MAX_TEXT)?;
    // The first NUL-terminated string is the program name.
    let (name, rest) = match args.iter().position(|&b| b == 0) {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (&args[..], &[][..]),
    };
    vkspace::write(me.pid(), id(a.area), name, rest).map(|()| 0)
}

/// A plate's bytes. Plates are the archive's files, read-only and never
/// deleted: the read checks the identifier (kind, slot, generation) in the
/// plates' table and copies, with no operation of the mediator's to make.
fn sys_plate_read(a: call::PlateRead) -> Result<u64, Error> {
    // One read returns at most MAX_COPY bytes; the buffer is checked whole.
    let buf = uaccess::UserRange::new(a.buf.0.addr, (a.buf.0.len as usize).min(uaccess::MAX_COPY))?;
    let data = resource::plate::content(id(a.plate))?;
    let from = usize::try_from(a.offset).unwrap_or(usize::MAX).min(data.len());
    let n = buf.len().min(data.len() - from);
    buf.prefix(n).write(&data[from..from + n])?;
    Ok(n as u64)
}

/// The system's global settings need `rights::SYSTEM`.
fn system(me: &proc::Process) -> Result<(), Error> {
    if !me.holds_rights(abi::rights::SYSTEM) {
        return Err(Error::Denied);
    }
    Ok(())
}

fn sys_pool_set(me: &proc::Process, a: call::PoolSet) -> Result<u64, Error> {
    use abi::{MAX_POOL_RULES, PoolRule};
    system(me)?;
    let settings: abi::PoolSettings = uaccess::read_in(a.settings)?;
    if a.rules.count > MAX_POOL_RULES {
        return Err(Error::Limit);
    }
    let mut buf = core::mem::MaybeUninit::<[PoolRule; MAX_POOL_RULES as usize]>::uninit();
    let list = uaccess::UserRange::of_list(a.rules)?;
    let rules = uaccess::read_list(&mut buf, list)?;
    let settings = resource::pool::settings_from(&settings, rules)?;
    let adds = !settings.add.is_empty();
    resource::pool::set(settings);
    if !adds {
        return Ok(0);
    }
    resource::pool::add().map(|n| n as u64)
}

/// The raw result of system call `number` (a value, or a negated error).
#[inline(always)]
fn native(number: u64, a: &[u64; 6], me: &proc::Process) -> u64 {
    // The two calls of every rendezvous (a client's call, a server's loop
    // step) are decoded and served directly, and inlined: no call through
    // the general match, no frame.
    if number == Sys::Call as u64 {
        return rendezvous::sys_call_raw(me, a);
    }
    if number == Sys::EndrAcc as u64 {
        return rendezvous::sys_endr_acc_raw(me, a);
    }
    // AnT's ICA move, the other call a message exchange repeats: inlined
    // too (a call and its frame were a tenth of a one-page move).
    if number == Sys::IcaMove as u64 {
        return match call::IcaMove::decode(a).and_then(|c| container::sys_ica_move(me, c)) {
            Ok(v) => v,
            Err(e) => e.as_ret(),
        };
    }
    serve(me, number, a)
}

/// The native calls' handlers, for the calling process: the ABI's `Serve`
/// has one method per call, so a call without a handler does not compile.
struct Native<'a> {
    me: &'a proc::Process,
}

/// Every call but the fast paths': one switch on the number, to the call's
/// method (inlined: a call of its own cost a null system call a fifth).
#[inline(always)]
fn serve(me: &proc::Process, number: u64, a: &[u64; 6]) -> u64 {
    match abi::serve(&mut Native { me }, number, a) {
        Ok(v) => v,
        Err(e) => e.as_ret(),
    }
}

impl abi::Serve for Native<'_> {
    type Out = Result<u64, Error>;

    fn refuse(&mut self, e: Error) -> Result<u64, Error> {
        Err(e)
    }

    fn abi_version(&mut self, _: call::AbiVersion) -> Result<u64, Error> {
        Ok(abi::ABI_VERSION)
    }

    fn exit(&mut self, a: call::Exit) -> Result<u64, Error> {
        proc::exit_current(a.status)
    }

    fn spawn(&mut self, a: call::Spawn) -> Result<u64, Error> {
        sys_spawn(self.me, a)
    }

    fn wait(&mut self, a: call::Wait) -> Result<u64, Error> {
        proc::wait(self.me.pid(), a.pid)
    }

    fn getpid(&mut self, _: call::GetPid) -> Result<u64, Error> {
        Ok(self.me.pid())
    }

    fn yield_now(&mut self, _: call::Yield) -> Result<u64, Error> {
        sched::schedule();
        Ok(0)
    }

    fn sleep(&mut self, a: call::Sleep) -> Result<u64, Error> {
        sched::sleep_until(clock::nanos().saturating_add(a.nanoseconds));
        Ok(0)
    }

    fn clock(&mut self, a: call::Clock) -> Result<u64, Error> {
        sys_clock(a)
    }

    fn console_write(&mut self, a: call::ConsoleWrite) -> Result<u64, Error> {
        sys_console_write(a)
    }

    fn console_read(&mut self, a: call::ConsoleRead) -> Result<u64, Error> {
        sys_console_read(a)
    }

    fn map(&mut self, a: call::Map) -> Result<u64, Error> {
        map_anonymous(self.me, a.len, a.prot)
    }

    fn unmap(&mut self, a: call::Unmap) -> Result<u64, Error> {
        sys_unmap(self.me, a)
    }

    fn proc_info(&mut self, a: call::ProcInfo) -> Result<u64, Error> {
        sys_proc_info(self.me, a)
    }

    fn proc_list(&mut self, a: call::ProcList) -> Result<u64, Error> {
        sys_proc_list(a)
    }

    fn set_policy(&mut self, a: call::SetPolicy) -> Result<u64, Error> {
        system(self.me)?;
        Ok(proc::set_default_policy(a.policy) as u64)
    }

    fn kill(&mut self, a: call::Kill) -> Result<u64, Error> {
        sys_kill(self.me, a)
    }

    fn set_affinity(&mut self, a: call::SetAffinity) -> Result<u64, Error> {
        sys_set_affinity(self.me, a)
    }

    fn sys_info(&mut self, a: call::SysInfo) -> Result<u64, Error> {
        sys_sys_info(a)
    }

    fn res_create(&mut self, a: call::ResCreate) -> Result<u64, Error> {
        sys_res_create(self.me, a)
    }

    fn res_delete(&mut self, a: call::ResDelete) -> Result<u64, Error> {
        mediator::delete(self.me.pid(), id(a.id)).map(|()| 0)
    }

    fn res_query(&mut self, a: call::ResQuery) -> Result<u64, Error> {
        let info = mediator::query(self.me.pid(), id(a.id))?;
        uaccess::write_out(a.out, &info).map(|()| 0)
    }

    fn res_load(&mut self, a: call::ResLoad) -> Result<u64, Error> {
        vregion::load(self.me.pid(), id(a.region), id(a.program), a.segment as usize, true).map(|()| 0)
    }

    fn plate_find(&mut self, a: call::PlateFind) -> Result<u64, Error> {
        Ok(plate::find(KERNEL, &uaccess::read_text(a.name, MAX_TEXT)?)?.raw())
    }

    fn process_start(&mut self, a: call::ProcessStart) -> Result<u64, Error> {
        process::start(self.me.pid(), id(a.process))?;
        Ok(id(a.process).index() as u64)
    }

    fn work_area_write(&mut self, a: call::WorkAreaWrite) -> Result<u64, Error> {
        sys_work_area_write(self.me, a)
    }

    fn inspect(&mut self, a: call::Inspect) -> Result<u64, Error> {
        inspect::serve(a.topic, a.arg, a.start, a.out, a.capacity, a.record_size)
    }

    fn pool_set(&mut self, a: call::PoolSet) -> Result<u64, Error> {
        sys_pool_set(self.me, a)
    }

    fn program_segment(&mut self, a: call::ProgramSegment) -> Result<u64, Error> {
        let s = program::segment(self.me.pid(), id(a.program), a.index as usize)?;
        uaccess::write_out(a.out, &s).map(|()| 0)
    }

    fn plate_read(&mut self, a: call::PlateRead) -> Result<u64, Error> {
        sys_plate_read(a)
    }

    fn pool_flush(&mut self, _: call::PoolFlush) -> Result<u64, Error> {
        system(self.me)?;
        Ok(resource::pool::flush() as u64)
    }

    fn container_create(&mut self, a: call::ContainerCreate) -> Result<u64, Error> {
        container::sys_container_create(self.me, a)
    }

    fn box_create(&mut self, a: call::BoxCreate) -> Result<u64, Error> {
        container::sys_box_create(self.me, a)
    }

    fn box_grant(&mut self, a: call::BoxGrant) -> Result<u64, Error> {
        container::sys_box_grant(self.me, a)
    }

    fn container_send(&mut self, a: call::ContainerSend) -> Result<u64, Error> {
        container::sys_send(self.me, a)
    }

    fn container_receive(&mut self, a: call::ContainerReceive) -> Result<u64, Error> {
        container::sys_receive(self.me, a)
    }

    fn container_push(&mut self, a: call::ContainerPush) -> Result<u64, Error> {
        container::sys_push(self.me, a)
    }

    fn container_steal(&mut self, a: call::ContainerSteal) -> Result<u64, Error> {
        container::sys_steal(self.me, a)
    }

    fn container_exchange(&mut self, a: call::ContainerExchange) -> Result<u64, Error> {
        container::sys_exchange(self.me, a)
    }

    fn peer_grant(&mut self, a: call::PeerGrant) -> Result<u64, Error> {
        container::sys_peer_grant(self.me, a)
    }

    fn container_stats(&mut self, a: call::ContainerStats) -> Result<u64, Error> {
        uaccess::write_out(a.out, &resource::container::stats()).map(|()| 0)
    }

    fn name_register(&mut self, a: call::NameRegister) -> Result<u64, Error> {
        rendezvous::sys_name_register(self.me, a)
    }

    fn name_lookup(&mut self, a: call::NameLookup) -> Result<u64, Error> {
        rendezvous::sys_name_lookup(a)
    }

    fn call(&mut self, a: call::Call) -> Result<u64, Error> {
        rendezvous::sys_call(self.me, a)
    }

    fn acc(&mut self, a: call::Acc) -> Result<u64, Error> {
        rendezvous::sys_acc(self.me, a)
    }

    fn endr(&mut self, a: call::Endr) -> Result<u64, Error> {
        rendezvous::sys_endr(self.me, a)
    }

    fn rv_read(&mut self, a: call::RvRead) -> Result<u64, Error> {
        rendezvous::sys_rv_read(self.me, a)
    }

    fn rv_write(&mut self, a: call::RvWrite) -> Result<u64, Error> {
        rendezvous::sys_rv_write(self.me, a)
    }

    fn forward(&mut self, a: call::Forward) -> Result<u64, Error> {
        ipc::rendezvous::forward(self.me, a.rid, a.server, a.entry)
    }

    fn request(&mut self, a: call::Request) -> Result<u64, Error> {
        rendezvous::sys_request(self.me, a)
    }

    fn fetch(&mut self, a: call::Fetch) -> Result<u64, Error> {
        rendezvous::sys_fetch(self.me, a)
    }

    fn rv_fail(&mut self, a: call::RvFail) -> Result<u64, Error> {
        rendezvous::sys_rv_fail(self.me, a)
    }

    fn ncallsync(&mut self, a: call::NCallSync) -> Result<u64, Error> {
        rendezvous::sys_ncallsync(self.me, a)
    }

    fn endr_acc(&mut self, a: call::EndrAcc) -> Result<u64, Error> {
        rendezvous::sys_endr_acc(self.me, a)
    }

    fn ring_setup(&mut self, _: call::RingSetup) -> Result<u64, Error> {
        rendezvous::sys_ring_setup(self.me)
    }

    fn ring_submit(&mut self, a: call::RingSubmit) -> Result<u64, Error> {
        ipc::rings::submit(self.me, a.n, a.flags)
    }

    fn ring_wait(&mut self, a: call::RingWait) -> Result<u64, Error> {
        ipc::rings::wait(self.me, a.timeout_ns)
    }

    fn forward_acc(&mut self, a: call::ForwardAcc) -> Result<u64, Error> {
        rendezvous::sys_forward_acc(self.me, a)
    }

    fn acc_many(&mut self, a: call::AccMany) -> Result<u64, Error> {
        rendezvous::sys_acc_many(self.me, a)
    }

    fn forward_many(&mut self, a: call::ForwardMany) -> Result<u64, Error> {
        rendezvous::sys_forward_many(self.me, a)
    }

    fn ica_create(&mut self, a: call::IcaCreate) -> Result<u64, Error> {
        Ok(resource::container::create_ica(self.me.pid(), a.pages)?.raw())
    }

    fn ica_move(&mut self, a: call::IcaMove) -> Result<u64, Error> {
        container::sys_ica_move(self.me, a)
    }
}

fn sys_spawn(me: &proc::Process, a: call::Spawn) -> Result<u64, Error> {
    let path = uaccess::read_text(a.path, MAX_TEXT)?;
    let args = uaccess::read_arg_bytes(a.args, MAX_TEXT)?;
    let options = uaccess::read_in_or(a.options, abi::SpawnOptions::DEFAULT)?;
    // A process passes on only rights it holds.
    if !me.holds_rights(options.rights) {
        return Err(Error::Denied);
    }
    resource::proc::spawn::spawn(&path, &args, &options, me.pid())
}

fn sys_clock(a: call::Clock) -> Result<u64, Error> {
    let c = abi::Clock {
        cycles: clock::cycles(),
        nanos: clock::nanos(),
        tsc_hz: clock::tsc_hz(),
    };
    uaccess::write_out(a.out, &c)?;
    Ok(0)
}

fn sys_console_write(a: call::ConsoleWrite) -> Result<u64, Error> {
    let len = (a.bytes.0.len as usize).min(uaccess::MAX_COPY);
    let mut buf = Vec::new();
    buf.try_reserve_exact(len).map_err(|_| Error::NoMemory)?;
    buf.resize(len, 0);
    uaccess::copy_from_user(&mut buf, a.bytes.0.addr)?;
    kcore::console::write_bytes(&buf);
    Ok(len as u64)
}

fn sys_console_read(a: call::ConsoleRead) -> Result<u64, Error> {
    let to = uaccess::UserRange::of(a.buf.0)?;
    if to.is_empty() {
        return Ok(0);
    }
    let mut buf = [0u8; 256];
    let want = to.len().min(buf.len());
    let n = console::read(&mut buf[..want]).ok_or(Error::Denied)?;
    to.write(&buf[..n])?;
    Ok(n as u64)
}

fn sys_unmap(me: &proc::Process, a: call::Unmap) -> Result<u64, Error> {
    let space = me.space().ok_or(Error::Denied)?;
    let found = space
        .lock()
        .region_at(a.addr)
        .filter(|r| r.base == a.addr && r.region.kind == kcore::vm::region::Kind::Heap)
        .map(|r| (r.link_id, r.region_id));
    let (link, region) = found.ok_or(Error::Invalid)?;
    mediator::delete(me.pid(), link)?;
    mediator::delete(me.pid(), region)?;
    Ok(0)
}

fn sys_proc_info(me: &proc::Process, a: call::ProcInfo) -> Result<u64, Error> {
    let pid = if a.pid == 0 { me.pid() } else { a.pid };
    let info = proc_info(pid)?;
    uaccess::write_out(a.out, &info)?;
    Ok(0)
}

fn sys_proc_list(a: call::ProcList) -> Result<u64, Error> {
    let out = uaccess::UserRange::of_list(a.out)?;
    let pids = proc::pids();
    let n = pids.len().min(a.out.count as usize);
    uaccess::write_list(out.addr(), &pids[..n])?;
    Ok(pids.len() as u64)
}

fn sys_kill(me: &proc::Process, a: call::Kill) -> Result<u64, Error> {
    let target = proc::get(a.pid).ok_or(Error::NotFound)?;
    if !target.answers_to(me.pid()) {
        return Err(Error::Denied);
    }
    proc::kill(a.pid).map(|_| 0)
}

fn sys_set_affinity(me: &proc::Process, a: call::SetAffinity) -> Result<u64, Error> {
    let pid = if a.pid == 0 { me.pid() } else { a.pid };
    let target = proc::get(pid).ok_or(Error::NotFound)?;
    // A process places itself and its children; the holder of the system
    // right places any process (the shell moves the servers init started).
    if !target.answers_to(me.pid()) {
        system(me)?;
    }
    let cpu = match a.cpu {
        abi::ANY_CPU => kcore::computation::ANY_CPU,
        c if (c as usize) < cpu::online_count() => c as usize,
        _ => return Err(Error::Invalid),
    };
    let comp = target.computation().ok_or(Error::NotFound)?;
    comp.affinity.store(cpu, Ordering::Relaxed);
    drop(comp);
    drop(target);
    if pid == me.pid() && cpu != kcore::computation::ANY_CPU && cpu != cpu::this_cpu().index {
        // Move now: give up the CPU; the next enqueue honours the pin.
        sched::schedule();
    }
    Ok(0)
}

fn sys_sys_info(a: call::SysInfo) -> Result<u64, Error> {
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
    uaccess::write_out(a.out, &info)?;
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
    let region = vregion::create(me.pid(), abi::RegionKind::Heap, pages, writable, executable)?;
    match vspace::attach(me.pid(), me.space_id(), region, me.free_place()) {
        Ok(a) => Ok(a.base),
        Err(e) => {
            let _ = mediator::delete(me.pid(), region);
            Err(e)
        }
    }
}

pub fn proc_info(pid: u64) -> Result<abi::ProcInfo, Error> {
    let p = proc::get(pid).ok_or(Error::NotFound)?;
    let comp = p.computation();
    let exit = p.exit_status();
    let mut info = abi::ProcInfo {
        pid: p.pid(),
        parent: p.parent(),
        policy: p.policy() as u64,
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
    let n = p.name().len().min(info.name.len());
    info.name[..n].copy_from_slice(&p.name().as_bytes()[..n]);
    Ok(info)
}
