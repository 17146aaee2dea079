//! System calls: the raw `syscall` instruction and one typed wrapper per
//! call of the native interface.

use abi::args::MessageOf;
use abi::{Clock, Error, LoadPolicy, PoolRule, PoolSettings, ProcInfo, Record, SpawnOptions, Sys, SysInfo};
use alloc::vec;
use alloc::vec::Vec;
use core::arch::asm;

/// The raw call. Arguments go in rdi, rsi, rdx, r10, r8, r9; the CPU
/// clobbers rcx and r11.
///
/// # Safety
/// Pointer arguments must be what the call expects; the kernel checks them,
/// but a call can legitimately write to memory it is given.
#[inline(always)]
pub unsafe fn syscall(n: u64, a: [u64; 6]) -> u64 {
    let ret;
    // SAFETY: the syscall instruction only transfers to the kernel.
    unsafe {
        asm!("syscall",
            inlateout("rax") n => ret,
            in("rdi") a[0], in("rsi") a[1], in("rdx") a[2],
            in("r10") a[3], in("r8") a[4], in("r9") a[5],
            lateout("rcx") _, lateout("r11") _,
            options(nostack));
    }
    ret
}

#[inline(always)]
pub(crate) fn raw(n: Sys, a: [u64; 6]) -> Result<u64, Error> {
    // SAFETY: the wrappers below pass pointers to live, correctly sized objects.
    Error::decode(unsafe { syscall(n as u64, a) })
}

/// The system calls themselves, one function per call of the ABI's list
/// (`abi::each_call!`), with the argument types it gives: what every
/// wrapper below calls, and what a program calls when it needs exactly
/// the kernel's interface. Each returns the call's raw result (a value or
/// an error).
pub mod calls {
    #[allow(unused_imports)]
    use abi::args::*;
    #[allow(unused_imports)]
    use abi::*;

