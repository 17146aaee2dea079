//! Calls that advise or order the kernel about work Tessera does another
//! way, checked as Linux checks them: readahead (the file server's cache
//! reads ahead itself), sync_file_range (a range written back is the whole
//! file's fsync) and membarrier (a system call on every CPU is what it
//! promises, and each rendezvous with a supervisor is one).

use super::Sup;
use super::fdtable::Kind;
use linuxabi::errno;

/// membarrier's commands: QUERY (0), then one bit each: GLOBAL,
/// GLOBAL_EXPEDITED and its registration, then three pairs of a private
/// barrier and its registration (plain, SYNC_CORE, RSEQ). Every one is
/// offered: on Tessera each is the rendezvous the call already is.
const MB_QUERY: u64 = 0;
const MB_ALL: u64 = 0x1ff;
/// The private barriers (each needs its registration, the next bit up).
const MB_PRIVATE: u64 = 8 | 32 | 128;
/// MEMBARRIER_CMD_FLAG_CPU, for PRIVATE_EXPEDITED_RSEQ only.
const MB_FLAG_CPU: u64 = 1;

impl Sup {
    /// readahead: a regular file open for reading, else EBADF (not open
    /// for reading) or EINVAL (anything else).
    pub(super) fn readahead(&self, fd: u64) -> Result<u64, i64> {
        let o = self.fds.ofd(fd)?;
        let d = o.borrow();
        if !d.readable() || d.flags & linuxabi::fcntl::O_PATH != 0 {
            return Err(errno::EBADF);
        }
        match d.kind {
            Kind::File { fd: f, .. }
                if !self
                    .fs
                    .fstat(f)
                    .is_ok_and(|b| linuxabi::structs::StatView::parse(&b).is_dir()) =>
            {
                Ok(0)
            }
            _ => Err(errno::EINVAL),
        }
    }

    /// sync_file_range: the descriptor (not O_PATH), then flags, offset
    /// and length, in Linux's order; a pipe or socket is ESPIPE.
    pub(super) fn sync_file_range(&mut self, fd: u64, off: u64, len: u64, flags: u64) -> Result<u64, i64> {
        const VALID: u64 = 1 | 2 | 4;
        let o = self.fds.ofd(fd)?;
        if o.borrow().flags & linuxabi::fcntl::O_PATH != 0 {
            return Err(errno::EBADF);
        }
        let (off, len) = (off as i64, len as i64);
        if flags as u32 as u64 & !VALID != 0 || off < 0 || len < 0 || off.checked_add(len).is_none() {
            return Err(errno::EINVAL);
        }
        if !matches!(o.borrow().kind, Kind::File { .. }) {
            return Err(errno::ESPIPE);
        }
        // SYNC_FILE_RANGE_WRITE writes the range out: the file's fsync.
        if flags & 2 != 0 {
            self.fsync(fd)?;
        }
        Ok(0)
    }

    /// membarrier: a private barrier before the process registered for
    /// it is EPERM; registrations are the memory map's, which a forked
    /// child copies and exec replaces.
    pub(super) fn membarrier(&mut self, cmd: u64, flags: u64) -> Result<u64, i64> {
        let (cmd, flags) = (cmd as u32 as u64, flags as u32 as u64);
        let flags_ok = flags == 0 || (cmd == 128 && flags == MB_FLAG_CPU);
        match cmd {
            _ if !flags_ok => Err(errno::EINVAL),
            MB_QUERY => Ok(MB_ALL),
            c if c & MB_ALL != c || !c.is_power_of_two() => Err(errno::EINVAL),
            c if c & MB_PRIVATE != 0 && self.membarrier & (c << 1) == 0 => Err(errno::EPERM),
            c => {
                self.membarrier |= c & !MB_PRIVATE;
                Ok(0)
            }
        }
    }
}
