//! splice, tee and vmsplice: bytes moved between a pipe the kernel
//! serves and a file, a socket pair's end, another pipe or the process's
//! memory, with Linux's checks in Linux's order (`fs/splice.c`).
//!
//! The supervisor moves the bytes through its own buffer with the
//! kernel's `linux_pipe(TAKE, PUT, PEEK)`, which never wait: a source
//! pipe is peeked, the destination takes what it accepts, and only that
//! much is then taken from the pipe, so nothing is lost when the
//! destination is short (a full pipe, a file past RLIMIT_FSIZE). A call
//! that must wait (an empty source, a full destination, without
//! SPLICE_F_NONBLOCK or O_NONBLOCK) is held here as a poll is: the
//! kernel tells this supervisor at the pipes' next change (`KWAKE`), and
//! the call is tried again from the start; a signal ends the wait with
//! ERESTARTSYS, as Linux's pipe waits do.
//!
//! Copies: a file's bytes into a pipe are two (the file server into this
//! buffer, this buffer into the ring), a pipe's into a file or another
//! pipe two (peeked, written; then dropped from the pipe, not copied);
//! vmsplice two. Linux
//! moves page references instead (SPLICE_F_GIFT, SPLICE_F_MOVE are
//! hints there too, and are accepted and ignored here).
//! What it does not do yet: a named FIFO (the shared server's pipe) is
//! no splice end (EINVAL); a pipe's bytes peeked and then taken may be
//! another reader's in between, if another process reads the same pipe
//! at that moment.

use super::fdtable::{Kind, OfdRef};
use super::{Hold, Out, Sup, ret};
use alloc::vec;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::nr;
use linuxabi::signal as sig;
use tessera_rt::abi::Error;
use tessera_rt::abi::linux::pipe::{op, state};
use tessera_rt::sys::calls;

const SPLICE_F_NONBLOCK: u64 = 2;
/// MOVE, NONBLOCK, MORE, GIFT.
const SPLICE_F_ALL: u64 = 0xf;
/// The supervisor's buffer: what one step moves at most.
const CHUNK: usize = 64 * 1024;
/// Linux's largest transfer in one call (`MAX_RW_COUNT`).
const MAX_RW: u64 = 0x7fff_f000;
const IOV_MAX: u64 = 1024;
/// The token of a call held here (the kernel's wake names no token).
const TOKEN: u64 = u64::MAX - 18;

/// A call held until a pipe changes.
pub struct SpliceWait {
    rid: u64,
    nr: u64,
    args: [u64; 6],
}

/// What a try came to: bytes moved (or 0 at the end), or a wait for a
/// change of the kernel-bound descriptors named.
enum Step {
    Moved(u64),
    Wait([Option<u64>; 2]),
}

/// Where a splice's bytes come from or go to, besides a pipe.
#[derive(Clone)]
enum Other {
    File(u32),
    Null,
    /// A `/proc` file's bytes (a source) or a writable `/proc/sys` file
    /// (a sink), by its path.
    Mem(alloc::rc::Rc<Vec<u8>>, alloc::string::String),
    /// A stream socket pair's end the kernel binds (at this number).
    Sock(u64),
}

fn is_kpipe(o: &OfdRef) -> Option<u64> {
    match o.borrow().kind {
        Kind::KPipe { id, .. } => Some(id),
        _ => None,
    }
}

/// The kernel's error of TAKE, PEEK or PUT as a step: Busy is a wait.
enum Kp {
    Busy,
    NoReader,
    Err(i64),
}

fn kp(e: Error) -> Kp {
    match e {
        Error::Busy => Kp::Busy,
        Error::Deadlock => Kp::NoReader,
        Error::Fault => Kp::Err(errno::EFAULT),
        Error::NoMemory => Kp::Err(errno::ENOMEM),
        _ => Kp::Err(errno::EBADF),
    }
}

