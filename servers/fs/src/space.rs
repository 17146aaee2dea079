//! FALLOCATE: space allocated ahead of the data or given back, as ext2
//! keeps it (the library writes an allocated block with zeros, having no
//! unwritten extents), and the kernel's cache of the file told what
//! changed.
//!
//! The modes served are Linux's on a regular file: allocate (0, growing
//! the size), allocate keeping the size (`KEEP_SIZE`), punch a hole
//! (`PUNCH_HOLE | KEEP_SIZE`), zero a range (`ZERO_RANGE`, with or without
//! `KEEP_SIZE`: the range punched, then allocated). Collapse, insert and
//! anything else are EOPNOTSUPP, as ext4's answer for a file mapped by
//! indirect blocks. The personality has already made the VFS's checks
//! (the range, the mode's combinations, EFBIG past the limits).

use crate::{Server, errno};
use tessera_api::fs::*;
use tessera_api::wire::Reader;
use tessera_rt::abi::file_cache::PAGE;

impl Server {
    pub(crate) fn fallocate(&mut self, caller: u64, msg: &[u8]) -> Result<(), Errno> {
        let mut r = Reader::new(msg);
        let (fd, mode, off, len) = (
            r.u32().ok_or(Errno::EINVAL)?,
            r.u32().ok_or(Errno::EINVAL)?,
            r.u64().ok_or(Errno::EINVAL)?,
            r.u64().ok_or(Errno::EINVAL)?,
        );
        let f = self.file(caller, fd)?;
        if (off as i64) < 0 || (len as i64) <= 0 {
            return Err(Errno::EINVAL);
        }
        if !f.writable() {
            return Err(Errno::EBADF);
        }
        if f.dir {
            return Err(Errno::EISDIR);
        }
        if self.stat_of(f.handle)?.kind != ext2fs::FileType::Regular {
            return Err(Errno::ENODEV);
        }
        // The VFS's last check: the end past the largest file, or wrapped.
        let max = self.fm()?.inodes().max_file_size();
        if off.checked_add(len).is_none_or(|end| end > max) {
            return Err(Errno::EFBIG);
        }
        let (keep, punch, zero) = (
            mode & FALLOC_FL_KEEP_SIZE != 0,
            mode & FALLOC_FL_PUNCH_HOLE != 0,
            mode & FALLOC_FL_ZERO_RANGE != 0,
        );
        if mode & !(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE) != 0
            || (punch && (zero || !keep))
        {
            return Err(Errno::EOPNOTSUPP);
        }
        let old = self.stat_of(f.handle)?.size;
        if let Some(&sealed) = self.seals.get(&f.handle) {
            linuxabi::seals::may_fallocate(sealed, punch, off, len, old).map_err(|_| Errno::EPERM)?;
        }
        if !punch {
            self.sweep_if_short(len);
        }
        let fm = self.fm()?;
        let result = if punch || zero {
            fm.punch_hole(f.handle, off, len).map_err(errno)
        } else {
            Ok(())
        };
        let result = result.and_then(|()| {
            if punch {
                Ok(())
            } else {
                self.fm()?.allocate(f.handle, off, len, keep).map_err(errno)
            }
        });
        // Pages of the range may be in the kernel's cache of the file with
        // the bytes a punch zeroed; a new size moves its end.
        let new = self.stat_of(f.handle)?.size;
        if punch || zero {
            let first = off / PAGE;
            let last = off.saturating_add(len).div_ceil(PAGE);
            self.cache_revoke(f.handle, first, last - first);
        }
        if new != old {
            self.cache_resized(f.handle, old, new);
        }
        result
    }
}

impl Server {
    /// SEEK: the first data (or hole) at or after an offset, as the block
    /// map has them: a block allocated ahead is data, as Linux's ext4
    /// says of a block mapped by indirect blocks.
    pub(crate) fn seek(&mut self, caller: u64, msg: &[u8]) -> Result<i64, Errno> {
        let mut r = Reader::new(msg);
        let (fd, whence, off) = (
            r.u32().ok_or(Errno::EINVAL)?,
            r.u32().ok_or(Errno::EINVAL)?,
            r.u64().ok_or(Errno::EINVAL)?,
        );
        let f = self.file(caller, fd)?;
        if f.dir || (whence != SEEK_DATA && whence != SEEK_HOLE) || (off as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        match self
            .fm()?
            .seek_data_or_hole(f.handle, off, whence == SEEK_DATA)
            .map_err(errno)?
        {
            Some(at) => Ok(at as i64),
            None => Err(Errno::ENXIO),
        }
    }
}
