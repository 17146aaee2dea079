//! Rendezvous and request system calls (`ipc::rendezvous` and its fast
//! path, `ipc::request`, `ipc::batch`, `ipc::rings`, `ipc::names`).

use abi::args::Out;
use abi::{CALL_BY_REF, Error, call};
use ipc::process as proc;
use ipc::{batch, fastpath, names, rendezvous, request, rings};
use kcore::uaccess::{self, UserRange};
use resource::vspace;

/// Longest name a server registers under.
const MAX_NAME: usize = 64;

/// The entries it serves (0: any).
pub fn sys_name_register(me: &proc::Process, a: call::NameRegister) -> Result<u64, Error> {
    names::register(&uaccess::read_text(a.name, MAX_NAME)?, me.pid())?;
    me.port()
        .entries
        .store(a.entries, core::sync::atomic::Ordering::Relaxed);
    Ok(0)
}

pub fn sys_name_lookup(a: call::NameLookup) -> Result<u64, Error> {
    names::lookup(&uaccess::read_text(a.name, MAX_NAME)?)
}

/// Where a call's description (`abi::AccInfo`) goes, checked before the
/// call is accepted.
#[inline(always)]
fn acc_info_at(out: Out<abi::AccInfo>) -> Result<UserRange, Error> {
    UserRange::of_out(out)
}

/// `call`'s general path: where `sys_call_raw` goes when the fast path does
/// not apply (the dispatcher takes every `call` through `sys_call_raw`).
#[inline(never)]
pub fn sys_call(me: &proc::Process, a: call::Call) -> Result<u64, Error> {
    let entry = a.entry & !CALL_BY_REF;
    let reply = UserRange::of(a.reply.0)?;
    let (msg, msg_ref) = if a.entry & CALL_BY_REF != 0 {
        (UserRange::EMPTY, a.msg.0.addr)
    } else {
        (UserRange::of(a.msg.0)?, 0)
    };
    rendezvous::call(me, a.server, entry, msg, reply, msg_ref)
}

pub fn sys_acc(me: &proc::Process, a: call::Acc) -> Result<u64, Error> {
    let out = acc_info_at(a.out)?;
    let info = rendezvous::acc(me, a.entries)?;
    info.write_to(out)?;
    Ok(info.rid())
}

pub fn sys_endr(me: &proc::Process, a: call::Endr) -> Result<u64, Error> {
    rendezvous::endr(me, a.rid, UserRange::of(a.reply.0)?)
}

/// The rendezvous pair as the dispatcher calls them (inlined there): their
/// common case goes straight to its fast path, and the raw result (a value,
/// or a negated error) is what the system call returns. They take the
/// registers, not their decoded arguments: the general path decodes them
/// again from the frame, so nothing of the fast path's has to be kept for it.
#[inline(always)]
pub fn sys_call_raw(me: &proc::Process, regs: &[u64; 6]) -> u64 {
    // Decoded and checked once for both the paging-in and the fast path:
    // a second decode cost every round trip a dozen instructions.
    if let Ok(a) = call::Call::decode(regs)
        && let Ok(reply) = UserRange::of(a.reply.0)
    {
        if reply.len() > ipc::call::INLINE {
            prepare_reply(me, reply);
        }
        if a.entry & CALL_BY_REF == 0
            && let Ok(msg) = UserRange::of(a.msg.0)
            && let Some(status) = fastpath::call_fast(me, a.server, a.entry, msg, reply)
        {
            return status;
        }
    }
    raw(call::Call::decode(regs).and_then(|a| sys_call(me, a)))
}

#[inline(always)]
pub fn sys_endr_acc_raw(me: &proc::Process, regs: &[u64; 6]) -> u64 {
    if let Ok(a) = call::EndrAcc::decode(regs)
        && a.rid != 0
        && fastpath::is_short_endr_acc(a.reply.0.len, a.entries)
        && let Ok(reply) = UserRange::of(a.reply.0)
        && let Ok(out) = acc_info_at(a.out)
    {
        return match fastpath::endr_acc_short(me, a.rid, reply, a.entries) {
            Ok(info) => match info.write_to(out) {
                Ok(()) => info.rid(),
                Err(e) => e.as_ret(),
            },
            Err(e) => e.as_ret(),
        };
    }
    raw(call::EndrAcc::decode(regs).and_then(|a| sys_endr_acc(me, a)))
}

