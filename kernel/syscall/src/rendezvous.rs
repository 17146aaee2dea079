//! Rendezvous and request system calls (`ipc::rendezvous` and its fast
//! path, `ipc::request`, `ipc::batch`, `ipc::rings`, `ipc::names`).

use abi::{CALL_BY_REF, Error};
use ipc::process as proc;
use ipc::{batch, fastpath, names, rendezvous, request, rings};
use kcore::uaccess::{self, UserRange};
use resource::vspace::{self, At};

/// Longest name a server registers under.
const MAX_NAME: usize = 64;

/// name_register(name, len, entry mask): the entries it serves (0: any).
pub fn sys_name_register(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    names::register(&uaccess::read_str(a[0], a[1], MAX_NAME)?, me.pid)?;
    me.port.entries.store(a[2], core::sync::atomic::Ordering::Relaxed);
    Ok(0)
}

pub fn sys_name_lookup(_: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    names::lookup(&uaccess::read_str(a[0], a[1], MAX_NAME)?)
}

/// Where a call's description (`abi::AccInfo`) goes, checked before the
/// call is accepted.
#[inline(always)]
fn acc_info_at(addr: u64) -> Result<UserRange, Error> {
    UserRange::new(addr, core::mem::size_of::<abi::AccInfo>())
}

/// The message and reply buffers, checked against the caller's own user
/// space now; the server's copies are bounded by them later.
fn ranges(a: &[u64; 6]) -> Result<(UserRange, UserRange), Error> {
    Ok((
        UserRange::new(a[2], a[3] as usize)?,
        UserRange::new(a[4], a[5] as usize)?,
    ))
}

/// `call`'s general path: the table's handler, and where `sys_call_raw`
/// goes when the fast path does not apply (the dispatcher takes every
/// `call` through `sys_call_raw` first).
#[inline(never)]
pub fn sys_call(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let entry = a[1] & !CALL_BY_REF;
    let reply = UserRange::new(a[4], a[5] as usize)?;
    let (msg, msg_ref) = if a[1] & CALL_BY_REF != 0 {
        (UserRange::EMPTY, a[2])
    } else {
        (UserRange::new(a[2], a[3] as usize)?, 0)
    };
    rendezvous::call(me, a[0], entry, msg, reply, msg_ref)
}

pub fn sys_acc(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let out = acc_info_at(a[1])?;
    let info = rendezvous::acc(me, a[0])?;
    info.write_to(out)?;
    Ok(info.rid())
}

pub fn sys_endr(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    rendezvous::endr(me, a[0], UserRange::new(a[1], a[2] as usize)?)
}

/// The rendezvous pair as the dispatcher calls them (inlined there): their
/// common case goes straight to its fast path, and the raw result (a value,
/// or a negated error) is what the system call returns.
#[inline(always)]
pub fn sys_call_raw(me: &proc::Process, a: &[u64; 6]) -> u64 {
    if a[1] & CALL_BY_REF == 0
        && let Ok(reply) = UserRange::new(a[4], a[5] as usize)
        && let Ok(msg) = UserRange::new(a[2], a[3] as usize)
        && let Some(status) = fastpath::call_fast(me, a[0], a[1], msg, reply)
    {
        return status;
    }
    raw(sys_call(me, a))
}

#[inline(always)]
pub fn sys_endr_acc_raw(me: &proc::Process, a: &[u64; 6]) -> u64 {
    if a[0] != 0
        && fastpath::is_short_endr_acc(a[2], a[3])
        && let Ok(reply) = UserRange::new(a[1], a[2] as usize)
        && let Ok(out) = acc_info_at(a[4])
    {
        return match fastpath::endr_acc_short(me, a[0], reply, a[3]) {
            Ok(info) => match info.write_to(out) {
                Ok(()) => info.rid(),
                Err(e) => e.as_ret(),
            },
            Err(e) => e.as_ret(),
        };
    }
    raw(sys_endr_acc(me, a))
}

fn raw(r: Result<u64, Error>) -> u64 {
    r.unwrap_or_else(Error::as_ret)
}

pub fn sys_endr_acc(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let reply = match a[0] {
        0 => UserRange::EMPTY,
        _ => UserRange::new(a[1], a[2] as usize)?,
    };
    let out = acc_info_at(a[4])?;
    let info = rendezvous::endr_acc(me, a[0], reply, a[3])?;
    info.write_to(out)?;
    Ok(info.rid())
}

