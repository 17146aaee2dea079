//! sendfile: bytes of a regular file copied to another descriptor without
//! passing through the program; the supervisor reads them from the file
//! server and writes them on. A file is the one destination served yet
//! (a pipe or a socket is EINVAL, as before Linux 2.6.33).

use super::Sup;
use super::fdtable::{self as fdt, Kind};
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
        let (Kind::File { fd: src, .. }, Kind::File { fd: dst, .. }) =
            (inp.borrow().kind.clone(), out.borrow().kind.clone())
        else {
            return Err(errno::EINVAL);
        };
        // A regular file (a directory's token is a file server handle too).
        if self.fstat_ofd(&inp.borrow())?.mode & 0o170000 != linuxabi::structs::S_IFREG {
            return Err(errno::EINVAL);
        }
        let mut pos = at.unwrap_or_else(|| self.pos(&inp.borrow()));
        let mut dpos = self.pos(&out.borrow());
        let count = self.fsize_room(dst, dpos, false, count.min(MAX_RW))?;
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
        self.set_pos(&mut out.borrow_mut(), dpos);
        match at {
            Some(_) => self.write_u64(rid, off_at, pos)?,
            None => self.set_pos(&mut inp.borrow_mut(), pos),
        }
        Ok(done)
    }
}
