//! The file server's protocol (seed 003's file process), shaped for the
//! Linux personality that will translate Linux's calls into it: flags,
//! modes and errors are Linux's values, `stat`, `statfs` and directory
//! records are Linux's x86_64 structures byte for byte, paths are
//! resolved as the `*at` calls resolve them, and every request that
//! names a path carries the credentials it is made with.
//!
//! **Handles.** `OPEN` gives the client a file number (its own: each
//! client has its own numbers). Reads and writes are positional (`pread`,
//! `pwrite`): the position of an open file belongs to the client (the
//! personality keeps it in its open file descriptions, which processes
//! share across `fork`). Appending is a flag of the write.
//!
//! **Paths.** A path request has the header [`PathHeader`]: credentials,
//! the directory a relative path starts from (a file number of the
//! client's, or [`AT_FDCWD`]: the root, since the server knows no working
//! directories) and flags; then the entry's fields, then the path(s).
//!
//! **Results.** Most entries reply with an `i64`: a value, or a negated
//! errno; some add a structure after it. The entries whose reply is the
//! caller's data itself (`READ`, `READDIR`: the bytes land straight in the
//! caller's buffer) have its length as the call's status; if they fail,
//! the call fails with [`FAILED`] and `ERRNO` says why.
//!
//! **Writes** carry the data as the whole message, so that it can be read
//! from the client's own buffer with no copy in between: `WRITE_TO` first
//! says where the next writes go (file, offset, flags); each `WRITE` then
//! writes its message there and moves the offset on. A client that keeps
//! writing one file sends `WRITE_TO` once, and one that opens a file to
//! write it none: `OPEN` with [`OPEN_WRITE_HERE`] says the new file is
//! where the next writes go, from its start.
//!
//! Entries and their messages (all little-endian):
//!
//! | entry | message | reply |
//! |---|---|---|
//! | `OPEN` | header (flags `O_*`), mode u32, flags u32 ([`OPEN_WRITE_HERE`], [`OPEN_EXEC`]), path | fd, then the id u64 of the kernel's cache of the file (0: none); with `OPEN_EXEC` then its `Stat` |
//! | `CLOSE` | fd u32, 0 u32 | 0 |
//! | `READ` | fd u32, flags u32 (`MISSED`, `NOATIME`), offset u64, len u64 | the bytes |
//! | `WRITE_TO` | fd u32, flags u32 (`APPEND`), offset u64 | 0 |
//! | `WRITE` | the bytes | n, then u64: where they went |
//! | `TRUNCATE` | fd u32, 0 u32, size u64 | 0 |
//! | `FSTAT` | fd u32, 0 u32 | 0, then [`Stat`] |
//! | `STAT` | header (`AT_SYMLINK_NOFOLLOW`), path | 0, then [`Stat`] |
//! | `READDIR` | fd u32, 0 u32, position u64 | `linux_dirent64` records |
//! | `MKDIR` | header, mode u32, 0 u32, path | 0 |
//! | `RMDIR` | header, path | 0 |
//! | `UNLINK` | header (`AT_REMOVEDIR`: rmdir), path | 0 |
//! | `RENAME` | header (and renameat2's `RENAME_NOREPLACE`, `RENAME_EXCHANGE`, `RENAME_WHITEOUT`), new dirfd u32, old length u32, old path, new path | 0 |
//! | `LINK` | as `RENAME` (existing, new) | 0 |
//! | `SYMLINK` | header (dirfd of the link), target length u32, 0 u32, target, link path | 0 |
//! | `READLINK` | header (`AT_EMPTY_PATH`: dirfd is the link), path | length, then the target |
//! | `SETATTR` | header (`AT_EMPTY_PATH`: dirfd is the file), [`SetAttr`], path | 0 |
//! | `STATFS` | | 0, then [`StatFs`] |
//! | `SYNC` | | 0 |
//! | `FSYNC` | fd u32, 0 u32 | 0 |
//! | `ERRNO` | | the errno of the last failed READ/READDIR (EIO if none) |
//! | `STATS` | | text, `name value` per line |
//! | `SHARE` | fd u32, 0 u32, pid u64 | fd: the same open file, numbered for client `pid` |
//! | `MKNOD` | header, mode u32 (type and permissions), device u32 (major << 20 \| minor), path | 0 |
//! | `DROP_PAGES` | flags u64 (optional; [`DROP_BLOCK_CACHE`]) | 0: the kernel's file caches of this server forget every page (and the block cache writes back and forgets its own) |
//! | `HANDLE` | header (`AT_SYMLINK_FOLLOW`; `AT_EMPTY_PATH`: dirfd is the file), path | 0, then inode u32, generation u32 |
//! | `OPEN_HANDLE` | header (flags `O_*`; dirfd unused), inode u32, generation u32 | as `OPEN` (`ESTALE`: no such file now) |
//! | `MEMFD` | header (dirfd: the file, for seals), op u32 ([`MEMFD_CREATE`]...), value u32 (the seals made or added) | CREATE: as `OPEN`; else the file's seals (`EINVAL`: a file with none) |
//! | `FALLOCATE` | fd u32, mode u32 (Linux's `FALLOC_FL_*`), offset u64, len u64 | 0 |
//! | `SEEK` | fd u32, whence u32 (`SEEK_DATA`, `SEEK_HOLE`), offset u64 | the offset found (ENXIO: none) |
//! | `SET_ROOT` | fd u32 (a directory; `AT_FDCWD`: the file system's root), 0 u32 | 0: the client's root from now on |
//! | `XATTR` | header (`AT_SYMLINK_NOFOLLOW`; `AT_EMPTY_PATH`: dirfd is the file), op u32 ([`XATTR_GET`]...), flags u32 (`XATTR_CREATE`, `XATTR_REPLACE`), name length u32, size u32 (SET: the value's length; GET, LIST: the caller's buffer, 0: only the size), name, value, path | size, then the value or the NUL-ended names (when they fit `size`, else `ERANGE`) |

