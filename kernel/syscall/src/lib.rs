//! The native system calls: each call's arguments are decoded and checked
//! here, then served by the layer it belongs to (resources through the
//! mediator, rendezvous and batches in `ipc`). Numbers and structures come
//! from the `abi` crate, shared with the user runtime. This file is the
//! dispatcher and its table of handlers (`Native`); the handlers of each
//! group of calls are in a module of their own (`processes`, `resources`,
//! `container`, `rendezvous`, `console`, `inspect`).
//!
//! A process's calls are routed by `Process::route`: today every process
//! uses the native handler below; the Linux-ABI personality will route a
//! process's calls to a server instead (see docs/ARCHITECTURE.md).
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod alarm;
mod console;
mod container;
mod filemap;
pub mod forks;
mod futex;
pub mod inspect;
mod linux;
/// The supervisor's marks of a Linux file mapping (`caller_map_file`,
/// `caller_file_end`), for tests.
pub use filemap::{mark as linux_map_file, set_end as linux_file_end, written_bytes as linux_file_written};
/// The kernel's anonymous mmap into a Linux process (`caller_map`), for tests.
pub use linux::map_into as linux_map_into;
/// The kernel's mprotect of a Linux process (`caller_protect`), for tests.
pub use linux::mprotect as linux_mprotect;
pub mod pipes;
mod processes;
mod rendezvous;
mod resources;
mod sysv;
pub mod wallclock;

use abi::{Error, Sys, call};
use core::sync::atomic::{AtomicU64, Ordering};
use ipc::process::{self as proc, Route};
use kcore::arch::x86_64::trap::TrapFrame;
use kcore::uaccess;
use kcore::{clock, cpu};
use resource::mediator;
use resource::pool::or_reclaim;
use resource::{KERNEL, ResId, plate, process, program, vregion};

pub use alarm::on_tick as alarms_on_tick;
pub use console::{input_ready, interrupt_key};

/// System calls made since boot.
pub static SYSCALLS: AtomicU64 = AtomicU64::new(0);

/// The system-call hook (registered with the core at boot, called by the
/// entry with interrupts off): decodes and serves one call, then leaves for
/// user mode.
pub extern "C" fn dispatch(frame: &mut TrapFrame) {
    // The frame is saved and this is the computation's kernel stack:
    // interrupts may come in (long calls stay preemptible by IRQs).
    kcore::cpuacct::entered_kernel();
    x86_64::instructions::interrupts::enable();
    SYSCALLS.fetch_add(1, Ordering::Relaxed);
    let number = frame.rax;
    // `me` is borrowed, not counted: exit, which never returns, leaves
    // no reference behind. It is at hand for the way back to user mode too.
    let done = proc::with_current(|me| {
        frame.rax = native(number, frame.syscall_args(), me);
        x86_64::instructions::interrupts::disable();
        proc::leave_for_user(me, frame);
    });
    if done.is_none() {
        denied(frame);
    }
}

/// The system-call hook of Linux processes (`Hooks::linux_syscall`: the
/// entry knows them by their frame), the same for their calls: a hook of
/// its own, so that neither way pays for the other's choice or stack frame.
pub extern "C" fn linux_dispatch(frame: &mut TrapFrame) {
    kcore::cpuacct::entered_kernel();
    x86_64::instructions::interrupts::enable();
    SYSCALLS.fetch_add(1, Ordering::Relaxed);
    let done = proc::with_current(|me| match me.route() {
        Route::Linux { supervisor, pid } => linux::serve_and_leave(me, frame, supervisor, pid),
        // (A process's route never changes; only Linux ones come here.)
        _ => denied(frame),
    });
    if done.is_none() {
        denied(frame);
    }
}

/// The way back for a call that has no process to serve it.
#[cold]
fn denied(frame: &mut TrapFrame) {
    frame.rax = Error::Denied.as_ret();
    x86_64::instructions::interrupts::disable();
    proc::on_return_to_user(frame);
}

/// Longest path, argument list or setting a call passes by pointer.
pub(crate) const MAX_TEXT: usize = 4096;

