//! The RAM disk: a block device server (protocol `tessera_api::block`)
//! whose disk is memory. `ramdisk [name] [image]`: serves under `name`
//! (default `disk`) the image of that name packed into this binary
//! (default `root`: the root file system xtask builds from `user/root/`),
//! or `blank:<pages>`, a zeroed disk.
//!
//! It stands in for the virtio-blk driver until that exists, and serves
//! the same protocol the same way: the data arrives and leaves in the
//! client's ICAs, which it fills or empties as a DMA engine would (the
//! one transfer it counts as the device's, not as a copy between servers)
//! and moves back. Pages never written keep the packed image's bytes
//! (read-only, in this binary); a written page gets memory of its own.
//! Nothing reaches the host: the writes live as long as the server.
//!
//! `ramdisk name image model` makes it as slow as a real disk: each read
//! or write waits, in the guest's time, the model's access latency plus
//! its bytes over the model's bandwidth (seed 001's disks, for OFF2F's
//! experiments; under QEMU's instruction counter a real device's latency
//! does not show in the guest's clock, a wait does).
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write;
use tessera_api::block::{self, BLOCK, Geometry};
use tessera_rt::abi::{AccInfo, Error};
use tessera_rt::ica::Ica;
use tessera_rt::{println, sys};

/// The images xtask packed (see build.rs).
static PACK: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/images"));

#[derive(Default)]
struct Stats {
    reads: u64,
    blocks_read: u64,
    writes: u64,
    blocks_written: u64,
    flushes: u64,
    /// Bytes moved between the disk and the client's pages: what a DMA
    /// engine would move. Never a copy from one server's memory to another.
    device_bytes: u64,
    icas_moved: u64,
    refused: u64,
}

/// A disk's speed: a request waits its bytes at `bytes_per_s`, and
/// `latency_ns` before them unless it continues where the last one ended
/// (a disk streams on without a seek; its read-ahead serves the rest).
#[derive(Clone, Copy)]
struct Model {
    latency_ns: u64,
    bytes_per_s: u64,
}

/// The models (name, access latency, bandwidth), those of the paper's
/// disks: `dk` a 5,400 rpm 2.5" hard disk (an average seek of 12 ms plus
/// half a rotation, 5.6 ms; 100 MB/s), `sata` a SATA SSD (100 µs, 500
/// MB/s), `nvme` an NVMe SSD (20 µs, 2 GB/s). `none`: memory speed.
const MODELS: [(&str, u64, u64); 3] = [
    ("dk", 17_600_000, 100_000_000),
    ("sata", 100_000, 500_000_000),
    ("nvme", 20_000, 2_000_000_000),
];

impl Model {
    fn named(name: &str) -> Option<Option<Model>> {
        if name == "none" {
            return Some(None);
        }
        let &(_, latency_ns, bytes_per_s) = MODELS.iter().find(|m| m.0 == name)?;
        Some(Some(Model {
            latency_ns,
            bytes_per_s,
        }))
    }

    /// Waits as long as the disk would take for `bytes`, with a seek
    /// first or not. It spins: a sleep ends at a scheduler tick (10 ms),
    /// coarser than an SSD's whole request, and the experiments run one
    /// program at a time, which waits for this request anyway.
    fn wait(&self, bytes: u64, seek: bool) {
        let transfer = (bytes as u128 * 1_000_000_000 / self.bytes_per_s as u128) as u64;
        let latency = if seek { self.latency_ns } else { 0 };
        let now = || sys::tsc_to_ns(sys::rdtsc());
        let end = now() + latency + transfer;
        while now() < end {
            core::hint::spin_loop();
        }
    }
}

struct Disk {
    base: Option<ramimage::Image<'static>>,
    model: Option<Model>,
    /// The block after the last request's: where the head is.
    head: u64,
    blocks: u64,
    written: BTreeMap<u64, Box<[u8]>>,
    client: Option<u64>,
    stats: Stats,
}

impl Disk {
    fn read(&self, n: u64, out: &mut [u8]) {
        match self
            .written
            .get(&n)
            .map(|b| &b[..])
            .or_else(|| self.base.and_then(|b| b.page(n)))
        {
            Some(page) => out.copy_from_slice(page),
            None => out.fill(0),
        }
    }

    fn write(&mut self, n: u64, data: &[u8]) {
        self.written
            .entry(n)
            .or_insert_with(|| vec![0u8; BLOCK].into_boxed_slice())
            .copy_from_slice(data);
    }