pub mod client;

pub use crate::errno::Errno;
use crate::wire::{Reader, Writer};
use tessera_rt::abi::Error;

pub const NAME: &str = "fs";

pub const OPEN: u64 = 0;
pub const CLOSE: u64 = 1;
pub const READ: u64 = 2;
pub const WRITE_TO: u64 = 3;
pub const WRITE: u64 = 4;
pub const TRUNCATE: u64 = 5;
pub const FSTAT: u64 = 6;
pub const STAT: u64 = 7;
pub const READDIR: u64 = 8;
pub const MKDIR: u64 = 9;
pub const RMDIR: u64 = 10;
pub const UNLINK: u64 = 11;
pub const RENAME: u64 = 12;
pub const LINK: u64 = 13;
pub const SYMLINK: u64 = 14;
pub const READLINK: u64 = 15;
pub const SETATTR: u64 = 16;
pub const STATFS: u64 = 17;
pub const SYNC: u64 = 18;
pub const FSYNC: u64 = 19;
pub const ERRNO: u64 = 20;
pub const STATS: u64 = 21;
/// The same open file for another client (a Linux process's supervisor
/// hands its files to its child's at fork: both have it open, each under
/// its own number).
pub const SHARE: u64 = 22;
/// The kernel's file caches of this server forget every page (with the
/// block cache's DROP, Linux's drop_caches).
pub const DROP_PAGES: u64 = 25;
/// DROP_PAGES's flag: the block cache under the file server writes back
/// and forgets its pages too (its DROP).
pub const DROP_BLOCK_CACHE: u64 = 1;
/// A FIFO, socket, device or regular file made by name (mknod).
pub const MKNOD: u64 = 24;
/// Extended attributes: get, set, list, remove (Linux's `*xattr` calls
/// with their permission rules, from the request's credentials).
pub const XATTR: u64 = 26;
/// Space allocated ahead or given back (Linux's `fallocate` on a regular
/// file: allocate, keep size, punch a hole, zero a range).
pub const FALLOCATE: u64 = 27;
/// lseek's SEEK_DATA and SEEK_HOLE: where the next data or hole of a
/// file starts.
pub const SEEK: u64 = 28;
pub const SEEK_DATA: u32 = 3;
pub const SEEK_HOLE: u32 = 4;
pub use linuxabi::fallocate::{
    FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE,
};
/// A client's root directory (Linux's chroot): its `AT_FDCWD`, absolute
/// paths and absolute symbolic links start there and `..` there stays
/// there. The server holds the directory open as long as it is a root.
pub const SET_ROOT: u64 = 33;
pub const XATTR_GET: u32 = 0;
pub const XATTR_SET: u32 = 1;
pub const XATTR_LIST: u32 = 2;
pub const XATTR_REMOVE: u32 = 3;
/// `setxattr`'s flags.
pub const XATTR_CREATE: u32 = 1;
pub const XATTR_REPLACE: u32 = 2;
/// Linux's largest value (`XATTR_SIZE_MAX`) and list (`XATTR_LIST_MAX`).
pub const XATTR_SIZE_MAX: usize = 65536;
/// The file handle of a path (Linux's `name_to_handle_at`): inode number
/// and generation, which an inode freed and reused does not keep.
pub const HANDLE: u64 = 30;
/// Opens the file a handle names (`open_by_handle_at`), with the
/// permission checks of an open; a handle of a file gone is `ESTALE`.
pub const OPEN_HANDLE: u64 = 31;
/// An anonymous file (Linux's `memfd_create`) and its seals: CREATE
/// makes an unnamed regular file (`OPEN_TMPFILE`'s kind) in the root's
/// file system, mode 0777, owned by the caller, open for reading and
/// writing, with the seals given; GET and ADD read and add the seals of
/// one, which every WRITE, TRUNCATE and O_TRUNC open of it then obeys.
pub const MEMFD: u64 = 32;
pub const MEMFD_CREATE: u32 = 0;
pub const MEMFD_GET_SEALS: u32 = 1;
pub const MEMFD_ADD_SEALS: u32 = 2;
/// The kernel's call for a page of a file (`abi::PAGER_ENTRY`): the
/// server is the pager of the regions whose bytes are in its files (an
/// OFF2F program's data), the file named by `pager_object`.
pub const PAGE_IN: u64 = tessera_rt::abi::PAGER_ENTRY;
/// Every entry above, as the mask `acc` takes (bit n: entry n).
pub const ENTRIES: u64 = (1 << 35) - 1;

