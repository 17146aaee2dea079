//! mlock, munlock, mlock2, mlockall and munlockall: Linux's checks and
//! error numbers. Tessera never pages memory out, so a lock changes
//! nothing else: the kernel marks what is locked on its mappings (VmLck
//! and smaps' Locked come from there) and makes a locked range's pages
//! present, as Linux does, and tells whether a range is mapped
//! (`MLOCK_MAPPED_ARG`). The supervisor keeps its own record of what was
//! locked for RLIMIT_MEMLOCK; a range unmapped later stays in it until
//! munlock or munlockall (the supervisor does not see the kernel's munmap).

use super::Sup;
use linuxabi::errno;
use linuxabi::mlock::{Locked, PAGE, pages_of};
use linuxabi::mman::{MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT, MLOCK_ONFAULT};
use tessera_rt::abi::linux::MLOCK_MAPPED_ARG;

const RLIMIT_MEMLOCK: usize = 8;

impl Sup {
    /// Whether the process may lock memory at all (Linux's
    /// `can_do_mlock`): privileged, or a memlock limit above zero.
    fn may_lock(&self) -> bool {
        self.cred.euid == 0 || self.limits[RLIMIT_MEMLOCK][0] != 0
    }

    /// mlock, and mlock2 with `flags` (Linux's `do_mlock`).
    pub(super) fn mlock(&mut self, a: [u64; 6], flags: u64) -> Result<u64, i64> {
        if flags & !MLOCK_ONFAULT != 0 {
            return Err(errno::EINVAL);
        }
        if !self.may_lock() {
            return Err(errno::EPERM);
        }
        // A range past the end of the address space (Linux's end < start).
        let Some((start, end)) = pages_of(a[0], a[1]) else {
            return Err(errno::EINVAL);
        };
        let limit = self.limits[RLIMIT_MEMLOCK][0] / PAGE * PAGE;
        let after = self.locked.bytes() + (end - start) - self.locked.within(start, end);
        if after > limit && self.cred.euid != 0 {
            return Err(errno::ENOMEM);
        }
        if start == end {
            return Ok(0);
        }
        if a[MLOCK_MAPPED_ARG] == 0 {
            return Err(errno::ENOMEM);
        }
        self.locked.add(start, end);
        Ok(0)
    }

    pub(super) fn munlock(&mut self, a: [u64; 6]) -> Result<u64, i64> {
        // A range past the end of the address space (Linux's end < start).
        let Some((start, end)) = pages_of(a[0], a[1]) else {
            return Err(errno::EINVAL);
        };
        if start == end {
            return Ok(0);
        }
        if a[MLOCK_MAPPED_ARG] == 0 {
            return Err(errno::ENOMEM);
        }
        self.locked.remove(start, end);
        Ok(0)
    }

    /// mlockall: `mapped` is the bytes the process maps now (the kernel's
    /// `MLOCK_MAPPED_ARG` for this call), Linux's total_vm.
    pub(super) fn mlockall(&mut self, flags: u64, mapped: u64) -> Result<u64, i64> {
        if flags == 0 || flags & !(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0 || flags == MCL_ONFAULT {
            return Err(errno::EINVAL);
        }
        if !self.may_lock() {
            return Err(errno::EPERM);
        }
        let limit = self.limits[RLIMIT_MEMLOCK][0];
        if flags & MCL_CURRENT != 0 && mapped > limit && self.cred.euid != 0 {
            return Err(errno::ENOMEM);
        }
        self.locked.future = flags & MCL_FUTURE != 0;
        if flags & MCL_CURRENT != 0 {
            self.locked = Locked::everything(mapped, self.locked.future);
        }
        Ok(0)
    }

    pub(super) fn munlockall(&mut self) -> u64 {
        self.locked = Locked::default();
        0
    }
}
