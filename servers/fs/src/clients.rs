//! The file server's clients: each has its own file numbers, its write
//! context (where its next WRITE goes) and the errno of its last failed
//! data request. A client that ended is found and its files closed.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use ext2fs::Handle;
use tessera_api::fs::{Errno, O_ACCMODE, O_PATH, O_RDONLY, O_WRONLY};

/// Files one client may have open at once.
pub const MAX_FILES: usize = 1024;

#[derive(Debug, Clone, Copy)]
pub struct OpenFile {
    pub handle: Handle,
    /// `O_RDONLY`, `O_WRONLY` or `O_RDWR`; `O_PATH` for neither.
    pub access: u32,
    pub dir: bool,
    /// Opened by a caller other than root: its writes end set-ids.
    pub unprivileged: bool,
    /// Opened to run it (`OPEN_EXEC`): no one writes it while it is open.
    pub exec: bool,
}

impl OpenFile {
    pub fn readable(&self) -> bool {
        self.access & O_ACCMODE != O_WRONLY && self.access & O_PATH == 0
    }

    pub fn writable(&self) -> bool {
        self.access & O_ACCMODE != O_RDONLY
    }
}

/// Where a client's writes go: file number, flags, offset.
#[derive(Debug, Clone, Copy)]
pub struct WriteContext {
    pub fd: u32,
    pub flags: u32,
    pub offset: u64,
    /// The next WRITE ends the file's set-ids first (a writer without
    /// privilege): done at the write, not where the context was said,
    /// so that an open that names the context changes nothing by itself.
    pub end_ids: bool,
}

impl WriteContext {
    pub fn new(fd: u32, f: &OpenFile, flags: u32, offset: u64) -> WriteContext {
        WriteContext {
            fd,
            flags,
            offset,
            end_ids: f.unprivileged,
        }
    }
}

#[derive(Default)]
pub struct Client {
    pub files: Vec<Option<OpenFile>>,
    pub write: Option<WriteContext>,
    pub errno: Option<Errno>,
    /// Its root directory (`SET_ROOT`), held open; None: the file
    /// system's root.
    pub root: Option<Handle>,
}

impl Client {
    pub fn file(&self, fd: u32) -> Result<OpenFile, Errno> {
        self.files.get(fd as usize).copied().flatten().ok_or(Errno::EBADF)
    }

    /// The lowest free file number.
    pub fn insert(&mut self, f: OpenFile) -> Result<u32, Errno> {
        if let Some(i) = self.files.iter().position(|f| f.is_none()) {
            self.files[i] = Some(f);
            return Ok(i as u32);
        }
        if self.files.len() >= MAX_FILES {
            return Err(Errno::EMFILE);
        }
        self.files.push(Some(f));
        Ok(self.files.len() as u32 - 1)
    }

    pub fn remove(&mut self, fd: u32) -> Result<OpenFile, Errno> {
        let f = self
            .files
            .get_mut(fd as usize)
            .and_then(|f| f.take())
            .ok_or(Errno::EBADF)?;
        while self.files.last().is_some_and(|f| f.is_none()) {
            self.files.pop();
        }
        if self.write.is_some_and(|w| w.fd == fd) {
            self.write = None;
        }
        Ok(f)
    }

    pub fn is_idle(&self) -> bool {
        self.files.is_empty() && self.errno.is_none() && self.root.is_none()
    }
}

pub type Clients = BTreeMap<u64, Client>;
