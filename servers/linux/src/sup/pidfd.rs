//! pidfd_open, pidfd_send_signal, pidfd_getfd and waitid(P_PIDFD): a
//! pidfd is a descriptor of the shared server's object naming one
//! process (`shared/pidfd.rs`), which outlives its pid. A `/proc/<pid>`
//! directory's descriptor names its process too, as on Linux, for the
//! calls that take a pidfd to send a signal.

use super::fdtable::{self as fdt, Kind, Ofd};
use super::{Out, Sup, ret};
use crate::proto::{ctl, obj, pass, word};
use alloc::string::String;
use linuxabi::errno;
use linuxabi::signal as sig;

/// PIDFD_NONBLOCK is O_NONBLOCK.
const PIDFD_NONBLOCK: u64 = fdt::O_NONBLOCK as u64;
const P_PIDFD: u64 = 3;
const WNOHANG: u64 = 1;

/// What a descriptor given as a pidfd names.
enum Named {
    /// A pidfd: its object.
    Pidfd(u64),
    /// A `/proc/<pid>` directory: that pid, now.
    ProcDir(u32),
}

impl Sup {
    pub(super) fn pidfd_open(&mut self, pid: u64, flags: u64) -> Result<u64, i64> {
        if flags & !PIDFD_NONBLOCK != 0 || pid as i32 <= 0 {
            return Err(errno::EINVAL);
        }
        let id = self.ctl1(&[ctl::PIDFD_OPEN, self.pid as u64, pid as u32 as u64, flags])?;
        let o = Ofd::new(
            Kind::Obj { id, kind: obj::PIDFD },
            fdt::O_RDWR | flags as u32,
            String::from("anon_inode:[pidfd]"),
        );
        // A pidfd is always close-on-exec (Linux's O_CLOEXEC).
        match self.fds.insert(o.clone(), true, self.limit()) {
            Ok(fd) => Ok(fd as u64),
            Err(e) => {
                self.release(&o);
                Err(e)
            }
        }
    }

    /// The pidfd (or `/proc/<pid>` directory) at `fd`: EBADF for anything
    /// else, as Linux's `pidfd_to_pid`.
    fn named(&self, fd: u64) -> Result<Named, i64> {
        let o = self.fds.ofd(fd)?;
        let d = o.borrow();
        match d.kind {
            Kind::Obj { id, kind: obj::PIDFD } => Ok(Named::Pidfd(id)),
            Kind::VDir(_) => {
                let rest = d.path.strip_prefix("/proc/").ok_or(errno::EBADF)?;
                match rest {
                    "self" => Ok(Named::ProcDir(self.pid)),
                    n => n.parse::<u32>().map(Named::ProcDir).map_err(|_| errno::EBADF),
                }
            }
            _ => Err(errno::EBADF),
        }
    }

    pub(super) fn pidfd_send_signal(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let (fd, signo, info_at, flags) = (a[0], a[1] as u32 as u64, a[2], a[3]);
        if flags != 0 {
            return Err(errno::EINVAL);
        }
        let named = self.named(fd)?;
        let (code, value) = if info_at != 0 {
            let b = self.read_mem(rid, info_at, 128)?;
            let info = linuxabi::frame::SigInfo::from_bytes(&b);
            if info.signo as u64 != signo {
                return Err(errno::EINVAL);
            }
            // Only the kernel sends codes ≥ 0 and SI_TKILL, but to oneself.
            let own = match named {
                Named::ProcDir(p) => p == self.pid,
                Named::Pidfd(id) => self.pidfd_pid(id).is_ok_and(|(p, _)| p == self.pid),
            };
            if !own && (info.code >= 0 || info.code == sig::SI_TKILL) {
                return Err(errno::EPERM);
            }
            (info.code as i64, info.value)
        } else {
            (sig::SI_USER as i64, 0)
        };
        if signo > sig::NSIG as u64 {
            return Err(errno::EINVAL);
        }
        match named {
            Named::ProcDir(pid) => self.send(pid as i64, signo, code, value),
            Named::Pidfd(id) => {
                let r = self.ctl(&[ctl::PIDFD_KILL, id, self.pid as u64, signo, code as u64, value]);
                self.sent(&r, signo, code, value)
            }
        }
    }

    /// The pid of pidfd object `id` and whether its process ended; ESRCH
    /// once it is reaped.
    fn pidfd_pid(&self, id: u64) -> Result<(u32, bool), i64> {
        let r = self.ctl(&[ctl::PIDFD_PID, id]);
        if let Some(e) = errno::of(word(&r, 0)) {
            return Err(e);
        }
        Ok((word(&r, 0) as u32, word(&r, 1) != 0))
    }

    /// pidfd_getfd: a new descriptor (close-on-exec) of the description
    /// another process's `target` leads to.
    pub(super) fn pidfd_getfd(&mut self, fd: u64, target: u64, flags: u64) -> Result<u64, i64> {
        if flags != 0 {
            return Err(errno::EINVAL);
        }
        let Named::Pidfd(id) = self.named(fd)? else {
            return Err(errno::EBADF);
        };
        let (pid, exited) = self.pidfd_pid(id)?;
        // An ended process is no process to take from (Linux's ESRCH,
        // even before it is reaped).
        if exited {
            return Err(errno::ESRCH);
        }
        if pid != self.pid {
            // ptrace's attach check by real ids (PTRACE_MODE_REALCREDS).
            let rec = self.ctl(&[ctl::PROC, pid as u64]);
            if let Some(e) = errno::of(word(&rec, 0)) {
                return Err(e);
            }
            if self.cred.euid != 0 && word(&rec, 5) as u32 != self.cred.uid {
                return Err(errno::EPERM);
            }
            // Another supervisor's table: not reachable from here yet.
            return Err(errno::EOPNOTSUPP);
        }
        let o = self.fds.ofd(target)?;
        self.fds.insert(o, true, self.limit()).map(|n| n as u64)
    }

    /// waitid(P_PIDFD): the wait for the pidfd's process, which must be a
    /// child; a non-blocking pidfd makes it WNOHANG, EAGAIN if nothing.
    pub(super) fn waitid_pidfd(&mut self, rid: u64, a: [u64; 6]) -> Out {
        debug_assert_eq!(a[0], P_PIDFD);
        let o = match self.fds.ofd(a[1] as u32 as u64) {
            Ok(o) => o,
            Err(e) => return ret(Err(e)),
        };
        let (id, nonblock) = match o.borrow().kind {
            Kind::Obj { id, kind: obj::PIDFD } => (id, self.flags_of(&o.borrow()) & fdt::O_NONBLOCK != 0),
            _ => return ret(Err(errno::EBADF)),
        };
        let pid = match self.pidfd_pid(id) {
            Ok((p, _)) => p,
            // Reaped: no child of this pid to wait for any more.
            Err(errno::ESRCH) => return ret(Err(errno::ECHILD)),
            Err(e) => return ret(Err(e)),
        };
        let mut options = a[3];
        if nonblock && options & WNOHANG == 0 {
            options |= WNOHANG | pass::WAIT_EAGAIN;
        }
        self.pass(
            rid,
            247,
            a,
            &[pass::WAITID, self.pid as u64, 1, pid as u64, options, a[2]],
        )
    }
}
