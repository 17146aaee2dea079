//! MAP_SHARED mappings of files and msync: the range's memory is the
//! shared server's object for that file range (`shared/fmap.rs`), so
//! every process mapping it maps the same frames. The supervisor fills a
//! new object from the file, then passes the mmap to the shared server,
//! which shares the object into the process; msync writes the object's
//! bytes back to the file through the description the mapping was made
//! from, which the supervisor keeps open while it may be needed.

use super::fdtable::{Kind, OfdRef};
use super::{Out, Sup};
use crate::proto::{self, ctl, fmap, pass, word};
use alloc::rc::Rc;
use alloc::vec;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::mman::{
    LEGACY_MAP_MASK, MAP_FIXED, MAP_FIXED_NOREPLACE, MAP_LOCKED, MAP_SHARED, MAP_SHARED_VALIDATE, MAP_TYPE, MS_ASYNC,
    MS_INVALIDATE, MS_SYNC,
};
use linuxabi::nr;
use linuxabi::structs as st;
use tessera_rt::sys;
use tessera_rt::sys::calls;

const PAGE: u64 = 4096;
/// Pages of memory other than file mappings msync looks at in each gap
/// between them, to tell an unmapped range (ENOMEM).
const PROBE_PAGES: u64 = 64;
/// Bytes of an object one request carries (`shared/fmap.rs`'s CHUNK).
const CHUNK: u64 = 4096;

/// A file mapping this process made: its object and the description
/// msync writes through.
pub struct FileMap {
    pub obj: u64,
    pub ofd: OfdRef,
    /// The file (device, inode) and the range it maps (offset, bytes).
    pub file: (u64, u64),
    pub range: (u64, u64),
    /// Some mapping of it may be written (PROT_WRITE).
    pub writable: bool,
}

impl Sup {
    /// mmap MAP_SHARED of a regular file, if the call is one the shared
    /// objects serve (None: the private path serves it, and its checks
    /// give the errors).
    pub(super) fn mmap_shared(&mut self, rid: u64, a: [u64; 6]) -> Option<Out> {
        let (addr, len, prot, flags, fd, off) = (a[0], a[1], a[2], a[3], a[4], a[5]);
        let ty = flags & MAP_TYPE;
        // A fixed address may cover mappings the share cannot replace;
        // MAP_FIXED_NOREPLACE and flags MAP_SHARED_VALIDATE refuses get
        // their errors on the private path.
        if (ty != MAP_SHARED && ty != MAP_SHARED_VALIDATE)
            || flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0
            || (ty == MAP_SHARED_VALIDATE && flags & !LEGACY_MAP_MASK != 0)
            || prot & 3 == 0
        {
            return None;
        }
        if len == 0 || !off.is_multiple_of(PAGE) || len > 1 << 40 {
            return None;
        }
        let o = self.fds.ofd(fd).ok()?;
        let ffd = {
            let d = o.borrow();
            if !d.readable() || (prot & 2 != 0 && !d.writable()) {
                return None;
            }
            match d.kind {
                Kind::File { fd, dir: false } => fd,
                _ => return None,
            }
        };
        let s = st::StatView::parse(&self.fs.fstat(ffd).ok()?);
        if s.mode & 0o170000 != 0o100000 {
            return None;
        }
        // Never writable (Linux's VM_MAYWRITE cleared): a read-only
        // description, a memfd sealed against writes (EPERM if asked now).
        let sealed = self.memfd_may_map(ffd, &o.borrow().path);
        if prot & 2 != 0
            && let Err(e) = sealed
        {
            return Some(Out::Ret(errno::fail(e)));
        }
        let may = super::fileend::may(o.borrow().writable() && sealed.is_ok());
        let pages = len.div_ceil(PAGE);
        off.checked_add(pages * PAGE)?;
        Some(match self.fmap_object(ffd, &s, off, pages) {
            // Past the objects' room the private path maps it, shared
            // with forked children only, as before there were objects.
            Err(errno::ENOMEM) => return None,
            Ok(id) => {
                match self.fmaps.iter_mut().find(|m| m.obj == id && Rc::ptr_eq(&m.ofd, &o)) {
                    Some(m) => m.writable |= prot & 2 != 0,
                    None => self.fmaps.push(FileMap {
                        obj: id,
                        ofd: o,
                        file: (s.dev, s.ino),
                        range: (off, pages * PAGE),
                        writable: prot & 2 != 0,
                    }),
                }
                let tag = super::fileend::file_tag(s.dev, s.ino);
                self.note_mapped_file(tag);
                let end = (s.size.max(0) as u64).div_ceil(PAGE);
                // Eight words, all a pass carries: the limit rides with prot.
                let w = [pass::FMAP, self.pid as u64, id, addr, prot | may << 32, flags, tag, end];
                self.pass(rid, nr::MMAP, a, &w)
            }
            Err(e) => Out::Ret(errno::fail(e)),
        })
    }