pub fn sys_forward_acc(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let out = acc_info_at(a[4])?;
    let info = rendezvous::forward_acc(me, a[0], a[1], a[2], a[3])?;
    info.write_to(out)?;
    Ok(info.rid())
}

/// acc_many(entry mask, out, k): the k descriptions' room is checked
/// before anything is accepted.
pub fn sys_acc_many(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let (out, k) = (a[1], a[2]);
    if k == 0 || k > abi::MAX_BATCH {
        return Err(Error::Invalid);
    }
    let size = core::mem::size_of::<abi::AccInfo>();
    let out = UserRange::new(out, k as usize * size)?;
    let n = batch::acc_many(me, a[0], k as usize, |i, info| info.write_to(out.part(i * size, size)?))?;
    Ok(n as u64)
}

/// forward_many(list, k): the whole list is read before anything is passed
/// on, so a bad list changes nothing.
pub fn sys_forward_many(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    const MAX: usize = abi::MAX_BATCH as usize;
    let (at, k) = (a[0], a[1]);
    if k == 0 || k > abi::MAX_BATCH {
        return Err(Error::Invalid);
    }
    let k = k as usize;
    let size = core::mem::size_of::<abi::ForwardEntry>();
    let at = UserRange::new(at, k * size)?;
    let mut buf = core::mem::MaybeUninit::<[abi::ForwardEntry; MAX]>::uninit();
    let list = uaccess::read_list(&mut buf, at)?;
    let status_at = core::mem::offset_of!(abi::ForwardEntry, status);
    let passed = batch::forward_many(me, list, |i, e| {
        // The call was ended with its error either way; a list the caller
        // made unwritable meanwhile only loses the report.
        let _ = at.part(i * size + status_at, 8).and_then(|s| s.store(e.as_ret()));
    })?;
    Ok(passed as u64)
}

pub fn sys_rv_read(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    rendezvous::read(me, a[0], a[1], UserRange::new(a[2], a[3] as usize)?)
}

pub fn sys_rv_write(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    rendezvous::write(me, a[0], a[1], UserRange::new(a[2], a[3] as usize)?)
}

pub fn sys_forward(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    rendezvous::forward(me, a[0], a[1], a[2])
}

pub fn sys_request(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let (msg, reply) = ranges(a)?;
    request::request(me, a[0], a[1], msg, reply)
}

pub fn sys_fetch(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    uaccess::check_range(a[1], 16)?;
    let (id, status) = request::fetch(me, a[0])?;
    uaccess::write(a[1], &[id, status])?;
    Ok(0)
}

pub fn sys_ncallsync(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let n = a[0];
    if n == 0 || n > abi::MAX_BATCH {
        return Err(Error::Invalid);
    }
    const MAX: usize = abi::MAX_BATCH as usize;
    let size = core::mem::size_of::<abi::BatchEntry>();
    let list = UserRange::new(a[1], n as usize * size)?;
    // The whole list in one copy (a copy per member cost a check and a
    // call each).
    let mut buf = core::mem::MaybeUninit::<[abi::BatchEntry; MAX]>::uninit();
    let entries = uaccess::read_list(&mut buf, list)?;
    let member = |i: usize| {
        let e = entries[i];
        Ok(batch::Member {
            server: e.server,
            entry: e.entry,
            msg: (e.msg, e.msg_len),
            reply: (e.reply, e.reply_cap),
            flags: 0,
            tag: 0,
        })
    };
    let status_at = core::mem::offset_of!(abi::BatchEntry, status);
    // One word each, into the list read above: no copy, no second check.
    let result = |i: usize, status: u64, _: Option<&ipc::call::Call>| list.part(i * size + status_at, 8)?.store(status);
    batch::ncallsync_with(me, n as usize, member, result)?;
    Ok(0)
}

pub fn sys_ring_setup(me: &proc::Process, _: &[u64; 6]) -> Result<u64, Error> {
    // The area is a region of the kernel's, attached where the rings go.
    rings::setup(me, |area, base| {
        let (region, link, ..) = vspace::attach_memory(me.space_id, area, At::Address(base), resource::ResId::NONE)?;
        Ok((region, link))
    })
}

pub fn sys_ring_submit(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    rings::submit(me, a[0], a[1])
}

pub fn sys_ring_wait(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    rings::wait(me, a[0])
}

pub fn sys_rv_fail(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let e = Error::from_u64(a[1]).unwrap_or(Error::Invalid);
    rendezvous::fail(me, a[0], e)
}