impl Sup {
    fn pipe_op(&self, o: u64, fd: u64, addr: u64, len: usize) -> Result<usize, Kp> {
        calls::linux_pipe(o, self.tpid, fd, addr, len as u64)
            .map(|n| n as usize)
            .map_err(kp)
    }

    fn peek(&self, fd: u64, buf: &mut [u8]) -> Result<usize, Kp> {
        self.pipe_op(op::PEEK, fd, buf.as_mut_ptr() as u64, buf.len())
    }

    /// Takes the first `n` bytes of the pipe at `fd`, which a peek copied
    /// already and their destination accepted: dropped, not copied again.
    fn drop_taken(&self, fd: u64, n: usize) {
        if n > 0 {
            let _ = self.pipe_op(op::TAKE, fd, 0, n);
        }
    }

    fn put(&self, fd: u64, data: &[u8]) -> Result<usize, Kp> {
        self.pipe_op(op::PUT, fd, data.as_ptr() as u64, data.len())
    }

    /// The kernel's state of the pipe bound at `fd` (`side` of a socket).
    fn pipe_state(&self, fd: u64, side: u64) -> Result<u64, i64> {
        calls::linux_pipe(op::STATE, self.tpid, fd, side, 0).map_err(|_| errno::EBADF)
    }

    /// EPIPE, with SIGPIPE, as Linux's pipe with no reader.
    fn broken(&mut self) -> Result<Step, i64> {
        self.raise(sig::SIGPIPE);
        Err(errno::EPIPE)
    }

    /// A pipe empty (`held` 0) to read from: the end (no writer), EAGAIN
    /// or a wait on it.
    fn empty(s: u64, fd: u64, nonblock: bool) -> Result<Step, i64> {
        if s & state::WRITERS == 0 {
            Ok(Step::Moved(0))
        } else if nonblock {
            Err(errno::EAGAIN)
        } else {
            Ok(Step::Wait([Some(fd), None]))
        }
    }

    fn full(fd: u64, nonblock: bool) -> Result<Step, i64> {
        if nonblock {
            Err(errno::EAGAIN)
        } else {
            Ok(Step::Wait([Some(fd), None]))
        }
    }

    /// Whether `o`'s description has O_NONBLOCK (a pipe's: the kernel's).
    fn nonblocking(&self, o: &OfdRef) -> bool {
        let f = match o.borrow().kind {
            Kind::KPipe { .. } => self.kpipe_flags(o),
            _ => self.flags_of(&o.borrow()),
        };
        f & linuxabi::fcntl::O_NONBLOCK != 0
    }

    pub(super) fn splice(&mut self, rid: u64, a: [u64; 6]) -> Out {
        self.splice_go(rid, nr::SPLICE, a, false)
    }

    pub(super) fn tee(&mut self, rid: u64, a: [u64; 6]) -> Out {
        self.splice_go(rid, nr::TEE, a, false)
    }

    pub(super) fn vmsplice(&mut self, rid: u64, a: [u64; 6]) -> Out {
        self.splice_go(rid, nr::VMSPLICE, a, false)
    }

    /// Tries call `n`; one that must wait has the kernel watch its pipes
    /// (`armed`), tries once more (a change may have come before the
    /// watch) and is then held.
    fn splice_go(&mut self, rid: u64, n: u64, a: [u64; 6], armed: bool) -> Out {
        let r = match n {
            nr::SPLICE => self.splice_try(rid, a),
            nr::SENDFILE => self.sendfile_try(rid, a),
            nr::TEE => self.tee_try(a),
            _ => self.vmsplice_try(rid, a),
        };
        match r {
            Ok(Step::Moved(v)) => Out::Ret(v),
            Err(e) => ret(Err(e)),
            Ok(Step::Wait(fds)) if !armed => {
                for fd in fds.into_iter().flatten() {
                    let _ = calls::linux_pipe(op::WATCH, self.tpid, fd, crate::proto::sup::KWAKE, 0);
                }
                self.splice_go(rid, n, a, true)
            }
            Ok(Step::Wait(_)) => {
                if self.sig.deliverable() != 0 {
                    return ret(Err(errno::ERESTARTSYS));
                }
                self.splice_wait = Some(SpliceWait { rid, nr: n, args: a });
                self.held = Some((rid, Hold::Poll { token: TOKEN }));
                Out::Done
            }
        }
    }

