//! process_vm_readv(2) and process_vm_writev(2): the supervisor reaches
//! only its own process's memory, so it checks the flags and passes the
//! call to the shared server (`shared/vmrw.rs`), which knows every
//! process's ids and alone may have the kernel copy between two
//! processes.

use super::{Out, Sup};
use crate::proto::pass;
use linuxabi::{errno, nr};

impl Sup {
    /// process_vm_readv or process_vm_writev (`n`) with arguments `a`:
    /// pid, local iovecs and count, remote iovecs and count, flags.
    pub(super) fn vm_rw(&mut self, rid: u64, n: u64, a: [u64; 6]) -> Out {
        if a[5] != 0 {
            return Out::Ret(errno::fail(errno::EINVAL));
        }
        let into = (n == nr::PROCESS_VM_WRITEV) as u64;
        // pid_t is an int: the upper half is not looked at.
        let target = a[0] as u32 as u64;
        let w = [pass::VM_RW, self.pid as u64, target, a[1], a[2], a[3], a[4], into];
        self.pass(rid, n, a, &w)
    }
}
