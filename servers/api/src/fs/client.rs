//! The file API of native programs: files and directories of the file
//! server (found by name), named by paths from the root.
//!
//! A program's requests carry its credentials ([`set_cred`]; root until
//! Tessera has users). A [`File`] keeps its own position; reads and writes
//! go at it, or at an offset (`read_at`, `write_at`).

use super::*;
use crate::peer::{self, Peer};
use crate::wire::{Reader, Writer};
use alloc::vec;
use alloc::vec::Vec;
use spin::Mutex;
use tessera_rt::sys;

/// Where the file server's write context points (server pid, fd, flags,
/// offset): a write that continues it needs no WRITE_TO.
type WriteContext = (u64, u32, u32, u64);

static PEER: Mutex<Peer<WriteContext>> = Peer::new();
static CRED: Mutex<Cred> = Mutex::new(Cred { uid: 0, gid: 0 });

/// The credentials of this program's requests from now on.
pub fn set_cred(cred: Cred) {
    *CRED.lock() = cred;
}

/// The file server's pid (waiting up to two seconds for it to start).
pub fn server() -> Result<u64, Errno> {
    peer::server(&PEER, NAME, Errno::EIO)
}

/// Uses the file server registered as `name` from now on (a program that
/// starts its own, or restarts it).
pub fn connect(name: &str) -> Result<u64, Errno> {
    peer::connect(&PEER, name, Errno::EIO)
}

fn cred() -> Cred {
    *CRED.lock()
}

/// A call whose reply starts with an `i64` result; the rest of the reply
/// goes to `extra`.
fn call_result(entry: u64, msg: &[u8], extra: &mut [u8]) -> Result<u64, Errno> {
    peer::call_result(server()?, entry, msg, extra, |e| Errno::of(e).0 as i64).map_err(|e| Errno(e as i32))
}

/// Why a READ or READDIR failed.
fn last_errno(server: u64, e: tessera_rt::abi::Error) -> Errno {
    if e != FAILED {
        return Errno::of(e);
    }
    let mut reply = [0u8; 8];
    match sys::call(server, ERRNO, &[], &mut reply) {
        Ok(8) => Errno(i64::from_le_bytes(reply) as i32),
        _ => Errno::EIO,
    }
}

/// A path request with this program's credentials.
fn path_msg(dirfd: u32, flags: u32, fields: &[u8], paths: &[&[u8]]) -> Vec<u8> {
    PathHeader {
        cred: cred(),
        dirfd,
        flags,
    }
    .request(fields, paths)
}

fn path_call(entry: u64, flags: u32, fields: &[u8], paths: &[&[u8]]) -> Result<u64, Errno> {
    call_result(entry, &path_msg(AT_FDCWD, flags, fields, paths), &mut [])
}

/// Bytes one read of the kernel's file cache asks for at most (it serves
/// 64 pages at most).
const CACHE_READ: usize = 64 * 4096;

/// An open file or directory.
pub struct File {
    fd: u32,
    pos: u64,
    append: bool,
    /// The kernel's cache of the file's pages (0: none), which serves the
    /// reads it can with no call to the server.
    cache: u64,
}

impl File {
    /// Opens `path` with Linux's `O_*` flags; `mode` is a new file's
    /// permission bits.
    pub fn open(path: &str, flags: u32, mode: u32) -> Result<File, Errno> {
        let mut fields = [0u8; 8];
        Writer::new(&mut fields).u32(mode).u32(OPEN_WRITE_HERE);
        let mut cache = [0u8; 8];
        let server = server()?;
        let fd = call_result(
            OPEN,
            &path_msg(AT_FDCWD, flags, &fields, &[path.as_bytes()]),
            &mut cache,
        )?;
        // The server's write context is the new file now, if it may be
        // written (and forgot any other).
        let mut peer = PEER.lock();
        if flags & O_ACCMODE != O_RDONLY && flags & O_PATH == 0 {
            let append = if flags & O_APPEND != 0 { APPEND } else { 0 };
            peer.context = Some((server, fd as u32, append, 0));
        }
        drop(peer);
        Ok(File {
            fd: fd as u32,
            pos: 0,
            append: flags & O_APPEND != 0,
            cache: u64::from_le_bytes(cache),
        })
    }

