//! Container IPC system calls (seed 004): decoded here, checked and done
//! by the mediator (`resource::container`, `resource::container_box`).

use abi::{ContainerMode, Error};
use ipc::process as proc;
use kcore::uaccess;
use resource::ResId;
use resource::mediator::{Op, Value, invoke};

fn mode(raw: u64) -> Result<ContainerMode, Error> {
    ContainerMode::from_u64(raw).ok_or(Error::Invalid)
}

fn id(raw: u64) -> ResId {
    ResId::from_raw(raw)
}

pub fn sys_container_create(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    Ok(invoke(
        me.pid,
        Op::CreateContainer {
            pages: a[0],
            addr: a[1],
        },
    )?
    .id()?
    .raw())
}

pub fn sys_box_create(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let op = Op::CreateBox {
        pages: a[0],
        initial: a[1],
        lower: a[2],
        upper: a[3],
        flags: a[4],
    };
    Ok(invoke(me.pid, op)?.id()?.raw())
}

pub fn sys_box_grant(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    invoke(
        me.pid,
        Op::GrantBox {
            bx: id(a[0]),
            pid: a[1],
            rights: a[2],
        },
    )
    .map(|_| 0)
}

pub fn sys_send(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    if a[4] != 0 {
        uaccess::check_range(a[4], 8)?;
    }
    let op = Op::Send {
        container: id(a[0]),
        bx: id(a[1]),
        addr: a[2],
        mode: mode(a[3])?,
    };
    match invoke(me.pid, op)? {
        Value::Received { id, size, .. } => {
            if a[4] != 0 {
                uaccess::write(a[4], &size)?;
            }
            Ok(id.raw())
        }
        _ => Err(Error::Invalid),
    }
}

pub fn sys_receive(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    uaccess::check_range(a[5], core::mem::size_of::<abi::Received>())?;
    let op = Op::Receive {
        container: id(a[0]),
        bx: id(a[1]),
        addr: a[2],
        mode: mode(a[3])?,
        timeout_ns: a[4],
    };
    match invoke(me.pid, op)? {
        Value::Received { id, addr, size } => {
            uaccess::write(a[5], &abi::Received { addr, size })?;
            Ok(id.raw())
        }
        _ => Err(Error::Invalid),
    }
}

pub fn sys_push(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let op = Op::Push {
        container: id(a[0]),
        target: a[1],
        addr: a[2],
        mode: mode(a[3])?,
    };
    Ok(invoke(me.pid, op)?.id()?.raw())
}

pub fn sys_steal(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    let op = Op::Steal {
        container: id(a[0]),
        target: a[1],
        addr: a[2],
        mode: mode(a[3])?,
    };
    Ok(invoke(me.pid, op)?.id()?.raw())
}

pub fn sys_exchange(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    invoke(
        me.pid,
        Op::Exchange {
            container: id(a[0]),
            target: a[1],
            theirs: id(a[2]),
        },
    )
    .map(|_| 0)
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
    Ok(invoke(me.pid, Op::CreateIca { pages: a[0] })?.id()?.raw())
}

#[inline(always)]
pub fn sys_ica_move(me: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    resource::mediator::remap(me, id(a[0]), a[1], a[2])
}

pub fn sys_stats(_: &proc::Process, a: &[u64; 6]) -> Result<u64, Error> {
    uaccess::write(a[0], &resource::container::stats()).map(|_| 0)
}
