//! The supervisor as a client of the file server (`tessera_api::fs`,
//! seed 003's file process): requests in the server's protocol, made with
//! the process's credentials. File data never passes through the
//! supervisor: a read's reply buffer and a write's message are the Linux
//! process's own memory (`call_for`), so the block cache copies straight
//! between its page and the program's buffer (seed 003: one copy).

use alloc::vec;
use alloc::vec::Vec;
use linuxabi::errno;
use tessera_api::fs::{self as api, Cred, PathHeader};
use tessera_api::peer;
use tessera_api::wire::{Reader, Writer};
use tessera_rt::abi::Error;
use tessera_rt::abi::linux::{CallFor, MSG_IN_CALLER, REPLY_IN_CALLER};
use tessera_rt::sys;
use tessera_rt::sys::calls;

/// The `*at` calls' "the working directory" as the file server takes it:
/// its root. The supervisor sends its own directory's number instead.
pub const ROOT: u32 = api::AT_FDCWD;

pub struct Fs {
    pub pid: u64,
    pub cred: Cred,
    /// Where the server's write context points: (fd, flags, offset).
    ctx: Option<(u32, u32, u64)>,
    /// The mounted file systems' servers (`mounts.rs`): a file number of
    /// one carries its mount's number in its high bits.
    pub mounts: super::mounts::Table,
}

/// A Linux errno for a failed rendezvous with the file server.
fn errno_of(e: Error) -> i64 {
    match e {
        Error::Fault => errno::EFAULT,
        Error::NoMemory => errno::ENOMEM,
        Error::Invalid => errno::EINVAL,
        Error::Denied => errno::EACCES,
        _ => errno::EIO,
    }
}

impl Fs {
    pub fn new(pid: u64) -> Fs {
        Fs {
            pid,
            cred: Cred::default(),
            ctx: None,
            mounts: Default::default(),
        }
    }

    /// The server of file (or directory token) `fd`, its number there,
    /// and its mount's number.
    fn route(&self, fd: u32) -> (u64, u32, u32) {
        self.mounts.route(self.pid, fd)
    }

    /// The number of the mount file `fd` is on (0: the system's).
    pub fn mount_of(&self, fd: u32) -> u32 {
        self.route(fd).2
    }

    /// Why the last READ or READDIR of server `pid` failed.
    fn last_errno_at(&self, pid: u64, e: Error) -> i64 {
        if e != api::FAILED {
            return errno_of(e);
        }
        let mut r = [0u8; 8];
        match sys::call(pid, api::ERRNO, &[], &mut r) {
            Ok(8) => i64::from_le_bytes(r),
            _ => errno::EIO,
        }
    }

    /// A request whose reply is a result word, then `extra`'s bytes.
    pub fn result(&self, entry: u64, msg: &[u8], extra: &mut [u8]) -> Result<u64, i64> {
        self.result_at(self.pid, entry, msg, extra)
    }

    fn result_at(&self, pid: u64, entry: u64, msg: &[u8], extra: &mut [u8]) -> Result<u64, i64> {
        peer::call_result(pid, entry, msg, extra, errno_of)
    }

    /// A path request's message: header, fields, paths.
    pub fn path_msg(&self, dirfd: u32, flags: u32, fields: &[u8], paths: &[&[u8]]) -> Vec<u8> {
        PathHeader {
            cred: self.cred,
            dirfd,
            flags,
        }
        .request(fields, paths)
    }

    pub fn path_op(&self, entry: u64, dirfd: u32, flags: u32, fields: &[u8], paths: &[&[u8]]) -> Result<u64, i64> {
        self.path_call(entry, dirfd, flags, fields, paths, &mut [])
    }

