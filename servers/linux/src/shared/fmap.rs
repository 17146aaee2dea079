//! MAP_SHARED mappings of files: one memory object per file range, held
//! in this server's own space (so it outlives each process mapping it)
//! and shared into every process that maps the same range of the same
//! file (`caller_share`, as a SysV segment's shmat): a process that
//! forks, execs and maps the file again by its path, or an unrelated
//! one, sees the same bytes. A supervisor fills a new object from the
//! file (`FILL`) before it is shared, and writes it back to the file at
//! msync (`READ`); the object goes once no process maps it.
//!
//! What is not coherent: a file's read does not go through the object
//! (a mapping's writes reach the file at msync only), a write(2) reaches
//! the objects the writing process maps itself and no others, and two
//! mappings of the same file share frames only if they start at the same
//! offset with the same length.

use super::{End, Shared, reply, result};
use crate::proto::{self, word};
use alloc::vec::Vec;
use linuxabi::errno;
use tessera_rt::abi::Error;
use tessera_rt::sys;
use tessera_rt::sys::calls;

/// Pages of all objects at most: their frames are this server's, so one
/// process cannot take the machine's memory through it (ENOMEM past it).
const PAGES_MAX: u64 = (256 << 20) / 4096;
/// Bytes one FILL or READ carries at most.
pub const CHUNK: u64 = 4096;

/// One file range's memory.
struct Obj {
    id: u64,
    dev: u64,
    ino: u64,
    off: u64,
    pages: u64,
    /// Its memory in this server's space.
    mem: sys::Anon,
    /// The process whose supervisor made it and has not shared it yet
    /// (0: shared once): it is kept until then though nothing maps it.
    pending: u32,
}

/// Where a process mapped an object: (pid, base, object, mmap flags).
type Placed = (u32, u64, u64, u64);

#[derive(Default)]
pub struct FileMaps {
    objs: Vec<Obj>,
    placed: Vec<Placed>,
    next: u64,
}

impl FileMaps {
    fn get(&self, id: u64) -> Option<&Obj> {
        self.objs.iter().find(|o| o.id == id)
    }
}

impl Shared {
    /// `ctl::FMAP`'s operations (`proto::fmap`).
    pub(super) fn fmap_ctl(&mut self, w: &[u64]) -> End {
        match word(w, 1) {
            proto::fmap::GET => {
                let r = self.fmap_get(word(w, 2), word(w, 3), word(w, 4), word(w, 5), word(w, 6) as u32);
                match r {
                    Ok((id, fresh)) => reply(&[id, fresh as u64]),
                    Err(e) => result(-e),
                }
            }
            op @ (proto::fmap::FILL | proto::fmap::WRITE) => {
                let data = proto::bytes(w.get(5..).unwrap_or(&[]));
                let len = word(w, 4) as usize;
                if len > data.len() {
                    return result(-errno::EINVAL);
                }
                let fill = op == proto::fmap::FILL;
                result(
                    self.fmap_fill(word(w, 2), word(w, 3), &data[..len], fill)
                        .map_or_else(|e| -e, |_| 0),
                )
            }
            proto::fmap::FIND => match self.fmap_find(word(w, 2) as u32, word(w, 3)) {
                Ok((id, base, size, off, flags)) => reply(&[id, base, size, off, flags]),
                Err(e) => result(-e),
            },
            proto::fmap::NEXT => {
                let (pid, addr) = (word(w, 2) as u32, word(w, 3));
                let next = self
                    .fmaps
                    .placed
                    .iter()
                    .filter(|p| p.0 == pid && p.1 > addr)
                    .map(|p| p.1)
                    .min();
                reply(&[next.unwrap_or(u64::MAX)])
            }
            proto::fmap::READ => match self.fmap_read(word(w, 2), word(w, 3), word(w, 4)) {
                Ok(b) => {
                    let mut out = alloc::vec![b.len() as u64];
                    out.extend(proto::name_words(&b));
                    reply(&out)
                }
                Err(e) => result(-e),
            },
            _ => result(-errno::ENOSYS),
        }
    }

    /// The object for `pages` pages of file (`dev`, `ino`) from `off`: the
    /// one processes map now, or a new zeroed one (true) that the
    /// supervisor of `pid` fills.
    fn fmap_get(&mut self, dev: u64, ino: u64, off: u64, pages: u64, pid: u32) -> Result<(u64, bool), i64> {
        if pages == 0 || !off.is_multiple_of(4096) {
            return Err(errno::EINVAL);
        }
        self.fmap_sweep();
        if let Some(o) = self
            .fmaps
            .objs
            .iter()
            .find(|o| o.dev == dev && o.ino == ino && o.off == off && o.pages == pages && o.pending == 0)
        {
            return Ok((o.id, false));
        }
        let in_use: u64 = self.fmaps.objs.iter().map(|o| o.pages).sum();
        if in_use.saturating_add(pages) > PAGES_MAX {
            return Err(errno::ENOMEM);
        }
        let mem = sys::Anon::new(pages * 4096).map_err(|_| errno::ENOMEM)?;
        self.fmaps.next += 1;
        let id = self.fmaps.next;
        self.fmaps.objs.push(Obj {
            id,
            dev,
            ino,
            off,
            pages,
            mem,
            pending: pid,
        });
        Ok((id, true))
    }

