//! SysV IPC calls and their files: every shm*, sem* and msg* call goes to
//! the shared server (which holds what all processes share and reads and
//! writes the caller's memory itself) with the caller's effective
//! credentials; the IPC settings of `/proc/sys/kernel` and the list of
//! `/proc/sysvipc/shm` are the shared server's too, settable by root.

use super::{Out, Sup};
use crate::proto::{self, ctl, pass, word};
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::nr;
use linuxabi::sysv::SETTINGS;

/// Whether `n` is a SysV IPC call.
pub fn is_sysv_call(n: u64) -> bool {
    matches!(
        n,
        nr::SHMGET
            | nr::SHMAT
            | nr::SHMDT
            | nr::SHMCTL
            | nr::SEMGET
            | nr::SEMOP
            | nr::SEMTIMEDOP
            | nr::SEMCTL
            | nr::MSGGET
            | nr::MSGSND
            | nr::MSGRCV
            | nr::MSGCTL
    )
}

/// The setting a path of `/proc/sys/kernel` names.
pub fn setting_of(abs: &str) -> Option<usize> {
    let name = abs.strip_prefix("/proc/sys/kernel/")?;
    SETTINGS.iter().position(|s| *s == name)
}

impl Sup {
    /// Passes SysV call `n` on to the shared server.
    pub(super) fn sysv_call(&mut self, rid: u64, n: u64, a: [u64; 6]) -> Out {
        let who = self.cred.euid as u64 | (self.cred.egid as u64) << 32;
        let mut w = [pass::SYSV + n, self.pid as u64, who, a[0], a[1], a[2], a[3], a[4]];
        match n {
            nr::SEMOP => {
                w[0] = pass::SYSV + nr::SEMTIMEDOP;
                w[6] = u64::MAX;
            }
            nr::SEMTIMEDOP => match self.timespec_deadline(rid, a[3]) {
                Ok(d) => w[6] = d,
                Err(e) => return Out::Ret(errno::fail(e)),
            },
            _ => {}
        }
        self.pass(rid, n, a, &w)
    }

    /// The text of IPC setting `index`, after writing `text` to it.
    pub(super) fn sysv_setting(&self, index: usize, text: Option<&[u8]>) -> Result<Vec<u8>, i64> {
        let mut msg = alloc::vec![ctl::SYSV_SETTING, index as u64];
        match text {
            Some(t) => {
                msg.push(t.len() as u64);
                msg.extend(proto::name_words(t));
            }
            None => msg.push(u64::MAX),
        }
        let r = self.ctl(&msg);
        if let Some(e) = errno::of(word(&r, 0)) {
            return Err(e);
        }
        let mut b = proto::bytes(r.get(1..).unwrap_or(&[]));
        b.truncate(word(&r, 0) as usize);
        Ok(b)
    }

    /// A write to a setting's file (root only; the whole value at once).
    pub(super) fn sysv_setting_write(&self, rid: u64, index: usize, buf: u64, len: u64) -> Result<u64, i64> {
        if self.cred.euid != 0 {
            return Err(errno::EPERM);
        }
        if len > 256 {
            return Err(errno::EINVAL);
        }
        let text = self.read_mem(rid, buf, len as usize)?;
        self.sysv_setting(index, Some(&text)).map(|_| len)
    }

    /// `/proc/sysvipc/{shm,sem,msg}` (`which` 0, 1, 2).
    pub(super) fn sysv_list(&self, which: u64) -> Vec<u8> {
        let r = self.ctl(&[ctl::SYSV_LIST, which]);
        let mut b = proto::bytes(r.get(1..).unwrap_or(&[]));
        b.truncate(word(&r, 0) as usize);
        b
    }
}
