//! pidfds: descriptors that name one process, not its number. Each is an
//! object here (`obj::PIDFD`), so that fork, dup and close count its
//! holders as for a pipe's end and poll finds it readable once its process
//! has ended. It names the process by its pid and start time: a pid is
//! given again after its process is reaped, and a signal through a pidfd
//! must never reach the later process (Linux keeps its `struct pid`).

use super::procs::INIT;
use super::{End, Shared, reply, result};
use crate::proto::{obj, word};
use linuxabi::errno;

/// What a pidfd's process has become.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    Live,
    /// Ended, not yet waited for: readable.
    Exited,
    /// Waited for: its pid may be another process's now.
    Reaped,
}

#[derive(Clone, Copy, Debug)]
pub struct Pidfd {
    pub pid: u32,
    /// Its process's start (`Proc::start_ns`): which process of that pid.
    pub start_ns: u64,
    pub state: State,
}

const O_NONBLOCK: u64 = 0o4000;

impl Shared {
    /// `ctl::PIDFD_OPEN`.
    pub(super) fn pidfd_open(&mut self, w: &[u64]) -> End {
        let pid = word(w, 2) as u32;
        let flags = word(w, 3) & O_NONBLOCK;
        let (start_ns, state) = match self.procs.get(pid) {
            Some(p) => (p.start_ns, if p.zombie.is_some() { State::Exited } else { State::Live }),
            // The virtual init never ends.
            None if pid == INIT => (0, State::Live),
            // A thread's tid names no thread group (Linux: EINVAL).
            None if self.procs.target(pid, pid).is_some() => return result(-errno::EINVAL),
            None => return result(-errno::ESRCH),
        };
        let id = self.objs.insert(super::objects::Object {
            kind: obj::PIDFD,
            refs: 1,
            flags,
            pipe: 0,
            pos: 0,
        });
        self.objs.pidfds.insert(id, Pidfd { pid, start_ns, state });
        result(id as i64)
    }

    /// `ctl::PIDFD_PID`: [pid, exited] of a pidfd whose process is not
    /// reaped.
    pub(super) fn pidfd_pid(&self, id: u64) -> End {
        match self.objs.pidfds.get(&id) {
            None => result(-errno::EBADF),
            Some(p) if p.state == State::Reaped => result(-errno::ESRCH),
            Some(p) => reply(&[p.pid as u64, (p.state == State::Exited) as u64]),
        }
    }

    /// `ctl::PIDFD_KILL`: kill's rules and checks, to the pidfd's process
    /// alone (a zombie takes the signal and drops it, as Linux's).
    pub(super) fn pidfd_kill(&mut self, w: &[u64]) -> End {
        let p = match self.objs.pidfds.get(&word(w, 1)) {
            None => return result(-errno::EBADF),
            Some(p) if p.state == State::Reaped => return result(-errno::ESRCH),
            Some(p) => *p,
        };
        let kill = [
            crate::proto::ctl::KILL,
            word(w, 2),
            p.pid as u64,
            word(w, 3),
            word(w, 4),
            word(w, 5),
        ];
        self.kill(&kill)
    }

    /// Process `pid` (started at `start_ns`) ended or was reaped: its
    /// pidfds say so; a poll waiting on one goes on.
    pub(super) fn pidfds_moved(&mut self, pid: u32, start_ns: u64, state: State) {
        let mut moved = false;
        for p in self.objs.pidfds.values_mut() {
            if p.pid == pid && p.start_ns == start_ns && p.state < state {
                p.state = state;
                moved = true;
            }
        }
        if moved {
            self.woke = true;
        }
    }
}