    /// READ or WRITE: takes the named ICAs, moves the data, and gives back
    /// every ICA it took, whatever went wrong.
    fn transfer(&mut self, info: &AccInfo, msg: &[u8], write: bool) -> Result<u64, Error> {
        let Some((first, list)) = block::decode_transfer(msg) else {
            return Err(Error::Invalid);
        };
        let mut held: Vec<Ica> = Vec::with_capacity(list.len());
        let mut result = Ok(());
        for &id in &list {
            match Ica::adopt(id) {
                Ok(ica) => held.push(ica),
                Err(_) => result = Err(Error::Denied),
            }
        }
        let pages: u64 = held.iter().map(|i| (i.len() / BLOCK) as u64).sum();
        if result.is_ok() && (first.checked_add(pages).is_none_or(|end| end > self.blocks) || pages == 0) {
            result = Err(Error::Invalid);
        }
        if result.is_ok() {
            let mut n = first;
            for ica in &mut held {
                for page in ica.as_mut_slice().chunks_exact_mut(BLOCK) {
                    if write {
                        self.write(n, page);
                    } else {
                        self.read(n, page);
                    }
                    n += 1;
                }
            }
            self.stats.device_bytes += pages * BLOCK as u64;
            if let Some(m) = self.model {
                m.wait(pages * BLOCK as u64, self.head != first);
                self.head = first + pages;
            }
            if write {
                self.stats.writes += 1;
                self.stats.blocks_written += pages;
            } else {
                self.stats.reads += 1;
                self.stats.blocks_read += pages;
            }
        }
        for ica in held {
            // A page that cannot go back (the client ended) is freed here.
            if ica.move_to(info.caller, 0).is_ok() {
                self.stats.icas_moved += 1;
            }
        }
        result.map(|()| pages)
    }

    fn report(&self) -> String {
        let s = &self.stats;
        let mut out = String::new();
        let _ = write!(
            out,
            "blocks {}\nreads {}\nblocks_read {}\nwrites {}\nblocks_written {}\nflushes {}\n\
             device_bytes {}\nicas_moved {}\nrefused {}\npages_written_held {}\n",
            self.blocks,
            s.reads,
            s.blocks_read,
            s.writes,
            s.blocks_written,
            s.flushes,
            s.device_bytes,
            s.icas_moved,
            s.refused,
            self.written.len()
        );
        out
    }

    /// Serves one call; returns the reply's length in `reply`.
    fn serve(&mut self, info: &AccInfo, rid: u64, reply: &mut [u8]) -> Result<usize, Error> {
        let owner = self.client.is_some_and(|c| c == info.caller);
        match info.entry {
            block::OPEN => {
                let g = Geometry {
                    blocks: self.blocks,
                    max_blocks: block::MAX_ICAS as u32,
                    flags: 0,
                };
                let opened = block::serve_open(&mut self.client, info.caller, g, reply);
                if opened == Err(Error::Busy) {
                    self.stats.refused += 1;
                }
                opened
            }
            block::READ | block::WRITE if owner => {
                let mut msg = [0u8; block::transfer_len(block::MAX_ICAS)];
                let len = block::transfer_message(rid, info, &mut msg)?;
                let n = self.transfer(info, &msg[..len], info.entry == block::WRITE)?;
                reply[..8].copy_from_slice(&n.to_le_bytes());
                Ok(8)
            }
            block::FLUSH if owner => {
                // Memory is as durable as this disk gets.
                self.stats.flushes += 1;
                Ok(0)
            }
            block::CLOSE if owner => {
                self.client = None;
                Ok(0)
            }
            block::STATS => Ok(block::text_reply(&self.report(), reply)),
            _ => {
                self.stats.refused += 1;
                Err(Error::Denied)
            }
        }
    }
}

fn main(args: &[&str]) -> i32 {
    let name = args.get(1).copied().unwrap_or(block::NAME);
    let image = args.get(2).copied().unwrap_or("root");
    let (base, blocks) = if let Some(pages) = image.strip_prefix("blank:") {
        match pages.parse::<u64>() {
            Ok(n) if n > 0 => (None, n),
            _ => {
                println!("ramdisk: '{image}': blank:<pages> wants a number of pages");
                return 2;
            }
        }
    } else {
        match ramimage::find(PACK, image) {
            Some(i) => (Some(i), i.pages),
            None => {
                println!("ramdisk: no image '{image}' (packed: {:?})", ramimage::names(PACK));
                return 2;
            }
        }
    };
    let model = match args.get(3).map_or(Some(None), |m| Model::named(m)) {
        Some(m) => m,
        None => {
            let names: Vec<&str> = MODELS.iter().map(|m| m.0).collect();
            println!("ramdisk: no disk model '{}' (none, {})", args[3], names.join(", "));
            return 2;
        }
    };
    if let Err(e) = sys::name_register(name, block::ENTRIES) {
        println!("ramdisk: cannot register '{name}': {e:?}");
        return 1;
    }
    let mut disk = Disk {
        base,
        model,
        head: u64::MAX,
        blocks,
        written: BTreeMap::new(),
        client: None,
        stats: Stats::default(),
    };
    let mut info = AccInfo::default();
    let mut reply = [0u8; 1024];
    let (mut rid, mut len) = (0, 0);
    loop {
        rid = match sys::endr_acc(rid, &reply[..len], block::ENTRIES, &mut info) {
            Ok(r) => r,
            // Ending the last call failed (its caller is gone): accept anew.
            Err(_) if rid != 0 => {
                (rid, len) = (0, 0);
                continue;
            }
            Err(_) => return 1,
        };
        match disk.serve(&info, rid, &mut reply) {
            Ok(n) => len = n,
            Err(e) => {
                let _ = sys::rv_fail(rid, e);
                (rid, len) = (0, 0);
            }
        }
    }
}

tessera_rt::entry!(main);
