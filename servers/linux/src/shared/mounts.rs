//! The mount table (`ctl::MOUNT`): file systems mounted on loop devices,
//! each served by storage servers of its own. A mount starts, as child
//! processes of this server, a `loopblk` (the loop device as a block
//! device: its blocks are the backing file's, through the system's file
//! server), a `blockcache` over it and an `fs` over that, under names
//! `mntK.disk`, `mntK.cache`, `mntK.fs` (K counts the mounts made); the
//! mount holds the device open.
//! The file server refuses an image it cannot mount (it says so in its
//! STATS: `mounted no`): the mount fails with EINVAL and its servers go.
//! An unmount syncs the file server and ends the three.
//!
//! Operations (word 1):
//! - `ADD` [device, flags, path length, path…] → [id, fs, cache, device
//!   server, K]: the servers are started; the mount is not in the table
//!   until `READY` (the caller waits for the file server, so that this
//!   server stays free to answer the device server's `ATTACH`);
//! - `READY` [id, ok]: the file server serves a mounted file system (ok)
//!   or not (its servers end, the mount goes);
//! - `REMOVE` [umount flags, path length, path…] → [0]: EINVAL for a path
//!   no file system is mounted on, EBUSY while files of it are open
//!   (unless MNT_DETACH);
//! - `REMOUNT` [flags, path length, path…] → [0]: a mount's flags
//!   from now on (MS_RDONLY, MS_NODEV and MS_NOEXEC, which supervisors
//!   enforce as Linux's VFS does, and the others they show in statfs and
//!   /proc/mounts);
//! - `LIST` → [count, then per mount: id, file server, device, flags,
//!   path length, path…, source length, source…];
//! - `BIND` [flags, path length, path…, source length, source…] → [0]:
//!   MS_BIND: names below the path lead to the same names below the
//!   source (an absolute path of the system's, without links), which the
//!   supervisors route again; no servers of its own, so never busy;
//! - `MOVE` [path length, path…, new path length, new path…] → [0]:
//!   MS_MOVE: the mount, and those below it, at the new path from now on
//!   (binds whose source was below it follow).
//!
//! The first mount also registers the name `linux.mounts`: supervisors
//! look the table up only once some file system was mounted.

use super::{End, Shared, result};
use crate::proto::{self, word};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use linuxabi::errno;
use tessera_api::fs as api;
use tessera_rt::abi::SpawnOptions;
use tessera_rt::sys;

pub const ADD: u64 = 1;
pub const REMOVE: u64 = 2;
pub const LIST: u64 = 3;
pub const READY: u64 = 4;
pub const REMOUNT: u64 = 5;
pub const BIND: u64 = 6;
pub const MOVE: u64 = 7;

/// The name whose presence tells supervisors that mounts exist.
pub const MOUNTED_NAME: &str = "linux.mounts";
/// Mount numbers (they tag the file server's file numbers in a
/// supervisor: at most 63).
const MAX_MOUNTS: u32 = 63;
/// The mounted file system's cache, in pages.
const CACHE_PAGES: &str = "1024";
/// MS_RDONLY and umount2's MNT_DETACH.
const MS_RDONLY: u64 = 1;
/// The flags a remount sets (the supervisors choose which a mount
/// keeps): all but MS_REMOUNT's own and the magic number's.
const KEPT: u64 = 0xffff & !32 | 1 << 24;
const MNT_DETACH: u64 = 2;

pub struct Mount {
    pub id: u32,
    pub path: String,
    pub dev: u32,
    pub flags: u64,
    pub fs: u64,
    /// A bind's source (None: a file system on a device).
    pub source: Option<String>,
    /// The three servers' pids (file server, cache, device).
    procs: [u64; 3],
    /// Its file server said it mounted the file system.
    ready: bool,
}

#[derive(Default)]
pub struct Mounts {
    pub list: Vec<Mount>,
    registered: bool,
    /// Mounts made so far: each mount's servers get names never used
    /// before (a server just ended may still hold its name a while).
    made: u64,
}

impl Mounts {
    /// Whether `pid` is the device server (`loopblk`) of a mount: it asks
    /// which file backs its loop device (`ctl::LOOP`).
    pub fn is_loop_server(&self, pid: u64) -> bool {
        pid != 0 && self.list.iter().any(|m| m.procs[2] == pid)
    }
}

/// A path from message words: its length, then its bytes.
pub fn path_from(w: &[u64]) -> Option<String> {
    let len = word(w, 0) as usize;
    let b = proto::bytes(w.get(1..).unwrap_or(&[]));
    String::from_utf8(b.get(..len)?.to_vec()).ok()
}

/// The words `path_words` made of `p` take.
pub fn path_len(p: &str) -> usize {
    1 + p.len().div_ceil(8)
}

