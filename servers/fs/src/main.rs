//! The ext2 file server (seed 003's file and inode processes; protocol
//! `tessera_api::fs`): `fs [name] [cache] [ro]` mounts the file system on
//! the block cache served as `cache` and serves it under `name` (default
//! `fs`), read-only with `ro`.
//!
//! The ext2 logic is the `ext2fs` library: its file manager over its inode
//! manager, over the cache (`device.rs`). This server adds the clients and
//! their file numbers, credentials and permission checks (`ops.rs`), and
//! the copy-less data path (`data.rs`). A file system that does not mount
//! leaves the server up, answering every request with the mount's error.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod clients;
mod data;
mod device;
mod memfd;
mod ops;
mod published;
mod space;
mod write_access;

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use clients::{Client, Clients};
use core::fmt::Write;
use device::CacheDevice;
use ext2fs::{FileManager, MountOptions, Timestamp};
use tessera_api::cache::{self, MAX_SEGMENTS, OpenReply, Segment, Slot};
use tessera_api::fs::{self as api, Errno, FAILED};
use tessera_rt::abi::{AccInfo, Error};
use tessera_rt::ica::SharedWords;
use tessera_rt::sys::calls;
use tessera_rt::{println, sys};

/// Longest message of a path request (two paths of PATH_MAX and fields,
/// or a path, an attribute's name and its largest value).
/// Free space below which an allocation first looks for the files of
/// ended clients (indirect blocks and the rest of a write need room too).
const SWEEP_MARGIN: u64 = 4 << 20;
const MAX_MSG: usize = 2 * 4096 + 256 + api::XATTR_SIZE_MAX;
/// Largest reply built here (READDIR's records, READLINK's target).
const MAX_REPLY: usize = 16 * 1024;

pub type Fm = FileManager<CacheDevice>;

/// How the current call ends.
pub enum End {
    /// Replies with the first bytes of the server's reply buffer.
    Reply(usize),
    /// Replies with that many zeros (a hole).
    Zeros(usize),
    /// Passes the call to the cache, whose plan is in that read slot.
    Forward(usize),
    Fail(Error),
}

#[derive(Default)]
pub struct Stats {
    pub requests: u64,
    pub forwarded_reads: u64,
    pub forwarded_bytes: u64,
    /// Zeros copied into readers' buffers for holes (the one copy).
    pub hole_bytes: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub opens: u64,
    pub errors: u64,
    /// Pages supplied for faults (`PAGE_IN`), and page-ins refused.
    pub pages_in: u64,
    pub page_in_errors: u64,
}

pub struct Server {
    fm: Result<Fm, Errno>,
    pub cache: u64,
    pub plans: SharedWords,
    clients: Clients,
    /// The clock: seconds at mount, and the TSC then.
    base_secs: i64,
    base_tsc: u64,
    pub write_key: u64,
    /// A READ's plan, kept between calls: made afresh, a plan's worth of
    /// pieces costs more to clear than a cached read to serve.
    pub read_plan: Vec<Segment>,
    pub stats: Stats,
    /// The kernel's file caches of the open files.
    pub published: published::Published,
    /// A page's bytes on their way to a file cache.
    pub page_buf: Vec<u8>,
    /// The files open for writing and the programs running, per inode.
    pub writers: write_access::WriteAccess,
    /// The seals of the anonymous files (`memfd.rs`).
    pub seals: alloc::collections::BTreeMap<ext2fs::Handle, u32>,
}

/// A library error as the protocol's errno.
pub fn errno(e: ext2fs::Errno) -> Errno {
    Errno(e.code())
}

impl Server {
    pub fn fm(&mut self) -> Result<&mut Fm, Errno> {
        self.fm.as_mut().map_err(|e| *e)
    }

    pub fn dev(&mut self) -> &mut CacheDevice {
        match &mut self.fm {
            Ok(fm) => fm.inodes().device(),
            // Unreachable in use: the data paths need a mounted system.
            Err(_) => unreachable!("no device without a mount"),
        }
    }

    pub fn client(&mut self, pid: u64) -> &mut Client {
        self.clients.entry(pid).or_default()
    }

    /// The time now, for the library's stamps: the wall clock Linux
    /// programs see (so a file's times are those its writer read), else
    /// the image's last write time at mount plus the time since.
    fn now(&self) -> Timestamp {
        if let Ok(wall) = calls::wall_clock() {
            return Timestamp::new((wall / 1_000_000_000) as i64, (wall % 1_000_000_000) as u32);
        }
        let ns = sys::tsc_to_ns(sys::rdtsc().wrapping_sub(self.base_tsc));
        Timestamp::new(
            self.base_secs + (ns / 1_000_000_000) as i64,
            (ns % 1_000_000_000) as u32,
        )
    }