    /// Bytes of the file written into an object: a new one by its maker
    /// (`fill`), or one processes map after a write(2) to the file.
    fn fmap_fill(&mut self, id: u64, at: u64, data: &[u8], fill: bool) -> Result<(), i64> {
        let o = self.fmaps.objs.iter_mut().find(|o| o.id == id).ok_or(errno::ENOENT)?;
        // A fill is for a new object only: one processes map holds their
        // writes, which the file's older bytes must not undo.
        if fill && o.pending == 0 {
            return Err(errno::EINVAL);
        }
        let at = usize::try_from(at).map_err(|_| errno::EINVAL)?;
        let end = at.checked_add(data.len()).ok_or(errno::EINVAL)?;
        o.mem
            .as_mut_slice()
            .get_mut(at..end)
            .ok_or(errno::EINVAL)?
            .copy_from_slice(data);
        Ok(())
    }

    /// The object process `pid` mapped at an address that `addr` lies
    /// in: (object, base, size, the file offset of base, mmap flags).
    fn fmap_find(&mut self, pid: u32, addr: u64) -> Result<(u64, u64, u64, u64, u64), i64> {
        for &(p, base, id, flags) in &self.fmaps.placed {
            if p != pid {
                continue;
            }
            if let Some(o) = self.fmaps.get(id)
                && addr >= base
                && addr - base < o.pages * 4096
            {
                return Ok((id, base, o.pages * 4096, o.off, flags));
            }
        }
        Err(errno::ENOMEM)
    }

    fn fmap_read(&self, id: u64, at: u64, len: u64) -> Result<Vec<u8>, i64> {
        let o = self.fmaps.get(id).ok_or(errno::ENOMEM)?;
        if len > CHUNK {
            return Err(errno::EINVAL);
        }
        let at = usize::try_from(at).map_err(|_| errno::EINVAL)?;
        let end = at.checked_add(len as usize).ok_or(errno::EINVAL)?;
        Ok(o.mem.as_slice().get(at..end).ok_or(errno::EINVAL)?.to_vec())
    }

    /// `pass::FMAP` [pid, object, addr, prot, flags]: the object shared
    /// into the waiting process, which gets its address.
    pub(super) fn fmap_pass(&mut self, rid: u64, w: &[u64]) {
        let pid = word(w, 1) as u32;
        let (id, prot, may) = (word(w, 2), word(w, 4) & 0xffff_ffff, word(w, 4) >> 32);
        let r = self.fmap_share(rid, pid, id, word(w, 3), prot, word(w, 5));
        // Its limit and its file's end are the process's own, as its
        // supervisor saw them (another process maps the object with its).
        if let Ok(at) = r
            && let Some(first) = self.fmaps.get(id).map(|o| o.off / 4096)
        {
            let _ = calls::caller_map_file(rid, at, may, word(w, 6), first, word(w, 7));
        }
        let _ = calls::caller_return(rid, r.unwrap_or_else(errno::fail));
    }

    fn fmap_share(&mut self, rid: u64, pid: u32, id: u64, addr: u64, prot: u64, flags: u64) -> Result<u64, i64> {
        use linuxabi::mman::MAP_FIXED;
        const SHM_RDONLY: u64 = 0o10000;
        let o = self.fmaps.objs.iter_mut().find(|o| o.id == id).ok_or(errno::EINVAL)?;
        let how = (flags & MAP_FIXED) | if prot & 2 == 0 { SHM_RDONLY } else { 0 };
        let at = if flags & MAP_FIXED != 0 { addr } else { 0 };
        let got = calls::caller_share(rid, at, o.mem.addr(), how).map_err(|e| match e {
            Error::NoMemory | Error::Limit => errno::ENOMEM,
            _ => errno::EINVAL,
        });
        o.pending = 0;
        let got = got?;
        self.fmaps.placed.push((pid, got, id, flags));
        Ok(got)
    }

    /// `ctl::FMAP_MAPPED`: how many processes map object `id` now (a
    /// munmap is the kernel's: only the object's sharers tell).
    pub(super) fn fmap_mapped(&mut self, id: u64) -> End {
        self.fmap_sweep();
        match self.fmaps.get(id) {
            Some(o) => reply(&[calls::map_sharers(o.mem.addr()).unwrap_or(0)]),
            None => reply(&[0]),
        }
    }

    /// Objects nothing maps any more give their memory back.
    fn fmap_sweep(&mut self) {
        let mut i = 0;
        while i < self.fmaps.objs.len() {
            let o = &self.fmaps.objs[i];
            if o.pending == 0 && calls::map_sharers(o.mem.addr()).unwrap_or(0) == 0 {
                // Dropping the object unmaps its memory.
                let id = o.id;
                self.fmaps.objs.remove(i);
                self.fmaps.placed.retain(|p| p.2 != id);
            } else {
                i += 1;
            }
        }
    }

    /// `pid` ended or exec'd: its mappings went with its memory.
    pub(super) fn fmap_exit(&mut self, pid: u32) {
        self.fmaps.placed.retain(|p| p.0 != pid);
        for o in &mut self.fmaps.objs {
            if o.pending == pid {
                o.pending = 0;
            }
        }
        self.fmap_sweep();
    }

    /// A child forked by `parent` shares its mappings (fork shares MAP_SHARED
    /// regions at the same addresses).
    pub(super) fn fmap_fork(&mut self, parent: u32, child: u32) {
        let more: Vec<Placed> = self
            .fmaps
            .placed
            .iter()
            .filter(|p| p.0 == parent)
            .map(|p| (child, p.1, p.2, p.3))
            .collect();
        self.fmaps.placed.extend(more);
    }
}
