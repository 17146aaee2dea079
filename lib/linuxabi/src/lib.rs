//! The Linux x86_64 interface as Tessera's Linux personality speaks it
//! (`servers/linux`): system-call numbers, error numbers, signals and their
//! frames, the structures programs read and write (byte for byte), the
//! terminal's line discipline, record locks, scheduling attributes, and the path and executable
//! checks that need no system. Pure logic, tested on the host; the
//! personality's servers do the communication.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod caps;
pub mod elf;
pub mod epoll;
pub mod errno;
pub mod eventfd;
pub mod fallocate;
pub mod fanotify;
pub mod fcntl;
pub mod frame;
pub mod inotify;
pub mod keys;
pub mod loopdev;
pub mod mlock;
pub mod mman;
pub mod mqueue;
pub mod nr;
pub mod ntp;
pub mod path;
pub mod pipe;
pub mod ptimer;
pub mod reclock;
pub mod rename;
pub mod sched;
pub mod seals;
pub mod signal;
pub mod structs;
pub mod sysv;
pub mod termios;
pub mod vmrw;

/// Process ids are below this (`/proc/sys/kernel/pid_max`; Linux's
/// largest on 64-bit machines): the shared server's ids wrap before it.
pub const PID_MAX: u32 = 4_194_304;
