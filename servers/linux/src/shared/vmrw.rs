//! process_vm_readv(2) and process_vm_writev(2), passed here by the
//! caller's supervisor (`pass::VM_RW`): the server that knows every
//! process's ids decides, with ptrace's real-id rule, whether the caller
//! may reach the target, and only this server, which serves every Linux
//! process, may then have the kernel copy between the two
//! (`caller_vm_copy`). Copies: the two iovec arrays once each into this
//! server; the data once, frame to frame, between the processes (twice,
//! through a small kernel buffer, for a process's own memory).

use super::Shared;
use super::procs::INIT;
use crate::proto::word;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::vmrw::{self, IOV_MAX, IOVEC};
use tessera_rt::abi::Error;
use tessera_rt::sys::calls;

/// An iovec array of the waiting caller, `count` of them at `addr`.
fn array(rid: u64, addr: u64, count: u64) -> Result<Vec<u8>, i64> {
    if count > IOV_MAX {
        return Err(errno::EINVAL);
    }
    let mut raw = alloc::vec![0u8; count as usize * IOVEC];
    if count > 0 {
        calls::caller_read(rid, addr, &mut raw).map_err(|_| errno::EFAULT)?;
    }
    Ok(raw)
}

impl Shared {
    /// [VM_RW, pid | tid << 32, target, local, count, remote, count,
    /// write]: ends the call here.
    pub(super) fn vm_pass(&mut self, rid: u64, w: &[u64]) {
        let r = self.vm_rw(rid, w);
        let _ = calls::caller_return(rid, r.unwrap_or_else(errno::fail));
    }

    /// Linux's process_vm_rw: the local array, the remote one, the
    /// target, the right, then the bytes.
    fn vm_rw(&mut self, rid: u64, w: &[u64]) -> Result<u64, i64> {
        let pid = word(w, 1) as u32;
        let local = vmrw::local(&array(rid, word(w, 3), word(w, 4))?)?;
        if local.iter().all(|s| s.1 == 0) {
            return Ok(0);
        }
        let remote = vmrw::remote(&array(rid, word(w, 5), word(w, 6))?)?;
        if !vmrw::any(&remote) {
            return Ok(0);
        }
        let target = word(w, 2) as i32;
        let (ids, privileged) = {
            let me = self.procs.get(pid).ok_or(errno::ESRCH)?;
            (me.ids, me.euid == 0)
        };
        let t = match self.procs.target(pid, target as u32) {
            Some(t) if target > 0 => t,
            _ => return Err(errno::ESRCH),
        };
        let Some(tp) = self.procs.get(t) else {
            // The virtual init (no process of its own): root's, with no
            // memory to reach.
            debug_assert_eq!(t, INIT);
            return Err(if privileged { errno::ESRCH } else { errno::EPERM });
        };
        if tp.zombie.is_some() {
            return Err(errno::ESRCH);
        }
        if !vmrw::may_access(&ids, &tp.ids, privileged, t == pid) || !(tp.dumpable || privileged || t == pid) {
            return Err(errno::EPERM);
        }
        let tpid = tp.tessera_pid().map_err(|_| errno::ESRCH)?;
        let into = word(w, 7) & 1;
        let mut done = 0u64;
        for (l, r, n) in vmrw::pieces(&local, &remote, tessera_rt::abi::linux::VM_COPY_MAX) {
            match calls::caller_vm_copy(rid, tpid, l, r, n, into) {
                Ok(k) => {
                    done += k;
                    if k < n {
                        break;
                    }
                }
                // Ended between the look-up and the copy: as if never found.
                Err(Error::NotFound) if done == 0 => return Err(errno::ESRCH),
                Err(_) => break,
            }
        }
        if done > 0 { Ok(done) } else { Err(errno::EFAULT) }
    }
}
