//! System calls: the raw `syscall` instruction and one typed wrapper per
//! call of the native interface.

use abi::{Clock, Error, LoadPolicy, ProcInfo, SpawnOptions, Sys, SysInfo};
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

pub fn exit(status: u64) -> ! {
    let _ = raw(Sys::Exit, [status, 0, 0, 0, 0, 0]);
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
    raw(
        Sys::Spawn,
        [
            path.as_ptr() as u64,
            path.len() as u64,
            buf.as_ptr() as u64,
            len as u64,
            options as *const _ as u64,
            0,
        ],
    )
}

pub fn wait(pid: u64) -> Result<u64, Error> {
    raw(Sys::Wait, [pid, 0, 0, 0, 0, 0])
}

pub fn getpid() -> u64 {
    raw(Sys::GetPid, [0; 6]).unwrap_or(0)
}

pub fn yield_now() {
    let _ = raw(Sys::Yield, [0; 6]);
}

pub fn sleep_ns(ns: u64) {
    let _ = raw(Sys::Sleep, [ns, 0, 0, 0, 0, 0]);
}

pub fn clock() -> Clock {
    let mut c = Clock::default();
    let _ = raw(Sys::Clock, [&mut c as *mut Clock as u64, 0, 0, 0, 0, 0]);
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
    raw(
        Sys::ConsoleWrite,
        [bytes.as_ptr() as u64, bytes.len() as u64, 0, 0, 0, 0],
    )
}

pub fn console_read(buf: &mut [u8]) -> Result<usize, Error> {
    raw(
        Sys::ConsoleRead,
        [buf.as_mut_ptr() as u64, buf.len() as u64, 0, 0, 0, 0],
    )
    .map(|n| n as usize)
}

/// New zeroed anonymous memory of `len` bytes (pages come at first touch).
pub fn map(len: u64, prot: u64) -> Result<u64, Error> {
    raw(Sys::Map, [0, len, prot, 0, 0, 0])
}

pub fn unmap(addr: u64, len: u64) -> Result<u64, Error> {
    raw(Sys::Unmap, [addr, len, 0, 0, 0, 0])
}

pub fn proc_info(pid: u64) -> Result<ProcInfo, Error> {
    let mut info = ProcInfo::default();
    raw(Sys::ProcInfo, [pid, &mut info as *mut ProcInfo as u64, 0, 0, 0, 0])?;
    Ok(info)
}

/// Pids of every process; returns how many there are (may exceed `out`).
pub fn proc_list(out: &mut [u64]) -> Result<usize, Error> {
    raw(Sys::ProcList, [out.as_mut_ptr() as u64, out.len() as u64, 0, 0, 0, 0]).map(|n| n as usize)
}

pub fn set_policy(p: LoadPolicy) -> Result<LoadPolicy, Error> {
    raw(Sys::SetPolicy, [p as u64, 0, 0, 0, 0, 0]).map(|v| LoadPolicy::from_u64(v).unwrap_or(LoadPolicy::Eager))
}

pub fn kill(pid: u64) -> Result<u64, Error> {
    raw(Sys::Kill, [pid, 0, 0, 0, 0, 0])
}

pub fn set_affinity(pid: u64, cpu: u64) -> Result<u64, Error> {
    raw(Sys::SetAffinity, [pid, cpu, 0, 0, 0, 0])
}

/// A text report of the kernel's inspector: "resources [kind]", "pool",
/// "trace [n]", "counters". Returns the bytes written into `out`.
pub fn inspect(topic: &str, out: &mut [u8]) -> Result<usize, Error> {
    raw(
        Sys::Inspect,
        [
            topic.as_ptr() as u64,
            topic.len() as u64,
            out.as_mut_ptr() as u64,
            out.len() as u64,
            0,
            0,
        ],
    )
    .map(|n| n as usize)
}

/// One resource-pool setting, in the syntax of etc/pool.conf.
pub fn pool_ctl(line: &str) -> Result<u64, Error> {
    raw(Sys::PoolCtl, [line.as_ptr() as u64, line.len() as u64, 0, 0, 0, 0])
}