    /// A wake while a call is held here: it is tried again. Whether the
    /// held call is this module's (another wake meanwhile is ignored).
    pub(super) fn splice_woken(&mut self, token: u64) -> bool {
        let Some(w) = self.splice_wait.as_ref() else {
            return false;
        };
        if !matches!(self.held, Some((r, Hold::Poll { token: TOKEN })) if r == w.rid) {
            self.splice_wait = None;
            return false;
        }
        if token != TOKEN {
            return true;
        }
        let Some(w) = self.splice_wait.take() else {
            return false;
        };
        self.held = None;
        self.in_call = true;
        let o = self.splice_go(w.rid, w.nr, w.args, false);
        self.in_call = false;
        if let Out::Ret(v) = o {
            self.answer(w.rid, v);
        }
        true
    }

    /// A signal ends a held call: whether one was held (it restarts
    /// under SA_RESTART, as Linux's).
    pub(super) fn splice_cancel(&mut self) -> bool {
        match self.splice_wait.take() {
            Some(w) => matches!(self.held, Some((r, Hold::Poll { token: TOKEN })) if r == w.rid),
            None => false,
        }
    }

    /// What a splice may move to or from `o` besides a pipe (EINVAL:
    /// nothing, as a file without splice_read or splice_write).
    fn other_of(&self, o: &OfdRef, fd: u64, write: bool) -> Result<Other, i64> {
        let d = o.borrow();
        Ok(match &d.kind {
            Kind::File { fd: f, dir: false } => Other::File(*f),
            Kind::Null => Other::Null,
            Kind::Mem(m) if !write && super::vfs::ns_of(&d.path).is_none() => Other::Mem(m.clone(), d.path.clone()),
            Kind::Mem(m) if write && super::vfs::writable(&d.path) => Other::Mem(m.clone(), d.path.clone()),
            Kind::KUnix { .. } => Other::Sock(fd),
            _ => return Err(errno::EINVAL),
        })
    }

