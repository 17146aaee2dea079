//! The requests about names, handles and attributes, with the checks the
//! library leaves to its server: file numbers, access modes, and
//! permissions from the request's credentials (owner, group and other
//! bits; root passes all but a search or exec no one may do).
//!
//! Permissions are checked on the object a request acts on, for changes
//! to a directory's entries on that directory, and for a caller other
//! than root the search bit of every directory along the path.

use crate::clients::{OpenFile, WriteContext};
use crate::{Fm, Server, errno};
use alloc::vec::Vec;
use ext2fs::{FileType, Handle, Owner, Search, SetAttr as LibSetAttr, Stat as LibStat, Timestamp};
use tessera_api::fs::*;
use tessera_api::wire::{Reader, Writer};
use tessera_rt::abi::AccInfo;

const R: u32 = 4;
const W: u32 = 2;
const X: u32 = 1;

/// Whether `cred` may do `want` (R, W, X bits) to a file with `st`.
fn may(cred: Cred, st: &LibStat, want: u32) -> bool {
    let mode = st.mode as u32;
    if cred.uid == 0 {
        return want & X == 0 || st.kind == FileType::Directory || mode & 0o111 != 0;
    }
    let bits = if cred.uid == st.uid {
        mode >> 6
    } else if cred.gid == st.gid {
        mode >> 3
    } else {
        mode
    } & 7;
    bits & want == want
}

