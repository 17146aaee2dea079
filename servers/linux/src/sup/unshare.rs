//! unshare(2), for what a supervisor per process can honour. A process's
//! descriptor table, working directory and umask, and its semaphore
//! adjustments are its supervisor's alone (clone without CLONE_THREAD
//! shares none of them), so unsharing them leaves nothing to copy: only
//! CLONE_SYSVSEM does something, applying the adjustments now as Linux's
//! `exit_sem` does. The threads of one process share one supervisor's
//! state, so a thread cannot take a table of its own: EINVAL when there
//! are other threads. Namespaces: Tessera has one of each kind, so a
//! request for a new one is refused (EPERM without privilege, as Linux's
//! check comes first; EINVAL with it).

use super::Sup;
use super::procs::{CLONE_FILES, CLONE_FS, CLONE_SIGHAND, CLONE_THREAD, CLONE_VM};
use crate::proto::ctl;
use linuxabi::errno;

const CLONE_NEWTIME: u64 = 0x80;
const CLONE_NEWNS: u64 = 0x20000;
const CLONE_SYSVSEM: u64 = 0x40000;
const CLONE_NEWCGROUP: u64 = 0x0200_0000;
const CLONE_NEWUTS: u64 = 0x0400_0000;
const CLONE_NEWIPC: u64 = 0x0800_0000;
const CLONE_NEWUSER: u64 = 0x1000_0000;
const CLONE_NEWPID: u64 = 0x2000_0000;
const CLONE_NEWNET: u64 = 0x4000_0000;
/// The namespaces that need CAP_SYS_ADMIN (Linux's
/// `unshare_nsproxy_namespaces`); a new user namespace does not.
const PRIVILEGED_NS: u64 =
    CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWCGROUP | CLONE_NEWTIME;
const KNOWN: u64 =
    CLONE_THREAD | CLONE_FS | CLONE_SIGHAND | CLONE_VM | CLONE_FILES | CLONE_SYSVSEM | PRIVILEGED_NS | CLONE_NEWUSER;

impl Sup {
    pub(super) fn unshare(&mut self, flags: u64) -> Result<u64, i64> {
        let mut flags = flags & 0xffff_ffff;
        if flags & !KNOWN != 0 {
            return Err(errno::EINVAL);
        }
        // What each flag implies (Linux's ksys_unshare).
        if flags & CLONE_NEWUSER != 0 {
            flags |= CLONE_THREAD | CLONE_FS;
        }
        if flags & CLONE_VM != 0 {
            flags |= CLONE_SIGHAND;
        }
        if flags & CLONE_SIGHAND != 0 {
            flags |= CLONE_THREAD;
        }
        if flags & CLONE_NEWNS != 0 {
            flags |= CLONE_FS;
        }
        let threaded = !self.threads.others.is_empty();
        // A thread's own table, directory or signal handlers: the
        // supervisor keeps one per process (Linux allows the first two).
        if threaded && flags & (CLONE_THREAD | CLONE_SIGHAND | CLONE_VM | CLONE_FILES | CLONE_FS) != 0 {
            return Err(errno::EINVAL);
        }
        if flags & PRIVILEGED_NS != 0 && self.cred.euid != 0 {
            return Err(errno::EPERM);
        }
        if flags & (PRIVILEGED_NS | CLONE_NEWUSER) != 0 {
            return Err(errno::EINVAL);
        }
        if flags & CLONE_SYSVSEM != 0 {
            self.ctl1(&[ctl::SYSV_UNDO, self.pid as u64])?;
        }
        Ok(0)
    }
}
