//! Container IPC system calls (seed 004): decoded here, checked and done
//! by the mediator (`resource::container`, `resource::container_box`).

use abi::{ContainerMode, Error};
use ipc::process as proc;
use kcore::uaccess;
use resource::ResId;
use resource::{container, container_box};

fn mode(raw: u64) -> Result<ContainerMode, Error> {
    ContainerMode::from_u64(raw).ok_or(Error::Invalid)
}

fn id(raw: u64) -> ResId {
    ResId::from_raw(raw)
}

pub fn sys_container_create(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    Ok(container::create(me.pid, a[0], a[1])?.raw())
}

pub fn sys_box_create(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    Ok(container_box::create(me.pid, a[0], a[1], a[2], a[3], a[4])?.raw())
}

pub fn sys_box_grant(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    container_box::grant(me.pid, id(a[0]), a[1], a[2]).map(|()| 0)
}

pub fn sys_send(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    if a[4] != 0 {
        uaccess::check_range(a[4], 8)?;
    }
    let sent = container_box::send(me.pid, id(a[0]), id(a[1]), a[2], mode(a[3])?)?;
    if a[4] != 0 {
        uaccess::write(a[4], &sent.size)?;
    }
    Ok(sent.id.raw())
}

pub fn sys_receive(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    uaccess::check_range(a[5], core::mem::size_of::<abi::Received>())?;
    let got = container_box::receive(me.pid, id(a[0]), id(a[1]), a[2], mode(a[3])?, a[4])?;
    let out = abi::Received {
        addr: got.addr,
        size: got.size,
    };
    uaccess::write(a[5], &out)?;
    Ok(got.id.raw())
}

pub fn sys_push(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    Ok(container::push(me.pid, id(a[0]), a[1], a[2], mode(a[3])?)?.raw())
}

pub fn sys_steal(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    Ok(container::steal(me.pid, id(a[0]), a[1], a[2], mode(a[3])?)?.raw())
}

pub fn sys_exchange(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    container::exchange(me.pid, id(a[0]), a[1], id(a[2])).map(|()| 0)
}

pub fn sys_peer_grant(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    if a[0] != abi::ANY_PID {
        proc::get(a[0]).ok_or(Error::NotFound)?;
    }
    let mut peers = me.peers.lock();
    if !peers.contains(&a[0]) {
        peers.try_reserve(1).map_err(|_| Error::NoMemory)?;
        peers.push(a[0]);
    }
    Ok(0)
}

pub fn sys_ica_create(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    Ok(container::create_ica(me.pid, a[0])?.raw())
}

/// Inlined into the dispatcher (see `native`), and the move with it.
#[inline(always)]
pub fn sys_ica_move(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    container::move_for(me, id(a[0]), a[1], a[2])
}

pub fn sys_stats(_: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    uaccess::write(a[0], &container::stats()).map(|_| 0)
}