    /// Closes the files of clients that ended.
    fn sweep(&mut self) {
        let gone: Vec<u64> = self.clients.keys().copied().filter(|&p| !sys::alive(p)).collect();
        for pid in gone {
            if let Some(c) = self.clients.remove(&pid) {
                for f in c.files.into_iter().flatten() {
                    self.writers.put(&f);
                    self.cache_close(&f, pid);
                    if let Ok(fm) = self.fm.as_mut() {
                        let _ = fm.close(f.handle);
                    }
                    self.seals_closed(f.handle);
                }
                if let (Some(h), Ok(fm)) = (c.root, self.fm.as_mut()) {
                    let _ = fm.close(h);
                }
            }
        }
    }

    /// Before an allocation of `bytes` the free space may not hold: the
    /// files of clients that ended without closing them are closed first.
    /// A server killed with a file open (a loop device's `loopblk` at an
    /// unmount) holds that file, and an unlinked one its blocks, until a
    /// sweep; the sweep on OPEN alone is too rare for a disk that fills
    /// with such files (LTP's 300 MB device images, one per test).
    pub(crate) fn sweep_if_short(&mut self, bytes: u64) {
        let free = self.fm.as_mut().map_or(u64::MAX, |fm| {
            let sb = fm.inodes().superblock();
            (sb.free_blocks as u64).saturating_mul(sb.block_size as u64)
        });
        if free < bytes.saturating_add(SWEEP_MARGIN) {
            self.sweep();
        }
    }

    fn report(&mut self) -> String {
        let s = &self.stats;
        let open: usize = self
            .clients
            .values()
            .map(|c| c.files.iter().filter(|f| f.is_some()).count())
            .sum();
        let mut o = String::new();
        let _ = write!(
            o,
            "mounted {}\nclients {}\nopen_files {}\nrequests {}\nopens {}\nerrors {}\nforwarded_reads {}\n\
             forwarded_bytes {}\nhole_bytes_copied {}\nwrites {}\nwrite_bytes {}\npages_in {}\npage_in_errors {}\n",
            match &self.fm {
                Ok(_) => "yes",
                Err(_) => "no",
            },
            self.clients.len(),
            open,
            s.requests,
            s.opens,
            s.errors,
            s.forwarded_reads,
            s.forwarded_bytes,
            s.hole_bytes,
            s.writes,
            s.write_bytes,
            s.pages_in,
            s.page_in_errors
        );
        let p = &self.published;
        let _ = write!(
            o,
            "file_caches {}\npages_published {}\nbytes_published {}\npages_delegated {}\npages_revoked {}\n\
             pages_refused {}\n",
            p.caches(),
            p.pages_published,
            p.bytes_published,
            p.pages_delegated,
            p.pages_revoked,
            p.refused
        );
        if let Err(e) = &self.fm {
            let _ = writeln!(o, "mount_error {}", e.0);
        }
        if let Ok(fm) = self.fm.as_mut() {
            let l = fm.stats();
            let d = fm.inodes().device().stats;
            let _ = write!(
                o,
                "library_blocks_read {}\nlibrary_blocks_written {}\nlibrary_bytes_copied {}\nbarriers {}\n\
                 syncs {}\ninconsistencies {}\nmirror_hits {}\nmirror_misses {}\nmeta_read_bytes {}\n\
                 meta_writes {}\nmeta_write_bytes {}\nmeta_batches {}\n",
                l.blocks_read,
                l.blocks_written,
                l.bytes_copied,
                l.barriers,
                l.syncs,
                l.inconsistencies,
                d.mirror_hits,
                d.mirror_misses,
                d.read_bytes,
                d.writes,
                d.write_bytes,
                d.batches
            );
        }
        o
    }

    /// Serves a request; its metadata changes reach the cache before its
    /// reply (or its forward) does, and the kernel's copies of the
    /// attributes it changed go.
    fn serve(&mut self, info: &AccInfo, rid: u64, msg: &mut Vec<u8>, out: &mut [u8]) -> End {
        let end = self.serve_one(info, rid, msg, out);
        self.cache_attrs_changed();
        let flushed = match self.fm.as_mut() {
            Ok(fm) => fm.inodes().device().flush(),
            Err(_) => Ok(()),
        };
        match (flushed, end) {
            (Ok(()), end) => end,
            (Err(e), end) => {
                let e = errno(e);
                if let End::Forward(slot) = end
                    && let Some(s) = Slot::of(self.plans.words(), slot)
                {
                    s.clear();
                }
                self.client(info.caller).errno = Some(e);
                match info.entry {
                    api::READ | api::READDIR => End::Fail(FAILED),
                    _ => result(out, Err(e)),
                }
            }
        }
    }