/// Creates a resource of `kind` (see `abi::Sys::ResCreate` for the arguments).
pub fn res_create(kind: abi::ResKind, a: u64, b: u64, c: u64, d: u64) -> Result<u64, Error> {
    raw(Sys::ResCreate, [kind as u64, a, b, c, d, 0])
}

pub fn res_delete(id: u64) -> Result<u64, Error> {
    raw(Sys::ResDelete, [id, 0, 0, 0, 0, 0])
}

pub fn res_query(id: u64) -> Result<abi::ResInfo, Error> {
    let mut info = abi::ResInfo::default();
    raw(Sys::ResQuery, [id, &mut info as *mut abi::ResInfo as u64, 0, 0, 0, 0])?;
    Ok(info)
}

/// Fills a region with segment `segment` of a program.
pub fn res_load(region: u64, program: u64, segment: u64) -> Result<u64, Error> {
    raw(Sys::ResLoad, [region, program, segment, 0, 0, 0])
}

/// Segment `index` of a program resource.
pub fn program_segment(program: u64, index: u64) -> Result<abi::SegmentInfo, Error> {
    let mut s = abi::SegmentInfo::default();
    raw(
        Sys::ProgramSegment,
        [program, index, &mut s as *mut abi::SegmentInfo as u64, 0, 0, 0],
    )?;
    Ok(s)
}

pub fn plate_find(name: &str) -> Result<u64, Error> {
    raw(Sys::PlateFind, [name.as_ptr() as u64, name.len() as u64, 0, 0, 0, 0])
}

/// Stores NUL-separated `name\0arg\0...` in a work area.
pub fn work_area_write(area: u64, strings: &[u8]) -> Result<u64, Error> {
    raw(
        Sys::WorkAreaWrite,
        [area, strings.as_ptr() as u64, strings.len() as u64, 0, 0, 0],
    )
}

/// Starts a composed process; returns its pid.
pub fn process_start(process: u64) -> Result<u64, Error> {
    raw(Sys::ProcessStart, [process, 0, 0, 0, 0, 0])
}

// ---- container IPC (seed 004) ----

/// A new zeroed container of `pages` in this process; returns its id.
pub fn container_create(pages: u64) -> Result<u64, Error> {
    raw(Sys::ContainerCreate, [pages, 0, 0, 0, 0, 0])
}

/// Where a container is attached in this process.
pub fn container_addr(id: u64) -> Result<u64, Error> {
    res_query(id).map(|i| i.value)
}

pub fn box_create(pages: u64, initial: u64, lower: u64, upper: u64, flags: u64) -> Result<u64, Error> {
    raw(Sys::BoxCreate, [pages, initial, lower, upper, flags, 0])
}

pub fn box_grant(bx: u64, pid: u64, rights: u64) -> Result<u64, Error> {
    raw(Sys::BoxGrant, [bx, pid, rights, 0, 0, 0])
}

/// ctainersend: returns the id of the container now in the box.
pub fn container_send(container: u64, bx: u64, addr: u64, mode: abi::ContainerMode) -> Result<u64, Error> {
    let mut size = 0u64;
    raw(
        Sys::ContainerSend,
        [container, bx, addr, mode as u64, &mut size as *mut u64 as u64, 0],
    )
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
    let id = raw(
        Sys::ContainerReceive,
        [
            container,
            bx,
            addr,
            mode as u64,
            timeout_ns,
            &mut r as *mut abi::Received as u64,
        ],
    )?;
    Ok((id, r))
}

pub fn container_push(container: u64, target: u64, mode: abi::ContainerMode) -> Result<u64, Error> {
    raw(Sys::ContainerPush, [container, target, 0, mode as u64, 0, 0])
}

pub fn container_steal(container: u64, target: u64, mode: abi::ContainerMode) -> Result<u64, Error> {
    raw(Sys::ContainerSteal, [container, target, 0, mode as u64, 0, 0])
}

pub fn container_exchange(mine: u64, target: u64, theirs: u64) -> Result<u64, Error> {
    raw(Sys::ContainerExchange, [mine, target, theirs, 0, 0, 0])
}

