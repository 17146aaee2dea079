//! Pipes the kernel serves (`pipe`, `pipe2`): the kernel moves the bytes
//! of read and write itself, with no rendezvous; this supervisor keeps
//! the descriptor table, the truth, and the kernel's bindings follow it
//! (`follow_set`, `follow_take`: every number set or taken in the table).
//! The numbers of a regular file with a kernel cache (`Ofd::cache`) are
//! bound the same way, and the kernel serves their pread64 from the
//! cache's pages when it holds them all.
//! Fork copies the bindings and exec keeps them in the kernel, as Linux
//! keeps descriptors, but for the close-on-exec ones: the kernel knows
//! which they are (each bind says, and F_SETFD follows), so the new
//! program never reaches them; what the kernel does not serve (fstat, poll, fcntl,
//! the SIGPIPE of a write with no reader) is served here from the
//! kernel's state of the pipe (`linux_pipe(STATE)`).
//! AF_UNIX stream socket pairs are bound the same way (`Kind::KUnix`):
//! an end reads one kernel pipe and writes another, and the kernel
//! serves its read, write, send and recv calls too.

use super::Sup;
use super::fdtable::{self as fdt, FdTable, Kind, Ofd, OfdRef, Slot};
use alloc::rc::Rc;
use alloc::string::String;
use linuxabi::errno;
use linuxabi::signal as sig;
use tessera_rt::abi::Error;
use tessera_rt::abi::linux::pipe::{FILE_STAT, op, state};
use tessera_rt::sys::calls;

fn is_kpipe(s: Option<&Slot>) -> bool {
    s.is_some_and(|s| matches!(s.ofd.borrow().kind, Kind::KPipe { .. } | Kind::KUnix { .. }))
}

/// Whether the kernel binds the numbers of `s`'s description: a kernel
/// pipe's end, or a regular file with a kernel cache.
fn is_bound(s: Option<&Slot>) -> bool {
    is_kpipe(s) || s.is_some_and(|s| s.ofd.borrow().cache != 0)
}

/// Another number of `t` leading to `ofd` than `fd`.
fn other_fd(t: &FdTable, ofd: &OfdRef, fd: usize) -> Option<usize> {
    t.slots
        .iter()
        .enumerate()
        .find(|(i, s)| *i != fd && s.as_ref().is_some_and(|s| Rc::ptr_eq(&s.ofd, ofd)))
        .map(|(i, _)| i)
}

/// Number `fd` of `t` was set (`old` was there): the kernel binds it to
/// the same end as another number of the description, or unbinds it.
pub fn follow_set(t: &FdTable, fd: usize, old: Option<&Slot>) {
    if t.tpid == 0 {
        return;
    }
    let new = t.slots.get(fd).and_then(|s| s.as_ref());
    if let (Some(o), Some(n)) = (old, new)
        && Rc::ptr_eq(&o.ofd, &n.ofd)
    {
        // F_SETFD: the kernel must know, to keep the number from the
        // next program an exec starts.
        if o.cloexec != n.cloexec && is_bound(Some(n)) {
            let _ = calls::linux_pipe(op::SETFD, t.tpid, fd as u64, n.cloexec as u64, 0);
        }
        return;
    }
    if let Some(n) = new
        && is_bound(Some(n))
    {
        // A file's first number binds to its cache; a failed bind (the
        // file server took the grant back) leaves the number to the
        // supervisor, which serves every call on a file.
        let cache = n.ofd.borrow().cache;
        let from = other_fd(t, &n.ofd, fd);
        let flags = if n.cloexec { fdt::O_CLOEXEC as u64 } else { 0 };
        // The kernel answers fstat from the attributes the file server
        // keeps in the cache when they are the bytes fstat gives here.
        let stat = match n.ofd.borrow().kind {
            Kind::File { fd, .. } if super::mounts::on_system_fs(fd) => FILE_STAT,
            _ => 0,
        };
        let dup = |from: usize| calls::linux_pipe(op::DUP, t.tpid, from as u64, fd as u64, flags).is_ok();
        let bound = match from {
            Some(from) if is_kpipe(Some(n)) => {
                dup(from);
                true
            }
            _ if cache != 0 => {
                from.is_some_and(dup)
                    || calls::linux_pipe(op::BIND_FILE, t.tpid, fd as u64, cache, flags | stat).is_ok()
            }
            _ => false,
        };
        if bound {
            return;
        }
    }
    if is_bound(old) || is_bound(new) {
        let _ = calls::linux_pipe(op::CLOSE, t.tpid, fd as u64, 0, 0);
    }
}