    /// The server's number for it.
    pub fn fd(&self) -> u32 {
        self.fd
    }

    /// The id of the kernel's cache of its pages (0: none).
    pub fn cache_id(&self) -> u64 {
        self.cache
    }

    pub fn position(&self) -> u64 {
        self.pos
    }

    pub fn seek(&mut self, pos: u64) {
        self.pos = pos;
    }

    /// Reads at the position until `buf` is full or the file ends; returns
    /// the bytes read.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        let n = self.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }

    /// Reads at `offset` until `buf` is full or the file ends: from the
    /// kernel's cache of the file if it holds every page, or else the
    /// server delivers the bytes in pieces (each straight from the block
    /// cache's page into `buf`), one call per piece.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut done = 0;
        if self.cache != 0 {
            // The kernel takes a plan's worth of pages per call at most.
            while done < buf.len() {
                let want = (buf.len() - done).min(CACHE_READ);
                match sys::calls::file_cache_read(self.cache, offset + done as u64, &mut buf[done..done + want]) {
                    Ok(n) if (n as usize) < want => return Ok(done + n as usize),
                    Ok(n) => done += n as usize,
                    Err(_) => break,
                }
            }
        }
        let flags = if self.cache != 0 { MISSED } else { 0 };
        self.read_from_server(offset, buf, done, flags)
    }

    /// Reads bytes read once (a program's image, which its page cache
    /// keeps): from the file server, without publishing them in the
    /// kernel's file cache, where they would take the room of the data
    /// read again.
    pub fn read_at_once(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.read_from_server(offset, buf, 0, 0)
    }

    /// `buf[done..]` from the file server, READ flags `flags`.
    fn read_from_server(&self, offset: u64, buf: &mut [u8], mut done: usize, flags: u32) -> Result<usize, Errno> {
        let server = server()?;
        while done < buf.len() {
            // The kernel refuses a reply range over `MAX_COPY` (a READ
            // delivers less anyway): a larger buffer is asked in parts.
            let end = buf.len().min(done + tessera_rt::abi::MAX_COPY);
            let mut msg = [0u8; 24];
            Writer::new(&mut msg)
                .u32(self.fd)
                .u32(flags)
                .u64(offset + done as u64)
                .u64((end - done) as u64);
            match sys::call(server, READ, &msg, &mut buf[done..end]) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) => return Err(last_errno(server, e)),
            }
        }
        Ok(done)
    }

    /// Writes all of `data` at the position (at the end, if opened with
    /// `O_APPEND`); returns the bytes written.
    pub fn write(&mut self, data: &[u8]) -> Result<usize, Errno> {
        let (n, end) = self.write_with(self.pos, if self.append { APPEND } else { 0 }, data)?;
        self.pos = end;
        Ok(n)
    }

    /// Writes all of `data` at `offset`.
    pub fn write_at(&self, offset: u64, data: &[u8]) -> Result<usize, Errno> {
        self.write_with(offset, 0, data).map(|(n, _)| n)
    }

    /// Returns the bytes written and where they end.
    fn write_with(&self, offset: u64, flags: u32, data: &[u8]) -> Result<(usize, u64), Errno> {
        let server = server()?;
        let mut done = 0;
        let mut end = offset;
        loop {
            let at = offset + done as u64;
            let want = (server, self.fd, flags, at);
            let current = PEER.lock().context;
            // An appending context stays right whatever the offset.
            let continues = current
                .is_some_and(|c| c == want || (flags == APPEND && c.0 == server && c.1 == self.fd && c.2 == APPEND));
            if !continues {
                let mut msg = [0u8; 16];
                Writer::new(&mut msg).u32(self.fd).u32(flags).u64(at);
                PEER.lock().context = None;
                call_result(WRITE_TO, &msg, &mut [])?;
            }
            let chunk = &data[done..data.len().min(done + MAX_WRITE)];
            let mut reply = [0u8; 16];
            let result = sys::call(server, WRITE, chunk, &mut reply);
            let mut r = Reader::new(&reply);
            let (n, placed) = match result {
                Ok(16) => (r.i64().unwrap_or(-5), r.u64().unwrap_or(0)),
                Ok(_) => (-5, 0),
                Err(e) => (-(Errno::of(e).0 as i64), 0),
            };
            if n < 0 {
                PEER.lock().context = None;
                if done > 0 {
                    return Ok((done, end));
                }
                return Err(Errno((-n) as i32));
            }
            end = placed + n as u64;
            PEER.lock().context = Some((server, self.fd, flags, end));
            done += n as usize;
            if done >= data.len() || n == 0 {
                return Ok((done, end));
            }
        }
    }

    pub fn stat(&self) -> Result<Stat, Errno> {
        let mut msg = [0u8; 8];
        Writer::new(&mut msg).u32(self.fd).u32(0);
        let mut out = [0u8; Stat::LEN];
        call_result(FSTAT, &msg, &mut out)?;
        Stat::read(&mut Reader::new(&out)).ok_or(Errno::EIO)
    }

    pub fn truncate(&self, size: u64) -> Result<(), Errno> {
        let mut msg = [0u8; 16];
        Writer::new(&mut msg).u32(self.fd).u32(0).u64(size);
        call_result(TRUNCATE, &msg, &mut []).map(|_| ())
    }

    pub fn sync(&self) -> Result<(), Errno> {
        let mut msg = [0u8; 8];
        Writer::new(&mut msg).u32(self.fd).u32(0);
        call_result(FSYNC, &msg, &mut []).map(|_| ())
    }

    /// Reads directory records (`linux_dirent64`, see [`dirents`]) into
    /// `buf` from the position on, and moves the position past them.
    /// Returns the bytes of records (0 at the end).
    pub fn read_dir(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        let server = server()?;
        let mut msg = [0u8; 16];
        Writer::new(&mut msg).u32(self.fd).u32(0).u64(self.pos);
        let n = sys::call(server, READDIR, &msg, buf).map_err(|e| last_errno(server, e))?;
        if let Some(last) = dirents(&buf[..n]).last() {
            self.pos = last.next;
        }
        Ok(n)
    }
}

