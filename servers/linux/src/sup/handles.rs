//! File handles: `name_to_handle_at` and `open_by_handle_at`. A handle
//! names an inode as Linux's ext4 names one (`FILEID_INO32_GEN`: the
//! inode number and its generation, eight bytes), beside the number of
//! the mount it is on; it outlives every descriptor and name of the file,
//! but not the inode: one freed (and perhaps reused, with a new
//! generation) is `ESTALE`. The file server resolves and opens it
//! (`HANDLE`, `OPEN_HANDLE`), with the permission checks of an open; the
//! supervisor checks what Linux checks above the file system, in its
//! order (flags, the path, the handle's memory and size, the capability).

use super::Sup;
use super::fdtable::{self as fdt, Kind, Ofd};
use super::files::{AT_EMPTY_PATH, AT_FDCWD, AT_SYMLINK_FOLLOW, Target};
use super::fs::ROOT;
use super::vfs::VNode;
use alloc::string::String;
use linuxabi::errno;
use linuxabi::structs::StatView;
use tessera_api::fs as api;

/// Linux's largest handle (`MAX_HANDLE_SZ`).
const MAX_HANDLE_SZ: u32 = 128;
/// ext4's handle type for a file named by inode and generation, and the
/// type its encoder reports when the caller's room is too small.
const FILEID_INO32_GEN: i32 = 1;
const FILEID_INVALID: i32 = 255;
/// Bytes of such a handle.
const HANDLE_BYTES: u32 = 8;

