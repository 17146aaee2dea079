//! Linux's open flags (x86_64): what `open` takes and an open file
//! description keeps, for the personality and the file server's protocol
//! alike.

pub const O_RDONLY: u32 = 0;
pub const O_WRONLY: u32 = 1;
pub const O_RDWR: u32 = 2;
pub const O_ACCMODE: u32 = 3;
pub const O_CREAT: u32 = 0o100;
pub const O_EXCL: u32 = 0o200;
pub const O_NOCTTY: u32 = 0o400;
pub const O_TRUNC: u32 = 0o1000;
pub const O_APPEND: u32 = 0o2000;
pub const O_NONBLOCK: u32 = 0o4000;
pub const O_ASYNC: u32 = 0o20000;
pub const O_DIRECT: u32 = 0o40000;
pub const O_LARGEFILE: u32 = 0o100000;
pub const O_DIRECTORY: u32 = 0o200000;
pub const O_NOFOLLOW: u32 = 0o400000;
pub const O_NOATIME: u32 = 0o1000000;
pub const O_CLOEXEC: u32 = 0o2000000;
/// Opens the object only as a place (for `*at` calls, `fstat` and
/// `readlink` with `AT_EMPTY_PATH`): no permission needed, no data
/// access; with `O_NOFOLLOW`, a symbolic link itself.
pub const O_PATH: u32 = 0o10000000;
/// An unnamed regular file in the directory the path names (with
/// `O_DIRECTORY`, as `O_TMPFILE`; the bit alone is `__O_TMPFILE`).
pub const O_TMPFILE_BIT: u32 = 0o20000000;
pub const O_TMPFILE: u32 = O_TMPFILE_BIT | O_DIRECTORY;
/// The flags F_SETFL may change.
pub const SETFL_MASK: u32 = O_APPEND | O_NONBLOCK | O_ASYNC | O_DIRECT | O_NOATIME;