/// How a page-in names a file: inode, size and modification time, so
/// that a file changed since exec is not read as if it were the same.
pub fn pager_object(ino: u64, size: u64, mtime: (i64, i64)) -> [u64; 4] {
    [ino, size, mtime.0 as u64, mtime.1 as u64]
}

/// How READ and READDIR fail: the call ends with this error and `ERRNO`
/// gives the errno.
pub const FAILED: Error = Error::Busy;

/// Most bytes one WRITE stores (a longer message is written in part: the
/// reply says how much).
pub const MAX_WRITE: usize = 128 * 1024;

// Linux's open flags, as `open` takes them.
pub use linuxabi::fcntl::{
    O_ACCMODE, O_APPEND, O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_PATH, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY,
};

/// The `*at` calls' "no directory": here, the root.
pub const AT_FDCWD: u32 = -100i32 as u32;
pub const AT_SYMLINK_NOFOLLOW: u32 = 0x100;
pub const AT_REMOVEDIR: u32 = 0x200;
/// `LINK` and `HANDLE`: a final symbolic link is followed.
pub const AT_SYMLINK_FOLLOW: u32 = 0x400;
/// The request is about the directory file number itself (no path).
pub const AT_EMPTY_PATH: u32 = 0x1000;
/// `RENAME` header flags, renameat2's: fail if the new name exists, or
/// swap the two names.
pub const RENAME_NOREPLACE: u32 = 1;
pub const RENAME_EXCHANGE: u32 = 2;
/// `RENAME` header flag: the old name is left as a whiteout.
pub const RENAME_WHITEOUT: u32 = 4;

/// `WRITE_TO` flag: each write goes to the end of the file.
pub const APPEND: u32 = 1;

/// `OPEN` flag (the u32 after the mode): a file opened for writing is
/// where the client's next writes go, at offset 0 (`APPEND` with
/// `O_APPEND`), as if `WRITE_TO` had said so. A client that keeps its
/// write context (as `client::File` does) forgets the old one.
pub const OPEN_WRITE_HERE: u32 = 1;

/// `OPEN` flag: the file is opened to run it (Linux's
/// `deny_write_access`). It opens only while no one has it open for
/// writing, and while it stays open no one may open it for writing or
/// truncate it: `ETXTBSY` both ways. The reply carries the file's `Stat`
/// after the cache id; no cache is granted (a program is read once).
pub const OPEN_EXEC: u32 = 2;

/// `OPEN` flag: the path names a directory, in whose file system an
/// unnamed regular file is made (Linux's `O_TMPFILE`), open for writing,
/// freed at its last close; without `O_EXCL` a `LINK` (`AT_EMPTY_PATH`)
/// may give it a name once.
pub const OPEN_TMPFILE: u32 = 4;