/// A resource identifier as a call passes it.
pub(crate) fn id(raw: u64) -> ResId {
    ResId::from_raw(raw)
}

/// The system's global settings need `rights::SYSTEM`.
pub(crate) fn system(me: &proc::Process) -> Result<(), Error> {
    if !me.holds_rights(abi::rights::SYSTEM) {
        return Err(Error::Denied);
    }
    Ok(())
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
        processes::sys_spawn(self.me, a)
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
        console::sys_console_write(a)
    }

    fn console_read(&mut self, a: call::ConsoleRead) -> Result<u64, Error> {
        console::sys_console_read(self.me, a)
    }

    fn map(&mut self, a: call::Map) -> Result<u64, Error> {
        or_reclaim(|| processes::map_anonymous(self.me, a.len, a.prot))
    }

    fn unmap(&mut self, a: call::Unmap) -> Result<u64, Error> {
        processes::sys_unmap(self.me, a)
    }

    fn proc_info(&mut self, a: call::ProcInfo) -> Result<u64, Error> {
        processes::sys_proc_info(self.me, a)
    }

    fn proc_state(&mut self, a: call::ProcState) -> Result<u64, Error> {
        processes::sys_proc_state(self.me, a)
    }

    fn proc_list(&mut self, a: call::ProcList) -> Result<u64, Error> {
        processes::sys_proc_list(a)
    }

    fn set_policy(&mut self, a: call::SetPolicy) -> Result<u64, Error> {
        system(self.me)?;
        Ok(proc::set_default_policy(a.policy) as u64)
    }

    fn kill(&mut self, a: call::Kill) -> Result<u64, Error> {
        processes::sys_kill(self.me, a)
    }

    fn set_affinity(&mut self, a: call::SetAffinity) -> Result<u64, Error> {
        processes::sys_set_affinity(self.me, a)
    }

    fn sys_info(&mut self, a: call::SysInfo) -> Result<u64, Error> {
        sys_sys_info(a)
    }

    fn res_create(&mut self, a: call::ResCreate) -> Result<u64, Error> {
        resources::sys_res_create(self.me, a)
    }

    fn res_delete(&mut self, a: call::ResDelete) -> Result<u64, Error> {
        mediator::delete(self.me.pid(), id(a.id)).map(|()| 0)
    }

    fn res_query(&mut self, a: call::ResQuery) -> Result<u64, Error> {
        let info = mediator::query(self.me.pid(), id(a.id))?;
        uaccess::write_out(a.out, &info).map(|()| 0)
    }

    fn res_load(&mut self, a: call::ResLoad) -> Result<u64, Error> {
        or_reclaim(|| vregion::load(self.me.pid(), id(a.region), id(a.program), a.segment as usize, true)).map(|()| 0)
    }

    fn plate_find(&mut self, a: call::PlateFind) -> Result<u64, Error> {
        Ok(plate::find(KERNEL, &uaccess::read_text(a.name, MAX_TEXT)?)?.raw())
    }

    fn process_start(&mut self, a: call::ProcessStart) -> Result<u64, Error> {
        process::start(self.me.pid(), id(a.process))?;
        Ok(id(a.process).index() as u64)
    }

    fn work_area_write(&mut self, a: call::WorkAreaWrite) -> Result<u64, Error> {
        resources::sys_work_area_write(self.me, a)
    }

    fn inspect(&mut self, a: call::Inspect) -> Result<u64, Error> {
        inspect::serve(a.topic, a.arg, a.start, a.out, a.capacity, a.record_size)
    }

    fn pool_set(&mut self, a: call::PoolSet) -> Result<u64, Error> {
        resources::sys_pool_set(self.me, a)
    }

    fn program_segment(&mut self, a: call::ProgramSegment) -> Result<u64, Error> {
        let s = program::segment(self.me.pid(), id(a.program), a.index as usize)?;
        uaccess::write_out(a.out, &s).map(|()| 0)
    }

    fn plate_read(&mut self, a: call::PlateRead) -> Result<u64, Error> {
        resources::sys_plate_read(a)
    }

    fn pool_flush(&mut self, _: call::PoolFlush) -> Result<u64, Error> {
        system(self.me)?;
        Ok(resource::pool::flush() as u64)
    }

    fn container_create(&mut self, a: call::ContainerCreate) -> Result<u64, Error> {
        container::sys_container_create(self.me, a)
    }

    fn box_create(&mut self, a: call::BoxCreate) -> Result<u64, Error> {
        or_reclaim(|| container::sys_box_create(self.me, a))
    }

    fn box_grant(&mut self, a: call::BoxGrant) -> Result<u64, Error> {
        container::sys_box_grant(self.me, a)
    }

    fn container_send(&mut self, a: call::ContainerSend) -> Result<u64, Error> {
        or_reclaim(|| container::sys_send(self.me, a))
    }

    fn container_receive(&mut self, a: call::ContainerReceive) -> Result<u64, Error> {
        or_reclaim(|| container::sys_receive(self.me, a))
    }

    fn container_push(&mut self, a: call::ContainerPush) -> Result<u64, Error> {
        or_reclaim(|| container::sys_push(self.me, a))
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

    fn endr_many_acc(&mut self, a: call::EndrManyAcc) -> Result<u64, Error> {
        rendezvous::sys_endr_many_acc(self.me, a)
    }

    fn plate_create(&mut self, a: call::PlateCreate) -> Result<u64, Error> {
        let name = uaccess::read_text(a.name, MAX_TEXT)?;
        // A program's image, read whole: the plate keeps it.
        let content = uaccess::read_long(a.content.0.addr, a.content.0.len, 256 << 20)?;
        Ok(plate::create(self.me.pid(), &name, a.tag, &content)?.raw())
    }

    fn nvm_store(&mut self, a: call::NvmStore) -> Result<u64, Error> {
        if !self.me.holds_rights(abi::rights::NVM) {
            return Err(Error::Denied);
        }
        let name = uaccess::read_text(a.name, MAX_TEXT)?;
        resource::nvm::store(
            self.me.pid(),
            &name,
            resource::nvm::UserBytes::new(a.data.0.addr, a.data.0.len)?,
        )
    }

    fn nvm_read(&mut self, a: call::NvmRead) -> Result<u64, Error> {
        let name = uaccess::read_text(a.name, MAX_TEXT)?;
        resource::nvm::read(&name, a.offset, uaccess::UserRange::of(a.buf.0)?)
    }

    fn plate_paged(&mut self, a: call::PlatePaged) -> Result<u64, Error> {
        let name = uaccess::read_text(a.name, MAX_TEXT)?;
        // What exec read of the file: its header page.
        let head = uaccess::read_long(a.head.0.addr, a.head.0.len, 1 << 20)?;
        let source = uaccess::read_in(a.source)?;
        Ok(plate::create_paged(self.me.pid(), &name, a.tag, &head, source)?.raw())
    }

    fn wait_info(&mut self, a: call::WaitInfo) -> Result<u64, Error> {
        processes::sys_wait_info(self.me, a)
    }

    fn nvm_delete(&mut self, a: call::NvmDelete) -> Result<u64, Error> {
        if !self.me.holds_rights(abi::rights::NVM) {
            return Err(Error::Denied);
        }
        let name = uaccess::read_text(a.name, MAX_TEXT)?;
        resource::nvm::delete(self.me.pid(), &name)
    }

    fn caller_read(&mut self, a: call::CallerRead) -> Result<u64, Error> {
        ipc::supervise::read(self.me, a.rid, a.addr, uaccess::UserRange::of(a.buf.0)?)
    }

    fn caller_read_many(&mut self, a: call::CallerReadMany) -> Result<u64, Error> {
        const MAX: usize = abi::MAX_BATCH as usize;
        if a.list.count == 0 || a.list.count > abi::MAX_BATCH {
            return Err(Error::Invalid);
        }
        // The list is read into the kernel first: ranges that overlap it
        // (or each other) change nothing of what is read where.
        let mut buf = core::mem::MaybeUninit::<[abi::ReadEntry; MAX]>::uninit();
        let list = uaccess::read_list(&mut buf, uaccess::UserRange::of_list(a.list)?)?;
        ipc::supervise::read_many(self.me, a.rid, list)
    }

    fn caller_write(&mut self, a: call::CallerWrite) -> Result<u64, Error> {
        ipc::supervise::write(self.me, a.rid, a.addr, uaccess::UserRange::of(a.data.0)?)
    }

    fn caller_regs(&mut self, a: call::CallerRegs) -> Result<u64, Error> {
        let r = ipc::supervise::regs(self.me, a.rid)?;
        uaccess::write_out(a.out, &r).map(|()| 0)
    }

    fn caller_set_regs(&mut self, a: call::CallerSetRegs) -> Result<u64, Error> {
        let r = uaccess::read_in(a.regs)?;
        ipc::supervise::set_regs(self.me, a.rid, &r).map(|()| 0)
    }

    fn caller_set_signal_regs(&mut self, a: call::CallerSetSignalRegs) -> Result<u64, Error> {
        let r = uaccess::read_in(a.regs)?;
        ipc::supervise::set_signal_regs(self.me, a.rid, &r, a.sigmask).map(|()| 0)
    }

    fn caller_return(&mut self, a: call::CallerReturn) -> Result<u64, Error> {
        ipc::supervise::finish(self.me, a.rid, a.value).map(|()| 0)
    }

    fn caller_return_acc(&mut self, a: call::CallerReturnAcc) -> Result<u64, Error> {
        rendezvous::sys_caller_return_acc(self.me, a)
    }

    fn call_for(&mut self, a: call::CallFor) -> Result<u64, Error> {
        let req = uaccess::read_in(a.req)?;
        ipc::supervise::call_for(self.me, &req)
    }

    fn linux_fork(&mut self, a: call::LinuxFork) -> Result<u64, Error> {
        forks::linux_fork(self.me, a.rid, a.supervisor, a.linux_pid)
    }

    fn linux_vfork(&mut self, a: call::LinuxVfork) -> Result<u64, Error> {
        forks::linux_vfork(self.me, a.rid, a.supervisor, a.linux_pid)
    }

    fn linux_attention(&mut self, a: call::LinuxAttention) -> Result<u64, Error> {
        let p = proc::get(a.pid).ok_or(Error::NotFound)?;
        if !ipc::supervise::serves_process(self.me.pid(), &p) {
            return Err(Error::Denied);
        }
        p.ask_attention();
        // A process running on another CPU comes back to the kernel at its
        // next interrupt (a reschedule IPI makes that now); one asleep in a
        // sleep the kernel serves it wakes to see (other waits look again
        // and wait on). Of several computations, the first that lives is
        // woken; whichever goes back to user mode first stops.
        if let Some(c) = p.computation_labelled(0).or_else(|| p.first_thread()) {
            sched::kick(&c);
            sched::wake(&c);
        }
        Ok(0)
    }

    fn linux_attention_thread(&mut self, a: call::LinuxAttentionThread) -> Result<u64, Error> {
        let p = proc::get(a.pid).ok_or(Error::NotFound)?;
        if !ipc::supervise::serves_process(self.me.pid(), &p) {
            return Err(Error::Denied);
        }
        let label = match p.route() {
            proc::Route::Linux { pid, .. } if pid == a.tid => 0,
            _ => a.tid,
        };
        let c = p.computation_labelled(label).ok_or(Error::NotFound)?;
        c.attention.store(true, core::sync::atomic::Ordering::Release);
        sched::kick(&c);
        sched::wake(&c);
        Ok(0)
    }

    fn linux_thread(&mut self, a: call::LinuxThread) -> Result<u64, Error> {
        let mut regs = uaccess::read_in(a.regs)?;
        // Any canonical address: one the thread cannot use faults in user
        // mode, as on Linux (a non-canonical one would fault the return).
        let canonical = kcore::vm::is_canonical;
        if !canonical(regs.rip) || !canonical(regs.rsp) || !canonical(regs.fs_base) || a.tid == 0 {
            return Err(Error::Invalid);
        }
        regs.rflags = 0x202;
        // Its creator's mask, as Linux's clone copies it.
        let (p, mask) = ipc::supervise::waiting_with_sigmask(self.me, a.rid)?;
        resource::computation::create_thread(&p, &regs, a.tid, a.clear_word, mask).map(|_| 0)
    }

    fn linux_pipe(&mut self, a: call::LinuxPipe) -> Result<u64, Error> {
        pipes::linux_pipe(self.me, a.op, a.pid, a.a, a.b, a.c)
    }

    fn file_cache(&mut self, a: call::FileCache) -> Result<u64, Error> {
        use abi::file_cache::op;
        use resource::file_cache as fc;
        let pid = self.me.pid();
        match a.op {
            op::CREATE => fc::create(pid).map(|id| id.raw()),
            op::PUBLISH => fc::publish(pid, id(a.id), a.a, a.b, a.c),
            op::REVOKE => fc::revoke(pid, id(a.id), a.a, a.b),
            op::GRANT => fc::grant(pid, id(a.id), a.a, a.b != 0).map(|()| 0),
            op::SIZE => fc::set_size(pid, id(a.id), a.a).map(|()| 0),
            op::PUBLISHER => fc::set_publisher(pid, id(a.id), a.a).map(|()| 0),
            op::GENERATION => fc::generation(pid, id(a.id)),
            op::PUBLISH_FOR => fc::publish_for(pid, id(a.id), a.a, a.b, a.c),
            _ => Err(Error::Invalid),
        }
    }

    fn wall_set(&mut self, a: call::WallSet) -> Result<u64, Error> {
        wallclock::set(self.me, a.rid, a.ns)
    }

    fn wall_clock(&mut self, _a: call::WallClock) -> Result<u64, Error> {
        Ok(wallclock::now())
    }

    fn caller_vm_copy(&mut self, a: call::CallerVmCopy) -> Result<u64, Error> {
        let to_target = match a.to_target {
            0 => false,
            1 => true,
            _ => return Err(Error::Invalid),
        };
        ipc::vmcopy::caller_vm_copy(self.me, a.rid, a.target, (a.local, a.remote, a.len), to_target)
    }

    fn cpu_time(&mut self, _: call::CpuTime) -> Result<u64, Error> {
        let c = sched::current().ok_or(Error::NotFound)?;
        Ok(clock::cycles_to_ns(sched::cycles_of(&c)))
    }

    fn linux_process(&mut self, a: call::LinuxProcess) -> Result<u64, Error> {
        ipc::vmcopy::linux_process(self.me, a.supervisor, a.linux_pid)
    }

    fn linux_set_ppid(&mut self, a: call::LinuxSetPpid) -> Result<u64, Error> {
        ipc::supervise::set_ppid(self.me, a.target, a.linux_pid, a.ppid)
    }

    fn linux_sigmask(&mut self, a: call::LinuxSigmask) -> Result<u64, Error> {
        ipc::supervise::sigmask(self.me, a.op, a.pid, a.tid, a.value)
    }

    fn file_cache_read(&mut self, a: call::FileCacheRead) -> Result<u64, Error> {
        resource::file_cache::read(self.me.pid(), id(a.id), a.offset, a.buf.0.addr, a.buf.0.len as usize)
            .map(|n| n as u64)
    }

    fn file_cache_attr(&mut self, a: call::FileCacheAttr) -> Result<u64, Error> {
        let from = match a.stat.0.len {
            0 => None,
            _ => Some(uaccess::UserRange::of(a.stat.0)?),
        };
        resource::file_cache::set_attrs(self.me.pid(), id(a.id), from).map(|()| 0)
    }

    fn caller_exit_thread(&mut self, a: call::CallerExitThread) -> Result<u64, Error> {
        ipc::supervise::exit_thread(self.me, a.rid).map(|()| 0)
    }

    fn caller_exit(&mut self, a: call::CallerExit) -> Result<u64, Error> {
        ipc::supervise::exit(self.me, a.rid, a.status).map(|()| 0)
    }

    fn linux_pass(&mut self, a: call::LinuxPass) -> Result<u64, Error> {
        let msg = uaccess::UserRange::of(a.msg.0)?;
        ipc::supervise::pass(self.me, a.rid, a.server, a.entry, msg).map(|()| 0)
    }

    fn console_attach(&mut self, a: call::ConsoleAttach) -> Result<u64, Error> {
        if !self.me.holds_rights(abi::rights::CONSOLE) {
            return Err(Error::Denied);
        }
        console::attach(self.me, a.entry).map(|()| 0)
    }

    fn caller_fpu(&mut self, a: call::CallerFpu) -> Result<u64, Error> {
        let to = uaccess::UserRange::of(a.out.0)?;
        if to.len() != 512 {
            return Err(Error::Invalid);
        }
        let mut area = [0u8; 512];
        ipc::supervise::fpu(self.me, a.rid, Some(&mut area), None)?;
        to.write(&area).map(|()| 0)
    }

    fn caller_set_fpu(&mut self, a: call::CallerSetFpu) -> Result<u64, Error> {
        let from = uaccess::UserRange::of(a.data.0)?;
        if from.len() != 512 {
            return Err(Error::Invalid);
        }
        let mut area = [0u8; 512];
        from.read(&mut area)?;
        ipc::supervise::fpu(self.me, a.rid, None, Some(&area)).map(|()| 0)
    }

    fn port_alarm(&mut self, a: call::PortAlarm) -> Result<u64, Error> {
        alarm::set(self.me, a.entry, a.deadline).map(|()| 0)
    }

    fn caller_map(&mut self, a: call::CallerMap) -> Result<u64, Error> {
        let p = ipc::supervise::waiting(self.me, a.rid)?;
        let at = linux::map_into(
            &p,
            a.addr,
            a.len,
            a.prot,
            a.flags & (abi::linux::MAP_FIXED | abi::linux::MAP_SHARED),
        )?;
        if a.flags & abi::linux::MAP_ANONYMOUS == 0 {
            linux::mark_file_copy(&p, at);
        }
        Ok(at)
    }

    fn caller_protect(&mut self, a: call::CallerProtect) -> Result<u64, Error> {
        let p = ipc::supervise::waiting(self.me, a.rid)?;
        linux::mprotect(&p, a.addr, a.len, a.prot)
    }

    fn caller_map_file(&mut self, a: call::CallerMapFile) -> Result<u64, Error> {
        let p = ipc::supervise::waiting(self.me, a.rid)?;
        filemap::mark(&p, a.addr, a.may, a.file, a.first, a.pages)
    }

    fn caller_file_end(&mut self, a: call::CallerFileEnd) -> Result<u64, Error> {
        let p = ipc::supervise::waiting(self.me, a.rid)?;
        filemap::set_end(&p, a.file, a.pages)
    }

    fn caller_file_written(&mut self, a: call::CallerFileWritten) -> Result<u64, Error> {
        let p = ipc::supervise::waiting(self.me, a.rid)?;
        let from = uaccess::UserRange::of(a.data.0)?;
        filemap::written(&p, a.file, a.offset, from)
    }

    fn proc_maps(&mut self, a: call::ProcMaps) -> Result<u64, Error> {
        let p = proc::get(a.pid).ok_or(Error::NotFound)?;
        if !ipc::supervise::serves_process(self.me.pid(), &p) {
            return Err(Error::Denied);
        }
        let to = uaccess::UserRange::of(a.out.0)?;
        let records = linux::maps_of(&p, a.from, to.len() / (abi::linux::MAPS_WORDS * 8))?;
        let mut bytes = alloc::vec::Vec::new();
        bytes
            .try_reserve_exact(records.len() * abi::linux::MAPS_WORDS * 8)
            .map_err(|_| Error::NoMemory)?;
        for w in records.iter().flatten() {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        to.prefix(bytes.len()).write(&bytes)?;
        Ok(records.len() as u64)
    }

    fn caller_share(&mut self, a: call::CallerShare) -> Result<u64, Error> {
        or_reclaim(|| sysv::share_into(self.me, a.rid, a.addr, a.src, a.flags))
    }

    fn caller_unshare(&mut self, a: call::CallerUnshare) -> Result<u64, Error> {
        sysv::unmap_shared(self.me, a.rid, a.addr)
    }

    fn map_sharers(&mut self, a: call::MapSharers) -> Result<u64, Error> {
        sysv::sharers(self.me, a.addr)
    }

    fn endr_len(&mut self, a: call::EndrLen) -> Result<u64, Error> {
        ipc::rendezvous::end_with_len(self.me, a.rid, a.len)
    }

    fn device_find(&mut self, a: call::DeviceFind) -> Result<u64, Error> {
        Ok(resource::device::find(a.vendor, a.device, a.index)?.raw())
    }

    fn device_info(&mut self, a: call::DeviceInfo) -> Result<u64, Error> {
        let r = resource::device::info(id(a.device))?;
        uaccess::write_out(a.out, &r).map(|()| 0)
    }

    fn device_claim(&mut self, a: call::DeviceClaim) -> Result<u64, Error> {
        if !self.me.holds_rights(abi::rights::DEVICE) {
            return Err(Error::Denied);
        }
        resource::device::claim(self.me.pid(), id(a.device)).map(|()| 0)
    }

    fn device_map(&mut self, a: call::DeviceMap) -> Result<u64, Error> {
        resource::device::map(self.me, id(a.device), a.bar)
    }

    fn device_irq(&mut self, a: call::DeviceIrq) -> Result<u64, Error> {
        resource::device::bind_interrupt(self.me.pid(), id(a.device), a.entry).map(|()| 0)
    }

    fn device_irq_done(&mut self, a: call::DeviceIrqDone) -> Result<u64, Error> {
        resource::device::interrupt_done(self.me.pid(), id(a.device)).map(|()| 0)
    }

    fn device_config_read(&mut self, a: call::DeviceConfigRead) -> Result<u64, Error> {
        resource::device::read_config(self.me.pid(), id(a.device), a.offset, a.width)
    }

    fn device_config_write(&mut self, a: call::DeviceConfigWrite) -> Result<u64, Error> {
        resource::device::write_config(self.me.pid(), id(a.device), a.offset, a.width, a.value).map(|()| 0)
    }

    fn dma_address(&mut self, a: call::DmaAddress) -> Result<u64, Error> {
        resource::device::dma_address(self.me, a.addr, a.len)
    }

    fn ica_create(&mut self, a: call::IcaCreate) -> Result<u64, Error> {
        Ok(or_reclaim(|| resource::container::create_ica(self.me.pid(), a.pages))?.raw())
    }

    fn ica_move(&mut self, a: call::IcaMove) -> Result<u64, Error> {
        container::sys_ica_move(self.me, a)
    }
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
        nvm_text_reuses: resource::pool::NVM_TEXT_REUSES.load(Ordering::Relaxed),
        nvm_text_pages_reused: resource::pool::NVM_TEXT_PAGES_REUSED.load(Ordering::Relaxed),
        pages_paged_in: ipc::pager::PAGES_SUPPLIED.load(Ordering::Relaxed),
        page_ins_failed: ipc::pager::PAGE_INS_FAILED.load(Ordering::Relaxed),
        linux_calls: linux::LINUX_CALLS.load(Ordering::Relaxed),
        communications: ipc::rendezvous::CALLS.load(Ordering::Relaxed),
        bytes_copied: ipc::rendezvous::BYTES_COPIED.load(Ordering::Relaxed),
        bytes_by_reference: ipc::procnet::BYTES_BY_REFERENCE.load(Ordering::Relaxed),
        idle_ns: clock::cycles_to_ns(sched::idle_cycles()),
    };
    uaccess::write_out(a.out, &info)?;
    Ok(0)
}