impl Drop for File {
    fn drop(&mut self) {
        let mut msg = [0u8; 8];
        Writer::new(&mut msg).u32(self.fd).u32(0);
        let _ = call_result(CLOSE, &msg, &mut []);
        let mut s = PEER.lock();
        if s.context.is_some_and(|c| c.1 == self.fd) {
            s.context = None;
        }
    }
}

/// One entry of a directory listing.
pub struct Entry {
    pub ino: u64,
    pub kind: u8,
    pub name: Vec<u8>,
}

/// Every entry of the directory at `path`, `.` and `..` included.
pub fn read_dir(path: &str) -> Result<Vec<Entry>, Errno> {
    let mut dir = File::open(path, O_RDONLY | O_DIRECTORY, 0)?;
    let mut buf = vec![0u8; 4096];
    let mut out = Vec::new();
    loop {
        let n = dir.read_dir(&mut buf)?;
        if n == 0 {
            return Ok(out);
        }
        for d in dirents(&buf[..n]) {
            out.push(Entry {
                ino: d.ino,
                kind: d.kind,
                name: d.name.to_vec(),
            });
        }
    }
}

fn stat_call(path: &str, flags: u32) -> Result<Stat, Errno> {
    let mut out = [0u8; Stat::LEN];
    call_result(STAT, &path_msg(AT_FDCWD, flags, &[], &[path.as_bytes()]), &mut out)?;
    Stat::read(&mut Reader::new(&out)).ok_or(Errno::EIO)
}

/// The file at `path` (a symbolic link is followed).
pub fn stat(path: &str) -> Result<Stat, Errno> {
    stat_call(path, 0)
}

/// The file at `path` (a symbolic link itself).
pub fn lstat(path: &str) -> Result<Stat, Errno> {
    stat_call(path, AT_SYMLINK_NOFOLLOW)
}

