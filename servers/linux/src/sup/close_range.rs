//! close_range: every open number of a range closed, or marked
//! close-on-exec (CLOSE_RANGE_CLOEXEC), each as close and F_SETFD do it,
//! so the kernel's bindings of pipes and files follow.

use super::Sup;
use linuxabi::errno;

const CLOSE_RANGE_UNSHARE: u64 = 2;
const CLOSE_RANGE_CLOEXEC: u64 = 4;

impl Sup {
    /// CLOSE_RANGE_UNSHARE asks for a table of the caller's own first: a
    /// process's table is its own already (no fork shares one), and its
    /// threads keep sharing it.
    pub(super) fn close_range(&mut self, first: u64, last: u64, flags: u64) -> Result<u64, i64> {
        let (first, last) = (first as u32 as usize, last as u32 as usize);
        if flags & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 || first > last {
            return Err(errno::EINVAL);
        }
        let end = last.min(self.fds.slots.len().saturating_sub(1));
        for fd in first..=end {
            let Some(s) = self.fds.slots.get(fd).cloned().flatten() else {
                continue;
            };
            if flags & CLOSE_RANGE_CLOEXEC != 0 {
                self.fds.set(fd, s.ofd, true);
            } else {
                self.close_fd(fd as u64)?;
            }
        }
        Ok(0)
    }
}