    /// splice(fd_in, off_in, fd_out, off_out, len, flags).
    fn splice_try(&mut self, rid: u64, a: [u64; 6]) -> Result<Step, i64> {
        let (fd_in, off_in, fd_out, off_out, len) = (a[0], a[1], a[2], a[3], a[4]);
        let flags = a[5] as u32 as u64;
        if len == 0 {
            return Ok(Step::Moved(0));
        }
        if flags & !SPLICE_F_ALL != 0 {
            return Err(errno::EINVAL);
        }
        let len = len.min(MAX_RW);
        let inp = self.fds.ofd(fd_in)?;
        let out = self.fds.ofd(fd_out)?;
        let (ipipe, opipe) = (is_kpipe(&inp), is_kpipe(&out));
        if (ipipe.is_some() && off_in != 0) || (opipe.is_some() && off_out != 0) {
            return Err(errno::ESPIPE);
        }
        let read_off = |s: &Self, at: u64| match at {
            0 => Ok(None),
            at => s.read_u64(rid, at).map(Some),
        };
        let o_off = read_off(self, off_out)?;
        let i_off = read_off(self, off_in)?;
        if !inp.borrow().readable() || !out.borrow().writable() {
            return Err(errno::EBADF);
        }
        let mut nonblock = flags & SPLICE_F_NONBLOCK != 0;
        match (ipipe, opipe) {
            (Some(i), Some(o)) => {
                if i == o {
                    return Err(errno::EINVAL);
                }
                nonblock |= self.nonblocking(&inp) || self.nonblocking(&out);
                self.pipe_to_pipe(fd_in, fd_out, len, nonblock, false)
            }
            (Some(_), None) => {
                let sink = self.other_of(&out, fd_out, true)?;
                // Only a file has a position of its own to write at.
                if o_off.is_some() && !matches!(sink, Other::File(_)) {
                    return Err(errno::EINVAL);
                }
                if self.flags_of(&out.borrow()) & linuxabi::fcntl::O_APPEND != 0 {
                    return Err(errno::EINVAL);
                }
                if o_off.is_some_and(|p| (p as i64) < 0) {
                    return Err(errno::EINVAL);
                }
                nonblock |= self.nonblocking(&inp);
                let pos = o_off.unwrap_or_else(|| self.pos(&out.borrow()));
                let (step, end) = self.pipe_to_other(fd_in, &sink, pos, len, nonblock)?;
                match o_off {
                    Some(_) => self.write_u64(rid, off_out, end)?,
                    None if end != pos => self.set_pos(&mut out.borrow_mut(), end),
                    None => {}
                }
                Ok(step)
            }
            (None, Some(_)) => {
                let src = self.other_of(&inp, fd_in, false)?;
                if i_off.is_some() && matches!(src, Other::Sock(_)) {
                    return Err(errno::EINVAL);
                }
                if i_off.is_some_and(|p| (p as i64) < 0) {
                    return Err(errno::EINVAL);
                }
                nonblock |= self.nonblocking(&out) || (matches!(src, Other::Sock(_)) && self.nonblocking(&inp));
                let pos = i_off.unwrap_or_else(|| match src {
                    Other::Mem(..) => inp.borrow().pos,
                    _ => self.pos(&inp.borrow()),
                });
                let (step, end) = self.other_to_pipe(&src, pos, fd_out, len, nonblock)?;
                match (i_off, &src) {
                    (Some(_), _) => self.write_u64(rid, off_in, end)?,
                    (None, Other::Mem(..)) => inp.borrow_mut().pos = end,
                    (None, _) if end != pos => self.set_pos(&mut inp.borrow_mut(), end),
                    (None, _) => {}
                }
                Ok(step)
            }
            (None, None) => Err(errno::EINVAL),
        }
    }

    /// From pipe `fi` into pipe `fo`: waits for bytes, then for room;
    /// moves what is there (up to `len`) and what fits. `keep`: tee's,
    /// the bytes stay in `fi`.
    fn pipe_to_pipe(&mut self, fi: u64, fo: u64, len: u64, nonblock: bool, keep: bool) -> Result<Step, i64> {
        let si = self.pipe_state(fi, 0)?;
        let held = (si & state::HELD) as usize;
        if held == 0 {
            return Self::empty(si, fi, nonblock);
        }
        let so = self.pipe_state(fo, 0)?;
        if so & state::READERS == 0 {
            return self.broken();
        }
        if so & state::ROOM == 0 {
            return Self::full(fo, nonblock);
        }
        let mut buf = vec![0u8; held.min(len as usize).min(CHUNK)];
        let got = match self.peek(fi, &mut buf) {
            Ok(n) => n,
            Err(Kp::Err(e)) => return Err(e),
            // Another reader emptied it meanwhile.
            Err(_) => return Self::empty(si, fi, nonblock),
        };
        let placed = match self.put(fo, &buf[..got]) {
            Ok(n) => n,
            Err(Kp::Busy) => return Self::full(fo, nonblock),
            Err(Kp::NoReader) => return self.broken(),
            Err(Kp::Err(e)) => return Err(e),
        };
        if !keep && placed > 0 {
            self.drop_taken(fi, placed);
        }
        Ok(Step::Moved(placed as u64))
    }

