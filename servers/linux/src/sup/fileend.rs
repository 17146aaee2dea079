//! What the kernel keeps of a process's file mappings (`caller_map_file`):
//! the most each may be opened to (Linux's VM_MAYWRITE), and where its
//! file ends, past which a touch is SIGBUS, as on Linux. The supervisor
//! names each file by its device and inode (`file_tag`), tells the kernel
//! the file's pages as it makes a mapping, and again when the process
//! truncates the file (ftruncate, truncate, O_TRUNC) or extends it
//! (write, fallocate). What another process does to the file is not
//! seen: its mappings keep the end they had.

use super::Sup;
use super::fdtable::Kind;
use alloc::vec;
use linuxabi::structs as st;
use tessera_rt::abi::linux::{FILE_WRITTEN_MAX, MAY_EXEC, MAY_WRITE};
use tessera_rt::sys::calls;

const PAGE: u64 = 4096;

/// The kernel's name of file (`dev`, `ino`) for its mappings' ends: both
/// in one word (0: one that does not fit, whose mappings keep no end).
pub(super) fn file_tag(dev: u64, ino: u64) -> u64 {
    if dev >> 32 != 0 || ino >> 32 != 0 || ino == 0 {
        return 0;
    }
    dev << 32 | ino
}

/// The most a mapping may become (`caller_map_file`'s `may`): writable if
/// `write`, executable always (Linux's VM_MAYEXEC goes only on a noexec
/// mount, which Tessera does not have).
pub(super) fn may(write: bool) -> u64 {
    MAY_EXEC | if write { MAY_WRITE } else { 0 }
}

impl Sup {
    /// The new mapping at `at` of the file `s` describes, from byte `off`:
    /// its limit (`may`) and its file's end, told to the kernel.
    pub(super) fn mark_file_map(&mut self, rid: u64, at: u64, may: u64, s: &st::StatView, off: u64) {
        let tag = file_tag(s.dev, s.ino);
        let pages = (s.size.max(0) as u64).div_ceil(PAGE);
        let _ = calls::caller_map_file(rid, at, may, tag, off / PAGE, pages);
        self.note_mapped_file(tag);
    }

    /// Remembers that the process maps file `tag` (a write past its end
    /// then moves its mappings' end).
    pub(super) fn note_mapped_file(&mut self, tag: u64) {
        if tag != 0 {
            self.mapped_files.insert(tag);
        }
    }

    /// The file its stat `s` describes changed size (truncated or
    /// extended): the process's mappings of it end where it ends now.
    pub(super) fn file_resized_to(&mut self, rid: u64, s: &st::StatView) {
        let tag = file_tag(s.dev, s.ino);
        if tag != 0 {
            let size = s.size.max(0) as u64;
            let _ = calls::caller_file_end(rid, tag, size.div_ceil(PAGE));
            // The rest of the last page reads zero, as Linux's truncation
            // zeroes it in the page cache: so in the private mappings'
            // pages that are still the file's.
            let tail = (PAGE - size % PAGE) % PAGE;
            if tail != 0 && self.mapped_files.contains(&tag) {
                let zeros = [0u8; PAGE as usize];
                let _ = calls::caller_file_written(rid, tag, size, &zeros[..tail as usize]);
            }
        }
    }

    /// A write(2) of `n` bytes from the process's `buf` to file number
    /// `ffd` at `start`: its private mappings' pages that are still the
    /// file's (the process never wrote them) take the bytes, as they
    /// would on Linux, where they are the page cache's. Costs nothing to
    /// a process that maps no file.
    pub(super) fn file_pages_wrote(&mut self, rid: u64, ffd: u32, start: u64, buf: u64, n: u64) {
        if self.mapped_files.is_empty() || n == 0 {
            return;
        }
        let Ok(b) = self.fs.fstat(ffd) else { return };
        let s = st::StatView::parse(&b);
        let tag = file_tag(s.dev, s.ino);
        if !self.mapped_files.contains(&tag) {
            return;
        }
        let mut data = vec![0u8; (n as usize).min(FILE_WRITTEN_MAX)];
        let mut at = 0;
        while at < n {
            let k = (n - at).min(FILE_WRITTEN_MAX as u64) as usize;
            // The process's buffer was readable for the write; should a
            // thread have unmapped it since, the rest is not seen.
            if calls::caller_read(rid, buf + at, &mut data[..k]).is_err()
                || calls::caller_file_written(rid, tag, start + at, &data[..k]).is_err()
            {
                break;
            }
            at += k as u64;
        }
    }

    /// File number `ffd` may have grown (a write): if the process maps
    /// that file, its mappings end where it ends now. Costs nothing to a
    /// process that maps no file.
    pub(super) fn mapped_file_resized(&mut self, rid: u64, ffd: u32) {
        if self.mapped_files.is_empty() {
            return;
        }
        let Ok(b) = self.fs.fstat(ffd) else { return };
        let s = st::StatView::parse(&b);
        if self.mapped_files.contains(&file_tag(s.dev, s.ino)) {
            self.file_resized_to(rid, &s);
        }
    }

    /// Descriptor `fd`'s file changed size: truncated to its size now
    /// (ftruncate: `truncated`), or grown (fallocate).
    pub(super) fn fd_resized(&mut self, rid: u64, fd: u64, truncated: bool) {
        let Ok(o) = self.fds.ofd(fd) else { return };
        let ffd = match o.borrow().kind {
            Kind::File { fd, .. } => fd,
            _ => return,
        };
        let Ok(b) = self.fs.fstat(ffd) else { return };
        let s = st::StatView::parse(&b);
        self.file_resized_to(rid, &s);
        if truncated {
            self.fmap_truncated(&s);
        }
    }

    /// File number `ffd` was opened with O_TRUNC: cut to 0, which its
    /// mappings in this process follow.
    pub(super) fn mapped_file_truncated(&mut self, rid: u64, ffd: u32) {
        if self.mapped_files.is_empty() && self.fmaps.is_empty() {
            return;
        }
        let Ok(b) = self.fs.fstat(ffd) else { return };
        let s = st::StatView::parse(&b);
        self.file_resized_to(rid, &s);
        self.fmap_truncated(&s);
    }
}