/// Two paths from message words, one after the other.
fn two_paths(w: &[u64]) -> Option<(String, String)> {
    let a = path_from(w)?;
    let b = path_from(w.get(path_len(&a)..)?)?;
    Some((a, b))
}

/// `path` with its prefix `from` made `to` (None: not below `from`).
pub fn moved(path: &str, from: &str, to: &str) -> Option<String> {
    let rest = linuxabi::path::below(path, from)?;
    Some(match (rest.is_empty(), to) {
        (true, _) => String::from(to),
        (false, "/") => format!("/{rest}"),
        (false, _) => format!("{to}/{rest}"),
    })
}

pub fn path_words(p: &str) -> Vec<u64> {
    let mut w = alloc::vec![p.len() as u64];
    w.extend(proto::name_words(p.as_bytes()));
    w
}

/// One line of the file server's STATS report, as a number.
fn stat_line(fs: u64, key: &str) -> Option<u64> {
    let mut out = alloc::vec![0u8; 1024];
    let n = sys::call(fs, api::STATS, &[], &mut out).ok()?;
    let text = core::str::from_utf8(&out[..n]).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        if k != key {
            return None;
        }
        match v {
            "yes" => Some(1),
            "no" => Some(0),
            v => v.parse().ok(),
        }
    })
}

fn end_all(procs: &[u64]) {
    for &p in procs {
        if p != 0 {
            let _ = sys::kill(p);
        }
    }
}

impl Shared {
    /// `ctl::MOUNT`.
    pub(super) fn mount_ctl(&mut self, w: &[u64]) -> End {
        match word(w, 1) {
            ADD => {
                let Some(path) = path_from(w.get(4..).unwrap_or(&[])) else {
                    return result(-errno::EINVAL);
                };
                match self.mount_add(word(w, 2) as u32, word(w, 3), path) {
                    Ok((id, p)) => End::Reply(alloc::vec![id as u64, p[0], p[1], p[2], self.mounts.made]),
                    Err(e) => result(-e),
                }
            }
            REMOUNT => {
                let Some(path) = path_from(w.get(3..).unwrap_or(&[])) else {
                    return result(-errno::EINVAL);
                };
                match self.mounts.list.iter_mut().find(|m| m.ready && m.path == path) {
                    Some(m) => {
                        // A remount's flags are the mount's from now on,
                        // as Linux's (nodev cleared unless asked again).
                        m.flags = (m.flags & !KEPT) | (word(w, 2) & KEPT);
                        result(0)
                    }
                    None => result(-errno::EINVAL),
                }
            }
            READY => result(
                self.mount_ready(word(w, 2) as u32, word(w, 3) != 0)
                    .map_or_else(|e| -e, |_| 0),
            ),
            REMOVE => {
                let Some(path) = path_from(w.get(3..).unwrap_or(&[])) else {
                    return result(-errno::EINVAL);
                };
                result(self.mount_remove(word(w, 2), &path).map_or_else(|e| -e, |_| 0))
            }
            LIST => {
                let ready = self.mounts.list.iter().filter(|m| m.ready);
                let mut out = alloc::vec![ready.clone().count() as u64];
                for m in ready {
                    out.extend([m.id as u64, m.fs, m.dev as u64, m.flags]);
                    out.extend(path_words(&m.path));
                    out.extend(path_words(m.source.as_deref().unwrap_or("")));
                }
                End::Reply(out)
            }
            BIND => match two_paths(w.get(3..).unwrap_or(&[])) {
                Some((path, source)) if !source.is_empty() => {
                    result(self.mount_bind(word(w, 2), path, source).map_or_else(|e| -e, |_| 0))
                }
                _ => result(-errno::EINVAL),
            },
            MOVE => match two_paths(w.get(2..).unwrap_or(&[])) {
                Some((from, to)) => result(self.mount_move(&from, &to).map_or_else(|e| -e, |_| 0)),
                None => result(-errno::EINVAL),
            },
            _ => result(-errno::EINVAL),
        }
    }

