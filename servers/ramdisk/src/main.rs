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
//! `ramdisk name image model` makes it as slow as one of seed 001's disks
//! (`dk`, `sata`, `nvme`; crate `diskmodel`), waited in the guest's time.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec;
use core::fmt::Write;
use tessera_api::block::server::{self, Device, Server, Transfer};
use tessera_api::block::{self, BLOCK, Geometry};
use tessera_rt::println;

/// The images xtask packed (see build.rs).
static PACK: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/images"));

struct Disk {
    base: Option<ramimage::Image<'static>>,
    blocks: u64,
    written: BTreeMap<u64, Box<[u8]>>,
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
}

impl Device for Disk {
    fn geometry(&self) -> Geometry {
        Geometry {
            blocks: self.blocks,
            max_blocks: block::MAX_BLOCKS,
            landing: 0,
            flags: 0,
        }
    }

    fn transfer(&mut self, server: &mut Server, mut t: Transfer) {
        let mut n = t.first;
        for piece in &mut t.pieces {
            for page in piece.bytes_mut().chunks_exact_mut(BLOCK) {
                if t.write {
                    self.write(n, page);
                } else {
                    self.read(n, page);
                }
                n += 1;
            }
        }
        server.counters.device_bytes += t.blocks * BLOCK as u64;
        for piece in t.pieces {
            server.give_back(t.caller, piece.ica);
        }
        server.answer_transfer(t.rid, t.due, Ok(t.blocks));
    }

    fn flush(&mut self, server: &mut Server, rid: u64) {
        // Memory is as durable as this disk gets.
        server.answer(rid, Ok(&[]));
    }

    fn report(&self, out: &mut String) {
        let _ = writeln!(out, "pages_written_held {}", self.written.len());
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
    let model = match server::model_arg("ramdisk", args.get(3).copied()) {
        Ok(m) => m,
        Err(status) => return status,
    };
    let mut disk = Disk {
        base,
        blocks,
        written: BTreeMap::new(),
    };
    server::serve(name, 0, model, &mut disk)
}

tessera_rt::entry!(main);