fn need(cred: Cred, st: &LibStat, want: u32) -> Result<(), Errno> {
    if may(cred, st, want) {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

/// May `cred` remove or rename entry `child` of directory `dir`: write and
/// search on the directory, and with the sticky bit, own one of them.
fn may_unlink(cred: Cred, dir: &LibStat, child: &LibStat) -> Result<(), Errno> {
    need(cred, dir, W | X)?;
    if dir.mode as u32 & 0o1000 != 0 && cred.uid != 0 && cred.uid != dir.uid && cred.uid != child.uid {
        return Err(Errno::EPERM);
    }
    Ok(())
}

const S_ISUID: u16 = 0o4000;
const S_ISGID: u16 = 0o2000;

/// The set-id bits a change of owner or a write without privilege clears
/// from permission bits `perm`: set-user-id, and set-group-id when group
/// execute makes it one (without it the bit marks mandatory locking and
/// stays).
fn set_ids_ended(perm: u16) -> u16 {
    let gid = if perm & 0o010 != 0 { S_ISGID } else { 0 };
    perm & (S_ISUID | gid)
}

fn d_type(kind: Option<FileType>) -> u8 {
    match kind {
        Some(FileType::Regular) => DT_REG,
        Some(FileType::Directory) => DT_DIR,
        Some(FileType::Symlink) => DT_LNK,
        Some(FileType::CharDevice) => DT_CHR,
        Some(FileType::BlockDevice) => DT_BLK,
        Some(FileType::Fifo) => DT_FIFO,
        Some(FileType::Socket) => DT_SOCK,
        None => DT_UNKNOWN,
    }
}

/// Linux's encoding of a device number.
fn makedev((major, minor): (u32, u32)) -> u64 {
    let (ma, mi) = (major as u64, minor as u64);
    ((ma & 0xffff_f000) << 32) | ((ma & 0xfff) << 8) | ((mi & 0xffff_ff00) << 12) | (mi & 0xff)
}

fn linux_stat(s: &LibStat, dev: u64) -> Stat {
    Stat {
        dev,
        ino: s.ino as u64,
        nlink: s.links as u64,
        mode: s.mode as u32,
        uid: s.uid,
        gid: s.gid,
        rdev: makedev(s.rdev),
        size: s.size as i64,
        blksize: s.block_size as i64,
        blocks: s.blocks as i64,
        atime: (s.atime.secs, s.atime.nanos as i64),
        mtime: (s.mtime.secs, s.mtime.nanos as i64),
        ctime: (s.ctime.secs, s.ctime.nanos as i64),
    }
}

/// A parsed path request: its header, its fields and its path bytes.
struct PathRequest<'a> {
    hdr: PathHeader,
    r: Reader<'a>,
}

impl<'a> PathRequest<'a> {
    fn parse(msg: &'a [u8]) -> Result<PathRequest<'a>, Errno> {
        let mut r = Reader::new(msg);
        let hdr = PathHeader::read(&mut r).ok_or(Errno::EINVAL)?;
        Ok(PathRequest { hdr, r })
    }

    fn u32(&mut self) -> Result<u32, Errno> {
        self.r.u32().ok_or(Errno::EINVAL)
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], Errno> {
        self.r.bytes(n).ok_or(Errno::EINVAL)
    }

    fn path(&self) -> &'a [u8] {
        self.r.rest()
    }
}

/// What OPEN found at the path: a file that was there, or one it made.
enum Found {
    Existing(Handle),
    Created(Handle),
}

fn fd_of(msg: &[u8]) -> Result<u32, Errno> {
    Reader::new(msg).u32().ok_or(Errno::EINVAL)
}

impl Server {
    pub(crate) fn file(&mut self, caller: u64, fd: u32) -> Result<OpenFile, Errno> {
        self.client(caller).file(fd)
    }

    /// The open file and the number of a request laid out as `fd`, a pad
    /// word and a `u64` (TRUNCATE's size, SHARE's target, READDIR's
    /// position).
    fn file_and_value(&mut self, caller: u64, msg: &[u8]) -> Result<(OpenFile, u64), Errno> {
        let mut r = Reader::new(msg);
        let fd = r.u32().ok_or(Errno::EINVAL)?;
        r.u32();
        let value = r.u64().ok_or(Errno::EINVAL)?;
        Ok((self.file(caller, fd)?, value))
    }

    /// The caller's root directory: its `SET_ROOT`'s, or the file
    /// system's.
    fn root_of(&mut self, caller: u64) -> Result<Handle, Errno> {
        match self.clients.get(&caller).and_then(|c| c.root) {
            Some(h) => Ok(h),
            None => self.fm()?.root().map_err(errno),
        }
    }

    /// `SET_ROOT`: the caller's root becomes the directory it has open
    /// as `fd` (or the file system's again), held by the server.
    fn set_root(&mut self, caller: u64, fd: u32) -> Result<(), Errno> {
        let new = if fd == AT_FDCWD {
            None
        } else {
            let f = self.file(caller, fd)?;
            if !f.dir {
                return Err(Errno::ENOTDIR);
            }
            self.fm()?.open(f.handle).map_err(errno)?;
            Some(f.handle)
        };
        if let Some(old) = core::mem::replace(&mut self.client(caller).root, new) {
            let _ = self.fm()?.close(old);
        }
        Ok(())
    }

    /// Where a relative path starts: the directory `dirfd` names, or the
    /// caller's root.
    fn start(&mut self, caller: u64, dirfd: u32) -> Result<Handle, Errno> {
        if dirfd == AT_FDCWD {
            return self.root_of(caller);
        }
        let f = self.file(caller, dirfd)?;
        if !f.dir {
            return Err(Errno::ENOTDIR);
        }
        Ok(f.handle)
    }

    fn resolve(&mut self, caller: u64, hdr: &PathHeader, path: &[u8], follow: bool) -> Result<Handle, Errno> {
        if hdr.flags & AT_EMPTY_PATH != 0 && path.is_empty() {
            if hdr.dirfd == AT_FDCWD {
                return self.root_of(caller);
            }
            return Ok(self.file(caller, hdr.dirfd)?.handle);
        }
        let start = self.start(caller, hdr.dirfd)?;
        let root = self.root_of(caller)?;
        let cred = hdr.cred;
        let search = |st: &LibStat| may(cred, st, X);
        let search: Search = (cred.uid != 0).then_some(&search);
        self.fm()?.resolve_in(root, start, path, follow, search).map_err(errno)
    }

    fn parent(&mut self, caller: u64, cred: Cred, dirfd: u32, path: &[u8]) -> Result<(Handle, Vec<u8>), Errno> {
        let start = self.start(caller, dirfd)?;
        let root = self.root_of(caller)?;
        self.parent_in(cred, root, start, path)
    }

    /// Where request `p` makes a new entry: its directory, which the
    /// caller may write and search, the entry's name, and its owner (the
    /// caller).
    fn new_entry_place(&mut self, caller: u64, p: &PathRequest) -> Result<(Handle, Vec<u8>, Owner), Errno> {
        let (dir, name) = self.parent(caller, p.hdr.cred, p.hdr.dirfd, p.path())?;
        let st = self.stat_of(dir)?;
        need(p.hdr.cred, &st, W | X)?;
        let owner = Owner {
            uid: p.hdr.cred.uid,
            gid: p.hdr.cred.gid,
        };
        Ok((dir, name, owner))
    }

    fn parent_in(&mut self, cred: Cred, root: Handle, start: Handle, path: &[u8]) -> Result<(Handle, Vec<u8>), Errno> {
        let search = |st: &LibStat| may(cred, st, X);
        let search: Search = (cred.uid != 0).then_some(&search);
        self.fm()?.resolve_parent_in(root, start, path, search).map_err(errno)
    }

    pub(crate) fn stat_of(&mut self, h: Handle) -> Result<LibStat, Errno> {
        self.fm()?.stat(h).map_err(errno)
    }

    /// The device number `stat` reports: one file system, one number.
    fn dev_id(&mut self) -> u64 {
        self.fm.as_ref().map_or(0, |fm| fm.statfs().fsid & 0xffff)
    }

    /// Serves a request that replies with a result word; returns the
    /// result and how many bytes it wrote after it in `out`.
    pub fn op(&mut self, entry: u64, caller: u64, msg: &[u8], out: &mut [u8]) -> Result<(i64, usize), Errno> {
        self.fm()?;
        match entry {
            OPEN | OPEN_HANDLE => {
                let fd = if entry == OPEN {
                    self.open(caller, msg)?
                } else {
                    self.open_by_handle(caller, msg)?
                };
                // The file's cache, for the client's reads (0: none).
                let f = self.file(caller, fd)?;
                let cache = self.cache_open(&f, caller);
                out[8..16].copy_from_slice(&cache.to_le_bytes());
                if !f.exec {
                    return Ok((fd as i64, 8));
                }
                // A program's open tells what exec asks next.
                let st = self.stat_of(f.handle)?;
                let dev = self.dev_id();
                linux_stat(&st, dev).write(&mut Writer::new(&mut out[16..]));
                Ok((fd as i64, 8 + Stat::LEN))
            }
            CLOSE => {
                let f = self.client(caller).remove(fd_of(msg)?)?;
                self.writers.put(&f);
                self.cache_close(&f, caller);
                self.fm()?.close(f.handle).map_err(errno)?;
                self.seals_closed(f.handle);
                Ok((0, 0))
            }
            MEMFD => {
                let create = msg.get(PathHeader::LEN..PathHeader::LEN + 4) == Some(&MEMFD_CREATE.to_le_bytes()[..]);
                let v = self.memfd(caller, msg)?;
                if !create {
                    return Ok((v, 0));
                }
                // A new file: its cache, as OPEN's reply gives.
                let f = self.file(caller, v as u32)?;
                let cache = self.cache_open(&f, caller);
                out[8..16].copy_from_slice(&cache.to_le_bytes());
                Ok((v, 8))
            }
            WRITE_TO => {
                let mut r = Reader::new(msg);
                let (fd, flags, offset) = (
                    r.u32().ok_or(Errno::EINVAL)?,
                    r.u32().ok_or(Errno::EINVAL)?,
                    r.u64().ok_or(Errno::EINVAL)?,
                );
                let f = self.file(caller, fd)?;
                if !f.writable() {
                    return Err(Errno::EBADF);
                }
                if f.dir {
                    return Err(Errno::EISDIR);
                }
                self.client(caller).write = Some(WriteContext::new(fd, &f, flags, offset));
                Ok((0, 0))
            }
            TRUNCATE => {
                let (f, size) = self.file_and_value(caller, msg)?;
                if !f.writable() || f.dir {
                    return Err(Errno::EINVAL);
                }
                self.truncate_file(f.handle, size)?;
                Ok((0, 0))
            }
            FSTAT => {
                let f = self.file(caller, fd_of(msg)?)?;
                let st = self.stat_of(f.handle)?;
                let dev = self.dev_id();
                let mut w = Writer::new(&mut out[8..]);
                linux_stat(&st, dev).write(&mut w);
                // The kernel answers the next fstat of an open file.
                self.cache_attrs(f.handle, &out[8..8 + Stat::LEN]);
                Ok((0, Stat::LEN))
            }
            STAT => {
                let p = PathRequest::parse(msg)?;
                let h = self.resolve(caller, &p.hdr, p.path(), p.hdr.flags & AT_SYMLINK_NOFOLLOW == 0)?;
                let st = self.stat_of(h)?;
                let dev = self.dev_id();
                linux_stat(&st, dev).write(&mut Writer::new(&mut out[8..]));
                self.cache_attrs(h, &out[8..8 + Stat::LEN]);
                Ok((0, Stat::LEN))
            }
            MKDIR => {
                let mut p = PathRequest::parse(msg)?;
                let mode = p.u32()?;
                p.u32()?;
                let (dir, name, owner) = self.new_entry_place(caller, &p)?;
                self.fm()?
                    .mkdir(dir, &name, (mode & 0o7777) as u16, owner)
                    .map_err(errno)?;
                Ok((0, 0))
            }
            MKNOD => {
                let mut p = PathRequest::parse(msg)?;
                let mode = p.u32()?;
                let dev = p.u32()?;
                let kind = FileType::from_mode(mode as u16).ok_or(Errno::EINVAL)?;
                let (dir, name, owner) = self.new_entry_place(caller, &p)?;
                self.fm()?
                    .mknod(
                        dir,
                        &name,
                        kind,
                        (mode & 0o7777) as u16,
                        owner,
                        (dev >> 20, dev & 0xf_ffff),
                    )
                    .map_err(errno)?;
                Ok((0, 0))
            }
            RMDIR | UNLINK => {
                let p = PathRequest::parse(msg)?;
                let (dir, name) = self.parent(caller, p.hdr.cred, p.hdr.dirfd, p.path())?;
                let dst = self.stat_of(dir)?;
                let child = self.fm()?.lookup(dir, &name).map_err(errno)?;
                let cst = self.stat_of(child)?;
                may_unlink(p.hdr.cred, &dst, &cst)?;
                let fm = self.fm()?;
                if entry == RMDIR || p.hdr.flags & AT_REMOVEDIR != 0 {
                    fm.rmdir(dir, &name).map_err(errno)?;
                } else {
                    fm.unlink(dir, &name).map_err(errno)?;
                    self.cache_unlinked(child);
                }
                Ok((0, 0))
            }
            RENAME | LINK => {
                let mut p = PathRequest::parse(msg)?;
                let new_dirfd = p.u32()?;
                let old_len = p.u32()? as usize;
                let old = p.bytes(old_len)?;
                let new = p.path();
                let cred = p.hdr.cred;
                let (to_dir, to_name) = self.parent(caller, cred, new_dirfd, new)?;
                let tst = self.stat_of(to_dir)?;
                need(cred, &tst, W | X)?;
                if entry == LINK {
                    let target = self.resolve(caller, &p.hdr, old, p.hdr.flags & 0x400 != 0)?;
                    self.fm()?.link(target, to_dir, &to_name).map_err(errno)?;
                } else {
                    let (from_dir, from_name) = self.parent(caller, p.hdr.cred, p.hdr.dirfd, old)?;
                    let fst = self.stat_of(from_dir)?;
                    let child = self.fm()?.lookup(from_dir, &from_name).map_err(errno)?;
                    let cst = self.stat_of(child)?;
                    may_unlink(cred, &fst, &cst)?;
                    let replaced = self.fm()?.lookup(to_dir, &to_name).ok();
                    if p.hdr.flags & RENAME_EXCHANGE != 0 {
                        // Each name is taken from its directory and given
                        // the other's file.
                        let other = replaced.ok_or(Errno::ENOENT)?;
                        let ost = self.stat_of(other)?;
                        may_unlink(cred, &tst, &ost)?;
                        self.fm()?
                            .exchange(from_dir, &from_name, to_dir, &to_name)
                            .map_err(errno)?;
                        return Ok((0, 0));
                    }
                    // Checked here, with the name looked up in the same
                    // request as the rename: no one makes it in between.
                    if p.hdr.flags & RENAME_NOREPLACE != 0 && replaced.is_some() {
                        return Err(Errno::EEXIST);
                    }
                    // The file a rename replaces loses that link.
                    self.fm()?
                        .rename(from_dir, &from_name, to_dir, &to_name)
                        .map_err(errno)?;
                    if let Some(r) = replaced {
                        self.cache_unlinked(r);
                    }
                    if p.hdr.flags & RENAME_WHITEOUT != 0 {
                        // The old name becomes a whiteout (an overlay's
                        // mark of a removed name): a character device
                        // 0:0 with no permission bits, as Linux's ext4
                        // leaves one. Made after the move, not in one step.
                        let owner = Owner {
                            uid: cred.uid,
                            gid: cred.gid,
                        };
                        self.fm()?
                            .mknod(from_dir, &from_name, FileType::CharDevice, 0, owner, (0, 0))
                            .map_err(errno)?;
                    }
                }
                Ok((0, 0))
            }
            SYMLINK => {
                let mut p = PathRequest::parse(msg)?;
                let target_len = p.u32()? as usize;
                p.u32()?;
                let target = p.bytes(target_len)?;
                let (dir, name, owner) = self.new_entry_place(caller, &p)?;
                self.fm()?.symlink(dir, &name, target, owner).map_err(errno)?;
                Ok((0, 0))
            }
            READLINK => {
                let p = PathRequest::parse(msg)?;
                let h = self.resolve(caller, &p.hdr, p.path(), false)?;
                // Of the file itself, only a link has a target to give.
                if p.hdr.flags & AT_EMPTY_PATH != 0 && self.stat_of(h)?.kind != FileType::Symlink {
                    return Err(Errno::ENOENT);
                }
                let target = self.fm()?.readlink(h).map_err(errno)?;
                let n = target.len().min(out.len() - 8);
                out[8..8 + n].copy_from_slice(&target[..n]);
                Ok((n as i64, n))
            }
            HANDLE => {
                let p = PathRequest::parse(msg)?;
                let h = self.resolve(caller, &p.hdr, p.path(), p.hdr.flags & AT_SYMLINK_FOLLOW != 0)?;
                Writer::new(&mut out[8..]).u32(h.ino).u32(h.generation);
                Ok((0, 8))
            }
            SETATTR => self.setattr(caller, msg).map(|()| (0, 0)),
            XATTR => self.xattr(caller, msg, out),
            FALLOCATE => self.fallocate(caller, msg).map(|()| (0, 0)),
            SEEK => self.seek(caller, msg).map(|at| (at, 0)),
            STATFS => {
                let fm = self.fm()?;
                let s = fm.statfs();
                let ro = fm.inodes().read_only();
                let out_s = StatFs {
                    kind: EXT2_SUPER_MAGIC,
                    bsize: s.block_size as i64,
                    blocks: s.blocks,
                    bfree: s.free_blocks,
                    bavail: s.available_blocks,
                    files: s.inodes,
                    ffree: s.free_inodes,
                    fsid: s.fsid,
                    namelen: s.name_max as i64,
                    frsize: s.block_size as i64,
                    flags: if ro { StatFs::RDONLY } else { 0 },
                };
                out_s.write(&mut Writer::new(&mut out[8..]));
                Ok((0, StatFs::LEN))
            }
            SYNC => {
                self.fm()?.sync().map_err(errno)?;
                Ok((0, 0))
            }
            DROP_PAGES => {
                self.cache_drop_all();
                // The block cache is asked by the file server, which knows
                // it, so that a mount's cache is reached as the system's is.
                if Reader::new(msg).u64().unwrap_or(0) & DROP_BLOCK_CACHE != 0 {
                    tessera_rt::sys::call(self.cache, tessera_api::cache::DROP, &[], &mut []).map_err(Errno::of)?;
                }
                Ok((0, 0))
            }
            SHARE => {
                let (f, target) = self.file_and_value(caller, msg)?;
                if !tessera_rt::sys::alive(target) {
                    return Err(Errno::ESRCH);
                }
                self.writers.take(&f)?;
                self.fm()?.open(f.handle).map_err(errno)?;
                match self.client(target).insert(f) {
                    Ok(n) => {
                        self.cache_open(&f, target);
                        Ok((n as i64, 0))
                    }
                    Err(e) => {
                        self.writers.put(&f);
                        let _ = self.fm()?.close(f.handle);
                        Err(e)
                    }
                }
            }
            SET_ROOT => {
                self.set_root(caller, fd_of(msg)?)?;
                Ok((0, 0))
            }
            FSYNC => {
                let f = self.file(caller, fd_of(msg)?)?;
                self.fm()?.fsync(f.handle).map_err(errno)?;
                Ok((0, 0))
            }
            _ => Err(Errno::ENOSYS),
        }
    }

    fn open(&mut self, caller: u64, msg: &[u8]) -> Result<u32, Errno> {
        let mut p = PathRequest::parse(msg)?;
        let mode = p.u32()?;
        let open_flags = p.u32()?;
        let (flags, cred) = (p.hdr.flags, p.hdr.cred);
        let path_only = flags & O_PATH != 0;
        let flags = if path_only {
            flags & (O_PATH | O_NOFOLLOW | O_DIRECTORY)
        } else {
            flags
        };
        let access = flags & O_ACCMODE;
        if access == O_ACCMODE {
            return Err(Errno::EINVAL);
        }
        if open_flags & OPEN_TMPFILE != 0 {
            return self.open_unnamed(caller, &p, mode, open_flags);
        }
        let path = p.path();
        let follow = flags & O_NOFOLLOW == 0;
        let found = if flags & O_CREAT != 0 && !path.is_empty() {
            // One walk to the directory; then, for a caller who may add to
            // it, the create itself says whether the name exists (the
            // library scans the directory once for the name and for room:
            // a new file costs one scan, not a lookup and then another).
            let (mut dir, mut name) = self.parent(caller, cred, p.hdr.dirfd, path)?;
            let mut links = 0;
            loop {
                let dst = self.stat_of(dir)?;
                let made = if may(cred, &dst, W | X) {
                    let owner = Owner {
                        uid: cred.uid,
                        gid: cred.gid,
                    };
                    self.fm()?
                        .create(dir, &name, (mode & 0o7777) as u16, owner)
                        .map_err(errno)
                } else {
                    Err(Errno::EEXIST)
                };
                match made {
                    Ok(h) => break Found::Created(h),
                    Err(Errno::EEXIST) => match self.fm()?.lookup(dir, &name).map_err(errno) {
                        // A symbolic link there names the file to open or
                        // make, even one not there yet (O_EXCL refuses it).
                        Ok(h) if follow && flags & O_EXCL == 0 && self.stat_of(h)?.kind == FileType::Symlink => {
                            links += 1;
                            if links > ext2fs::file::MAX_SYMLINKS {
                                return Err(Errno::ELOOP);
                            }
                            let target = self.fm()?.readlink(h).map_err(errno)?;
                            let root = self.root_of(caller)?;
                            (dir, name) = self.parent_in(cred, root, dir, &target)?;
                        }
                        Ok(h) => break Found::Existing(h),
                        // Not there, and the caller may not add it.
                        Err(Errno::ENOENT) => return Err(Errno::EACCES),
                        Err(e) => return Err(e),
                    },
                    Err(e) => return Err(e),
                }
            }
        } else {
            Found::Existing(self.resolve(caller, &p.hdr, path, follow)?)
        };
        let created = matches!(found, Found::Created(_));
        let h = match found {
            Found::Existing(h) => {
                if flags & O_CREAT != 0 && flags & O_EXCL != 0 {
                    return Err(Errno::EEXIST);
                }
                h
            }
            Found::Created(h) => h,
        };
        self.open_found(caller, cred, flags, open_flags, h, created)
    }

    /// Opens the file a handle names: an open with no path (so no search
    /// permission along one), the same checks on the file itself.
    fn open_by_handle(&mut self, caller: u64, msg: &[u8]) -> Result<u32, Errno> {
        let mut p = PathRequest::parse(msg)?;
        let handle = Handle {
            ino: p.u32()?,
            generation: p.u32()?,
        };
        let flags = p.hdr.flags & !(O_CREAT | O_EXCL);
        let flags = if flags & O_PATH != 0 {
            flags & (O_PATH | O_NOFOLLOW | O_DIRECTORY)
        } else {
            flags
        };
        if flags & O_ACCMODE == O_ACCMODE {
            return Err(Errno::EINVAL);
        }
        self.open_found(caller, p.hdr.cred, flags, OPEN_WRITE_HERE, handle, false)
    }

    /// An unnamed file (`OPEN_TMPFILE`) in the directory the path names,
    /// which the caller may write and search; only for writing.
    fn open_unnamed(&mut self, caller: u64, p: &PathRequest, mode: u32, open_flags: u32) -> Result<u32, Errno> {
        let (flags, cred) = (p.hdr.flags, p.hdr.cred);
        let access = flags & O_ACCMODE;
        if access == O_RDONLY || flags & O_PATH != 0 {
            return Err(Errno::EINVAL);
        }
        let dir = self.resolve(caller, &p.hdr, p.path(), flags & O_NOFOLLOW == 0)?;
        let dst = self.stat_of(dir)?;
        if dst.kind != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        need(cred, &dst, W | X)?;
        let owner = Owner {
            uid: cred.uid,
            gid: cred.gid,
        };
        let h = self
            .fm()?
            .create_unnamed(dir, (mode & 0o7777) as u16, owner, flags & O_EXCL == 0)
            .map_err(errno)?;
        let f = OpenFile {
            handle: h,
            access,
            dir: false,
            unprivileged: cred.uid != 0,
            exec: false,
        };
        // The library counted it open once: the client's close frees it.
        let inserted = self
            .writers
            .take(&f)
            .and_then(|()| self.client(caller).insert(f).inspect_err(|_| self.writers.put(&f)));
        match inserted {
            Ok(fd) => {
                if open_flags & OPEN_WRITE_HERE != 0 {
                    let append = if flags & O_APPEND != 0 { APPEND } else { 0 };
                    self.client(caller).write = Some(WriteContext::new(fd, &f, append, 0));
                }
                Ok(fd)
            }
            Err(e) => {
                let _ = self.fm()?.close(h);
                Err(e)
            }
        }
    }

    /// The rest of an open once the file is found (or made): its type,
    /// access and permission checks, then a number for the client.
    fn open_found(
        &mut self,
        caller: u64,
        cred: Cred,
        flags: u32,
        open_flags: u32,
        h: Handle,
        created: bool,
    ) -> Result<u32, Errno> {
        let path_only = flags & O_PATH != 0;
        let access = flags & O_ACCMODE;
        let st = self.stat_of(h)?;
        let dir = st.kind == FileType::Directory;
        // O_CREAT names a file to create or open: a directory there
        // (".", "..", "dir/") is EISDIR whatever the access mode, as on
        // Linux, before the permissions are looked at.
        if dir && flags & O_CREAT != 0 && flags & O_DIRECTORY == 0 {
            return Err(Errno::EISDIR);
        }
        if st.kind == FileType::Symlink && !path_only {
            return Err(Errno::ELOOP);
        }
        if flags & O_DIRECTORY != 0 && !dir {
            return Err(Errno::ENOTDIR);
        }
        if dir && access != O_RDONLY {
            return Err(Errno::EISDIR);
        }
        let exec = open_flags & OPEN_EXEC != 0;
        if exec && (access != O_RDONLY || path_only || st.kind != FileType::Regular) {
            return Err(Errno::EACCES);
        }
        let want = match access {
            O_RDONLY => R,
            O_WRONLY => W,
            _ => R | W,
        };
        // A file just created may be opened for writing whatever its mode.
        if !created && !path_only {
            need(cred, &st, want)?;
        }
        // A FIFO, socket or device file has no bytes of its own here: its
        // data would be a pipe's or a driver's, which this server has not.
        if !path_only
            && matches!(
                st.kind,
                FileType::Fifo | FileType::Socket | FileType::CharDevice | FileType::BlockDevice
            )
        {
            return Err(Errno::ENXIO);
        }
        let f = OpenFile {
            handle: h,
            access: if path_only { O_PATH } else { access },
            dir,
            unprivileged: cred.uid != 0,
            exec,
        };
        // A running program is not opened for writing (nor truncated by
        // the open), and a file open for writing does not run.
        self.writers.take(&f)?;
        if flags & O_TRUNC != 0
            && access != O_RDONLY
            && st.kind == FileType::Regular
            && st.size > 0
            && let Err(e) = self.truncate_file(h, 0)
        {
            self.writers.put(&f);
            return Err(e);
        }
        if let Err(e) = self.fm()?.open(h).map_err(errno) {
            self.writers.put(&f);
            return Err(e);
        }
        match self.client(caller).insert(f) {
            Ok(fd) => {
                // A client about to write the file it opens needs no
                // WRITE_TO first (a created file's first write).
                if open_flags & OPEN_WRITE_HERE != 0 && f.writable() && !dir {
                    let append = if flags & O_APPEND != 0 { APPEND } else { 0 };
                    self.client(caller).write = Some(WriteContext::new(fd, &f, append, 0));
                }
                Ok(fd)
            }
            Err(e) => {
                self.writers.put(&f);
                let _ = self.fm()?.close(h);
                Err(e)
            }
        }
    }

    /// A write by a caller without privilege ends the file's set-ids (as
    /// Linux's, lest a program someone may write to keep them).
    pub(crate) fn end_set_ids(&mut self, h: Handle) -> Result<(), Errno> {
        let perm = self.stat_of(h)?.mode & 0o7777;
        let ended = set_ids_ended(perm);
        if ended != 0 {
            let change = LibSetAttr {
                perm: Some(perm & !ended),
                ..LibSetAttr::default()
            };
            self.fm()?.setattr(h, &change).map_err(errno)?;
        }
        Ok(())
    }

    /// Truncates `h` to `size`; its cache loses what changed.
    fn truncate_file(&mut self, h: Handle, size: u64) -> Result<(), Errno> {
        let old = self.stat_of(h)?.size;
        self.sealed_resize(h, old, size)?;
        self.fm()?.truncate(h, size).map_err(errno)?;
        self.cache_resized(h, old, size);
        Ok(())
    }

    fn setattr(&mut self, caller: u64, msg: &[u8]) -> Result<(), Errno> {
        let mut p = PathRequest::parse(msg)?;
        let a = SetAttr::read(&mut p.r).ok_or(Errno::EINVAL)?;
        let cred = p.hdr.cred;
        let h = self.resolve(caller, &p.hdr, p.path(), p.hdr.flags & AT_SYMLINK_NOFOLLOW == 0)?;
        let st = self.stat_of(h)?;
        let owner = cred.uid == 0 || cred.uid == st.uid;
        let mut change = LibSetAttr::default();
        if a.valid & SetAttr::MODE != 0 {
            if !owner {
                return Err(Errno::EPERM);
            }
            let mut perm = (a.mode & 0o7777) as u16;
            // Outside the file's group, a caller without privilege may not
            // make it set-group-id: Linux drops that bit silently.
            let gid = if a.valid & SetAttr::GID != 0 { a.gid } else { st.gid };
            if cred.uid != 0 && gid != cred.gid {
                perm &= !S_ISGID;
            }
            change.perm = Some(perm);
        }
        if a.valid & SetAttr::UID != 0 && a.uid != st.uid {
            if cred.uid != 0 {
                return Err(Errno::EPERM);
            }
            change.uid = Some(a.uid);
        }
        if a.valid & SetAttr::GID != 0 && a.gid != st.gid {
            if cred.uid != 0 && !(owner && a.gid == cred.gid) {
                return Err(Errno::EPERM);
            }
            change.gid = Some(a.gid);
        }
        // A new owner or group (asked for, even if the same) ends a
        // program's set-ids, root's chown too, as on Linux.
        if a.valid & (SetAttr::UID | SetAttr::GID) != 0 && st.kind != FileType::Directory {
            let perm = change.perm.unwrap_or(st.mode & 0o7777);
            let ended = set_ids_ended(perm);
            if ended != 0 {
                change.perm = Some(perm & !ended);
            }
        }
        if a.valid & SetAttr::SIZE != 0 {
            need(cred, &st, W)?;
            if self.writers.running(h.ino) {
                return Err(Errno::ETXTBSY);
            }
            change.size = Some(a.size);
        }
        let now = self.fm()?.inodes().now();
        let time = |(s, ns): (i64, u32)| Timestamp::new(s, ns.min(999_999_999));
        for (set, set_now, slot, value) in [
            (SetAttr::ATIME, SetAttr::ATIME_NOW, &mut change.atime, a.atime),
            (SetAttr::MTIME, SetAttr::MTIME_NOW, &mut change.mtime, a.mtime),
        ] {
            if a.valid & set_now != 0 {
                if !owner && !may(cred, &st, W) {
                    return Err(Errno::EACCES);
                }
                *slot = Some(now);
            } else if a.valid & set != 0 {
                if !owner {
                    return Err(Errno::EPERM);
                }
                *slot = Some(time(value));
            }
        }
        let old = self.stat_of(h)?.size;
        self.fm()?.setattr(h, &change).map_err(errno)?;
        if let Some(new) = change.size {
            self.cache_resized(h, old, new);
        }
        Ok(())
    }

    /// READDIR: `linux_dirent64` records from a position, as many as the
    /// reply takes.
    pub fn readdir(&mut self, info: &AccInfo, msg: &[u8], out: &mut [u8]) -> Result<usize, Errno> {
        let (f, pos) = self.file_and_value(info.caller, msg)?;
        if !f.dir {
            return Err(Errno::ENOTDIR);
        }
        let cap = (info.reply_cap as usize).min(out.len());
        let buf = &mut out[..cap];
        let mut used = 0;
        let fm: &mut Fm = self.fm()?;
        let stopped = fm
            .read_dir(f.handle, pos, &mut |e| match write_dirent(
                &mut buf[used..],
                e.ino as u64,
                e.next,
                d_type(e.kind),
                e.name,
            ) {
                Some(n) => {
                    used += n;
                    true
                }
                None => false,
            })
            .map_err(errno)?;
        if used == 0 && stopped < fm.stat(f.handle).map_err(errno)?.size {
            // Not even one record fits (Linux's getdents says the same).
            return Err(Errno::EINVAL);
        }
        Ok(used)
    }
}

/// Linux's `xattr_permission`: who may read (`R`) or write (`W`)
/// attribute `name` of a file with `st`. `security.` and `system.` are
/// the file system's to decide; `trusted.` is root's (others read none);
/// `user.` is for regular files and directories (a sticky directory's
/// only for its owner to write), with the file's own permission bits.
fn xattr_permission(cred: Cred, st: &LibStat, name: &[u8], want: u32) -> Result<(), Errno> {
    if name.starts_with(b"security.") || name.starts_with(b"system.") {
        return Ok(());
    }
    let refused = if want & W != 0 { Errno::EPERM } else { Errno::ENODATA };
    if name.starts_with(b"trusted.") {
        return if cred.uid == 0 { Ok(()) } else { Err(refused) };
    }
    if name.starts_with(b"user.") {
        if !matches!(st.kind, FileType::Regular | FileType::Directory) {
            return Err(refused);
        }
        if st.kind == FileType::Directory
            && st.mode as u32 & 0o1000 != 0
            && want & W != 0
            && cred.uid != 0
            && cred.uid != st.uid
        {
            return Err(Errno::EPERM);
        }
    }
    need(cred, st, want)
}

impl Server {
    /// `XATTR`: see the protocol's table.
    fn xattr(&mut self, caller: u64, msg: &[u8], out: &mut [u8]) -> Result<(i64, usize), Errno> {
        let mut p = PathRequest::parse(msg)?;
        let op = p.u32()?;
        let flags = p.u32()?;
        let name_len = p.u32()? as usize;
        let size = p.u32()? as usize;
        let name = p.bytes(name_len)?;
        let value = if op == XATTR_SET { p.bytes(size)? } else { &[][..] };
        if flags & !(XATTR_CREATE | XATTR_REPLACE) != 0 {
            return Err(Errno::EINVAL);
        }
        let h = self.resolve(caller, &p.hdr, p.path(), p.hdr.flags & AT_SYMLINK_NOFOLLOW == 0)?;
        let st = self.stat_of(h)?;
        let cred = p.hdr.cred;
        let bytes = match op {
            XATTR_GET => {
                xattr_permission(cred, &st, name, R)?;
                self.fm()?.xattr_get(h, name).map_err(errno)?
            }
            XATTR_LIST => {
                // Linux lists trusted.* only to a caller who could read it.
                let mut list = Vec::new();
                for n in self.fm()?.xattr_list(h).map_err(errno)? {
                    if cred.uid == 0 || !n.starts_with(b"trusted.") {
                        list.extend_from_slice(&n);
                        list.push(0);
                    }
                }
                list
            }
            XATTR_SET | XATTR_REMOVE => {
                xattr_permission(cred, &st, name, W)?;
                let (value, flags) = match op {
                    XATTR_SET => (Some(value), flags),
                    _ => (None, XATTR_REPLACE),
                };
                self.fm()?.xattr_set(h, name, value, flags).map_err(errno)?;
                return Ok((0, 0));
            }
            _ => return Err(Errno::EINVAL),
        };
        if size == 0 {
            return Ok((bytes.len() as i64, 0));
        }
        if bytes.len() > size {
            return Err(Errno::ERANGE);
        }
        if bytes.len() > out.len() - 8 {
            return Err(Errno::E2BIG);
        }
        out[8..8 + bytes.len()].copy_from_slice(&bytes);
        Ok((bytes.len() as i64, bytes.len()))
    }
}