    fn mount_add(&mut self, dev: u32, flags: u64, path: String) -> Result<(u32, [u64; 3]), i64> {
        let ms = &self.mounts.list;
        if ms.iter().any(|m| m.path == path || m.dev == dev) {
            return Err(errno::EBUSY);
        }
        let id = self.free_id()?;
        // An unbound device has no file system on it; a read-only one
        // mounts read-only only.
        self.loops.status(dev).map_err(|_| errno::EINVAL)?;
        if flags & MS_RDONLY == 0 && self.loops.writes_refused(dev) {
            return Err(errno::EACCES);
        }
        self.loops.open(dev)?;
        self.mounts.made += 1;
        let k = self.mounts.made;
        let names = [format!("mnt{k}.fs"), format!("mnt{k}.cache"), format!("mnt{k}.disk")];
        let number = format!("{dev}");
        let mut fs_args = alloc::vec![names[0].as_str(), names[1].as_str(), "quiet"];
        if flags & MS_RDONLY != 0 {
            fs_args.push("ro");
        }
        let o = &SpawnOptions::DEFAULT;
        let procs = [
            sys::spawn("fs", &fs_args, o).unwrap_or(0),
            sys::spawn("blockcache", &[&names[1], &names[2], CACHE_PAGES], o).unwrap_or(0),
            sys::spawn("loopblk", &[&names[2], &number], o).unwrap_or(0),
        ];
        if procs.contains(&0) {
            end_all(&procs);
            self.release_dev(dev);
            return Err(errno::ENOMEM);
        }
        self.mounts.list.push(Mount {
            id,
            path,
            dev,
            flags,
            fs: procs[0],
            source: None,
            procs,
            ready: false,
        });
        Ok((id, procs))
    }

    /// A free mount number.
    fn free_id(&self) -> Result<u32, i64> {
        let ms = &self.mounts.list;
        (1..=MAX_MOUNTS)
            .find(|i| !ms.iter().any(|m| m.id == *i))
            .ok_or(errno::ENOMEM)
    }

    fn register(&mut self) {
        if !self.mounts.registered {
            self.mounts.registered = sys::name_register(MOUNTED_NAME, proto::shared::ENTRIES).is_ok();
        }
    }

    /// `BIND`: one mount per path, as device mounts (EBUSY).
    fn mount_bind(&mut self, flags: u64, path: String, source: String) -> Result<(), i64> {
        if !path.starts_with('/') || !source.starts_with('/') {
            return Err(errno::EINVAL);
        }
        if self.mounts.list.iter().any(|m| m.path == path) {
            return Err(errno::EBUSY);
        }
        let id = self.free_id()?;
        self.mounts.list.push(Mount {
            id,
            path,
            dev: u32::MAX,
            flags: flags & KEPT,
            fs: 0,
            source: Some(source),
            procs: [0; 3],
            ready: true,
        });
        self.register();
        Ok(())
    }

    /// `MOVE`: EINVAL unless a mount is at `from`, EBUSY if one is at
    /// `to`, ELOOP for a place below itself.
    fn mount_move(&mut self, from: &str, to: &str) -> Result<(), i64> {
        let ms = &mut self.mounts.list;
        if !ms.iter().any(|m| m.ready && m.path == from) {
            return Err(errno::EINVAL);
        }
        if ms.iter().any(|m| m.path == to) {
            return Err(errno::EBUSY);
        }
        if linuxabi::path::below(to, from).is_some() {
            return Err(errno::ELOOP);
        }
        for m in ms.iter_mut() {
            if let Some(p) = moved(&m.path, from, to) {
                m.path = p;
            }
            if let Some(p) = m.source.as_deref().and_then(|s| moved(s, from, to)) {
                m.source = Some(p);
            }
        }
        Ok(())
    }

    /// `READY`: the mount's file server serves a mounted file system, or
    /// the mount goes.
    fn mount_ready(&mut self, id: u32, ok: bool) -> Result<(), i64> {
        let i = self
            .mounts
            .list
            .iter()
            .position(|m| m.id == id && !m.ready)
            .ok_or(errno::EINVAL)?;
        let fs = self.mounts.list[i].fs;
        if ok && stat_line(fs, "mounted") == Some(1) {
            self.mounts.list[i].ready = true;
            self.register();
            return Ok(());
        }
        let m = self.mounts.list.remove(i);
        end_all(&m.procs);
        self.release_dev(m.dev);
        Err(errno::EINVAL)
    }

    fn release_dev(&mut self, dev: u32) {
        if let Some(file) = self.loops.close(dev) {
            super::loopdev::close_backing(file);
        }
    }

    fn mount_remove(&mut self, flags: u64, path: &str) -> Result<(), i64> {
        let i = self
            .mounts
            .list
            .iter()
            .position(|m| m.path == path && m.ready)
            .ok_or(errno::EINVAL)?;
        if self.mounts.list[i].source.is_some() {
            self.mounts.list.remove(i);
            return Ok(());
        }
        let fs = self.mounts.list[i].fs;
        if flags & MNT_DETACH == 0 && stat_line(fs, "open_files").unwrap_or(0) > 0 {
            return Err(errno::EBUSY);
        }
        let mut r = [0u8; 8];
        let _ = sys::call(fs, api::SYNC, &[], &mut r);
        let m = self.mounts.list.remove(i);
        end_all(&m.procs);
        self.release_dev(m.dev);
        Ok(())
    }
}