/// Number `fd` of `t` was taken (it led to `old`).
pub fn follow_take(t: &FdTable, fd: u64, old: &Slot) {
    if t.tpid != 0 && is_bound(Some(old)) {
        let _ = calls::linux_pipe(op::CLOSE, t.tpid, fd, 0, 0);
    }
}

fn errno_of(e: Error) -> i64 {
    match e {
        Error::NoMemory | Error::Limit => errno::ENOMEM,
        Error::Busy => errno::EBUSY,
        Error::Denied => errno::EPERM,
        Error::Fault => errno::EFAULT,
        Error::NotFound => errno::EBADF,
        _ => errno::EINVAL,
    }
}

impl Sup {
    /// `pipe2` of a kernel pipe: the two lowest free numbers.
    pub(super) fn kpipe2(&mut self, rid: u64, at: u64, flags: u64) -> Result<u64, i64> {
        let allowed = (fdt::O_CLOEXEC | fdt::O_NONBLOCK | fdt::O_DIRECT) as u64;
        if flags & !allowed != 0 {
            return Err(errno::EINVAL);
        }
        // The array must be writable before anything is made.
        self.write_mem(rid, at, &[0u8; 8])?;
        let (a, b) = self.two_free()?;
        self.fds.tpid = self.tpid;
        let f = flags as u32 & fdt::O_NONBLOCK;
        let cloexec = flags as u32 & fdt::O_CLOEXEC != 0;
        let kf = flags as u32 & (fdt::O_NONBLOCK | fdt::O_CLOEXEC);
        let id = calls::linux_pipe(op::CREATE, self.tpid, a as u64, b as u64, kf as u64).map_err(errno_of)?;
        let ro = Ofd::new(Kind::KPipe { id, write: false }, f, String::from("pipe:"));
        let wo = Ofd::new(
            Kind::KPipe { id, write: true },
            fdt::O_WRONLY | f,
            String::from("pipe:"),
        );
        // Bound already: the table takes them without following.
        let tpid = core::mem::replace(&mut self.fds.tpid, 0);
        self.fds.set(a, ro, cloexec);
        self.fds.set(b, wo, cloexec);
        self.fds.tpid = tpid;
        // A process without CAP_SYS_RESOURCE gets no more than
        // pipe-max-size (Linux's alloc_pipe_info).
        if self.cred.euid != 0
            && let Ok(max) = self.sysctl(crate::proto::sysctl::PIPE_MAX_SIZE, None)
            && max < (linuxabi::pipe::PAGES * linuxabi::pipe::PAGE) as u64
        {
            let _ = calls::linux_pipe(op::RESIZE, self.tpid, b as u64, max, 0);
        }
        self.give_pair(rid, at, a, b)
    }

    /// socketpair(AF_UNIX, SOCK_STREAM) of two kernel pipes: the two
    /// lowest free numbers, each end bound in the kernel. `flags`:
    /// SOCK_NONBLOCK and SOCK_CLOEXEC (their O_ values).
    pub(super) fn kunix_pair(&mut self, rid: u64, at: u64, flags: u32) -> Result<u64, i64> {
        let (a, b) = self.two_free()?;
        self.fds.tpid = self.tpid;
        let f = flags & fdt::O_NONBLOCK;
        // The kernel marks the ends close-on-exec itself: they are bound
        // before the table below takes them.
        let kf = flags & (fdt::O_NONBLOCK | fdt::O_CLOEXEC);
        let id = calls::linux_pipe(op::SOCKPAIR, self.tpid, a as u64, b as u64, kf as u64).map_err(|e| match e {
            Error::NoMemory | Error::Limit => errno::ENFILE,
            e => errno_of(e),
        })?;
        let cloexec = flags & fdt::O_CLOEXEC != 0;
        let end = || Ofd::new(Kind::KUnix { id }, fdt::O_RDWR | f, String::from("socket:"));
        // Bound already: the table takes them without following.
        let tpid = core::mem::replace(&mut self.fds.tpid, 0);
        self.fds.set(a, end(), cloexec);
        self.fds.set(b, end(), cloexec);
        self.fds.tpid = tpid;
        self.give_pair(rid, at, a, b)
    }

    /// The two lowest free descriptor numbers, for a pipe's or a socket
    /// pair's two ends.
    fn two_free(&self) -> Result<(usize, usize), i64> {
        let limit = self.limit();
        let a = self.fds.free_from(0, limit)?;
        let mut b = a + 1;
        while b < self.fds.slots.len() && self.fds.slots[b].is_some() {
            b += 1;
        }
        if b >= limit {
            return Err(errno::EMFILE);
        }
        Ok((a, b))
    }