    /// The object of `pages` pages of the file from `off`, filled from the
    /// file if it is new.
    fn fmap_object(&mut self, ffd: u32, s: &st::StatView, off: u64, pages: u64) -> Result<u64, i64> {
        self.fmap_prune();
        let r = self.ctl(&[ctl::FMAP, fmap::GET, s.dev, s.ino, off, pages, self.pid as u64]);
        if let Some(e) = errno::of(word(&r, 0)) {
            return Err(e);
        }
        let (id, fresh) = (word(&r, 0), word(&r, 1) == 1);
        if !fresh {
            return Ok(id);
        }
        // Past the file's end the pages stay zero (a read there is 0).
        let have = (s.size.max(0) as u64).saturating_sub(off).min(pages * PAGE);
        let mut buf = vec![0u8; CHUNK as usize];
        let mut at = 0;
        while at < have {
            let n = (have - at).min(CHUNK) as usize;
            let got = self.fs.read_own(ffd, off + at, &mut buf[..n])?;
            if got == 0 {
                break;
            }
            // A new object is zero already (a sparse file's holes).
            if buf[..got].iter().all(|&b| b == 0) {
                at += got as u64;
                continue;
            }
            let mut m = vec![ctl::FMAP, fmap::FILL, id, at, got as u64];
            m.extend(proto::words(&{
                let mut b = buf[..got].to_vec();
                b.resize(got.div_ceil(8) * 8, 0);
                b
            }));
            if let Some(e) = errno::of(word(&self.ctl(&m), 0)) {
                return Err(e);
            }
            at += got as u64;
        }
        Ok(id)
    }

    /// The objects of file `file` (device, inode) this process maps, each
    /// once however many of its mappings share it: (id, offset, length).
    fn fmap_objects_of(&self, file: (u64, u64)) -> Vec<(u64, u64, u64)> {
        let mut objs: Vec<(u64, u64, u64)> = Vec::new();
        for m in self.fmaps.iter().filter(|m| m.file == file) {
            if !objs.iter().any(|o| o.0 == m.obj) {
                objs.push((m.obj, m.range.0, m.range.1));
            }
        }
        objs
    }

    /// A write(2) of `n` bytes from the process's `buf` to file `ffd` at
    /// `start`: the objects of that file this process maps get them too
    /// (what a process writes to a file it maps, it then sees there).
    pub(super) fn fmap_wrote(&mut self, rid: u64, ffd: u32, start: u64, buf: u64, n: u64) {
        if self.fmaps.is_empty() || n == 0 {
            return;
        }
        let Ok(b) = self.fs.fstat(ffd) else { return };
        let s = st::StatView::parse(&b);
        for (id, off, len) in self.fmap_objects_of((s.dev, s.ino)) {
            let from = start.max(off);
            let to = (start + n).min(off + len);
            let mut at = from;
            while at < to {
                let k = (to - at).min(CHUNK) as usize;
                let mut data = vec![0u8; k.div_ceil(8) * 8];
                if calls::caller_read(rid, buf + (at - start), &mut data[..k]).is_err() {
                    break;
                }
                let mut m = vec![ctl::FMAP, fmap::WRITE, id, at - off, k as u64];
                m.extend(proto::words(&data));
                self.ctl(&m);
                at += k as u64;
            }
        }
    }