    /// A path request to the server of `dirfd`; RENAME and LINK name
    /// their second directory in their fields, which must be the same
    /// server's (EXDEV).
    fn path_call(
        &self,
        entry: u64,
        dirfd: u32,
        flags: u32,
        fields: &[u8],
        paths: &[&[u8]],
        extra: &mut [u8],
    ) -> Result<u64, i64> {
        let (pid, local, id) = self.route(dirfd);
        let mut fields = fields.to_vec();
        if (entry == api::RENAME || entry == api::LINK) && fields.len() >= 4 {
            let nd = u32::from_le_bytes([fields[0], fields[1], fields[2], fields[3]]);
            let (npid, nlocal, _) = self.route(nd);
            if npid != pid {
                return Err(errno::EXDEV);
            }
            fields[..4].copy_from_slice(&nlocal.to_le_bytes());
        }
        // A read-only mount takes no change (Linux's VFS checks a
        // mount's flag the same way, above the file system, after EXDEV).
        let changes = matches!(
            entry,
            api::MKDIR | api::RMDIR | api::UNLINK | api::RENAME | api::LINK | api::SYMLINK | api::SETATTR | api::MKNOD
        );
        if changes && self.mounts.read_only(id) {
            return Err(errno::EROFS);
        }
        self.result_at(pid, entry, &self.path_msg(local, flags, &fields, paths), extra)
    }

    pub fn open(&mut self, dirfd: u32, path: &[u8], flags: u32, mode: u32) -> Result<u32, i64> {
        self.open_cached(dirfd, path, flags, mode).map(|(fd, _)| fd)
    }

    /// `open`, with the id of the kernel's cache of the file that its
    /// server granted this supervisor (0: none). A file opened for
    /// writing is the server's write context from then on (its first
    /// write, most often at 0, needs no WRITE_TO).
    /// Whether the file system of directory `dirfd` was mounted with
    /// `flag` (MS_NODEV: it refuses device files; MS_NOEXEC: programs).
    pub fn mounted_with(&self, dirfd: u32, flag: u64) -> bool {
        self.mounts.has(self.route(dirfd).2, flag)
    }

    pub fn open_cached(&mut self, dirfd: u32, path: &[u8], flags: u32, mode: u32) -> Result<(u32, u64), i64> {
        self.open_with(dirfd, path, flags, mode, 0)
    }

    /// An unnamed file (`OPEN_TMPFILE`) in the directory at `path`, and
    /// its cache id, as `open_cached`.
    pub fn open_unnamed(&mut self, dirfd: u32, path: &[u8], flags: u32, mode: u32) -> Result<(u32, u64), i64> {
        self.open_with(dirfd, path, flags, mode, api::OPEN_TMPFILE)
    }

    fn open_with(&mut self, dirfd: u32, path: &[u8], flags: u32, mode: u32, more: u32) -> Result<(u32, u64), i64> {
        let mut fields = [0u8; 8];
        Writer::new(&mut fields).u32(mode).u32(api::OPEN_WRITE_HERE | more);
        let id = self.route(dirfd).2;
        if self.mounts.read_only(id) {
            const O_TRUNC: u32 = 0o1000;
            const O_CREAT: u32 = 0o100;
            if flags & api::O_ACCMODE != api::O_RDONLY || flags & O_TRUNC != 0 {
                return Err(errno::EROFS);
            }
            if flags & O_CREAT != 0 {
                // An existing file opens; a new one cannot be made.
                return match self.open_with(dirfd, path, flags & !O_CREAT, mode, more) {
                    Err(errno::ENOENT) => Err(errno::EROFS),
                    r => r,
                };
            }
        }
        let mut cache = [0u8; 8];
        match self.path_call(api::OPEN, dirfd, flags, &fields, &[path], &mut cache) {
            // Creating the root (no last name to the file server: EBUSY)
            // is creating a directory's name.
            Err(errno::EBUSY) => Err(errno::EISDIR),
            Err(e) => Err(e),
            Ok(fd) => {
                let fd = super::mounts::tag(id, fd as u32);
                if flags & api::O_ACCMODE != api::O_RDONLY && flags & api::O_PATH == 0 {
                    let append = if flags & api::O_APPEND != 0 { api::APPEND } else { 0 };
                    self.ctx = Some((fd, append, 0));
                }
                Ok((fd, u64::from_le_bytes(cache)))
            }
        }
    }

    /// The handle of the file at `path` (`HANDLE`): inode, generation,
    /// and the number of the mount it is on.
    pub fn handle(&self, dirfd: u32, flags: u32, path: &[u8]) -> Result<(u32, u32, u32), i64> {
        let mut out = [0u8; 8];
        self.path_call(api::HANDLE, dirfd, flags, &[], &[path], &mut out)?;
        let mut r = Reader::new(&out);
        let (ino, generation) = (r.u32().ok_or(errno::EIO)?, r.u32().ok_or(errno::EIO)?);
        Ok((ino, generation, self.route(dirfd).2))
    }