    /// The pair of numbers `a`, `b` written to the caller's `int[2]` at
    /// `at`; if that fails, both are closed again.
    fn give_pair(&mut self, rid: u64, at: u64, a: usize, b: usize) -> Result<u64, i64> {
        let mut out = [0u8; 8];
        out[..4].copy_from_slice(&(a as u32).to_le_bytes());
        out[4..].copy_from_slice(&(b as u32).to_le_bytes());
        if let Err(e) = self.write_mem(rid, at, &out) {
            let _ = self.close_fd(a as u64);
            let _ = self.close_fd(b as u64);
            return Err(e);
        }
        Ok(0)
    }

    /// The number the kernel binds for `ofd`, having asked, with `watch`,
    /// to be told (`sup::KWAKE`) at its pipes' next change: the watch
    /// comes before the caller's look, so a change between them still
    /// wakes.
    fn watched_fd(&self, ofd: &OfdRef, watch: bool) -> Option<u64> {
        let fd = self.bound_fd(ofd)?;
        if watch {
            let _ = calls::linux_pipe(op::WATCH, self.tpid, fd, crate::proto::sup::KWAKE, 0);
        }
        Some(fd)
    }

    /// The kernel's state of the pipe a stream socket's end reads (`write`
    /// false) or writes (`state::SHUT`: shut down).
    fn kunix_state(&self, ofd: &OfdRef, write: bool) -> Result<u64, i64> {
        let fd = self.bound_fd(ofd).ok_or(errno::EBADF)?;
        calls::linux_pipe(op::STATE, self.tpid, fd, write as u64, 0).map_err(errno_of)
    }

    /// poll's events of a stream socket's end, as Linux's unix_poll: its
    /// receiving side is shut (by itself, or by the peer's SHUT_WR or
    /// close) when its pipe in is shut or has no writer, its sending side
    /// when its pipe out is shut or has no reader; both: POLLHUP.
    pub(super) fn kunix_poll(&self, ofd: &OfdRef, watch: bool) -> u64 {
        const POLLIN: u64 = 1;
        const POLLOUT: u64 = 4;
        const POLLHUP: u64 = 0x10;
        const POLLNVAL: u64 = 0x20;
        const POLLRDHUP: u64 = 0x2000;
        if self.watched_fd(ofd, watch).is_none() {
            return POLLNVAL;
        }
        let (Ok(rx), Ok(tx)) = (self.kunix_state(ofd, false), self.kunix_state(ofd, true)) else {
            return POLLNVAL;
        };
        let rcv_shut = rx & state::SHUT != 0 || rx & state::WRITERS == 0;
        let send_shut = tx & state::SHUT != 0 || tx & state::READERS == 0;
        let mut ev = 0;
        if rx & state::HELD != 0 || rcv_shut {
            ev |= POLLIN;
        }
        if rcv_shut {
            ev |= POLLRDHUP;
        }
        if rcv_shut && send_shut {
            ev |= POLLHUP;
        }
        // Linux's is writable while its own queue is short, shut or not.
        if send_shut || tx & state::ROOM != 0 {
            ev |= POLLOUT;
        }
        ev
    }

    /// A send of a stream socket's end the kernel passed here: shut down
    /// for sending, or no reader is left (EPIPE, and SIGPIPE unless
    /// `flags` has MSG_NOSIGNAL).
    pub(super) fn kunix_epipe(&mut self, flags: u64) -> Result<u64, i64> {
        if flags & tessera_api::net::MSG_NOSIGNAL as u64 == 0 {
            self.raise(sig::SIGPIPE);
        }
        Err(errno::EPIPE)
    }

    /// shutdown(2) of a stream socket's end, for every number and process
    /// sharing it (the kernel's end is the description).
    pub(super) fn kunix_shutdown(&self, ofd: &OfdRef, how: u64) -> Result<u64, i64> {
        if how > 2 {
            return Err(errno::EINVAL);
        }
        let fd = self.bound_fd(ofd).ok_or(errno::EBADF)?;
        calls::linux_pipe(op::SHUTDOWN, self.tpid, fd, how, 0).map_err(errno_of)
    }

    /// A number of this process leading to `ofd`, which the kernel binds.
    fn bound_fd(&self, ofd: &OfdRef) -> Option<u64> {
        other_fd(&self.fds, ofd, usize::MAX).map(|i| i as u64)
    }