/// A reply longer than a call keeps is copied into the caller's memory by
/// the server, under the lock of the caller's space, where a page whose
/// bytes a pager holds (an OFF2F program's data, not read yet) cannot be
/// asked for: such pages of the buffer are asked for first, here, where
/// the caller may wait. Best effort: a page that cannot be read fails the
/// server's copy, as a bad buffer does.
#[cold]
#[inline(never)]
fn prepare_reply(me: &proc::Process, reply: UserRange) {
    let _ = proc::page_in_range(me.pid(), reply.addr(), reply.len());
}

fn raw(r: Result<u64, Error>) -> u64 {
    r.unwrap_or_else(Error::as_ret)
}

pub fn sys_endr_acc(me: &proc::Process, a: call::EndrAcc) -> Result<u64, Error> {
    let reply = match a.rid {
        0 => UserRange::EMPTY,
        _ => UserRange::of(a.reply.0)?,
    };
    let out = acc_info_at(a.out)?;
    let info = rendezvous::endr_acc(me, a.rid, reply, a.entries)?;
    info.write_to(out)?;
    Ok(info.rid())
}

pub fn sys_forward_acc(me: &proc::Process, a: call::ForwardAcc) -> Result<u64, Error> {
    let out = acc_info_at(a.out)?;
    let info = rendezvous::forward_acc(me, a.rid, a.server, a.entry, a.entries)?;
    info.write_to(out)?;
    Ok(info.rid())
}

/// The description's room is checked before the return: a bad pointer
/// leaves the process waiting, its call still held.
pub fn sys_caller_return_acc(me: &proc::Process, a: call::CallerReturnAcc) -> Result<u64, Error> {
    let out = acc_info_at(a.out)?;
    let info = ipc::supervise::finish_acc(me, a.rid, a.value, a.entries)?;
    info.write_to(out)?;
    Ok(info.rid())
}

/// The k descriptions' room is checked before anything is accepted.
pub fn sys_acc_many(me: &proc::Process, a: call::AccMany) -> Result<u64, Error> {
    let k = a.out.count;
    if k == 0 || k > abi::MAX_BATCH {
        return Err(Error::Invalid);
    }
    let size = core::mem::size_of::<abi::AccInfo>();
    let out = UserRange::of_list(a.out)?;
    let n = batch::acc_many(me, a.entries, k as usize, |i, info| {
        info.write_to(out.part(i * size, size)?)
    })?;
    Ok(n as u64)
}

/// The list is read, and the k descriptions' room checked, before any call
/// is ended: a bad list or room changes nothing.
pub fn sys_endr_many_acc(me: &proc::Process, a: call::EndrManyAcc) -> Result<u64, Error> {
    const MAX: usize = abi::MAX_BATCH as usize;
    let k = a.out.count;
    if k == 0 || k > abi::MAX_BATCH || a.replies.count > abi::MAX_BATCH {
        return Err(Error::Invalid);
    }
    let info_size = core::mem::size_of::<abi::AccInfo>();
    let out = UserRange::of_list(a.out)?;
    let size = core::mem::size_of::<abi::ReplyEntry>();
    let at = UserRange::of_list(a.replies)?;
    let mut buf = core::mem::MaybeUninit::<[abi::ReplyEntry; MAX]>::uninit();
    let list = uaccess::read_list(&mut buf, at)?;
    let status_at = core::mem::offset_of!(abi::ReplyEntry, status);
    let n = batch::endr_many_acc(
        me,
        list,
        a.entries,
        k as usize,
        // The call is still held either way; a list the server made
        // unwritable meanwhile only loses the report.
        |i, e| {
            let _ = at.part(i * size + status_at, 8).and_then(|s| s.store(e.as_ret()));
        },
        |i, info| info.write_to(out.part(i * info_size, info_size)?),
    )?;
    Ok(n as u64)
}

