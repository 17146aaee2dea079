//! A Linux process's descriptors: numbers leading to open file
//! descriptions (Linux's `struct file`), which `dup` shares within the
//! process and `fork` between processes. A description is a file of the
//! file server (this supervisor's number for it), an object of the shared
//! server (a pipe's end, the terminal), or a file the supervisor serves
//! itself (`/dev/null`, a `/proc` file, their directories).
//!
//! A file's position is the description's: kept here while one process
//! holds it, in the shared server once a child holds it too (so both move
//! it, as Linux's shared `f_pos`).

use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;
use linuxabi::errno;

/// The open flags a description keeps (access mode and status flags).
pub use linuxabi::fcntl::*;

/// What a description is.
#[derive(Clone, Debug)]
pub enum Kind {
    /// A file or directory of the file server.
    File {
        fd: u32,
        dir: bool,
    },
    /// An object of the shared server: a pipe's end or the terminal.
    Obj {
        id: u64,
        kind: u64,
    },
    Null,
    Zero,
    Full,
    Random,
    /// A file whose content the supervisor made when it was opened (a
    /// `/proc` file): read-only.
    Mem(Rc<Vec<u8>>),
    /// A directory the supervisor serves: its entries (name, type, ino).
    VDir(Rc<Vec<(String, u8, u64)>>),
    /// A socket of the TCP/IP server (its number there; stream or not).
    Socket {
        id: u32,
        stream: bool,
    },
    /// One end of an AF_UNIX socket pair: the shared server's pipe it
    /// reads (`rx`) and the one it writes (`tx`), 0 once shut down; `ty`
    /// is its type (`SOCK_STREAM`, or `SOCK_DGRAM` and `SOCK_SEQPACKET`,
    /// whose pipes keep each write as one message).
    Unix {
        rx: u64,
        tx: u64,
        ty: u8,
    },
    /// An AF_UNIX socket not (yet) connected, made by socket(): its type,
    /// the shared server's object of the name it is bound to (0: none; a
    /// stream socket's listener, a datagram socket's queue to read), and
    /// whether it listens.
    UnixSock {
        ty: u8,
        obj: u64,
        listening: bool,
    },
    /// One end of an AF_UNIX stream socket pair the kernel serves
    /// (`kpipe.rs`): it reads one kernel pipe and writes another; `id`
    /// is the pair's first pipe's resource id (its inode number).
    KUnix {
        id: u64,
    },
    /// An epoll instance (`epoll.rs`).
    Epoll(Rc<RefCell<super::epoll::Epoll>>),
    /// One end of a pipe the kernel serves (`kpipe.rs`): its resource id.
    KPipe {
        id: u64,
        write: bool,
    },
    /// `/dev/loop-control` or a loop block device (`loopdev.rs`).
    Loop(super::loopdev::Node),
    /// A signalfd and its set of signals (`signalfd.rs`).
    SignalFd(u64),
}

pub struct Ofd {
    pub kind: Kind,
    /// Access mode and status flags (`O_*`).
    pub flags: u32,
    /// The position, while this process alone holds it.
    pub pos: u64,
    /// The shared server's object holding the position (and the status
    /// flags) once the description went to a child too.
    pub shared: Option<u64>,
    /// The path it was opened by (`/proc/self/fd`), absolute.
    pub path: String,
    /// The lease it holds on its file (`F_SETLEASE`: F_RDLCK, F_WRLCK).
    pub lease: Option<u16>,
    /// A regular file's kernel cache, which the file server granted this
    /// supervisor (0: none): its numbers are bound to it in the kernel,
    /// which serves pread64 from its pages (`kpipe.rs`).
    pub cache: u64,
    /// An AF_UNIX socket's names and its peer's credentials.
    pub unix: super::unix_named::Names,
    /// The file server's inode of a named FIFO or device file it was
    /// opened by (an O_PATH open): fstat's answer, as Linux's.
    pub node: Option<u32>,
    /// Who gets its I/O signals (F_SETOWN, F_SETOWN_EX) and which signal
    /// (F_SETSIG): `fowner.rs`.
    pub owner: super::fowner::Owner,
    /// A fanotify reader's descriptor of an event's file: what is done
    /// through it is no event (Linux's FMODE_NONOTIFY).
    pub quiet: bool,
}

pub type OfdRef = Rc<RefCell<Ofd>>;

