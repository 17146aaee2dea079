//! AnT's requests (処理依頼, seed 002) beside the rendezvous: `callsync`
//! with a control block (a request, waited for on the rendezvous's direct
//! path), non-blocking requests whose results go to the requester's result
//! queue, from which `fetch` takes them, and requests from the request ring
//! whose results go to the result ring (`rings.rs`). The results of the
//! requests nobody waits for are delivered here when their calls complete.

use crate::call::{self, Call, Completion, Request, State};
use crate::port::{self, check_entry, wake};
use crate::process::{self as proc, Process};
use crate::rendezvous;
use abi::Error;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;
use kcore::uaccess::UserRange;

/// AnT's callsync with a control block: one request, waited for, with the
/// rendezvous's direct switch. Returns the block with its result half
/// filled in (a request that could not be sent carries its error).
pub fn callsync(caller: &Process, c: &abi::Control) -> abi::Control {
    let sent = Request::of(caller.pid(), c, Completion::Wait).and_then(|r| rendezvous::call_with(caller, c.server, r));
    match sent {
        Ok((_, call)) => {
            let result = result_of(&call, 1);
            caller.port.spare.keep(call);
            result
        }
        Err(e) => abi::Control {
            status: e.as_ret(),
            batch: 1,
            ..*c
        },
    }
}

/// `request`: a non-blocking call; returns its id at once. The result goes
/// to the requester's result queue (`fetch`).
/// Busy once the caller has `port::MAX_REQUESTS` not fetched, or the
/// server `port::QUEUE_LIMIT` calls waiting; Limit once the caller's
/// account cannot pay for more call objects (`call::RequestCharge`).
pub fn request(caller: &Process, server: u64, entry: u64, msg: UserRange, reply: UserRange) -> Result<u64, Error> {
    let s = port::target(server)?;
    check_entry(&s, entry)?;
    let counted = caller
        .port
        .requests
        .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| {
            (n < port::MAX_REQUESTS).then_some(n + 1)
        });
    if counted.is_err() {
        return Err(Error::Busy);
    }
    let sent = caller
        .port
        .pay_request()
        .and_then(|paid| {
            call::make_call(
                caller.pid(),
                server,
                Request::new(entry, caller.pid(), msg, reply, Completion::Fetch),
                None,
            )
            .map(|c| call::paid_by(c, paid))
        })
        .and_then(|c| {
            let id = c.id;
            port::deliver_request(&s, c).map(|w| (id, w))
        });
    match sent {
        Ok((id, waiter)) => {
            wake(waiter);
            Ok(id)
        }
        Err(e) => {
            caller.port.requests.fetch_sub(1, Ordering::AcqRel);
            Err(e)
        }
    }
}

/// A request from a control block of the caller's request ring: sent
/// without waiting; its result goes to the caller's result ring.
pub fn request_to_ring(caller: &Process, c: &abi::Control) -> Result<(), Error> {
    let r = Request::of(caller.pid(), c, Completion::Ring)?;
    let s = port::target(c.server)?;
    check_entry(&s, c.entry)?;
    let paid = caller.port.pay_request()?;
    let call = call::paid_by(call::make_call(caller.pid(), c.server, r, None)?, paid);
    wake(port::deliver_request(&s, call)?);
    Ok(())
}

/// Where `Call::complete` sends the result of a request nobody waits for:
/// the requester's result queue, or its result ring (a ring request's call
/// object then goes back to the free list instead of the heap: a
/// distribution server makes one such request per call it fans out).
#[inline(never)]
pub(crate) fn deliver_result(c: Arc<Call>) {
    match c.completion {
        Completion::Ring => {
            crate::rings::complete(c.caller, &result_of(&c, 1));
            call::recycle(c);
        }
        Completion::Fetch => {
            let Some(p) = proc::get(c.caller) else { return };
            {
                // A requester that has ended takes no more results (its
                // port's `close` empties the queue after marking it closed,
                // under this lock).
                let mut r = p.port.results.lock();
                if !p.port.closed.load(Ordering::Acquire) && r.try_reserve(1).is_ok() {
                    r.push_back(c);
                } else {
                    // A result nobody will fetch no longer counts.
                    p.port.requests.fetch_sub(1, Ordering::AcqRel);
                }
            }
            p.port.results_wait.wake_all();
        }
        Completion::Wait => {}
    }
}

/// A finished call as its requester sees it: a control block with both
/// halves filled in (`batch` is the size of the batch it belonged to). A
/// kept reply goes into the requester's memory now (the requester runs
/// this, except for ring completions, which keep none).
fn result_of(c: &Call, batch: u64) -> abi::Control {
    let (collected, (path, hops)) = {
        let mut p = c.progress.lock();
        (p.collect(), p.path())
    };
    let status = match collected {
        Some((s, n)) => call::deliver_reply(c, s, c.kept_reply(n)),
        None => Error::Invalid.as_ret(),
    };
    abi::Control {
        server: c.server,
        entry: c.entry.load(Ordering::Relaxed),
        msg: c.msg.addr(),
        msg_len: c.msg.len() as u64,
        reply: c.reply.addr(),
        reply_cap: c.reply.len() as u64,
        flags: c.flags,
        tag: c.tag,
        id: c.id,
        status,
        batch,
        hops,
        path,
    }
}

/// `fetch`: waits up to `timeout_ns` for a finished request; returns (id, status).
pub fn fetch(caller: &Process, timeout_ns: u64) -> Result<(u64, u64), Error> {
    let deadline = kcore::clock::nanos().saturating_add(timeout_ns);
    let mut got = None;
    caller.port.results_wait.wait_until_deadline(deadline, || {
        got = caller.port.results.lock().pop_front();
        got.is_some()
    });
    let c = got.ok_or(Error::Busy)?;
    caller.port.requests.fetch_sub(1, Ordering::AcqRel);
    let status = match c.progress.lock().state {
        State::Done(s) => s,
        _ => Error::Invalid.as_ret(),
    };
    let id = c.id;
    call::recycle(c);
    Ok((id, status))
}