pub fn peer_grant(pid: u64) -> Result<u64, Error> {
    raw(Sys::PeerGrant, [pid, 0, 0, 0, 0, 0])
}

/// AnT's ICA: `pages` physically contiguous pages; returns its id.
pub fn ica_create(pages: u64) -> Result<u64, Error> {
    raw(Sys::IcaCreate, [pages, 0, 0, 0, 0, 0])
}

/// Moves an ICA to `target` without copying; returns its address there.
pub fn ica_move(ica: u64, target: u64) -> Result<u64, Error> {
    ica_move_to(ica, target, 0)
}

/// `ica_move`, asking for address `addr` in the target (0: anywhere).
pub fn ica_move_to(ica: u64, target: u64, addr: u64) -> Result<u64, Error> {
    raw(Sys::IcaMove, [ica, target, addr, 0, 0, 0])
}

pub fn container_stats() -> abi::ContainerStats {
    let mut s = abi::ContainerStats::default();
    let _ = raw(
        Sys::ContainerStats,
        [&mut s as *mut abi::ContainerStats as u64, 0, 0, 0, 0, 0],
    );
    s
}

// ---- rendezvous and requests (seed 003, seed 002) ----

/// Serve under `name`, taking calls for the entries in `entries` (bit n = entry n).
pub fn name_register(name: &str, entries: u64) -> Result<u64, Error> {
    raw(
        Sys::NameRegister,
        [name.as_ptr() as u64, name.len() as u64, entries, 0, 0, 0],
    )
}

pub fn name_lookup(name: &str) -> Result<u64, Error> {
    raw(Sys::NameLookup, [name.as_ptr() as u64, name.len() as u64, 0, 0, 0, 0])
}

/// Rendezvous call (also AnT's callsync): returns the reply length.
// The rendezvous calls are inlined into a client's or a server's loop.
#[inline]
pub fn call(server: u64, entry: u64, msg: &[u8], reply: &mut [u8]) -> Result<usize, Error> {
    // SAFETY: both slices are live for the call, which blocks until the reply.
    unsafe {
        call_raw(
            server,
            entry,
            msg.as_ptr() as u64,
            msg.len() as u64,
            reply.as_mut_ptr() as u64,
            reply.len() as u64,
        )
    }
    .map(|n| n as usize)
}

/// The raw call, for passing a held call's message by reference
/// (`entry | CALL_BY_REF`, the rid in `msg`).
///
/// # Safety
/// `reply` must be writable memory of `reply_len` bytes for the whole call.
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

/// A nested call that passes held call `rid`'s message on by reference
/// (seed 003's nested rendezvous): `server` reads the original caller's
/// message; its reply comes to `reply`. Returns the reply length.
#[inline]
pub fn call_by_ref(server: u64, entry: u64, rid: u64, msg_len: u64, reply: &mut [u8]) -> Result<usize, Error> {
    // SAFETY: the reply slice is live for the call, which blocks until the reply.
    unsafe {
        call_raw(
            server,
            entry | abi::CALL_BY_REF,
            rid,
            msg_len,
            reply.as_mut_ptr() as u64,
            reply.len() as u64,
        )
    }
    .map(|n| n as usize)
}

/// Waits for a call on one of `entries`; returns its rid.
pub fn acc(entries: u64, info: &mut abi::AccInfo) -> Result<u64, Error> {
    raw(Sys::Acc, [entries, info as *mut abi::AccInfo as u64, 0, 0, 0, 0])
}

pub fn endr(rid: u64, reply: &[u8]) -> Result<u64, Error> {
    raw(Sys::Endr, [rid, reply.as_ptr() as u64, reply.len() as u64, 0, 0, 0])
}

/// Ends call `rid` (0: none) with `reply` and waits for the next call on
/// one of `entries`: a server's loop in one system call. Returns the new rid.
#[inline]
pub fn endr_acc(rid: u64, reply: &[u8], entries: u64, info: &mut abi::AccInfo) -> Result<u64, Error> {
    raw(
        Sys::EndrAcc,
        [
            rid,
            reply.as_ptr() as u64,
            reply.len() as u64,
            entries,
            info as *mut abi::AccInfo as u64,
            0,
        ],
    )
}