impl Ofd {
    pub fn new(kind: Kind, flags: u32, path: String) -> OfdRef {
        Rc::new(RefCell::new(Ofd {
            kind,
            flags,
            pos: 0,
            shared: None,
            path,
            lease: None,
            cache: 0,
            unix: super::unix_named::Names::default(),
            node: None,
            owner: Default::default(),
            quiet: false,
        }))
    }

    pub fn readable(&self) -> bool {
        self.flags & O_ACCMODE != O_WRONLY && self.flags & O_ACCMODE != 3 && self.flags & O_PATH == 0
    }

    pub fn writable(&self) -> bool {
        matches!(self.flags & O_ACCMODE, O_WRONLY | O_RDWR) && self.flags & O_PATH == 0
    }

    /// The shared server's object this description holds a reference to.
    pub fn object(&self) -> Option<u64> {
        match self.kind {
            Kind::Obj { id, .. } => Some(id),
            _ => self.shared,
        }
    }

    /// The shared server's objects it holds references to (an AF_UNIX
    /// socket holds two pipes).
    pub fn objects(&self) -> Vec<u64> {
        match self.kind {
            Kind::Unix { rx, tx, .. } => {
                let mut v = alloc::vec![rx, tx];
                v.extend(self.unix.dests.iter().map(|d| d.1));
                v
            }
            Kind::UnixSock { obj, .. } => {
                let mut v = alloc::vec![obj];
                v.extend(self.unix.dests.iter().map(|d| d.1));
                v
            }
            _ => self.object().into_iter().collect(),
        }
    }
}

#[derive(Clone)]
pub struct Slot {
    pub ofd: OfdRef,
    pub cloexec: bool,
}

#[derive(Default, Clone)]
pub struct FdTable {
    pub slots: Vec<Option<Slot>>,
    /// The process's Tessera pid, whose kernel-served descriptors (its
    /// kernel pipes' ends) follow this table as numbers are set and taken
    /// (0: none to follow, while a table is being built).
    pub tpid: u64,
}

impl FdTable {
    pub fn get(&self, fd: u64) -> Result<&Slot, i64> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.slots.get(i))
            .and_then(|s| s.as_ref())
            .ok_or(errno::EBADF)
    }

    pub fn ofd(&self, fd: u64) -> Result<OfdRef, i64> {
        self.get(fd).map(|s| s.ofd.clone())
    }

    /// The lowest free number at or above `min`, below `limit`.
    pub fn free_from(&self, min: usize, limit: usize) -> Result<usize, i64> {
        let mut i = min;
        while i < self.slots.len() && self.slots[i].is_some() {
            i += 1;
        }
        if i >= limit {
            return Err(errno::EMFILE);
        }
        Ok(i)
    }

    /// Puts `ofd` at number `fd`; returns what was there.
    pub fn set(&mut self, fd: usize, ofd: OfdRef, cloexec: bool) -> Option<Slot> {
        if self.slots.len() <= fd {
            self.slots.resize(fd + 1, None);
        }
        let old = self.slots[fd].replace(Slot { ofd, cloexec });
        super::kpipe::follow_set(self, fd, old.as_ref());
        old
    }

    pub fn insert(&mut self, ofd: OfdRef, cloexec: bool, limit: usize) -> Result<usize, i64> {
        let fd = self.free_from(0, limit)?;
        self.set(fd, ofd, cloexec);
        Ok(fd)
    }

    pub fn take(&mut self, fd: u64) -> Result<Slot, i64> {
        let s = usize::try_from(fd)
            .ok()
            .and_then(|i| self.slots.get_mut(i))
            .and_then(|s| s.take())
            .ok_or(errno::EBADF)?;
        super::kpipe::follow_take(self, fd, &s);
        while self.slots.last().is_some_and(|s| s.is_none()) {
            self.slots.pop();
        }
        Ok(s)
    }

    /// Whether another number still leads to `ofd`.
    pub fn holds(&self, ofd: &OfdRef) -> bool {
        self.slots.iter().flatten().any(|s| Rc::ptr_eq(&s.ofd, ofd))
    }

    /// Every distinct description, once.
    pub fn distinct(&self) -> Vec<OfdRef> {
        let mut out: Vec<OfdRef> = Vec::new();
        for s in self.slots.iter().flatten() {
            if !out.iter().any(|o| Rc::ptr_eq(o, &s.ofd)) {
                out.push(s.ofd.clone());
            }
        }
        out
    }
}
