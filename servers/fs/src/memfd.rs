//! Anonymous files (Linux's `memfd_create`) and their seals. A memfd is
//! an unnamed file of the file system this server serves, as
//! `O_TMPFILE` makes one: its bytes are the kernel's file cache and the
//! block cache's, written to the disk only as the cache writes back,
//! freed at its last close (and by `e2fsck -p` after a crash). The seals
//! are this server's, per file, so that every client's writes and
//! truncates obey them; the rules are `linuxabi::seals`.

use crate::clients::{OpenFile, WriteContext};
use crate::{Server, errno};
use ext2fs::{Handle, Owner};
use linuxabi::seals;
use tessera_api::fs::*;
use tessera_api::wire::Reader;

fn errno_of(e: i64) -> Errno {
    Errno(e as i32)
}

impl Server {
    /// MEMFD: CREATE replies as OPEN (its number here); GET and ADD with
    /// the seals.
    pub(crate) fn memfd(&mut self, caller: u64, msg: &[u8]) -> Result<i64, Errno> {
        let mut r = Reader::new(msg);
        let hdr = PathHeader::read(&mut r).ok_or(Errno::EINVAL)?;
        let (op, value) = (r.u32().ok_or(Errno::EINVAL)?, r.u32().ok_or(Errno::EINVAL)?);
        match op {
            MEMFD_CREATE => self.memfd_create(caller, hdr.cred, value).map(|fd| fd as i64),
            MEMFD_GET_SEALS => {
                let f = self.client(caller).file(hdr.dirfd)?;
                self.seals.get(&f.handle).map(|&s| s as i64).ok_or(Errno::EINVAL)
            }
            MEMFD_ADD_SEALS => {
                let f = self.client(caller).file(hdr.dirfd)?;
                let now = *self.seals.get(&f.handle).ok_or(Errno::EINVAL)?;
                let after = seals::add(now, value, f.writable()).map_err(errno_of)?;
                self.seals.insert(f.handle, after);
                Ok(after as i64)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    fn memfd_create(&mut self, caller: u64, cred: Cred, initial: u32) -> Result<u32, Errno> {
        if initial & !seals::ALL != 0 {
            return Err(Errno::EINVAL);
        }
        let owner = Owner {
            uid: cred.uid,
            gid: cred.gid,
        };
        let fm = self.fm()?;
        let root = fm.root().map_err(errno)?;
        let h = fm.create_unnamed(root, 0o777, owner, false).map_err(errno)?;
        let f = OpenFile {
            handle: h,
            access: O_RDWR,
            dir: false,
            unprivileged: cred.uid != 0,
            exec: false,
        };
        match self.client(caller).insert(f) {
            Ok(fd) => {
                self.seals.insert(h, initial);
                self.client(caller).write = Some(WriteContext::new(fd, &f, 0, 0));
                Ok(fd)
            }
            Err(e) => {
                let _ = self.fm()?.close(h);
                Err(e)
            }
        }
    }

    /// The seals' word on a write of `len` bytes at `off` to `h`.
    pub(crate) fn sealed_write(&mut self, h: Handle, off: u64, len: u64, size: u64) -> Result<(), Errno> {
        match self.seals.get(&h) {
            Some(&s) => seals::may_write(s, off, len, size).map_err(errno_of),
            None => Ok(()),
        }
    }

    /// The seals' word on `h`'s size going from `old` to `new`.
    pub(crate) fn sealed_resize(&self, h: Handle, old: u64, new: u64) -> Result<(), Errno> {
        match self.seals.get(&h) {
            Some(&s) => seals::may_resize(s, old, new).map_err(errno_of),
            None => Ok(()),
        }
    }

    /// A file closed: its seals go with it once it is freed.
    pub(crate) fn seals_closed(&mut self, h: Handle) {
        if self.seals.contains_key(&h) && self.fm.as_mut().is_ok_and(|fm| fm.stat(h).is_err()) {
            self.seals.remove(&h);
        }
    }
}