/// Forwards call `rid` to `next` (entry `entry`) and waits for the next call
/// on one of `entries`: a relay's loop in one system call.
pub fn forward_acc(rid: u64, next: u64, entry: u64, entries: u64, info: &mut abi::AccInfo) -> Result<u64, Error> {
    raw(
        Sys::ForwardAcc,
        [rid, next, entry, entries, info as *mut abi::AccInfo as u64, 0],
    )
}

/// Waits for a call on one of `entries` (unless `ACC_NOWAIT` is in it),
/// then accepts it and the further calls already waiting, up to
/// `infos.len()` (at most `MAX_BATCH`) in all; returns how many, described
/// in `infos[..n]` in the order they arrived.
pub fn acc_many(entries: u64, infos: &mut [abi::AccInfo]) -> Result<usize, Error> {
    raw(
        Sys::AccMany,
        [entries, infos.as_mut_ptr() as u64, infos.len() as u64, 0, 0, 0],
    )
    .map(|n| n as usize)
}

/// Passes each call of `list` on (`forward`), the next server seeing the
/// message without its last `trim` bytes; returns how many went. A call
/// that could not go was ended with its error, which is in its `status`.
pub fn forward_many(list: &mut [abi::ForwardEntry]) -> Result<usize, Error> {
    raw(
        Sys::ForwardMany,
        [list.as_mut_ptr() as u64, list.len() as u64, 0, 0, 0, 0],
    )
    .map(|n| n as usize)
}

pub fn rv_read(rid: u64, offset: u64, buf: &mut [u8]) -> Result<u64, Error> {
    raw(
        Sys::RvRead,
        [rid, offset, buf.as_mut_ptr() as u64, buf.len() as u64, 0, 0],
    )
}

pub fn rv_write(rid: u64, offset: u64, data: &[u8]) -> Result<u64, Error> {
    raw(
        Sys::RvWrite,
        [rid, offset, data.as_ptr() as u64, data.len() as u64, 0, 0],
    )
}

pub fn rv_fail(rid: u64, e: Error) -> Result<u64, Error> {
    raw(Sys::RvFail, [rid, e as u64, 0, 0, 0, 0])
}

pub fn forward(rid: u64, next: u64, entry: u64) -> Result<u64, Error> {
    raw(Sys::Forward, [rid, next, entry, 0, 0, 0])
}

/// A non-blocking request; its buffers must stay alive until it is fetched.
///
/// # Safety
/// `reply` must stay writable until the request's result has been fetched.
pub unsafe fn request(server: u64, entry: u64, msg: &[u8], reply: *mut u8, reply_len: usize) -> Result<u64, Error> {
    raw(
        Sys::Request,
        [
            server,
            entry,
            msg.as_ptr() as u64,
            msg.len() as u64,
            reply as u64,
            reply_len as u64,
        ],
    )
}

/// AnT's batch request: sends every entry at once, waits once for all;
/// each entry's `status` gets its reply length or error.
pub fn ncallsync(list: &mut [abi::BatchEntry]) -> Result<u64, Error> {
    raw(
        Sys::NCallSync,
        [list.len() as u64, list.as_mut_ptr() as u64, 0, 0, 0, 0],
    )
}

/// Waits up to `timeout_ns` for a finished request: (request id, status).
pub fn fetch(timeout_ns: u64) -> Result<(u64, u64), Error> {
    let mut out = [0u64; 2];
    raw(Sys::Fetch, [timeout_ns, out.as_mut_ptr() as u64, 0, 0, 0, 0])?;
    Ok((out[0], out[1]))
}

pub fn sys_info() -> Result<SysInfo, Error> {
    let mut info = SysInfo::default();
    raw(Sys::SysInfo, [&mut info as *mut SysInfo as u64, 0, 0, 0, 0, 0])?;
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

/// Whether process `pid` exists and has not ended.
pub fn alive(pid: u64) -> bool {
    proc_info(pid).is_ok_and(|p| p.state != abi::state::EXITED)
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
