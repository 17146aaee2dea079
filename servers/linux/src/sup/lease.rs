//! File leases (`F_SETLEASE`, `F_GETLEASE`): a lease belongs to an open
//! file description and is granted under Linux's rules: a regular file
//! the caller owns (or root), a read lease only while nobody has the file
//! open for writing, a write lease only while no other description has it
//! open at all.
//!
//! What is not there yet: the descriptions checked are the caller's own
//! (another process's opens of the file are not seen), and a lease is not
//! broken: another process opening or truncating the file neither waits
//! nor makes the holder get its signal.

use super::Sup;
use super::fdtable::{Kind, OfdRef};
use linuxabi::errno;
use linuxabi::structs as st;

pub const F_RDLCK: u16 = 0;
pub const F_WRLCK: u16 = 1;
pub const F_UNLCK: u16 = 2;

impl Sup {
    pub(super) fn set_lease(&mut self, ofd: &OfdRef, arg: u64) -> Result<u64, i64> {
        let kind = match arg {
            0 => F_RDLCK,
            1 => F_WRLCK,
            2 => F_UNLCK,
            _ => return Err(errno::EINVAL),
        };
        let me = {
            let d = ofd.borrow();
            if !matches!(d.kind, Kind::File { .. }) {
                return Err(errno::EINVAL);
            }
            self.fstat_ofd(&d)?
        };
        if me.mode & 0o170000 != st::S_IFREG {
            return Err(errno::EINVAL);
        }
        if self.fs.cred.uid != me.uid && self.cred.euid != 0 {
            return Err(errno::EACCES);
        }
        if kind == F_UNLCK {
            // Nothing to give up is EAGAIN, as Linux's generic_delete_lease.
            return match ofd.borrow_mut().lease.take() {
                Some(_) => Ok(0),
                None => Err(errno::EAGAIN),
            };
        }
        // Every description of the same file this process holds.
        let mut others = alloc::vec::Vec::new();
        for o in self.fds.distinct() {
            if alloc::rc::Rc::ptr_eq(&o, ofd) {
                continue;
            }
            let d = o.borrow();
            if matches!(d.kind, Kind::File { .. })
                && let Ok(s) = self.fstat_ofd(&d)
                && (s.dev, s.ino) == (me.dev, me.ino)
            {
                others.push((d.writable(), d.lease));
            }
        }
        let conflict = match kind {
            F_RDLCK => ofd.borrow().writable() || others.iter().any(|&(w, l)| w || l == Some(F_WRLCK)),
            _ => !others.is_empty(),
        };
        if conflict {
            return Err(errno::EAGAIN);
        }
        ofd.borrow_mut().lease = Some(kind);
        Ok(0)
    }
}