pub fn mkdir(path: &str, mode: u32) -> Result<(), Errno> {
    let mut fields = [0u8; 8];
    Writer::new(&mut fields).u32(mode).u32(0);
    path_call(MKDIR, 0, &fields, &[path.as_bytes()]).map(|_| ())
}

pub fn rmdir(path: &str) -> Result<(), Errno> {
    path_call(RMDIR, 0, &[], &[path.as_bytes()]).map(|_| ())
}

pub fn unlink(path: &str) -> Result<(), Errno> {
    path_call(UNLINK, 0, &[], &[path.as_bytes()]).map(|_| ())
}

fn two_paths(entry: u64, a: &str, b: &str) -> Result<(), Errno> {
    let mut fields = [0u8; 8];
    Writer::new(&mut fields).u32(AT_FDCWD).u32(a.len() as u32);
    path_call(entry, 0, &fields, &[a.as_bytes(), b.as_bytes()]).map(|_| ())
}

pub fn rename(from: &str, to: &str) -> Result<(), Errno> {
    two_paths(RENAME, from, to)
}

/// A new name `to` for the file at `from`.
pub fn link(from: &str, to: &str) -> Result<(), Errno> {
    two_paths(LINK, from, to)
}

/// A symbolic link at `path` to `target`.
pub fn symlink(target: &str, path: &str) -> Result<(), Errno> {
    let mut fields = [0u8; 8];
    Writer::new(&mut fields).u32(target.len() as u32).u32(0);
    path_call(SYMLINK, 0, &fields, &[target.as_bytes(), path.as_bytes()]).map(|_| ())
}

pub fn readlink(path: &str) -> Result<Vec<u8>, Errno> {
    let mut out = vec![0u8; 4096];
    let n = call_result(READLINK, &path_msg(AT_FDCWD, 0, &[], &[path.as_bytes()]), &mut out)?;
    out.truncate(n as usize);
    Ok(out)
}

pub fn setattr(path: &str, a: &SetAttr) -> Result<(), Errno> {
    let mut fields = [0u8; SetAttr::LEN];
    a.write(&mut Writer::new(&mut fields));
    path_call(SETATTR, 0, &fields, &[path.as_bytes()]).map(|_| ())
}

pub fn chmod(path: &str, mode: u32) -> Result<(), Errno> {
    setattr(
        path,
        &SetAttr {
            valid: SetAttr::MODE,
            mode,
            ..SetAttr::default()
        },
    )
}

pub fn chown(path: &str, uid: u32, gid: u32) -> Result<(), Errno> {
    setattr(
        path,
        &SetAttr {
            valid: SetAttr::UID | SetAttr::GID,
            uid,
            gid,
            ..SetAttr::default()
        },
    )
}

pub fn truncate(path: &str, size: u64) -> Result<(), Errno> {
    setattr(
        path,
        &SetAttr {
            valid: SetAttr::SIZE,
            size,
            ..SetAttr::default()
        },
    )
}

pub fn statfs() -> Result<StatFs, Errno> {
    let mut out = [0u8; StatFs::LEN];
    call_result(STATFS, &[], &mut out)?;
    StatFs::read(&mut Reader::new(&out)).ok_or(Errno::EIO)
}

pub fn sync() -> Result<(), Errno> {
    call_result(SYNC, &[], &mut []).map(|_| ())
}

/// The kernel's file caches of the server forget every page.
pub fn drop_pages() -> Result<(), Errno> {
    call_result(DROP_PAGES, &[], &mut []).map(|_| ())
}

/// A server's text report (its STATS entry): `name value` per line.
pub fn stats_of(server_name: &str, entry: u64) -> Result<alloc::string::String, Errno> {
    let pid = sys::name_lookup(server_name).map_err(|_| Errno::ENOENT)?;
    let mut buf = vec![0u8; 4096];
    let n = sys::call(pid, entry, &[], &mut buf).map_err(Errno::of)?;
    Ok(alloc::string::String::from_utf8_lossy(&buf[..n]).into_owned())
}
