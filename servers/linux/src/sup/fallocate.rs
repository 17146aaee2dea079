//! fallocate (and musl's posix_fallocate, which is the call with mode 0):
//! Linux's `vfs_fallocate` checks in its order, here where the descriptor
//! is known (its access mode and what kind of file it is), then one
//! FALLOCATE request to the file server, which allocates or frees the
//! blocks.

use super::Sup;
use super::fdtable::Kind;
use linuxabi::errno;
use linuxabi::fallocate::{self as fa, FALLOC_FL_KEEP_SIZE};
use linuxabi::inotify as ino;
use linuxabi::structs as st;

impl Sup {
    pub(super) fn fallocate(&mut self, fd: u64, mode: u64, off: u64, len: u64) -> Result<u64, i64> {
        // The mode is an int: its upper half is not the caller's.
        let (mode, off, len) = (mode as u32, off as i64, len as i64);
        let o = self.fds.ofd(fd)?;
        fa::check(mode, off, len)?;
        let d = o.borrow();
        if !d.writable() {
            return Err(errno::EBADF);
        }
        let ffd = match d.kind {
            Kind::File { dir: true, .. } => return Err(errno::EISDIR),
            Kind::File { fd, dir: false } if d.node.is_none() => fd,
            // A loop device is a block device: Linux's blkdev_fallocate
            // allocates nothing on one (mode 0 is EOPNOTSUPP) and zeroing
            // it is not served here.
            Kind::Loop(_) => return Err(errno::EOPNOTSUPP),
            _ => {
                let mode = self.fstat_ofd(&d)?.mode & st::S_IFMT;
                return Err(match mode {
                    st::S_IFIFO => errno::ESPIPE,
                    st::S_IFDIR => errno::EISDIR,
                    // A /proc or /sys file: no fallocate of its own.
                    st::S_IFREG => errno::EOPNOTSUPP,
                    _ => errno::ENODEV,
                });
            }
        };
        // A size that grows may not pass RLIMIT_FSIZE (EFBIG and SIGXFSZ,
        // ext4's inode_newsize_ok); the file server says EFBIG past the
        // largest file itself.
        if mode & FALLOC_FL_KEEP_SIZE == 0 && self.limits[super::files::RLIMIT_FSIZE][0] != u64::MAX {
            let size = st::StatView::parse(&self.fs.fstat(ffd)?).size as u64;
            self.fsize_grow_ok(size, (off as u64).saturating_add(len as u64))?;
        }
        self.fs.fallocate(ffd, mode, off as u64, len as u64)?;
        self.note_ofd(&d, ino::IN_MODIFY);
        Ok(0)
    }
}
