//! A client's link to a server it finds by name: the server's pid once
//! found, and the per-client context the server keeps for this client as
//! the client last left it (the file server's write position, the TCP/IP
//! server's send destination), so that a request continuing it needs no
//! header. The file and socket clients each keep one.
use crate::errno::Errno;
use spin::Mutex;
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