/// `READ` flag: the kernel's cache of the file missed; the server
/// publishes the pages read there for the client's next reads (a client
/// that does not read the cache sends none, and costs the server nothing
/// for it).
pub const MISSED: u32 = 1;

/// `READ` flag: the reader opened the file with O_NOATIME; the access
/// time stays as it is.
pub const NOATIME: u32 = 2;

/// Who makes a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cred {
    pub uid: u32,
    pub gid: u32,
}

/// The start of every path request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathHeader {
    pub cred: Cred,
    pub dirfd: u32,
    pub flags: u32,
}

impl PathHeader {
    pub const LEN: usize = 16;

    pub fn write(&self, w: &mut Writer) {
        w.u32(self.cred.uid).u32(self.cred.gid).u32(self.dirfd).u32(self.flags);
    }

    /// A whole path request: this header, the entry's fields, then the
    /// paths (each NUL-terminated by the caller).
    pub fn request(&self, fields: &[u8], paths: &[&[u8]]) -> alloc::vec::Vec<u8> {
        let len = Self::LEN + fields.len() + paths.iter().map(|p| p.len()).sum::<usize>();
        let mut buf = alloc::vec![0u8; len];
        let mut w = Writer::new(&mut buf);
        self.write(&mut w);
        w.bytes(fields);
        for p in paths {
            w.bytes(p);
        }
        buf
    }

    pub fn read(r: &mut Reader) -> Option<PathHeader> {
        Some(PathHeader {
            cred: Cred {
                uid: r.u32()?,
                gid: r.u32()?,
            },
            dirfd: r.u32()?,
            flags: r.u32()?,
        })
    }
}

/// `SETATTR`'s fields, with `valid` saying which apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetAttr {
    pub valid: u32,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub atime: (i64, u32),
    pub mtime: (i64, u32),
}

impl SetAttr {
    pub const MODE: u32 = 1;
    pub const UID: u32 = 2;
    pub const GID: u32 = 4;
    pub const SIZE: u32 = 8;
    pub const ATIME: u32 = 16;
    pub const MTIME: u32 = 32;
    /// The access or modification time becomes the server's now.
    pub const ATIME_NOW: u32 = 64;
    pub const MTIME_NOW: u32 = 128;
    pub const LEN: usize = 56;

    pub fn write(&self, w: &mut Writer) {
        w.u32(self.valid)
            .u32(self.mode)
            .u32(self.uid)
            .u32(self.gid)
            .u64(self.size);
        w.i64(self.atime.0).u32(self.atime.1).u32(0);
        w.i64(self.mtime.0).u32(self.mtime.1).u32(0);
    }

    pub fn read(r: &mut Reader) -> Option<SetAttr> {
        let mut a = SetAttr {
            valid: r.u32()?,
            mode: r.u32()?,
            uid: r.u32()?,
            gid: r.u32()?,
            size: r.u64()?,
            ..SetAttr::default()
        };
        a.atime = (r.i64()?, r.u32()?);
        r.u32()?;
        a.mtime = (r.i64()?, r.u32()?);
        r.u32()?;
        Some(a)
    }
}

/// File types in `Stat::mode` (Linux's `S_IF*`).
pub const S_IFMT: u32 = 0o170000;
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFLNK: u32 = 0o120000;

/// Linux's x86_64 `struct stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u64,
    pub size: i64,
    pub blksize: i64,
    pub blocks: i64,
    pub atime: (i64, i64),
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl Stat {
    pub const LEN: usize = 144;

    pub fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }

    pub fn is_symlink(&self) -> bool {
        self.mode & S_IFMT == S_IFLNK
    }

    pub fn write(&self, w: &mut Writer) {
        w.u64(self.dev).u64(self.ino).u64(self.nlink);
        w.u32(self.mode).u32(self.uid).u32(self.gid).u32(0);
        w.u64(self.rdev).i64(self.size).i64(self.blksize).i64(self.blocks);
        for (s, ns) in [self.atime, self.mtime, self.ctime] {
            w.i64(s).i64(ns);
        }
        w.bytes(&[0; 24]);
    }

    pub fn read(r: &mut Reader) -> Option<Stat> {
        let mut s = Stat {
            dev: r.u64()?,
            ino: r.u64()?,
            nlink: r.u64()?,
            mode: r.u32()?,
            uid: r.u32()?,
            gid: r.u32()?,
            ..Stat::default()
        };
        r.u32()?;
        s.rdev = r.u64()?;
        s.size = r.i64()?;
        s.blksize = r.i64()?;
        s.blocks = r.i64()?;
        s.atime = (r.i64()?, r.i64()?);
        s.mtime = (r.i64()?, r.i64()?);
        s.ctime = (r.i64()?, r.i64()?);
        r.bytes(24)?;
        Some(s)
    }
}

