//! `SEND_ICA`: a send whose bytes arrive as pages (an ICA the server takes
//! from the caller, which granted it) rather than as the call's message,
//! AnT's copy-less transfer. The server copies the named range into the
//! socket's buffer, the one copy a SEND makes too (smoltcp's ring is the
//! server's own memory), and gives the pages back to the caller however
//! the call ends; a caller that ends first loses them (the held call is
//! dropped, and the ICA with it).

use crate::pending::{Op, Outcome};
use crate::server::Server;
use crate::socket::{Kind, Socket};
use alloc::vec::Vec;
use tessera_api::errno::Errno;
use tessera_api::net::{MSG_DONTWAIT, SEND_ICA_LEN};
use tessera_api::wire::Reader;
use tessera_rt::abi::{AccInfo, ContainerMode, Error};
use tessera_rt::ica::Ica;
use tessera_rt::sys;

/// A SEND_ICA in progress: the pages, the range, and how much went.
pub struct IcaSend {
    pub socket: u32,
    pub ica: Option<Ica>,
    pub offset: usize,
    pub len: usize,
    pub done: usize,
    pub home: u64,
}

struct Request {
    socket: u32,
    flags: u32,
    ica: u64,
    offset: usize,
    len: usize,
    home: u64,
}

fn decode(msg: &[u8]) -> Option<Request> {
    if msg.len() != SEND_ICA_LEN {
        return None;
    }
    let mut r = Reader::new(msg);
    Some(Request {
        socket: r.u32()?,
        flags: r.u32()?,
        ica: r.u64()?,
        offset: r.u32()? as usize,
        len: r.u32()? as usize,
        home: r.u64()?,
    })
}

impl IcaSend {
    /// Gives the pages back to `caller` (at its home, if free there) and
    /// ends the call with `outcome`, the ICA's id (in the caller) after
    /// the result; a caller that cannot take them (it ended) leaves them
    /// to be deleted.
    pub fn give_back(&mut self, caller: u64, outcome: Outcome) -> Outcome {
        let Some(ica) = self.ica.take() else { return outcome };
        let id = ica.id();
        // On failure the object comes back and is dropped: deleted.
        if ica.move_to(caller, self.home).is_err() {
            return outcome;
        }
        let v = match outcome {
            Outcome::Value(v, _) => v,
            Outcome::Fail(e) => -(e.0 as i64),
            _ => -(Errno::EIO.0 as i64),
        };
        Outcome::Value(v, id.to_le_bytes().to_vec())
    }
}

impl Server {
    pub fn send_ica_call(&mut self, rid: u64, info: &AccInfo) -> Outcome {
        let caller = info.caller;
        let len = info.len as usize;
        let Some(req) = (len <= info.inline.len())
            .then(|| decode(&info.inline[..len]))
            .flatten()
        else {
            return Outcome::Fail(Errno::EINVAL);
        };
        // Only a container of the caller's, which granted this server
        // (`peer_grant`): anything else (stale, another process's) is not
        // touched.
        let ica = match sys::container_steal(req.ica, caller, ContainerMode::Move) {
            Ok(id) => match Ica::adopt(id) {
                Ok(ica) => ica,
                Err(_) => {
                    // Not attached here after all: it goes back as it came.
                    let _ = sys::ica_move(id, caller);
                    return Outcome::Fail(Errno::EBADF);
                }
            },
            Err(Error::Denied) => return Outcome::Fail(Errno::EACCES),
            Err(_) => return Outcome::Fail(Errno::EBADF),
        };
        let mut send = IcaSend {
            socket: req.socket,
            ica: Some(ica),
            offset: req.offset,
            len: req.len,
            done: 0,
            home: req.home,
        };
        let checked = match self.table.get(req.socket, caller) {
            Ok(Socket {
                kind: Kind::Tcp(_),
                options,
                ..
            }) => Ok(options.nonblock),
            Ok(_) => Err(Errno::EOPNOTSUPP),
            Err(e) => Err(e),
        };
        let nonblock = match checked {
            Ok(n) => n,
            Err(e) => return send.give_back(caller, Outcome::Fail(e)),
        };
        let room = send.ica.as_ref().map_or(0, Ica::len);
        if req.offset.checked_add(req.len).is_none_or(|end| end > room) {
            return send.give_back(caller, Outcome::Fail(Errno::EINVAL));
        }
        let may_wait = !nonblock && req.flags & MSG_DONTWAIT == 0;
        self.start(rid, caller, req.socket, Op::SendIca(send), may_wait, None)
    }

    /// One try of a SEND_ICA; its outcome is final (the pages gone back)
    /// unless it is `Wait` and `may_wait`.
    pub fn send_ica_some(&mut self, caller: u64, send: &mut IcaSend, may_wait: bool) -> Outcome {
        let outcome = match send.ica.as_ref() {
            Some(ica) => {
                let data = &ica.as_slice()[send.offset..send.offset + send.len];
                let before = send.done;
                let o = self.tcp_send_slice(caller, send.socket, data, &mut send.done);
                self.stats.ica_copied_in += (send.done - before) as u64;
                o
            }
            None => Outcome::Fail(Errno::EBADF),
        };
        let outcome = match outcome {
            Outcome::Wait if may_wait => return Outcome::Wait,
            Outcome::Wait if send.done > 0 => Outcome::Value(send.done as i64, Vec::new()),
            Outcome::Wait => Outcome::Fail(Errno::EAGAIN),
            o => o,
        };
        send.give_back(caller, outcome)
    }
}