    /// The kernel's state of the pipe `ofd` is an end of (`state::*`).
    pub(super) fn kpipe_state(&self, ofd: &OfdRef) -> Result<u64, i64> {
        let fd = self.bound_fd(ofd).ok_or(errno::EBADF)?;
        calls::linux_pipe(op::STATE, self.tpid, fd, 0, 0).map_err(errno_of)
    }

    /// poll's events of an end now (POLLIN, POLLOUT, POLLHUP, POLLERR as
    /// Linux's pipe_poll); with `watch`, the kernel tells this supervisor
    /// (`sup::KWAKE`) at the pipe's next change.
    pub(super) fn kpipe_poll(&self, ofd: &OfdRef, watch: bool) -> u64 {
        const POLLIN: u64 = 1;
        const POLLOUT: u64 = 4;
        const POLLERR: u64 = 8;
        const POLLHUP: u64 = 0x10;
        const POLLNVAL: u64 = 0x20;
        let Some(fd) = self.watched_fd(ofd, watch) else {
            return POLLNVAL;
        };
        let Ok(s) = calls::linux_pipe(op::STATE, self.tpid, fd, 0, 0) else {
            return POLLNVAL;
        };
        let mut ev = 0;
        if s & state::WRITE_END == 0 {
            if s & state::HELD != 0 {
                ev |= POLLIN;
            }
            if s & state::WRITERS == 0 {
                ev |= POLLHUP;
            }
        } else {
            if s & state::ROOM != 0 {
                ev |= POLLOUT;
            }
            if s & state::READERS == 0 {
                ev |= POLLERR;
            }
        }
        ev
    }

    /// A write of a kernel pipe's end the kernel passed here: no reader is
    /// left (EPIPE, and SIGPIPE to the writer).
    pub(super) fn kpipe_write(&mut self, ofd: &OfdRef) -> Result<u64, i64> {
        let s = self.kpipe_state(ofd)?;
        if s & state::WRITE_END == 0 {
            return Err(errno::EBADF);
        }
        self.raise(sig::SIGPIPE);
        Err(errno::EPIPE)
    }

    /// `F_SETFL`: O_NONBLOCK is the description's, in the kernel.
    pub(super) fn kpipe_setfl(&self, ofd: &OfdRef, flags: u32) {
        if let Some(fd) = self.bound_fd(ofd) {
            let _ = calls::linux_pipe(op::SETFL, self.tpid, fd, (flags & fdt::O_NONBLOCK) as u64, 0);
        }
    }

    /// `F_GETFL`'s status flags: O_NONBLOCK as the kernel has it (a
    /// process sharing the description may have changed it).
    pub(super) fn kpipe_flags(&self, ofd: &OfdRef) -> u32 {
        let f = ofd.borrow().flags & !fdt::O_NONBLOCK;
        match self.kpipe_state(ofd) {
            Ok(s) if s & state::NONBLOCK != 0 => f | fdt::O_NONBLOCK,
            _ => f,
        }
    }

    /// `F_GETPIPE_SZ` (`size` None) and `F_SETPIPE_SZ`.
    pub(super) fn kpipe_size(&self, ofd: &OfdRef, size: Option<u64>) -> Result<u64, i64> {
        let fd = self.bound_fd(ofd).ok_or(errno::EBADF)?;
        match size {
            Some(s) => {
                let now = self.kpipe_size(ofd, None)?;
                self.pipe_size_allowed(now, s)?;
                calls::linux_pipe(op::RESIZE, self.tpid, fd, s, 0).map_err(errno_of)
            }
            None => calls::linux_pipe(op::STATE, self.tpid, fd, 0, 0)
                .map(|s| (s >> state::PAGES_SHIFT) * 4096)
                .map_err(errno_of),
        }
    }

    /// Whether F_SETPIPE_SZ may take a pipe of `now` bytes to `size`:
    /// beyond pipe-max-size only a larger one of a process with
    /// CAP_SYS_RESOURCE (Linux's pipe_set_size; a smaller one always).
    pub(super) fn pipe_size_allowed(&self, now: u64, size: u64) -> Result<(), i64> {
        let Some(want) = linuxabi::pipe::round_size(size) else {
            return Err(errno::EINVAL);
        };
        if self.cred.euid == 0 || want <= now {
            return Ok(());
        }
        if want > self.sysctl(crate::proto::sysctl::PIPE_MAX_SIZE, None)? {
            return Err(errno::EPERM);
        }
        Ok(())
    }

    /// `FIONREAD`: the bytes it holds.
    pub(super) fn kpipe_held(&self, ofd: &OfdRef) -> Result<u64, i64> {
        self.kpipe_state(ofd).map(|s| s & state::HELD)
    }
}