    /// The file `s` describes was truncated to its size now: the bytes
    /// past it in the objects of it this process maps are zeroed (as
    /// Linux's truncation zeroes the page cache past the end), so that a
    /// later extension reads zeros there.
    pub(super) fn fmap_truncated(&mut self, s: &st::StatView) {
        let size = s.size.max(0) as u64;
        let zeros = vec![0u64; (CHUNK / 8) as usize];
        for (id, off, len) in self.fmap_objects_of((s.dev, s.ino)) {
            let mut at = size.saturating_sub(off);
            while at < len {
                let k = (len - at).min(CHUNK);
                let mut m = vec![ctl::FMAP, fmap::WRITE, id, at, k];
                m.extend_from_slice(&zeros[..k.div_ceil(8) as usize]);
                if errno::of(word(&self.ctl(&m), 0)).is_some() {
                    break;
                }
                at += k;
            }
        }
    }

    /// Whether this process maps file number `ffd` shared and writable.
    pub(super) fn maps_writable(&mut self, ffd: u32) -> bool {
        self.fmap_prune();
        let Ok(b) = self.fs.fstat(ffd) else {
            return false;
        };
        let s = st::StatView::parse(&b);
        let objs: Vec<u64> = self
            .fmaps
            .iter()
            .filter(|m| m.writable && m.file == (s.dev, s.ino))
            .map(|m| m.obj)
            .collect();
        // Mapped by this process or another that shares the object (a
        // forked child): munmap is the kernel's, so the object's sharers
        // are asked.
        objs.iter()
            .any(|&id| self.ctl1(&[ctl::FMAP_MAPPED, id]).is_ok_and(|n| n > 0))
    }

    /// Forgets the mappings whose objects are gone (nothing maps them).
    fn fmap_prune(&mut self) {
        let gone: Vec<usize> = (0..self.fmaps.len())
            .filter(|&i| self.ctl1(&[ctl::FMAP, fmap::READ, self.fmaps[i].obj, 0, 0]).is_err())
            .collect();
        for i in gone.into_iter().rev() {
            let m = self.fmaps.remove(i);
            self.fmap_release(m);
        }
    }

    /// A mapping's description, closed if no descriptor leads to it.
    fn fmap_release(&mut self, m: FileMap) {
        if !self.fds.holds(&m.ofd) && !self.fmaps.iter().any(|x| Rc::ptr_eq(&x.ofd, &m.ofd)) {
            self.release(&m.ofd);
        }
    }

    /// Whether a description no descriptor leads to is still a mapping's
    /// (then it stays open for msync).
    pub(super) fn fmap_holds(&self, o: &OfdRef) -> bool {
        self.fmaps.iter().any(|m| Rc::ptr_eq(&m.ofd, o))
    }

    /// The process's memory went (exec, exit): so did its mappings.
    pub(super) fn fmap_forget(&mut self) {
        self.mapped_files.clear();
        for m in core::mem::take(&mut self.fmaps) {
            self.fmap_release(m);
        }
    }

