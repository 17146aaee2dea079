//! The owner of an open file description's I/O signals (fcntl F_SETOWN,
//! F_GETOWN, F_SETOWN_EX, F_GETOWN_EX) and the signal it gets (F_SETSIG,
//! F_GETSIG), kept and reported as Linux's `f_owner`. No signal is sent
//! yet: O_ASYNC's SIGIO on a description becoming ready is not there.

use super::Sup;
use super::fdtable::OfdRef;
use linuxabi::errno;

/// `struct f_owner_ex`'s types.
const F_OWNER_TID: u32 = 0;
const F_OWNER_PID: u32 = 1;
const F_OWNER_PGRP: u32 = 2;

/// A description's owner: the `f_owner_ex` type (a fresh description's
/// is F_OWNER_TID with pid 0, as Linux's zeroed one reads back), the pid,
/// and the signal (0: SIGIO).
#[derive(Clone, Copy, Debug, Default)]
pub struct Owner {
    pub kind: u32,
    pub pid: u32,
    pub sig: u32,
}

impl Sup {
    /// A pid named as an owner must exist (a thread of this process, or
    /// a process or group leader the shared server knows); 0 is none.
    fn owner_exists(&self, pid: u32) -> Result<(), i64> {
        if pid == 0 || self.tids().contains(&pid) || self.proc_record(pid).is_ok() {
            return Ok(());
        }
        Err(errno::ESRCH)
    }

    /// F_SETOWN: a negative argument names a process group.
    pub(super) fn f_setown(&self, o: &OfdRef, arg: u64) -> Result<u64, i64> {
        let who = arg as i32;
        if who == i32::MIN {
            return Err(errno::EINVAL);
        }
        let kind = if who < 0 { F_OWNER_PGRP } else { F_OWNER_PID };
        self.owner_exists(who.unsigned_abs())?;
        let mut d = o.borrow_mut();
        d.owner.kind = kind;
        d.owner.pid = who.unsigned_abs();
        Ok(0)
    }

    /// F_GETOWN: a group is reported negative.
    pub(super) fn f_getown(&self, o: &OfdRef) -> u64 {
        let w = o.borrow().owner;
        let pid = w.pid as i32;
        (if w.kind == F_OWNER_PGRP { -pid } else { pid }) as i64 as u64
    }

    pub(super) fn f_setown_ex(&self, rid: u64, o: &OfdRef, at: u64) -> Result<u64, i64> {
        let b = self.read_mem(rid, at, 8)?;
        let kind = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let pid = i32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        if !matches!(kind, F_OWNER_TID | F_OWNER_PID | F_OWNER_PGRP) {
            return Err(errno::EINVAL);
        }
        // Linux looks a negative pid up as it is: never found.
        let pid = u32::try_from(pid).map_err(|_| errno::ESRCH)?;
        self.owner_exists(pid)?;
        let mut d = o.borrow_mut();
        d.owner.kind = kind;
        d.owner.pid = pid;
        Ok(0)
    }

    pub(super) fn f_getown_ex(&self, rid: u64, o: &OfdRef, at: u64) -> Result<u64, i64> {
        let w = o.borrow().owner;
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&w.kind.to_le_bytes());
        b[4..].copy_from_slice(&w.pid.to_le_bytes());
        self.write_mem(rid, at, &b)?;
        Ok(0)
    }

    /// F_SETSIG: a signal number, or 0 for SIGIO (the whole argument,
    /// where F_SETOWN reads an int).
    pub(super) fn f_setsig(&self, o: &OfdRef, arg: u64) -> Result<u64, i64> {
        if arg > 64 {
            return Err(errno::EINVAL);
        }
        o.borrow_mut().owner.sig = arg as u32;
        Ok(0)
    }

    pub(super) fn f_getsig(&self, o: &OfdRef) -> u64 {
        o.borrow().owner.sig as u64
    }
}