    /// Opens the file a handle names on the file system of `mount_fd`
    /// (`OPEN_HANDLE`), and its cache id, as `open_cached`.
    pub fn open_handle(&mut self, mount_fd: u32, flags: u32, ino: u32, generation: u32) -> Result<(u32, u64), i64> {
        let (pid, _, id) = self.route(mount_fd);
        if flags & api::O_ACCMODE != api::O_RDONLY && self.mounts.read_only(id) {
            return Err(errno::EROFS);
        }
        let mut fields = [0u8; 8];
        Writer::new(&mut fields).u32(ino).u32(generation);
        let msg = self.path_msg(ROOT, flags, &fields, &[]);
        let mut cache = [0u8; 8];
        let fd = self.result_at(pid, api::OPEN_HANDLE, &msg, &mut cache)?;
        let fd = super::mounts::tag(id, fd as u32);
        if flags & api::O_ACCMODE != api::O_RDONLY && flags & api::O_PATH == 0 {
            let append = if flags & api::O_APPEND != 0 { api::APPEND } else { 0 };
            self.ctx = Some((fd, append, 0));
        }
        Ok((fd, u64::from_le_bytes(cache)))
    }

    /// A new anonymous file (`MEMFD` CREATE) with `seals`, on the
    /// system's file server, and its cache id.
    pub fn memfd_create(&mut self, seals: u32) -> Result<(u32, u64), i64> {
        let mut fields = [0u8; 8];
        Writer::new(&mut fields).u32(api::MEMFD_CREATE).u32(seals);
        let msg = self.path_msg(ROOT, 0, &fields, &[]);
        let mut cache = [0u8; 8];
        let fd = self.result(api::MEMFD, &msg, &mut cache)? as u32;
        self.ctx = Some((fd, 0, 0));
        Ok((fd, u64::from_le_bytes(cache)))
    }

    /// A memfd's seals: `op` GET or ADD (`value`: the seals added).
    pub fn seals(&self, fd: u32, op: u32, value: u32) -> Result<u64, i64> {
        let (pid, local, _) = self.route(fd);
        let mut fields = [0u8; 8];
        Writer::new(&mut fields).u32(op).u32(value);
        self.result_at(pid, api::MEMFD, &self.path_msg(local, 0, &fields, &[]), &mut [])
    }

    /// Opens the program file at `path` to run it: the file server refuses
    /// (ETXTBSY) while it is open for writing, and refuses writers while
    /// the number returned stays open. With its stat.
    pub fn open_exec(&self, dirfd: u32, path: &[u8]) -> Result<(u32, [u8; 144]), i64> {
        let mut fields = [0u8; 8];
        Writer::new(&mut fields).u32(0).u32(api::OPEN_EXEC);
        let mut extra = [0u8; 8 + 144];
        let fd = self.path_call(api::OPEN, dirfd, 0, &fields, &[path], &mut extra)?;
        let id = self.route(dirfd).2;
        let mut st = [0u8; 144];
        st.copy_from_slice(&extra[8..]);
        self.mounts.set_dev(id, &mut st);
        Ok((super::mounts::tag(id, fd as u32), st))
    }

    pub fn close(&mut self, fd: u32) {
        let (pid, local, _) = self.route(fd);
        let mut msg = [0u8; 8];
        Writer::new(&mut msg).u32(local).u32(0);
        let _ = self.result_at(pid, api::CLOSE, &msg, &mut []);
        if self.ctx.is_some_and(|c| c.0 == fd) {
            self.ctx = None;
        }
    }

    /// The system file server's root for this client (`SET_ROOT`): the
    /// directory open as `fd`, or the file system's (`ROOT`).
    pub fn set_root(&self, fd: u32) -> Result<(), i64> {
        let (server, local, id) = self.route(fd);
        if id != 0 {
            return Err(errno::EINVAL);
        }
        let mut msg = [0u8; 8];
        Writer::new(&mut msg).u32(local).u32(0);
        self.result_at(server, api::SET_ROOT, &msg, &mut []).map(|_| ())
    }

