//! Container IPC system calls (seed 004): decoded here, checked and done
//! by the mediator (`resource::container`, `resource::container_box`).

use abi::{Error, call};
use ipc::process as proc;
use kcore::uaccess::{self, UserRange};
use resource::ResId;
use resource::{container, container_box};

fn id(raw: u64) -> ResId {
    ResId::from_raw(raw)
}

pub fn sys_container_create(me: &proc::Process, a: call::ContainerCreate) -> Result<u64, Error> {
    Ok(container::create(me.pid(), a.pages, a.addr)?.raw())
}

pub fn sys_box_create(me: &proc::Process, a: call::BoxCreate) -> Result<u64, Error> {
    Ok(container_box::create(me.pid(), a.pages, a.initial, a.lower, a.upper, a.flags)?.raw())
}

pub fn sys_box_grant(me: &proc::Process, a: call::BoxGrant) -> Result<u64, Error> {
    container_box::grant(me.pid(), id(a.bx), a.pid, a.rights).map(|()| 0)
}

pub fn sys_send(me: &proc::Process, a: call::ContainerSend) -> Result<u64, Error> {
    // The size's room (optional) is checked before anything moves.
    let size = (a.size.addr != 0).then(|| UserRange::of_out(a.size)).transpose()?;
    let sent = container_box::send(me.pid(), id(a.container), id(a.bx), a.addr, a.mode)?;
    if size.is_some() {
        uaccess::write_out(a.size, &sent.size)?;
    }
    Ok(sent.id.raw())
}

pub fn sys_receive(me: &proc::Process, a: call::ContainerReceive) -> Result<u64, Error> {
    UserRange::of_out(a.out)?;
    let got = container_box::receive(
        me.pid(),
        container_box::Receive {
            id: id(a.container),
            bx: id(a.bx),
            addr: a.addr,
            mode: a.mode,
            timeout_ns: a.timeout_ns,
        },
    )?;
    let out = abi::Received {
        addr: got.addr,
        size: got.size,
    };
    uaccess::write_out(a.out, &out)?;
    Ok(got.id.raw())
}

pub fn sys_push(me: &proc::Process, a: call::ContainerPush) -> Result<u64, Error> {
    Ok(container::push(me.pid(), id(a.container), a.target, a.addr, a.mode)?.raw())
}

pub fn sys_steal(me: &proc::Process, a: call::ContainerSteal) -> Result<u64, Error> {
    Ok(container::steal(me.pid(), id(a.container), a.target, a.addr, a.mode)?.raw())
}

pub fn sys_exchange(me: &proc::Process, a: call::ContainerExchange) -> Result<u64, Error> {
    container::exchange(me.pid(), id(a.container), a.target, id(a.theirs)).map(|()| 0)
}

pub fn sys_peer_grant(me: &proc::Process, a: call::PeerGrant) -> Result<u64, Error> {
    if a.pid != abi::ANY_PID {
        proc::get(a.pid).ok_or(Error::NotFound)?;
    }
    me.grant_peer(a.pid).map(|()| 0)
}

/// Inlined into the dispatcher (see `native`), and the move with it.
#[inline(always)]
pub fn sys_ica_move(me: &proc::Process, a: call::IcaMove) -> Result<u64, Error> {
    container::move_for(me, id(a.ica), a.target, a.addr)
}