impl Sup {
    /// name_to_handle_at(dirfd, path, handle, mount_id, flags).
    pub(super) fn name_to_handle_at(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let (dirfd, path_at, fh, mount_id, flags) = (a[0], a[1], a[2], a[3], a[4] as u32 as u64);
        if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(errno::EINVAL);
        }
        let path = self.read_path_empty(rid, path_at, flags & AT_EMPTY_PATH != 0)?;
        let (ino, generation, mount) = self.handle_of(dirfd, &path, flags & AT_SYMLINK_FOLLOW != 0)?;
        let head = self.read_mem(rid, fh, 8)?;
        let room = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        if room > MAX_HANDLE_SZ {
            return Err(errno::EINVAL);
        }
        // Too small: the size needed goes back (and the mount), as Linux's.
        let fits = room >= HANDLE_BYTES;
        let mut out = [0u8; 16];
        out[..4].copy_from_slice(&HANDLE_BYTES.to_le_bytes());
        let ty = if fits { FILEID_INO32_GEN } else { FILEID_INVALID };
        out[4..8].copy_from_slice(&ty.to_le_bytes());
        out[8..12].copy_from_slice(&ino.to_le_bytes());
        out[12..].copy_from_slice(&generation.to_le_bytes());
        let n = if fits { 16 } else { 8 };
        self.write_mem(rid, mount_id, &mount.to_le_bytes())?;
        self.write_mem(rid, fh, &out[..n])?;
        if fits { Ok(0) } else { Err(errno::EOVERFLOW) }
    }

    /// The handle of what `path` (relative to `dirfd`) names: inode,
    /// generation and mount id. A file served here (`/proc`, `/dev`, a
    /// pipe) has none: EOPNOTSUPP, as Linux's file systems without export
    /// operations.
    fn handle_of(&mut self, dirfd: u64, path: &str, follow: bool) -> Result<(u32, u32, i32), i64> {
        let cwd = dirfd as i64 == AT_FDCWD || dirfd as i32 == AT_FDCWD as i32;
        if path.is_empty() && !cwd {
            let fd = match self.fds.ofd(dirfd)?.borrow().kind {
                Kind::File { fd, .. } => fd,
                _ => return Err(errno::EOPNOTSUPP),
            };
            let (ino, generation, id) = self.fs.handle(fd, api::AT_EMPTY_PATH, b"")?;
            return Ok((ino, generation, mount_id(id)));
        }
        let (d, rel) = match self.target(dirfd, path)? {
            Target::Fs(d, rel) => (d, rel),
            Target::Virt(abs) => {
                let (_, node) = self.vresolve(&abs)?;
                return match node {
                    VNode::Link(real) if follow => self.handle_of(AT_FDCWD as u64, &real, follow),
                    _ => Err(errno::EOPNOTSUPP),
                };
            }
        };
        let flags = if rel.is_empty() {
            api::AT_EMPTY_PATH
        } else if follow {
            api::AT_SYMLINK_FOLLOW
        } else {
            0
        };
        let (ino, generation, id) = self.fs.handle(d, flags, rel.as_bytes())?;
        Ok((ino, generation, mount_id(id)))
    }

    /// open_by_handle_at(mount_fd, handle, flags): the file the handle
    /// names on the file system of `mount_fd`.
    pub(super) fn open_by_handle_at(&mut self, rid: u64, a: [u64; 6]) -> Result<u64, i64> {
        let (mount_fd, fh, flags) = (a[0], a[1], a[2] as u32);
        if !self.cred.caps.has(linuxabi::caps::CAP_DAC_READ_SEARCH) {
            return Err(errno::EPERM);
        }
        let head = self.read_mem(rid, fh, 8)?;
        let bytes = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let ty = i32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if bytes == 0 || bytes > MAX_HANDLE_SZ {
            return Err(errno::EINVAL);
        }
        let body = self.read_mem(rid, fh + 8, bytes as usize)?;
        let on = if mount_fd as i64 == AT_FDCWD || mount_fd as i32 == AT_FDCWD as i32 {
            self.cwd_fd.unwrap_or(ROOT)
        } else {
            match self.fds.ofd(mount_fd)?.borrow().kind {
                Kind::File { fd, .. } => fd,
                // A descriptor of no file system with handles (a pipe,
                // the terminal, /proc) decodes none.
                _ => return Err(errno::ESTALE),
            }
        };
        if ty != FILEID_INO32_GEN || bytes < HANDLE_BYTES {
            return Err(errno::ESTALE);
        }
        let ino = u32::from_le_bytes([body[0], body[1], body[2], body[3]]);
        let generation = u32::from_le_bytes([body[4], body[5], body[6], body[7]]);
        let mut fsflags =
            flags & (fdt::O_ACCMODE | fdt::O_TRUNC | fdt::O_APPEND | fdt::O_DIRECTORY | fdt::O_NOFOLLOW | fdt::O_PATH);
        if flags & fdt::O_ACCMODE == 3 {
            fsflags = (fsflags & !3) | fdt::O_RDWR;
        }
        if flags & fdt::O_PATH != 0 {
            fsflags = (fsflags & (fdt::O_DIRECTORY | fdt::O_NOFOLLOW)) | api::O_PATH;
        }
        let (fd, cache) = self.fs.open_handle(on, fsflags, ino, generation)?;
        let dir = self
            .fs
            .fstat(fd)
            .is_ok_and(|b| StatView::parse(&b).mode & linuxabi::structs::S_IFMT == 0o040000);
        let keep = flags & !(fdt::O_CLOEXEC | fdt::O_CREAT | fdt::O_EXCL | fdt::O_TRUNC | fdt::O_NOCTTY);
        // Its path is not known (a handle names no path): the root of its
        // mount stands for it in /proc/self/fd.
        let o = Ofd::new(Kind::File { fd, dir }, keep, self.mount_root_of(on));
        if flags & (fdt::O_DIRECT | fdt::O_PATH) == 0 && !dir {
            o.borrow_mut().cache = cache;
        }
        self.install(o, flags)
    }

    fn mount_root_of(&self, fd: u32) -> String {
        let id = self.fs.mount_of(fd);
        self.fs
            .mounts
            .list()
            .into_iter()
            .find(|m| m.id == id)
            .map_or_else(|| String::from("/"), |m| m.path)
    }
}

/// The mount id a handle reports: the supervisor's mount number, the
/// system's file system being 0, plus one (Linux's ids are never 0).
fn mount_id(id: u32) -> i32 {
    id as i32 + 1
}
