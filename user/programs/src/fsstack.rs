//! A stack of storage servers of a program's own (a disk server, block
//! cache, file server) for tests and benchmarks, with the servers' counters
//! and file contents that tell where every byte came from. The disk is the
//! RAM disk serving a packed image, or the machine's virtio block device
//! ([`VIRTIO`]), whose driver needs the device right: the program must hold
//! it (a program the kernel's command line runs does). Each program uses
//! part of it.
#![allow(dead_code)]

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use tessera_api::fs::client::{self, File};
use tessera_api::fs::{Errno, O_RDONLY};
use tessera_api::{block, cache as cache_api, fs};
use tessera_rt::abi::{SpawnOptions, rights};
use tessera_rt::sys;

pub const DISK: &str = "t.disk";
pub const CACHE: &str = "t.cache";
/// The image name that means the machine's first virtio block device.
pub const VIRTIO: &str = "virtio";

/// The three servers of one test, under names of their own (the file
/// server's is the default, `fs`, which the file API finds).
pub struct Stack {
    pub disk: u64,
    pub cache: u64,
    pub fs: u64,
}

fn spawn(prog: &str, args: &[&str], name: &str, rights: u64) -> Result<u64, String> {
    spawn_on(prog, args, name, rights, SpawnOptions::DEFAULT.cpu)
}

fn spawn_on(prog: &str, args: &[&str], name: &str, rights: u64, cpu: u64) -> Result<u64, String> {
    let options = SpawnOptions {
        rights,
        cpu,
        ..SpawnOptions::DEFAULT
    };
    let pid = sys::spawn(prog, args, &options).map_err(|e| format!("spawn {prog}: {e:?}"))?;
    if sys::wait_for_name(name) != pid {
        sys::stop(pid);
        return Err(format!("{prog} did not register '{name}'"));
    }
    Ok(pid)
}

impl Stack {
    /// A disk server for `image` (`VIRTIO`: the virtio-blk driver on the
    /// machine's disk; otherwise a RAM disk serving a packed image, or
    /// blank:<pages>), a cache of `pages` pages flushing every `flush`
    /// seconds (0: never), and a file server (read-only with `ro`).
    pub fn start(image: &str, pages: u32, flush: u32, ro: bool) -> Result<Stack, String> {
        Self::start_modelled(image, "none", pages, flush, ro)
    }

    /// The same with the disk as slow as disk model `model` (`none`, `dk`,
    /// `sata`, `nvme`: crate `diskmodel`).
    pub fn start_modelled(image: &str, model: &str, pages: u32, flush: u32, ro: bool) -> Result<Stack, String> {
        Self::start_on(image, model, pages, flush, ro, SpawnOptions::DEFAULT.cpu)
    }

    /// The same with the three servers on CPU `cpu` (seed 002's placement:
    /// the file servers and the disk driver on a core of their own).
    pub fn start_on(image: &str, model: &str, pages: u32, flush: u32, ro: bool, cpu: u64) -> Result<Stack, String> {
        let disk = if image == VIRTIO {
            spawn_on("virtio-blk", &[DISK, "0", model], DISK, rights::DEVICE, cpu)?
        } else {
            spawn_on("ramdisk", &[DISK, image, model], DISK, 0, cpu)?
        };
        let stack = |cache, fs| Stack { disk, cache, fs };
        let (mut a, mut b) = ([0u8; 24], [0u8; 24]);
        let pages = sys::fmt_u64(pages as u64, &mut a);
        let flush = sys::fmt_u64(flush as u64, &mut b);
        let cache = match spawn_on("blockcache", &[CACHE, DISK, pages, flush], CACHE, 0, cpu) {
            Ok(c) => c,
            Err(e) => {
                stack(0, 0).stop();
                return Err(e);
            }
        };
        let fs = match Self::start_fs_on(ro, cpu) {
            Ok(f) => f,
            Err(e) => {
                stack(cache, 0).stop();
                return Err(e);
            }
        };
        Ok(stack(cache, fs))
    }

    /// A file server on the stack's cache.
    pub fn start_fs(ro: bool) -> Result<u64, String> {
        Self::start_fs_on(ro, SpawnOptions::DEFAULT.cpu)
    }

    fn start_fs_on(ro: bool, cpu: u64) -> Result<u64, String> {
        let args: &[&str] = if ro {
            &[fs::NAME, CACHE, "ro"]
        } else {
            &[fs::NAME, CACHE]
        };
        let pid = spawn_on("fs", args, fs::NAME, 0, cpu)?;
        client::connect(fs::NAME).map_err(|e| format!("connect: {e:?}"))?;
        Ok(pid)
    }

    pub fn stop(self) {
        for pid in [self.fs, self.cache] {
            if pid != 0 {
                sys::stop(pid);
            }
        }
        sys::stop(self.disk);
        // The cache's flush child ends on its own once orphaned.
        if let Ok(t) = sys::name_lookup(&format!("{CACHE}-tick")) {
            for _ in 0..100 {
                if !sys::alive(t) {
                    break;
                }
                sys::sleep_ns(10_000_000);
            }
        }
    }

    pub fn cache_stats(&self) -> String {
        client::stats_of(CACHE, cache_api::STATS).unwrap_or_default()
    }

    pub fn fs_stats(&self) -> String {
        client::stats_of(fs::NAME, fs::STATS).unwrap_or_default()
    }

    pub fn disk_stats(&self) -> String {
        client::stats_of(DISK, block::STATS).unwrap_or_default()
    }

    /// Writes back and forgets every cached page (the kernel's file
    /// caches' too).
    pub fn drop_cache(&self) -> bool {
        let pages = self.fs == 0 || client::drop_pages().is_ok();
        pages && sys::call(self.cache, cache_api::DROP, &[], &mut []).is_ok()
    }
}

/// The value of `name` in a `name value` report.
pub fn value(report: &str, name: &str) -> u64 {
    report
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(u64::MAX)
}

/// The whole content of the file at `path`.
pub fn read_file(path: &str) -> Result<Vec<u8>, Errno> {
    let mut f = File::open(path, O_RDONLY, 0)?;
    let size = f.stat()?.size as usize;
    let mut buf = alloc::vec![0u8; size + 1];
    let n = f.read(&mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

/// Creates (or replaces) `path` with `data`, written in pieces of `chunk`.
pub fn write_file(path: &str, data: &[u8], chunk: usize) -> Result<(), Errno> {
    let mut f = File::open(path, fs::O_WRONLY | fs::O_CREAT | fs::O_TRUNC, 0o644)?;
    for part in data.chunks(chunk.max(1)) {
        if f.write(part)? != part.len() {
            return Err(Errno::EIO);
        }
    }
    Ok(())
}

/// Copies a program of the initial archive to the file system; its size.
pub fn copy_from_archive(name: &str, to: &str) -> Result<usize, String> {
    let plate = sys::plate_find(&format!("bin/{name}")).map_err(|e| format!("bin/{name}: {e:?}"))?;
    let mut data = Vec::new();
    let mut buf = alloc::vec![0u8; 64 << 10];
    loop {
        let n = sys::plate_read(plate, data.len() as u64, &mut buf).map_err(|e| format!("{e:?}"))?;
        if n == 0 {
            break;
        }
        data.extend_from_slice(&buf[..n]);
    }
    write_file(to, &data, 64 << 10).map_err(|e| format!("{to}: {e}"))?;
    Ok(data.len())
}
