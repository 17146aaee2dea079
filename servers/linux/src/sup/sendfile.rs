//! sendfile and copy_file_range: bytes of a regular file copied to
//! another descriptor without passing through the program; the
//! supervisor reads them from the file server and writes them on. A file
//! or a kernel pipe is the destination served (the pipe's through
//! splice's machinery, `splice.rs`); any other is EINVAL, but for one
//! that is non-blocking and full, whose write would fail with EAGAIN.

use super::Sup;
use super::fdtable::{self as fdt, Kind, OfdRef};
use alloc::vec;
use linuxabi::errno;

/// Linux's largest transfer in one call (`MAX_RW_COUNT`).
const MAX_RW: u64 = 0x7fff_f000;
/// The supervisor's buffer: one file server write each.
const CHUNK: usize = 64 * 1024;

impl Sup {
    /// sendfile(out_fd, in_fd, offset, count).
    pub(super) fn sendfile(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let (out_fd, in_fd, off_at, count) = (a[0], a[1], a[2], a[3]);
        let inp = self.fds.ofd(in_fd)?;
        if !inp.borrow().readable() {
            return Err(errno::EBADF);
        }
        // Where to read from: *offset (and the file position stays), or
        // the file position. The offset is written back at the end: a
        // place it cannot be written is EFAULT before anything moves.
        let at = if off_at != 0 {
            let p = self.read_u64(rid, off_at)?;
            self.write_u64(rid, off_at, p)?;
            if (p as i64) < 0 {
                return Err(errno::EINVAL);
            }
            Some(p)
        } else {
            None
        };
        let out = self.fds.ofd(out_fd)?;
        if !out.borrow().writable() {
            return Err(errno::EBADF);
        }
        if self.flags_of(&out.borrow()) & fdt::O_APPEND != 0 {
            return Err(errno::EINVAL);
        }
        let Kind::File { fd: src, .. } = inp.borrow().kind.clone() else {
            return Err(errno::EINVAL);
        };
        let Kind::File { fd: dst, .. } = out.borrow().kind.clone() else {
            return Err(if self.out_full(&out) {
                errno::EAGAIN
            } else {
                errno::EINVAL
            });
        };
        // A regular file (a directory's token is a file server handle too).
        if self.fstat_ofd(&inp.borrow())?.mode & 0o170000 != linuxabi::structs::S_IFREG {
            return Err(errno::EINVAL);
        }
        let pos = at.unwrap_or_else(|| self.pos(&inp.borrow()));
        let dpos = self.pos(&out.borrow());
        let count = self.fsize_room(dst, dpos, false, count.min(MAX_RW))?;
        let (done, pos, dpos) = self.copy_range(src, pos, dst, dpos, count)?;
        self.set_pos(&mut out.borrow_mut(), dpos);
        match at {
            Some(_) => self.write_u64(rid, off_at, pos)?,
            None => self.set_pos(&mut inp.borrow_mut(), pos),
        }
        Ok(done)
    }

    /// Whether `o`, a destination sendfile does not serve, is
    /// non-blocking and has no room now (its write would be EAGAIN).
    fn out_full(&self, o: &OfdRef) -> bool {
        const POLLOUT: u64 = 4;
        if self.flags_of(&o.borrow()) & fdt::O_NONBLOCK == 0 {
            return false;
        }
        let tx = match o.borrow().kind {
            Kind::Unix { tx, .. } if tx != 0 => tx,
            Kind::Obj { id, .. } => id,
            _ => return false,
        };
        // A look with no wait: the shared server's readiness of it.
        let r = self.ctl(&[crate::proto::ctl::POLL, self.pid as u64, 0, tx, POLLOUT]);
        r.len() > 1 && crate::proto::word(&r, 1) & POLLOUT == 0
    }