    /// The same open file for the supervisor `pid` (a forked child's).
    pub fn share(&self, fd: u32, pid: u64) -> Result<u32, i64> {
        let (server, local, id) = self.route(fd);
        let mut msg = [0u8; 16];
        Writer::new(&mut msg).u32(local).u32(0).u64(pid);
        self.result_at(server, api::SHARE, &msg, &mut [])
            .map(|v| super::mounts::tag(id, v as u32))
    }

    /// Reads from file `fd` at `off` into the memory of the process waiting
    /// in `rid`, at `buf`, until `len` bytes or the end: the cache copies
    /// each piece straight into the process's buffer. With `missed`, the
    /// kernel's cache of the file missed the read: the server publishes
    /// its pages there for the next.
    /// `flags`: the READ flags (`api::MISSED`, `api::NOATIME`).
    pub fn read_to_caller(&self, rid: u64, fd: u32, off: u64, buf: u64, len: u64, flags: u32) -> Result<u64, i64> {
        let (server, fd, _) = self.route(fd);
        let mut done = 0u64;
        while done < len {
            // The kernel copies at most MAX_COPY bytes into the caller at
            // a time (a larger reply range is EINVAL).
            let want = (len - done).min(tessera_rt::abi::MAX_COPY as u64);
            let mut msg = [0u8; 24];
            Writer::new(&mut msg).u32(fd).u32(flags).u64(off + done).u64(want);
            let req = CallFor {
                rid,
                server,
                entry: api::READ,
                msg_addr: msg.as_ptr() as u64,
                msg_len: msg.len() as u64,
                reply_addr: buf + done,
                reply_len: want,
                flags: REPLY_IN_CALLER,
            };
            match calls::call_for(&req) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if done > 0 && e != api::FAILED => break,
                Err(e) => {
                    let e = self.last_errno_at(server, e);
                    if done > 0 {
                        break;
                    }
                    return Err(e);
                }
            }
        }
        Ok(done)
    }

    /// Reads into the supervisor's own memory (a program image, a script's
    /// first line, a directory).
    pub fn read_own(&self, fd: u32, off: u64, buf: &mut [u8]) -> Result<usize, i64> {
        let (server, fd, _) = self.route(fd);
        let mut done = 0;
        while done < buf.len() {
            // The file server maps a request's whole range before it reads
            // a page of it: ask for a program image piece by piece.
            let len = (buf.len() - done).min(api::MAX_WRITE);
            let mut msg = [0u8; 24];
            Writer::new(&mut msg)
                .u32(fd)
                .u32(0)
                .u64(off + done as u64)
                .u64(len as u64);
            match sys::call(server, api::READ, &msg, &mut buf[done..done + len]) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) => {
                    if done > 0 {
                        break;
                    }
                    return Err(self.last_errno_at(server, e));
                }
            }
        }
        Ok(done)
    }

    /// Writes `len` bytes of the waiting process's memory at `buf` to file
    /// `fd` at `off` (at the end with `append`): the cache reads them
    /// straight from the process. Returns the bytes written and where
    /// they end.
    pub fn write_from_caller(
        &mut self,
        rid: u64,
        fd: u32,
        off: u64,
        append: bool,
        buf: u64,
        len: u64,
    ) -> Result<(u64, u64), i64> {
        self.write_with(fd, off, append, len, |server, done, n, reply| {
            calls::call_for(&CallFor {
                rid,
                server,
                entry: api::WRITE,
                msg_addr: buf + done,
                msg_len: n,
                reply_addr: reply.as_mut_ptr() as u64,
                reply_len: 16,
                flags: MSG_IN_CALLER,
            })
        })
    }

    /// Writes bytes of the supervisor's own memory (what sendfile read),
    /// as `write_from_caller` does.
    pub fn write_own(&mut self, fd: u32, off: u64, append: bool, data: &[u8]) -> Result<(u64, u64), i64> {
        self.write_with(fd, off, append, data.len() as u64, |server, done, n, reply| {
            sys::call(server, api::WRITE, &data[done as usize..(done + n) as usize], reply).map(|v| v as u64)
        })
    }

    /// The write loop: `send(server, done, n, reply)` hands the file
    /// server the next `n` bytes, from byte `done` on.
    fn write_with(
        &mut self,
        fd: u32,
        off: u64,
        append: bool,
        len: u64,
        mut send: impl FnMut(u64, u64, u64, &mut [u8; 16]) -> Result<u64, Error>,
    ) -> Result<(u64, u64), i64> {
        let flags = if append { api::APPEND } else { 0 };
        let tagged = fd;
        let (server, fd, id) = self.route(fd);
        if self.mounts.read_only(id) {
            return Err(errno::EROFS);
        }
        let mut done = 0u64;
        let mut end = off;
        loop {
            let at = off + done;
            let continues = self
                .ctx
                .is_some_and(|c| c == (tagged, flags, at) || (append && c.0 == tagged && c.1 == flags));
            if !continues {
                let mut msg = [0u8; 16];
                Writer::new(&mut msg).u32(fd).u32(flags).u64(at);
                self.ctx = None;
                self.result_at(server, api::WRITE_TO, &msg, &mut [])?;
            }
            let n = (len - done).min(api::MAX_WRITE as u64);
            let mut reply = [0u8; 16];
            let r = send(server, done, n, &mut reply);
            let mut rd = Reader::new(&reply);
            let (wrote, placed) = match r {
                Ok(16) => (rd.i64().unwrap_or(-errno::EIO), rd.u64().unwrap_or(0)),
                Ok(_) => (-errno::EIO, 0),
                Err(e) => (-errno_of(e), 0),
            };
            if wrote < 0 {
                self.ctx = None;
                if done > 0 {
                    return Ok((done, end));
                }
                return Err(-wrote);
            }
            end = placed + wrote as u64;
            self.ctx = Some((tagged, flags, end));
            done += wrote as u64;
            if done >= len || wrote == 0 {
                return Ok((done, end));
            }
        }
    }

    pub fn fstat(&self, fd: u32) -> Result<[u8; 144], i64> {
        let (server, fd, id) = self.route(fd);
        let mut msg = [0u8; 8];
        Writer::new(&mut msg).u32(fd).u32(0);
        let mut out = [0u8; 144];
        self.result_at(server, api::FSTAT, &msg, &mut out)?;
        self.mounts.set_dev(id, &mut out);
        Ok(out)
    }

    pub fn stat(&self, dirfd: u32, path: &[u8], flags: u32) -> Result<[u8; 144], i64> {
        let mut out = [0u8; 144];
        self.path_call(api::STAT, dirfd, flags, &[], &[path], &mut out)?;
        self.mounts.set_dev(self.route(dirfd).2, &mut out);
        Ok(out)
    }

    pub fn readdir(&self, fd: u32, pos: u64, buf: &mut [u8]) -> Result<usize, i64> {
        let (server, fd, _) = self.route(fd);
        let mut msg = [0u8; 16];
        Writer::new(&mut msg).u32(fd).u32(0).u64(pos);
        sys::call(server, api::READDIR, &msg, buf).map_err(|e| self.last_errno_at(server, e))
    }

    /// The target of the link at `path`, or with `flags` AT_EMPTY_PATH and
    /// no path, of the link `dirfd` is.
    pub fn readlink(&self, dirfd: u32, flags: u32, path: &[u8]) -> Result<Vec<u8>, i64> {
        let mut out = vec![0u8; 4096];
        let n = self.path_call(api::READLINK, dirfd, flags, &[], &[path], &mut out)?;
        out.truncate(n as usize);
        Ok(out)
    }

    pub fn setattr(&self, dirfd: u32, flags: u32, a: &api::SetAttr, path: &[u8]) -> Result<(), i64> {
        let mut fields = [0u8; api::SetAttr::LEN];
        a.write(&mut Writer::new(&mut fields));
        self.path_op(api::SETATTR, dirfd, flags, &fields, &[path]).map(|_| ())
    }

    /// An `XATTR` request about the file `dirfd` and `path` name (with
    /// `flags`): its result, and for GET and LIST with a buffer of
    /// `size`, the bytes to give the caller. A read-only mount takes no
    /// change (EROFS).
    #[allow(clippy::too_many_arguments)]
    pub fn xattr(
        &self,
        dirfd: u32,
        flags: u32,
        op: u32,
        xflags: u32,
        name: &[u8],
        value: &[u8],
        size: usize,
        path: &[u8],
    ) -> Result<(u64, Vec<u8>), i64> {
        let (pid, local, id) = self.route(dirfd);
        let changes = matches!(op, api::XATTR_SET | api::XATTR_REMOVE);
        if changes && self.mounts.read_only(id) {
            return Err(errno::EROFS);
        }
        let len = if op == api::XATTR_SET { value.len() } else { size };
        let mut fields = vec![0u8; 16];
        Writer::new(&mut fields)
            .u32(op)
            .u32(xflags)
            .u32(name.len() as u32)
            .u32(len as u32);
        fields.extend_from_slice(name);
        fields.extend_from_slice(value);
        let mut out = vec![0u8; if changes { 0 } else { size }];
        let n = self.result_at(
            pid,
            api::XATTR,
            &self.path_msg(local, flags, &fields, &[path]),
            &mut out,
        )?;
        out.truncate(if size == 0 { 0 } else { n as usize });
        Ok((n, out))
    }

    pub fn truncate(&self, fd: u32, size: u64) -> Result<(), i64> {
        let (server, fd, id) = self.route(fd);
        if self.mounts.read_only(id) {
            return Err(errno::EROFS);
        }
        let mut msg = [0u8; 16];
        Writer::new(&mut msg).u32(fd).u32(0).u64(size);
        self.result_at(server, api::TRUNCATE, &msg, &mut []).map(|_| ())
    }

    /// SEEK: where the next data (`whence` SEEK_DATA) or hole (SEEK_HOLE)
    /// of file `fd` starts at or after `off`.
    pub fn seek_data_or_hole(&self, fd: u32, whence: u32, off: u64) -> Result<u64, i64> {
        let (server, fd, _) = self.route(fd);
        let mut msg = [0u8; 16];
        Writer::new(&mut msg).u32(fd).u32(whence).u64(off);
        self.result_at(server, api::SEEK, &msg, &mut [])
    }

    /// FALLOCATE: `mode` (Linux's) over bytes `off..off + len` of file `fd`.
    pub fn fallocate(&self, fd: u32, mode: u32, off: u64, len: u64) -> Result<(), i64> {
        let (server, fd, id) = self.route(fd);
        if self.mounts.read_only(id) {
            return Err(errno::EROFS);
        }
        let mut msg = [0u8; 24];
        Writer::new(&mut msg).u32(fd).u32(mode).u64(off).u64(len);
        self.result_at(server, api::FALLOCATE, &msg, &mut []).map(|_| ())
    }

    pub fn fsync(&self, fd: u32) -> Result<(), i64> {
        let (server, fd, _) = self.route(fd);
        let mut msg = [0u8; 8];
        Writer::new(&mut msg).u32(fd).u32(0);
        self.result_at(server, api::FSYNC, &msg, &mut []).map(|_| ())
    }

    pub fn statfs(&self) -> Result<[u8; 120], i64> {
        self.statfs_of(ROOT)
    }

    /// statfs of the file system file (or directory token) `fd` is on.
    pub fn statfs_of(&self, fd: u32) -> Result<[u8; 120], i64> {
        let (server, _, id) = self.route(fd);
        let mut out = [0u8; 120];
        self.result_at(server, api::STATFS, &[], &mut out)?;
        // A mount's flags are the supervisors' (its file server knows
        // only whether it is read-only): f_flags, the eleventh word.
        if let Some(flags) = self.mounts.statfs_flags(id) {
            out[80..88].copy_from_slice(&flags.to_le_bytes());
        }
        Ok(out)
    }

    pub fn sync(&self) -> Result<(), i64> {
        self.result(api::SYNC, &[], &mut []).map(|_| ())
    }

    /// Linux's drop_caches: every file system's file server has the
    /// kernel's file caches forget their pages and its block cache write
    /// back and forget its own. The mounts' go first: what their caches
    /// write back goes into their backing files, through the system's
    /// caches, which are dropped last. Each is asked even if one before
    /// failed; the first error is returned.
    pub fn drop_caches(&self) -> Result<(), i64> {
        let flags = api::DROP_BLOCK_CACHE.to_le_bytes();
        let mut servers: Vec<u64> = self.mounts.list().iter().map(|m| m.fs).collect();
        servers.push(self.pid);
        let mut first = Ok(());
        for pid in servers {
            let r = self.result_at(pid, api::DROP_PAGES, &flags, &mut []).map(|_| ());
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}