    macro_rules! wrappers {
        ($($(#[$doc:meta])* $name:ident = $n:literal, $func:ident($($arg:ident: $ty:ty),*);)*) => {
            $(
                $(#[$doc])*
                #[inline]
                pub fn $func($($arg: <$ty as Arg>::User<'_>),*) -> Result<u64, Error> {
                    super::raw(Sys::$name, abi::encode_args!($($arg: $ty),*))
                }
            )*
        };
    }
    abi::each_call!(wrappers);
}

pub fn exit(status: u64) -> ! {
    let _ = calls::exit(status);
    unreachable!("exit returned")
}

/// Starts `path` with `args` (each argument is NUL-terminated by this wrapper).
pub fn spawn(path: &str, args: &[&str], options: &SpawnOptions) -> Result<u64, Error> {
    let mut buf = [0u8; 1024];
    let mut len = 0;
    for a in args {
        if len + a.len() + 1 > buf.len() {
            return Err(Error::Invalid);
        }
        buf[len..len + a.len()].copy_from_slice(a.as_bytes());
        len += a.len() + 1;
    }
    calls::spawn(path, &buf[..len], Some(options))
}

pub fn wait(pid: u64) -> Result<u64, Error> {
    calls::wait(pid)
}

pub fn getpid() -> u64 {
    calls::getpid().unwrap_or(0)
}

pub fn yield_now() {
    let _ = calls::yield_now();
}

pub fn sleep_ns(ns: u64) {
    let _ = calls::sleep(ns);
}

pub fn clock() -> Clock {
    let mut c = Clock::default();
    let _ = calls::clock(&mut c);
    c
}

/// Nanoseconds since boot.
pub fn now_ns() -> u64 {
    clock().nanos
}

/// The time-stamp counter, read in user mode without entering the kernel
/// (under QEMU's icount mode it counts instructions). For timing short
/// operations; convert with `tsc_to_ns`.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no side effects; the kernel leaves it usable in ring 3.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Converts a TSC difference to nanoseconds with the kernel's calibration.
pub fn tsc_to_ns(cycles: u64) -> u64 {
    static HZ: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
    let mut hz = HZ.load(core::sync::atomic::Ordering::Relaxed);
    if hz == 0 {
        hz = clock().tsc_hz.max(1);
        HZ.store(hz, core::sync::atomic::Ordering::Relaxed);
    }
    ((cycles as u128 * 1_000_000_000) / hz as u128) as u64
}

pub fn console_write(bytes: &[u8]) -> Result<u64, Error> {
    calls::console_write(bytes)
}

pub fn console_read(buf: &mut [u8]) -> Result<usize, Error> {
    calls::console_read(buf).map(|n| n as usize)
}

/// New zeroed anonymous memory of `len` bytes (pages come at first touch).
pub fn map(len: u64, prot: u64) -> Result<u64, Error> {
    calls::map(0, len, prot)
}

pub fn unmap(addr: u64, len: u64) -> Result<u64, Error> {
    calls::unmap(addr, len)
}

/// Anonymous read-write memory of the process's own, held while this
/// lives (a server's object that it shares into other processes and
/// reads and writes itself); unmapped when dropped.
pub struct Anon {
    addr: u64,
    len: usize,
}

impl Anon {
    pub fn new(len: u64) -> Result<Anon, Error> {
        let len = usize::try_from(len).map_err(|_| Error::Invalid)?;
        let addr = map(len as u64, 3)?;
        Ok(Anon { addr, len })
    }

    pub fn addr(&self) -> u64 {
        self.addr
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the kernel mapped `len` readable and writable bytes at
        // `addr` for this process; only this object unmaps them (at its
        // drop), so they stay mapped while it lives.
        unsafe { core::slice::from_raw_parts(self.addr as *const u8, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`; `&mut self` makes this the only view
        // in this process (others sharing the frames write through their
        // own mappings, as with any shared memory).
        unsafe { core::slice::from_raw_parts_mut(self.addr as *mut u8, self.len) }
    }
}

impl Drop for Anon {
    fn drop(&mut self) {
        let _ = unmap(self.addr, 0);
    }
}

pub fn proc_info(pid: u64) -> Result<ProcInfo, Error> {
    let mut info = ProcInfo::default();
    calls::proc_info(pid, &mut info)?;
    Ok(info)
}

/// Pids of every process; returns how many there are (may exceed `out`).
pub fn proc_list(out: &mut [u64]) -> Result<usize, Error> {
    calls::proc_list(out).map(|n| n as usize)
}

pub fn set_policy(p: LoadPolicy) -> Result<LoadPolicy, Error> {
    calls::set_policy(p).map(|v| LoadPolicy::from_u64(v).unwrap_or(LoadPolicy::Eager))
}

pub fn kill(pid: u64) -> Result<u64, Error> {
    calls::kill(pid)
}

pub fn set_affinity(pid: u64, cpu: u64) -> Result<u64, Error> {
    calls::set_affinity(pid, cpu)
}

/// Records of the inspector (`T::TOPIC`; `arg` as the topic says) from
/// `start` on, as many as fit in `out` (at most `abi::INSPECT_MAX`);
/// returns how many the topic has.
pub fn inspect<T: Record>(arg: u64, start: u64, out: &mut [T]) -> Result<usize, Error> {
    calls::inspect(
        T::TOPIC,
        arg,
        start,
        out.as_mut_ptr() as u64,
        out.len() as u64,
        core::mem::size_of::<T>() as u64,
    )
    .map(|n| n as usize)
}

/// Every record of the topic, gathered page by page.
pub fn inspect_all<T: Record>(arg: u64) -> Result<Vec<T>, Error> {
    let mut page = vec![T::default(); abi::INSPECT_MAX as usize];
    let mut all = Vec::new();
    loop {
        let total = inspect(arg, all.len() as u64, &mut page)?;
        let got = total.saturating_sub(all.len()).min(page.len());
        all.extend_from_slice(&page[..got]);
        // The topic may shrink between calls: stop at its end as it is now.
        if got == 0 || all.len() >= total {
            return Ok(all);
        }
    }
}

/// Replaces the resource pool's settings and add rules; returns how many
/// resources the add function made. Needs `rights::SYSTEM`.
pub fn pool_set(settings: &PoolSettings, rules: &[PoolRule]) -> Result<u64, Error> {
    // The kernel only reads the rules; the list type is for both ways.
    let mut rules = rules.to_vec();
    calls::pool_set(settings, &mut rules)
}

/// Deletes everything the pool holds; returns how many resources went.
pub fn pool_flush() -> Result<u64, Error> {
    calls::pool_flush()
}

/// Bytes of a plate from `offset` on, into `buf`; 0 at the end.
pub fn plate_read(plate: u64, offset: u64, buf: &mut [u8]) -> Result<usize, Error> {
    calls::plate_read(plate, offset, buf).map(|n| n as usize)
}

/// Creates a resource of `kind` (see `abi::Sys::ResCreate` for the arguments).
pub fn res_create(kind: abi::ResKind, a: u64, b: u64, c: u64, d: u64) -> Result<u64, Error> {
    calls::res_create(kind, a, b, c, d)
}

pub fn res_delete(id: u64) -> Result<u64, Error> {
    calls::res_delete(id)
}

pub fn res_query(id: u64) -> Result<abi::ResInfo, Error> {
    let mut info = abi::ResInfo::default();
    calls::res_query(id, &mut info)?;
    Ok(info)
}

/// Fills a region with segment `segment` of a program.
pub fn res_load(region: u64, program: u64, segment: u64) -> Result<u64, Error> {
    calls::res_load(region, program, segment)
}

/// Segment `index` of a program resource.
pub fn program_segment(program: u64, index: u64) -> Result<abi::SegmentInfo, Error> {
    let mut s = abi::SegmentInfo::default();
    calls::program_segment(program, index, &mut s)?;
    Ok(s)
}

pub fn plate_find(name: &str) -> Result<u64, Error> {
    calls::plate_find(name)
}

/// Stores NUL-separated `name\0arg\0...` in a work area.
pub fn work_area_write(area: u64, strings: &[u8]) -> Result<u64, Error> {
    calls::work_area_write(area, strings)
}

/// Starts a composed process; returns its pid.
pub fn process_start(process: u64) -> Result<u64, Error> {
    calls::process_start(process)
}

// ---- container IPC (seed 004) ----

/// A new zeroed container of `pages` in this process; returns its id.
pub fn container_create(pages: u64) -> Result<u64, Error> {
    calls::container_create(pages, 0)
}

/// Where a container is attached in this process.
pub fn container_addr(id: u64) -> Result<u64, Error> {
    res_query(id).map(|i| i.value)
}

pub fn box_create(pages: u64, initial: u64, lower: u64, upper: u64, flags: u64) -> Result<u64, Error> {
    calls::box_create(pages, initial, lower, upper, flags)
}

pub fn box_grant(bx: u64, pid: u64, rights: u64) -> Result<u64, Error> {
    calls::box_grant(bx, pid, rights)
}

/// ctainersend: returns the id of the container now in the box.
pub fn container_send(container: u64, bx: u64, addr: u64, mode: abi::ContainerMode) -> Result<u64, Error> {
    let mut size = 0u64;
    calls::container_send(container, bx, addr, mode, &mut size)
}

/// ctainerreceive: (container id, where it is attached, size).
pub fn container_receive(
    container: u64,
    bx: u64,
    addr: u64,
    mode: abi::ContainerMode,
    timeout_ns: u64,
) -> Result<(u64, abi::Received), Error> {
    let mut r = abi::Received::default();
    let id = calls::container_receive(container, bx, addr, mode, timeout_ns, &mut r)?;
    Ok((id, r))
}

pub fn container_push(container: u64, target: u64, mode: abi::ContainerMode) -> Result<u64, Error> {
    calls::container_push(container, target, 0, mode)
}

pub fn container_steal(container: u64, target: u64, mode: abi::ContainerMode) -> Result<u64, Error> {
    calls::container_steal(container, target, 0, mode)
}

pub fn container_exchange(mine: u64, target: u64, theirs: u64) -> Result<u64, Error> {
    calls::container_exchange(mine, target, theirs)
}

pub fn peer_grant(pid: u64) -> Result<u64, Error> {
    calls::peer_grant(pid)
}

/// AnT's ICA: `pages` physically contiguous pages; returns its id.
pub fn ica_create(pages: u64) -> Result<u64, Error> {
    calls::ica_create(pages)
}

/// Moves an ICA to `target` without copying; returns its address there.
pub fn ica_move(ica: u64, target: u64) -> Result<u64, Error> {
    calls::ica_move(ica, target, 0)
}

/// `ica_move`, asking for address `addr` in the target (0: anywhere).
pub fn ica_move_to(ica: u64, target: u64, addr: u64) -> Result<u64, Error> {
    calls::ica_move(ica, target, addr)
}

pub fn container_stats() -> abi::ContainerStats {
    let mut s = abi::ContainerStats::default();
    let _ = calls::container_stats(&mut s);
    s
}

// ---- rendezvous and requests (seed 003, seed 002) ----

/// Serve under `name`, taking calls for the entries in `entries` (bit n = entry n).
pub fn name_register(name: &str, entries: u64) -> Result<u64, Error> {
    calls::name_register(name, entries)
}

pub fn name_lookup(name: &str) -> Result<u64, Error> {
    calls::name_lookup(name)
}

/// Rendezvous call (also AnT's callsync): returns the reply length.
// The rendezvous calls are inlined into a client's or a server's loop.
#[inline]
pub fn call(server: u64, entry: u64, msg: &[u8], reply: &mut [u8]) -> Result<usize, Error> {
    calls::call(server, entry, MessageOf::Bytes(msg), reply).map(|n| n as usize)
}

/// A call that passes on the message of call `rid`, which the caller
/// holds (a nested rendezvous: the next server reads the first caller's
/// data directly).
#[inline]
pub fn call_by_ref(server: u64, entry: u64, rid: u64, reply: &mut [u8]) -> Result<usize, Error> {
    calls::call(server, entry | abi::CALL_BY_REF, MessageOf::Held(rid), reply).map(|n| n as usize)
}

/// The call with raw addresses, for tests that hand the kernel bad ones.
///
/// # Safety
/// `reply` must be writable memory of `reply_len` bytes for the whole call,
/// or memory the caller does not own (the kernel then refuses the call).
#[inline]
pub unsafe fn call_raw(
    server: u64,
    entry: u64,
    msg: u64,
    msg_len: u64,
    reply: u64,
    reply_len: u64,
) -> Result<u64, Error> {
    raw(Sys::Call, [server, entry, msg, msg_len, reply, reply_len])
}

/// Waits for a call on one of `entries`; returns its rid.
pub fn acc(entries: u64, info: &mut abi::AccInfo) -> Result<u64, Error> {
    calls::acc(entries, info)
}

/// Ends call `rid` with status `len` without copying: its reply went into
/// the caller's buffer in pieces (`rv_write`).
pub fn endr_len(rid: u64, len: u64) -> Result<(), Error> {
    calls::endr_len(rid, len).map(drop)
}

pub fn endr(rid: u64, reply: &[u8]) -> Result<u64, Error> {
    calls::endr(rid, reply)
}

/// Ends call `rid` (0: none) with `reply` and waits for the next call on
/// one of `entries`: a server's loop in one system call. Returns the new rid.
#[inline]
pub fn endr_acc(rid: u64, reply: &[u8], entries: u64, info: &mut abi::AccInfo) -> Result<u64, Error> {
    calls::endr_acc(rid, reply, entries, info)
}

/// Forwards call `rid` to `next` (entry `entry`) and waits for the next call
/// on one of `entries`: a relay's loop in one system call.
pub fn forward_acc(rid: u64, next: u64, entry: u64, entries: u64, info: &mut abi::AccInfo) -> Result<u64, Error> {
    calls::forward_acc(rid, next, entry, entries, info)
}

/// Waits for a call on one of `entries` (unless `ACC_NOWAIT` is in it),
/// then accepts it and the further calls already waiting, up to
/// `infos.len()` (at most `MAX_BATCH`) in all; returns how many, described
/// in `infos[..n]` in the order they arrived.
pub fn acc_many(entries: u64, infos: &mut [abi::AccInfo]) -> Result<usize, Error> {
    calls::acc_many(entries, infos).map(|n| n as usize)
}

/// Passes each call of `list` on (`forward`), the next server seeing the
/// message without its last `trim` bytes; returns how many went. A call
/// that could not go was ended with its error, which is in its `status`.
pub fn forward_many(list: &mut [abi::ForwardEntry]) -> Result<usize, Error> {
    calls::forward_many(list).map(|n| n as usize)
}

/// Ends every call of `replies` with its reply, then accepts as `acc_many`
/// does: a server's loop over whole batches, one system call a step. A
/// call that could not be ended is still held, its error in its `status`.
pub fn endr_many_acc(
    replies: &mut [abi::ReplyEntry],
    entries: u64,
    infos: &mut [abi::AccInfo],
) -> Result<usize, Error> {
    calls::endr_many_acc(replies, entries, infos).map(|n| n as usize)
}

pub fn rv_read(rid: u64, offset: u64, buf: &mut [u8]) -> Result<u64, Error> {
    calls::rv_read(rid, offset, buf)
}

pub fn rv_write(rid: u64, offset: u64, data: &[u8]) -> Result<u64, Error> {
    calls::rv_write(rid, offset, data)
}

pub fn rv_fail(rid: u64, e: Error) -> Result<u64, Error> {
    calls::rv_fail(rid, e as u64)
}

pub fn forward(rid: u64, next: u64, entry: u64) -> Result<u64, Error> {
    calls::forward(rid, next, entry)
}

/// A non-blocking request; its buffers must stay alive until it is fetched.
///
/// # Safety
/// `reply` must stay writable until the request's result has been fetched.
pub unsafe fn request(server: u64, entry: u64, msg: &[u8], reply: *mut u8, reply_len: usize) -> Result<u64, Error> {
    calls::request(
        server,
        entry,
        msg,
        core::ptr::slice_from_raw_parts_mut(reply, reply_len),
    )
}

/// AnT's batch request: sends every entry at once, waits once for all;
/// each entry's `status` gets its reply length or error.
pub fn ncallsync(list: &mut [abi::BatchEntry]) -> Result<u64, Error> {
    if let [e] = list
        && e.entry & abi::CALL_BY_REF == 0
    {
        // A batch of one is one call (the kernel makes it one as well):
        // sent as a call, the kernel has no list to read or write back.
        // SAFETY: as for `ncallsync`: the buffers are the entry's, and the
        // kernel checks them as it would the list's.
        let status = unsafe {
            syscall(
                Sys::Call as u64,
                [e.server, e.entry, e.msg, e.msg_len, e.reply, e.reply_cap],
            )
        };
        e.status = status;
        return Error::decode(status).map(|_| 0);
    }
    calls::ncallsync(list)
}

/// Waits up to `timeout_ns` for a finished request: (request id, status).
pub fn fetch(timeout_ns: u64) -> Result<(u64, u64), Error> {
    let mut out = [0u64; 2];
    calls::fetch(timeout_ns, &mut out)?;
    Ok((out[0], out[1]))
}

pub fn sys_info() -> Result<SysInfo, Error> {
    let mut info = SysInfo::default();
    calls::sys_info(&mut info)?;
    Ok(info)
}

// ---- helpers for programs that start and find servers ----

/// Starts `prog` with `args` pinned to `cpu` (or `abi::ANY_CPU`).
pub fn spawn_on(prog: &str, args: &[&str], cpu: u64) -> Result<u64, Error> {
    spawn(
        prog,
        args,
        &SpawnOptions {
            cpu,
            ..SpawnOptions::DEFAULT
        },
    )
}

/// Waits (up to about two seconds) for a server to register `name`;
/// 0 if it never does. Servers start asynchronously.
pub fn wait_for_name(name: &str) -> u64 {
    for _ in 0..2000 {
        if let Ok(pid) = name_lookup(name) {
            return pid;
        }
        sleep_ns(1_000_000);
    }
    0
}

/// The whole content of the archive's file `name` (a plate), if it has one
/// of at most `limit` bytes.
pub fn read_plate(name: &str, limit: usize) -> Result<Vec<u8>, Error> {
    let plate = plate_find(name)?;
    let size = res_query(plate)?.bytes as usize;
    if size > limit {
        return Err(Error::Limit);
    }
    let mut data = vec![0u8; size];
    let mut at = 0;
    while at < size {
        match plate_read(plate, at as u64, &mut data[at..])? {
            0 => break,
            n => at += n,
        }
    }
    data.truncate(at);
    Ok(data)
}

/// Kills a process and reaps it.
pub fn stop(pid: u64) {
    let _ = kill(pid);
    let _ = wait(pid);
}

/// `v` in decimal, in `buf` (for passing numbers as arguments).
pub fn fmt_u64(mut v: u64, buf: &mut [u8; 24]) -> &str {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    core::str::from_utf8(&buf[i..]).unwrap_or("0")
}

/// Whether process `pid` exists and has not ended.
pub fn alive(pid: u64) -> bool {
    calls::proc_state(pid).is_ok_and(|s| s != abi::state::EXITED)
}

// ---- devices, for drivers (`abi::rights::DEVICE`) ----

/// The `index`-th PCI function with these vendor and device ids.
pub fn device_find(vendor: u64, device: u64, index: u64) -> Result<u64, Error> {
    calls::device_find(vendor, device, index)
}

pub fn device_info(device: u64, out: &mut abi::DeviceRecord) -> Result<(), Error> {
    calls::device_info(device, out).map(drop)
}

pub fn device_claim(device: u64) -> Result<(), Error> {
    calls::device_claim(device).map(drop)
}

/// Maps memory BAR `bar` uncached; returns its address.
pub fn device_map(device: u64, bar: u64) -> Result<u64, Error> {
    calls::device_map(device, bar)
}

pub fn device_irq(device: u64, entry: u64) -> Result<(), Error> {
    calls::device_irq(device, entry).map(drop)
}

pub fn device_irq_done(device: u64) -> Result<(), Error> {
    calls::device_irq_done(device).map(drop)
}

pub fn device_config_read(device: u64, offset: u64, width: u64) -> Result<u64, Error> {
    calls::device_config_read(device, offset, width)
}

pub fn device_config_write(device: u64, offset: u64, width: u64, value: u64) -> Result<(), Error> {
    calls::device_config_write(device, offset, width, value).map(drop)
}

/// The physical address of `len` bytes at `addr` (present, contiguous).
pub fn dma_address(addr: u64, len: u64) -> Result<u64, Error> {
    calls::dma_address(addr, len)
}

// ---- plates and the NVM store (seed 001) ----

/// The plate `name` of version `tag`, made from `content` if there is none
/// (an empty `content` only finds one).
pub fn plate_create(name: &str, tag: u64, content: &[u8]) -> Result<u64, Error> {
    calls::plate_create(name, tag, content)
}

/// The plate `name` of version `tag` of which `head` is held, the rest
/// of its bytes read by `source`'s pager at faults (an OFF2F file 1 whose
/// header page alone exec read).
pub fn plate_paged(name: &str, tag: u64, head: &[u8], source: &abi::PagerSource) -> Result<u64, Error> {
    calls::plate_paged(name, tag, head, source)
}

/// Stores `data` as NVM text file `name` (`abi::rights::NVM`); true if it
/// was written, false if the file held exactly this already.
pub fn nvm_store(name: &str, data: &[u8]) -> Result<bool, Error> {
    calls::nvm_store(name, data).map(|n| n == 1)
}

pub fn nvm_delete(name: &str) -> Result<(), Error> {
    calls::nvm_delete(name).map(drop)
}

/// Reads NVM text file `name` from `offset` into `buf` (at most 1 MiB, as
/// every buffer the kernel copies); bytes read.
pub fn nvm_read(name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, Error> {
    calls::nvm_read(name, offset, buf).map(|n| n as usize)
}

/// Waits for child `pid` as `wait`; `info` receives what it was at its end.
pub fn wait_info(pid: u64, info: &mut abi::ProcInfo) -> Result<u64, Error> {
    calls::wait_info(pid, info)
}