    /// From pipe `fi` into `sink` (a file at `pos`): what the pipe holds,
    /// up to `len`, once it holds some. Returns the step and the position
    /// after it.
    fn pipe_to_other(&mut self, fi: u64, sink: &Other, pos: u64, len: u64, nonblock: bool) -> Result<(Step, u64), i64> {
        let si = self.pipe_state(fi, 0)?;
        if si & state::HELD == 0 {
            return Self::empty(si, fi, nonblock).map(|s| (s, pos));
        }
        let len = match sink {
            Other::File(f) => self.fsize_room(*f, pos, false, len)?,
            _ => len,
        };
        let mut buf = vec![0u8; (len as usize).min(CHUNK).min((si & state::HELD) as usize)];
        let (mut done, mut at) = (0u64, pos);
        while done < len {
            let want = ((len - done) as usize).min(buf.len());
            let got = match self.peek(fi, &mut buf[..want]) {
                Ok(0) | Err(Kp::Busy) => break,
                Ok(n) => n,
                Err(Kp::Err(e)) if done == 0 => return Err(e),
                Err(_) => break,
            };
            let wrote = match self.give_other(sink, at, &buf[..got]) {
                Ok(n) => n,
                Err(Kp::Busy) if done == 0 => return Self::full(fi, nonblock).map(|s| (s, pos)),
                Err(Kp::NoReader) if done == 0 => return self.broken().map(|s| (s, pos)),
                Err(Kp::Err(e)) if done == 0 => return Err(e),
                Err(_) => 0,
            };
            if wrote > 0 {
                self.drop_taken(fi, wrote);
            }
            done += wrote as u64;
            at += wrote as u64;
            if wrote < got {
                break;
            }
        }
        Ok((Step::Moved(done), at))
    }

    /// `data` into `sink` at `pos`: the bytes it took.
    fn give_other(&mut self, sink: &Other, pos: u64, data: &[u8]) -> Result<usize, Kp> {
        match sink {
            Other::File(f) => self
                .fs
                .write_own(*f, pos, false, data)
                .map(|(n, _)| n as usize)
                .map_err(Kp::Err),
            Other::Null => Ok(data.len()),
            Other::Mem(_, path) => self.sysctl_apply(path, data).map(|n| n as usize).map_err(Kp::Err),
            Other::Sock(fd) => self.put(*fd, data),
        }
    }

    /// From `src` (at `pos`) into pipe `fo`: once it has room, what fits
    /// of `len`. Returns the step and the source's position after it.
    fn other_to_pipe(&mut self, src: &Other, pos: u64, fo: u64, len: u64, nonblock: bool) -> Result<(Step, u64), i64> {
        let so = self.pipe_state(fo, 0)?;
        if so & state::READERS == 0 {
            return self.broken().map(|s| (s, pos));
        }
        let cap = (so >> state::PAGES_SHIFT) as usize * 4096;
        let room = cap.saturating_sub((so & state::HELD) as usize);
        if so & state::ROOM == 0 || room == 0 {
            return Self::full(fo, nonblock).map(|s| (s, pos));
        }
        let mut buf = vec![0u8; room.min(len as usize).min(CHUNK)];
        let got = match src {
            Other::File(f) => self.fs.read_own(*f, pos, &mut buf)?,
            Other::Null => 0,
            Other::Mem(m, _) => {
                let part = m.get((pos as usize).min(m.len())..).unwrap_or(&[]);
                let n = part.len().min(buf.len());
                buf[..n].copy_from_slice(&part[..n]);
                n
            }
            Other::Sock(fd) => match self.peek(*fd, &mut buf) {
                Ok(n) => n,
                Err(Kp::Busy) if nonblock => return Err(errno::EAGAIN),
                Err(Kp::Busy) => return Ok((Step::Wait([Some(*fd), None]), pos)),
                Err(Kp::NoReader) => 0,
                Err(Kp::Err(e)) => return Err(e),
            },
        };
        if got == 0 {
            return Ok((Step::Moved(0), pos));
        }
        let placed = match self.put(fo, &buf[..got]) {
            Ok(n) => n,
            Err(Kp::Busy) => return Self::full(fo, nonblock).map(|s| (s, pos)),
            Err(Kp::NoReader) => return self.broken().map(|s| (s, pos)),
            Err(Kp::Err(e)) => return Err(e),
        };
        if let Other::Sock(fd) = src {
            self.drop_taken(*fd, placed);
        }
        Ok((Step::Moved(placed as u64), pos + placed as u64))
    }