/// The whole list is read before anything is passed on, so a bad list
/// changes nothing.
pub fn sys_forward_many(me: &proc::Process, a: call::ForwardMany) -> Result<u64, Error> {
    const MAX: usize = abi::MAX_BATCH as usize;
    let k = a.list.count;
    if k == 0 || k > abi::MAX_BATCH {
        return Err(Error::Invalid);
    }
    let size = core::mem::size_of::<abi::ForwardEntry>();
    let at = UserRange::of_list(a.list)?;
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

pub fn sys_rv_read(me: &proc::Process, a: call::RvRead) -> Result<u64, Error> {
    rendezvous::read(me, a.rid, a.offset, UserRange::of(a.buf.0)?)
}

pub fn sys_rv_write(me: &proc::Process, a: call::RvWrite) -> Result<u64, Error> {
    rendezvous::write(me, a.rid, a.offset, UserRange::of(a.data.0)?)
}

pub fn sys_request(me: &proc::Process, a: call::Request) -> Result<u64, Error> {
    let (msg, reply) = (UserRange::of(a.msg.0)?, UserRange::of(a.reply.0)?);
    request::request(me, a.server, a.entry, msg, reply)
}

/// The raw status (a length, or a negated error) of batch entry `e` made
/// a call; a buffer that cannot be a user range fails it alone, as it
/// fails a member of a batch.
#[inline(always)]
fn call_one(me: &proc::Process, e: &abi::BatchEntry) -> u64 {
    let ranges = UserRange::new(e.msg, e.msg_len as usize)
        .and_then(|msg| Ok((msg, UserRange::new(e.reply, e.reply_cap as usize)?)));
    match ranges {
        Ok((msg, reply)) => fastpath::call_fast(me, e.server, e.entry, msg, reply)
            .unwrap_or_else(|| raw(rendezvous::call(me, e.server, e.entry, msg, reply, 0))),
        Err(err) => err.as_ret(),
    }
}

pub fn sys_fetch(me: &proc::Process, a: call::Fetch) -> Result<u64, Error> {
    UserRange::of_out(a.out)?;
    let (id, status) = request::fetch(me, a.timeout_ns)?;
    uaccess::write_out(a.out, &[id, status])?;
    Ok(0)
}

pub fn sys_ncallsync(me: &proc::Process, a: call::NCallSync) -> Result<u64, Error> {
    let n = a.list.count;
    if n == 0 || n > abi::MAX_BATCH {
        return Err(Error::Invalid);
    }
    const MAX: usize = abi::MAX_BATCH as usize;
    let size = core::mem::size_of::<abi::BatchEntry>();
    let list = UserRange::of_list(a.list)?;
    // The whole list in one copy (a copy per member cost a check and a
    // call each).
    let mut buf = core::mem::MaybeUninit::<[abi::BatchEntry; MAX]>::uninit();
    let entries = uaccess::read_list(&mut buf, list)?;
    let status_at = core::mem::offset_of!(abi::BatchEntry, status);
    if n == 1 && entries[0].entry & CALL_BY_REF == 0 {
        // A batch of one is one call: it goes as `call` goes, by the fast
        // path when it can, and its server sees the same call either way.
        let status = call_one(me, &entries[0]);
        list.part(status_at, 8)?.store(status)?;
        return Error::decode(status).map(|_| 0);
    }
    let member = |i: usize| {
        let e = &entries[i];
        Ok(batch::Member {
            server: e.server,
            entry: e.entry,
            msg: (e.msg, e.msg_len),
            reply: (e.reply, e.reply_cap),
            flags: 0,
            tag: 0,
        })
    };
    // One word each, into the list read above: no copy, no second check.
    let result = |i: usize, status: u64, _: Option<&ipc::call::Call>| list.part(i * size + status_at, 8)?.store(status);
    batch::ncallsync_with(me, n as usize, member, result)?;
    Ok(0)
}

pub fn sys_ring_setup(me: &proc::Process) -> Result<u64, Error> {
    // The area is a region of the kernel's, attached where the rings go.
    rings::setup(me, |area, at| {
        let (region, link, _, base) =
            vspace::attach_memory(me.space_id(), area, at, resource::ResId::NONE, me.pid()).map_err(|(e, _)| e)?;
        Ok((region, link, base))
    })
}

pub fn sys_rv_fail(me: &proc::Process, a: call::RvFail) -> Result<u64, Error> {
    let e = Error::from_u64(a.error).unwrap_or(Error::Invalid);
    rendezvous::fail(me, a.rid, e)
}
