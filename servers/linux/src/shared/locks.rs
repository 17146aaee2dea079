//! Record locks between processes (`ctl::LOCK`): the table is
//! `linuxabi::reclock`'s; a supervisor names the file and the range.

use super::Shared;
use crate::proto::word;
use linuxabi::errno;
use linuxabi::reclock::Want;

impl Shared {
    /// `ctl::LOCK`'s reply words.
    pub(super) fn lock(&mut self, w: &[u64]) -> alloc::vec::Vec<u64> {
        let (pid, file) = (word(w, 1) as u32, (word(w, 2), word(w, 3)));
        let want = match word(w, 5) {
            0 => Want::Read,
            1 => Want::Write,
            _ => Want::Unlock,
        };
        let (start, end) = (word(w, 6), word(w, 7));
        if word(w, 4) != 0 {
            let r = self.locks.set(file, pid, start, end, want);
            return alloc::vec![if r.is_ok() { 0 } else { errno::fail(errno::EAGAIN) }];
        }
        match self.locks.conflict(file, pid, start, end, want) {
            None => alloc::vec![0],
            Some(l) => alloc::vec![1, l.write as u64, l.start, l.end, l.pid as u64],
        }
    }
}
