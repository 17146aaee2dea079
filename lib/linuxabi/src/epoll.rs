//! Linux's epoll interface (x86_64): `epoll_ctl`'s operations, the flags
//! an entry's events may carry, and `struct epoll_event`'s size.

pub const EPOLL_CTL_ADD: u64 = 1;
pub const EPOLL_CTL_DEL: u64 = 2;
pub const EPOLL_CTL_MOD: u64 = 3;
pub const EPOLLEXCLUSIVE: u32 = 1 << 28;
pub const EPOLLWAKEUP: u32 = 1 << 29;
pub const EPOLLONESHOT: u32 = 1 << 30;
pub const EPOLLET: u32 = 1 << 31;
/// The events an entry can report.
pub const EVENTS: u32 = 0x3fff;
/// `struct epoll_event` on x86_64: packed, 12 bytes.
pub const EVENT_LEN: usize = 12;
/// Levels of epoll sets inside epoll sets Linux allows.
pub const MAX_NESTS: usize = 4;