    /// sendfile(out_fd, in_fd, offset, count) and copy_file_range into a
    /// kernel pipe: as a splice of the file into it, which waits for room
    /// unless the pipe is O_NONBLOCK (Linux's do_sendfile).
    pub(super) fn sendfile_call(&mut self, rid: u64, a: [u64; 6]) -> Out {
        match self.fds.ofd(a[0]) {
            Ok(o) if is_kpipe(&o).is_some() => self.splice_go(rid, nr::SENDFILE, a, false),
            _ => ret(self.sendfile(rid, a)),
        }
    }

    fn sendfile_try(&mut self, rid: u64, a: [u64; 6]) -> Result<Step, i64> {
        let (out_fd, in_fd, off_at, count) = (a[0], a[1], a[2], a[3]);
        let inp = self.fds.ofd(in_fd)?;
        if !inp.borrow().readable() {
            return Err(errno::EBADF);
        }
        let at = match off_at {
            0 => None,
            at => Some(self.read_u64(rid, at)?),
        };
        if at.is_some_and(|p| (p as i64) < 0) {
            return Err(errno::EINVAL);
        }
        let out = self.fds.ofd(out_fd)?;
        if !out.borrow().writable() {
            return Err(errno::EBADF);
        }
        let Kind::File { fd: src, dir: false } = inp.borrow().kind else {
            return Err(errno::EINVAL);
        };
        if count == 0 {
            return Ok(Step::Moved(0));
        }
        let nonblock = self.nonblocking(&out);
        let pos = at.unwrap_or_else(|| self.pos(&inp.borrow()));
        let (step, end) = self.other_to_pipe(&Other::File(src), pos, out_fd, count.min(MAX_RW), nonblock)?;
        match at {
            Some(_) => self.write_u64(rid, off_at, end)?,
            None if end != pos => self.set_pos(&mut inp.borrow_mut(), end),
            None => {}
        }
        Ok(step)
    }

    /// tee(fd_in, fd_out, len, flags): a pipe's bytes copied into another
    /// pipe, left where they were.
    fn tee_try(&mut self, a: [u64; 6]) -> Result<Step, i64> {
        let (fd_in, fd_out, len) = (a[0], a[1], a[2]);
        let flags = a[3] as u32 as u64;
        if flags & !SPLICE_F_ALL != 0 {
            return Err(errno::EINVAL);
        }
        if len == 0 {
            return Ok(Step::Moved(0));
        }
        let inp = self.fds.ofd(fd_in)?;
        let out = self.fds.ofd(fd_out)?;
        if !inp.borrow().readable() || !out.borrow().writable() {
            return Err(errno::EBADF);
        }
        match (is_kpipe(&inp), is_kpipe(&out)) {
            (Some(i), Some(o)) if i != o => {
                let nonblock = flags & SPLICE_F_NONBLOCK != 0 || self.nonblocking(&inp) || self.nonblocking(&out);
                self.pipe_to_pipe(fd_in, fd_out, len.min(MAX_RW), nonblock, true)
            }
            _ => Err(errno::EINVAL),
        }
    }