    /// `count` bytes of file `src` from `pos` to file `dst` at `dpos`,
    /// until the source ends or the destination is short: the bytes
    /// copied and the two positions after them. An error after some
    /// bytes went ends the copy with those.
    fn copy_range(
        &mut self,
        src: u32,
        mut pos: u64,
        dst: u32,
        mut dpos: u64,
        count: u64,
    ) -> Result<(u64, u64, u64), i64> {
        let mut buf = vec![0u8; CHUNK.min(count as usize)];
        let mut done = 0u64;
        while done < count {
            let want = ((count - done) as usize).min(buf.len());
            let got = match self.fs.read_own(src, pos, &mut buf[..want]) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            };
            let wrote = match self.fs.write_own(dst, dpos, false, &buf[..got]) {
                Ok((n, _)) => n,
                Err(e) if done == 0 => return Err(e),
                Err(_) => 0,
            };
            pos += wrote;
            dpos += wrote;
            done += wrote;
            if (wrote as usize) < got {
                break;
            }
        }
        Ok((done, pos, dpos))
    }

    /// copy_file_range(fd_in, off_in, fd_out, off_out, len, flags), with
    /// Linux's checks in its order (`generic_copy_file_checks`): a
    /// directory is EISDIR, anything but a regular file EINVAL, a file
    /// not open for it EBADF, offsets that wrap EOVERFLOW, past
    /// RLIMIT_FSIZE EFBIG, an overlapping range of one file EINVAL, two
    /// file systems EXDEV (as Linux's ext2, which copies within one only).
    pub(super) fn copy_file_range(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let (fd_in, off_in, fd_out, off_out, len) = (a[0], a[1], a[2], a[3], a[4]);
        let inp = self.fds.ofd(fd_in)?;
        let out = self.fds.ofd(fd_out)?;
        let i_off = match off_in {
            0 => None,
            at => Some(self.read_u64(rid, at)?),
        };
        let o_off = match off_out {
            0 => None,
            at => Some(self.read_u64(rid, at)?),
        };
        if a[5] as u32 != 0 {
            return Err(errno::EINVAL);
        }
        let file = |o: &OfdRef| match o.borrow().kind {
            Kind::File { fd, dir: false } => Ok(fd),
            Kind::File { dir: true, .. } => Err(errno::EISDIR),
            _ => Err(errno::EINVAL),
        };
        let (src, dst) = match (file(&inp), file(&out)) {
            (Err(errno::EISDIR), _) | (_, Err(errno::EISDIR)) => return Err(errno::EISDIR),
            (Ok(s), Ok(d)) => (s, d),
            _ => return Err(errno::EINVAL),
        };
        if !inp.borrow().readable() || !out.borrow().writable() || self.flags_of(&out.borrow()) & fdt::O_APPEND != 0 {
            return Err(errno::EBADF);
        }
        let pos = i_off.unwrap_or_else(|| self.pos(&inp.borrow()));
        let dpos = o_off.unwrap_or_else(|| self.pos(&out.borrow()));
        if (pos as i64) < 0 || (dpos as i64) < 0 {
            return Err(errno::EINVAL);
        }
        if pos.checked_add(len).is_none() || dpos.checked_add(len).is_none() {
            return Err(errno::EOVERFLOW);
        }
        let (si, so) = (self.fstat_ofd(&inp.borrow())?, self.fstat_ofd(&out.borrow())?);
        if si.dev != so.dev {
            return Err(errno::EXDEV);
        }
        let size = si.size.max(0) as u64;
        let mut count = if pos >= size { 0 } else { len.min(size - pos) };
        count = self.fsize_room(dst, dpos, false, count)?;
        if si.ino == so.ino && dpos < pos.saturating_add(count) && dpos.saturating_add(count) > pos {
            return Err(errno::EINVAL);
        }
        let (done, pos, dpos) = self.copy_range(src, pos, dst, dpos, count.min(MAX_RW))?;
        match i_off {
            Some(_) => self.write_u64(rid, off_in, pos)?,
            None => self.set_pos(&mut inp.borrow_mut(), pos),
        }
        match o_off {
            Some(_) => self.write_u64(rid, off_out, dpos)?,
            None => self.set_pos(&mut out.borrow_mut(), dpos),
        }
        Ok(done)
    }
}