    /// msync: the shared file mappings in the range written back to their
    /// files (MS_ASYNC as MS_SYNC: the write is done when it returns;
    /// MS_INVALIDATE has nothing to drop, the mappings share one copy).
    pub(super) fn msync(&mut self, rid: u64, addr: u64, len: u64, flags: u64) -> Result<u64, i64> {
        if flags & !(MS_ASYNC | MS_INVALIDATE | MS_SYNC) != 0
            || flags & (MS_ASYNC | MS_SYNC) == MS_ASYNC | MS_SYNC
            || !addr.is_multiple_of(PAGE)
        {
            return Err(errno::EINVAL);
        }
        let end = len
            .checked_next_multiple_of(PAGE)
            .and_then(|l| addr.checked_add(l))
            .ok_or(errno::ENOMEM)?;
        let mut p = addr;
        let mut unmapped = false;
        while p < end {
            match self.fmap_find(p) {
                Some((id, base, size, foff, mflags)) => {
                    if flags & MS_INVALIDATE != 0 && mflags & MAP_LOCKED != 0 {
                        return Err(errno::EBUSY);
                    }
                    let stop = end.min(base + size);
                    if flags & (MS_SYNC | MS_ASYNC) != 0 || flags == 0 {
                        self.fmap_write_back(id, p - base, stop - base, foff)?;
                    }
                    p = stop;
                }
                None => {
                    // Up to the next file mapping: other memory, with
                    // nothing to write. Linux: ENOMEM if part of the range
                    // is not mapped, after the mapped parts were written.
                    // Only its first pages are looked at (a look brings a
                    // page in, and the range may be huge).
                    let next = self.ctl(&[ctl::FMAP, fmap::NEXT, self.pid as u64, p]);
                    let stop = end.min(word(&next, 0).max(p + PAGE));
                    let mut q = p;
                    while q < stop && q < p + PROBE_PAGES * PAGE && !unmapped {
                        let mut b = [0u8; 1];
                        unmapped = calls::caller_read(rid, q, &mut b).is_err();
                        q += PAGE;
                    }
                    p = stop;
                }
            }
        }
        // A file mapping's part unmapped is a hole the shared server's
        // record of it does not show.
        if unmapped || !self.maps_cover(addr, end)? {
            Err(errno::ENOMEM)
        } else {
            Ok(0)
        }
    }

    /// (object, base, size, file offset of base, mmap flags) of the
    /// process's shared file mapping that `addr` lies in.
    fn fmap_find(&self, addr: u64) -> Option<(u64, u64, u64, u64, u64)> {
        let r = self.ctl(&[ctl::FMAP, fmap::FIND, self.pid as u64, addr]);
        errno::of(word(&r, 0))
            .is_none()
            .then(|| (word(&r, 0), word(&r, 1), word(&r, 2), word(&r, 3), word(&r, 4)))
    }

    /// Bytes `from..to` of object `id` (mapped from file offset `foff`) to
    /// the file, up to its end (a mapping does not grow its file).
    fn fmap_write_back(&mut self, id: u64, from: u64, to: u64, foff: u64) -> Result<(), i64> {
        let Some(ofd) = self.fmaps.iter().find(|m| m.obj == id).map(|m| m.ofd.clone()) else {
            // Mapped by the parent before a fork: the parent writes it.
            return Ok(());
        };
        let ffd = match ofd.borrow().kind {
            Kind::File { fd, .. } => fd,
            _ => return Ok(()),
        };
        let size = st::StatView::parse(&self.fs.fstat(ffd)?).size.max(0) as u64;
        let to = to.min(size.saturating_sub(foff));
        let mut at = from;
        let mut reply = vec![0u8; CHUNK as usize + 64];
        while at < to {
            let n = (to - at).min(CHUNK);
            let msg = proto::bytes(&[ctl::FMAP, fmap::READ, id, at, n]);
            let got = sys::call(self.shared, proto::shared::CTL, &msg, &mut reply).map_err(|_| errno::EIO)?;
            let w = proto::words(&reply[..got]);
            if let Some(e) = errno::of(word(&w, 0)) {
                return Err(e);
            }
            let data = proto::bytes(w.get(1..).unwrap_or(&[]));
            let n = (word(&w, 0) as usize).min(data.len());
            self.fs.write_own(ffd, foff + at, false, &data[..n])?;
            at += n as u64;
            if n == 0 {
                break;
            }
        }
        Ok(())
    }
}
