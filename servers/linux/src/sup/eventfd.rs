//! eventfd and eventfd2: a descriptor of a counter the shared server
//! holds (`shared/eventfd.rs`), read and written as a pipe's end is.

use super::Sup;
use super::fdtable::{self as fdt, Kind, Ofd};
use crate::proto::{ctl, obj, word};
use alloc::string::String;
use linuxabi::errno;
use linuxabi::eventfd::{EFD_CLOEXEC, EFD_NONBLOCK, EFD_SEMAPHORE};

impl Sup {
    pub(super) fn eventfd2(&mut self, init: u64, flags: u64) -> Result<u64, i64> {
        if flags & !(EFD_SEMAPHORE | EFD_CLOEXEC | EFD_NONBLOCK) != 0 {
            return Err(errno::EINVAL);
        }
        let r = self.ctl(&[ctl::EVENTFD, init as u32 as u64, flags & EFD_SEMAPHORE]);
        let id = word(&r, 0);
        if let Some(e) = errno::of(id) {
            return Err(e);
        }
        let nonblock = if flags & EFD_NONBLOCK != 0 { fdt::O_NONBLOCK } else { 0 };
        if nonblock != 0 {
            self.ctl(&[ctl::OBJ_SETFL, id, nonblock as u64]);
        }
        let o = Ofd::new(
            Kind::Obj { id, kind: obj::EVENTFD },
            fdt::O_RDWR | nonblock,
            String::from("anon_inode:[eventfd]"),
        );
        match self.fds.insert(o.clone(), flags & EFD_CLOEXEC != 0, self.limit()) {
            Ok(fd) => Ok(fd as u64),
            Err(e) => {
                self.release(&o);
                Err(e)
            }
        }
    }
}