    fn serve_one(&mut self, info: &AccInfo, rid: u64, msg: &mut Vec<u8>, out: &mut [u8]) -> End {
        self.stats.requests += 1;
        self.cache_publish_pending();
        let now = self.now();
        if let Ok(fm) = self.fm.as_mut() {
            fm.set_time(now);
        }
        match info.entry {
            api::READ => return self.read(info, rid),
            api::PAGE_IN => return self.page_in(info, rid),
            api::WRITE => return self.write(info, rid, out),
            api::ERRNO => {
                let e = self.client(info.caller).errno.take().unwrap_or(Errno::EIO);
                out[..8].copy_from_slice(&(e.0 as i64).to_le_bytes());
                return End::Reply(8);
            }
            api::STATS => {
                let text = self.report();
                let n = text.len().min(out.len());
                out[..n].copy_from_slice(&text.as_bytes()[..n]);
                return End::Reply(n);
            }
            _ => {}
        }
        // Every other request's message is read whole first.
        let len = info.len as usize;
        if len > MAX_MSG {
            return result(out, Err(Errno::ENAMETOOLONG));
        }
        msg.resize(len, 0);
        if len <= info.inline.len() {
            msg.copy_from_slice(&info.inline[..len]);
        } else if let Err(e) = sys::rv_read(rid, 0, msg) {
            return End::Fail(e);
        }
        if info.entry == api::READDIR {
            return match self.readdir(info, msg, out) {
                Ok(n) => End::Reply(n),
                Err(e) => {
                    self.stats.errors += 1;
                    self.client(info.caller).errno = Some(e);
                    End::Fail(FAILED)
                }
            };
        }
        if info.entry == api::OPEN {
            self.stats.opens += 1;
            if self.stats.opens.is_multiple_of(64) || self.clients.len() > 32 {
                self.sweep();
            }
        }
        let r = self.op(info.entry, info.caller, msg, out);
        if r.is_err() {
            self.stats.errors += 1;
        }
        match r {
            Ok(extra) => {
                // The result word leads; `op` wrote its extra bytes after it.
                out[..8].copy_from_slice(&extra.0.to_le_bytes());
                End::Reply(8 + extra.1)
            }
            Err(e) => result(out, Err(e)),
        }
    }
}

impl Server {
    /// The kernel's call for a page of a file (the server as pager): read
    /// as a READ is, the cache writing the bytes straight into the page
    /// the kernel made the call's reply buffer, which only the faulting
    /// process gets. Only the kernel's call (`ACC_PAGER`) is answered: a
    /// process calling this entry itself would have a file's bytes read
    /// into its own reply buffer, with no open and no permission check.
    /// The file must be the one exec saw: the same inode, size and
    /// modification time.
    fn page_in(&mut self, info: &AccInfo, rid: u64) -> End {
        let r = if info.flags & tessera_rt::abi::ACC_PAGER == 0 {
            Err(Error::Denied)
        } else {
            self.page_plan(info, rid)
        };
        match r {
            Ok(end) => {
                self.stats.pages_in += 1;
                end
            }
            Err(e) => {
                self.stats.page_in_errors += 1;
                End::Fail(e)
            }
        }
    }

    fn page_plan(&mut self, info: &AccInfo, rid: u64) -> Result<End, Error> {
        if info.len != 48 {
            return Err(Error::Invalid);
        }
        let mut r = tessera_api::wire::Reader::new(&info.inline[..48]);
        let mut object = [0u64; 4];
        for w in object.iter_mut() {
            *w = r.u64().ok_or(Error::Invalid)?;
        }
        let (offset, len) = (r.u64().ok_or(Error::Invalid)?, r.u64().ok_or(Error::Invalid)?);
        let fm = self.fm().map_err(|_| Error::NotFound)?;
        let ino = u32::try_from(object[0]).map_err(|_| Error::NotFound)?;
        if ino == 0 || ino > fm.inodes().inodes_count() {
            return Err(Error::NotFound);
        }
        let inode = fm.inodes().get(ino).map_err(|_| Error::NotFound)?;
        let same = api::pager_object(ino as u64, inode.size, (inode.mtime.secs, inode.mtime.nanos as i64)) == object;
        if !same || inode.links == 0 || inode.kind() != Some(ext2fs::FileType::Regular) {
            return Err(Error::NotFound);
        }
        let h = ext2fs::Handle {
            ino,
            generation: inode.generation,
        };
        self.plan(rid, h, offset, len).map_err(|_| Error::Fault)
    }
}