/// `statfs`'s `f_type` for ext2.
pub const EXT2_SUPER_MAGIC: i64 = 0xEF53;

/// Linux's x86_64 `struct statfs`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatFs {
    pub kind: i64,
    pub bsize: i64,
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub fsid: u64,
    pub namelen: i64,
    pub frsize: i64,
    pub flags: i64,
}

impl StatFs {
    pub const LEN: usize = 120;
    /// `flags`: mounted read-only (`ST_RDONLY`).
    pub const RDONLY: i64 = 1;

    pub fn write(&self, w: &mut Writer) {
        w.i64(self.kind)
            .i64(self.bsize)
            .u64(self.blocks)
            .u64(self.bfree)
            .u64(self.bavail);
        w.u64(self.files)
            .u64(self.ffree)
            .u64(self.fsid)
            .i64(self.namelen)
            .i64(self.frsize);
        w.i64(self.flags).bytes(&[0; 32]);
    }

    pub fn read(r: &mut Reader) -> Option<StatFs> {
        let s = StatFs {
            kind: r.i64()?,
            bsize: r.i64()?,
            blocks: r.u64()?,
            bfree: r.u64()?,
            bavail: r.u64()?,
            files: r.u64()?,
            ffree: r.u64()?,
            fsid: r.u64()?,
            namelen: r.i64()?,
            frsize: r.i64()?,
            flags: r.i64()?,
        };
        r.bytes(32)?;
        Some(s)
    }
}

/// Directory entry types (`d_type`).
pub const DT_UNKNOWN: u8 = 0;
pub const DT_FIFO: u8 = 1;
pub const DT_CHR: u8 = 2;
pub const DT_DIR: u8 = 4;
pub const DT_BLK: u8 = 6;
pub const DT_REG: u8 = 8;
pub const DT_LNK: u8 = 10;
pub const DT_SOCK: u8 = 12;

/// Bytes of a `linux_dirent64` record for a name of `name_len` bytes:
/// the fixed 19 bytes, the name and its NUL, rounded up to 8.
pub const fn dirent_len(name_len: usize) -> usize {
    (19 + name_len + 1 + 7) & !7
}

/// Writes one `linux_dirent64` record at the start of `buf`; returns its
/// length, or `None` if it does not fit.
pub fn write_dirent(buf: &mut [u8], ino: u64, next: u64, kind: u8, name: &[u8]) -> Option<usize> {
    let len = dirent_len(name.len());
    let rec = buf.get_mut(..len)?;
    rec.fill(0);
    Writer::new(rec)
        .u64(ino)
        .u64(next)
        .bytes(&(len as u16).to_le_bytes())
        .bytes(&[kind])
        .bytes(name);
    Some(len)
}

/// One record of a READDIR reply.
#[derive(Debug, Clone, Copy)]
pub struct Dirent<'a> {
    pub ino: u64,
    /// Where the next READDIR starts, to continue after this entry.
    pub next: u64,
    pub kind: u8,
    pub name: &'a [u8],
}

/// The records of a READDIR reply, in order; a malformed one ends them.
pub fn dirents(buf: &[u8]) -> impl Iterator<Item = Dirent<'_>> {
    let mut at = 0;
    core::iter::from_fn(move || {
        let rec = buf.get(at..)?;
        let mut r = Reader::new(rec);
        let ino = r.u64()?;
        let next = r.u64()?;
        let len = u16::from_le_bytes(r.bytes(2)?.try_into().ok()?) as usize;
        let kind = r.bytes(1)?[0];
        if len < 20 || len > rec.len() {
            return None;
        }
        let raw = &rec[19..len];
        let name = &raw[..raw.iter().position(|&c| c == 0)?];
        at += len;
        Some(Dirent { ino, next, kind, name })
    })
}
