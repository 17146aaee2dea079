//! A client's link to a server it finds by name: the server's pid once
//! found, and the per-client context the server keeps for this client as
//! the client last left it (the file server's write position, the TCP/IP
//! server's send destination), so that a request continuing it needs no
//! header. The file and socket clients each keep one.
use crate::errno::Errno;
use crate::wire::Reader;
use alloc::vec;
use spin::Mutex;
use tessera_rt::abi::Error;
use tessera_rt::sys;

pub struct Peer<C> {
    pub server: u64,
    pub context: Option<C>,
}

impl<C> Peer<C> {
    pub const fn new() -> Mutex<Peer<C>> {
        Mutex::new(Peer {
            server: 0,
            context: None,
        })
    }
}

/// The server's pid, looked up as `name` the first time (waiting up to two
/// seconds for it to start); `gone` if there is none.
pub fn server<C>(peer: &Mutex<Peer<C>>, name: &str, gone: Errno) -> Result<u64, Errno> {
    let known = peer.lock().server;
    if known != 0 {
        return Ok(known);
    }
    connect(peer, name, gone)
}

/// Uses the server registered as `name` from now on (a program that starts
/// its own, or restarts it): the old server's context no longer holds.
pub fn connect<C>(peer: &Mutex<Peer<C>>, name: &str, gone: Errno) -> Result<u64, Errno> {
    let pid = sys::wait_for_name(name);
    if pid == 0 {
        return Err(gone);
    }
    let mut p = peer.lock();
    p.server = pid;
    p.context = None;
    Ok(pid)
}

/// A call to `server` whose reply starts with an `i64` result (a negated
/// errno when below 0); the rest of the reply goes to `extra`. `gone` gives
/// the errno of a call the kernel did not make.
pub fn call_result(
    server: u64,
    entry: u64,
    msg: &[u8],
    extra: &mut [u8],
    gone: impl FnOnce(Error) -> i64,
) -> Result<u64, i64> {
    let mut reply = vec![0u8; 8 + extra.len()];
    let n = sys::call(server, entry, msg, &mut reply).map_err(gone)?;
    let mut r = Reader::new(&reply[..n]);
    let result = r.i64().ok_or(Errno::EIO.0 as i64)?;
    if result < 0 {
        return Err(-result);
    }
    let rest = r.rest();
    extra[..rest.len()].copy_from_slice(rest);
    Ok(result as u64)
}