/// A reply holding only the result word.
fn result(out: &mut [u8], r: Result<i64, Errno>) -> End {
    let v = match r {
        Ok(v) => v,
        Err(e) => -(e.0 as i64),
    };
    out[..8].copy_from_slice(&v.to_le_bytes());
    End::Reply(8)
}

/// Connects to the cache and mounts; the error if the mount fails.
fn mount(cache_pid: u64, read_only: bool) -> Result<(Fm, SharedWords, i64), (Errno, Option<SharedWords>)> {
    sys::peer_grant(cache_pid).map_err(|e| (Errno::of(e), None))?;
    let mut reply = [0u8; OpenReply::LEN];
    sys::call(cache_pid, cache::OPEN, &[], &mut reply).map_err(|e| (Errno::of(e), None))?;
    let open = OpenReply::decode(&reply).ok_or((Errno::EIO, None))?;
    let plans = SharedWords::adopt(open.plan_area).map_err(|e| (Errno::of(e), None))?;
    let mut dev = CacheDevice::new(cache_pid, open.device_bytes);
    // The superblock's last write time: the clock starts from it.
    let mut secs = 0i64;
    let _ = ext2fs::BlockDevice::read_block(&mut dev, 1, 1024, &mut |b| {
        let w = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4])) as i64;
        secs = w(48).max(w(44));
    });
    let opts = MountOptions {
        read_only,
        time: Timestamp::new(secs, 0),
    };
    match FileManager::mount(dev, opts) {
        Ok(fm) => Ok((fm, plans, secs)),
        Err(e) => Err((errno(e), Some(plans))),
    }
}

fn main(args: &[&str]) -> i32 {
    let name = args.get(1).copied().unwrap_or(api::NAME);
    let cache_name = args.get(2).copied().unwrap_or(cache::NAME);
    let options = args.get(3..).unwrap_or(&[]);
    let read_only = options.contains(&"ro");
    // A mounter learns a failed mount from STATS (`mounted`, `mount_error`)
    // and reports it to its own caller: the console need not hear of it.
    let quiet = options.contains(&"quiet");
    let cache_pid = sys::wait_for_name(cache_name);
    if cache_pid == 0 {
        println!("fs: no block cache '{cache_name}'");
        return 1;
    }
    let (fm, plans, secs) = match mount(cache_pid, read_only) {
        Ok((fm, plans, secs)) => (Ok(fm), plans, secs),
        Err((e, plans)) => {
            if !quiet {
                println!("fs: cannot mount the file system on '{cache_name}': {e:?}");
            }
            let Some(plans) = plans.or_else(|| SharedWords::create(1).ok()) else {
                return 1;
            };
            (Err(e), plans, 0)
        }
    };
    let mut server = Server {
        fm,
        cache: cache_pid,
        plans,
        clients: Clients::new(),
        base_secs: secs,
        base_tsc: sys::rdtsc(),
        write_key: 0,
        read_plan: Vec::with_capacity(MAX_SEGMENTS),
        stats: Stats::default(),
        published: Default::default(),
        page_buf: Vec::new(),
        writers: Default::default(),
        seals: Default::default(),
    };
    if let Err(e) = sys::name_register(name, api::ENTRIES) {
        println!("fs: cannot register '{name}': {e:?}");
        return 1;
    }
    let mut info = AccInfo::default();
    let mut msg = Vec::with_capacity(MAX_MSG);
    let mut out = vec![0u8; MAX_REPLY];
    let mut rid = 0;
    let mut end = End::Fail(Error::Invalid);
    loop {
        let accepted = match end {
            End::Reply(n) => sys::endr_acc(rid, &out[..n], api::ENTRIES, &mut info),
            End::Zeros(n) => sys::endr_acc(rid, &data::ZEROS[..n], api::ENTRIES, &mut info),
            End::Forward(slot) => {
                let r = sys::forward_acc(rid, server.cache, cache::FILE_READ, api::ENTRIES, &mut info);
                if r.is_err() {
                    // Not passed on (the cache is gone): the plan is void
                    // and the call fails here, if it is still ours.
                    if let Some(s) = Slot::of(server.plans.words(), slot) {
                        s.clear();
                    }
                    let _ = sys::rv_fail(rid, FAILED);
                }
                r
            }
            End::Fail(e) => {
                if rid != 0 {
                    let _ = sys::rv_fail(rid, e);
                }
                sys::acc(api::ENTRIES, &mut info)
            }
        };
        rid = match accepted {
            Ok(r) => r,
            // The last call could not be ended (its caller is gone): accept
            // afresh.
            Err(_) if rid != 0 => {
                rid = 0;
                end = End::Fail(Error::Invalid);
                continue;
            }
            Err(_) => return 1,
        };
        end = server.serve(&info, rid, &mut msg, &mut out);
    }
}

tessera_rt::entry!(main);