    /// vmsplice(fd, iov, nr_segs, flags): the process's memory into a
    /// pipe's write end, or a pipe's bytes out of its read end into it.
    fn vmsplice_try(&mut self, rid: u64, a: [u64; 6]) -> Result<Step, i64> {
        let (fd, iov, segs) = (a[0], a[1], a[2]);
        let flags = a[3] as u32 as u64;
        if flags & !SPLICE_F_ALL != 0 {
            return Err(errno::EINVAL);
        }
        let o = self.fds.ofd(fd)?;
        let write = match (o.borrow().writable(), o.borrow().readable()) {
            (true, _) => true,
            (false, true) => false,
            _ => return Err(errno::EBADF),
        };
        if segs > IOV_MAX {
            return Err(errno::EINVAL);
        }
        let raw = self.read_mem(rid, iov, segs as usize * 16)?;
        let mut pieces = Vec::new();
        let mut total = 0u64;
        for v in raw.chunks_exact(16) {
            let base = u64::from_le_bytes(v[..8].try_into().unwrap_or_default());
            let n = u64::from_le_bytes(v[8..].try_into().unwrap_or_default());
            if (n as i64) < 0 {
                return Err(errno::EINVAL);
            }
            // Linux's import_iovec: the whole at most MAX_RW_COUNT.
            let n = n.min(MAX_RW - total);
            total += n;
            if n > 0 {
                pieces.push((base, n));
            }
        }
        if total == 0 {
            return Ok(Step::Moved(0));
        }
        if is_kpipe(&o).is_none() {
            return Err(errno::EBADF);
        }
        let nonblock = flags & SPLICE_F_NONBLOCK != 0;
        if write {
            self.vmsplice_in(rid, fd, &pieces, nonblock || self.nonblocking(&o))
        } else {
            self.vmsplice_out(rid, fd, &pieces, nonblock)
        }
    }

    /// The process's pieces into pipe `fd`: what fits once there is room.
    fn vmsplice_in(&mut self, rid: u64, fd: u64, pieces: &[(u64, u64)], nonblock: bool) -> Result<Step, i64> {
        let s = self.pipe_state(fd, 0)?;
        if s & state::READERS == 0 {
            return self.broken();
        }
        let cap = (s >> state::PAGES_SHIFT) as usize * 4096;
        let room = cap.saturating_sub((s & state::HELD) as usize);
        if s & state::ROOM == 0 || room == 0 {
            return Self::full(fd, nonblock);
        }
        let mut buf = Vec::new();
        for &(base, n) in pieces {
            let n = (n as usize).min(room - buf.len());
            match self.read_mem(rid, base, n) {
                Ok(b) => buf.extend_from_slice(&b),
                Err(e) if buf.is_empty() => return Err(e),
                Err(_) => break,
            }
            if buf.len() == room {
                break;
            }
        }
        match self.put(fd, &buf) {
            Ok(n) => Ok(Step::Moved(n as u64)),
            Err(Kp::Busy) => Self::full(fd, nonblock),
            Err(Kp::NoReader) => self.broken(),
            Err(Kp::Err(e)) => Err(e),
        }
    }

    /// Pipe `fd`'s bytes into the process's pieces, once it holds some.
    fn vmsplice_out(&mut self, rid: u64, fd: u64, pieces: &[(u64, u64)], nonblock: bool) -> Result<Step, i64> {
        let s = self.pipe_state(fd, 0)?;
        let held = (s & state::HELD) as usize;
        if held == 0 {
            return Self::empty(s, fd, nonblock);
        }
        let want: u64 = pieces.iter().map(|p| p.1).sum();
        let mut buf = vec![0u8; held.min(want as usize)];
        let got = match self.peek(fd, &mut buf) {
            Ok(n) => n,
            Err(Kp::Err(e)) => return Err(e),
            Err(_) => return Self::empty(s, fd, nonblock),
        };
        let mut done = 0usize;
        for &(base, n) in pieces {
            if done == got {
                break;
            }
            let n = (n as usize).min(got - done);
            match self.write_mem(rid, base, &buf[done..done + n]) {
                Ok(()) => done += n,
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            }
        }
        self.drop_taken(fd, done);
        Ok(Step::Moved(done as u64))
    }
}
