//! A loop device as a block device server (protocol `tessera_api::block`):
//! `loopblk NAME N` serves under NAME the bytes of the Linux personality's
//! `/dev/loopN`, which are its backing file's, so that a block cache and a
//! second file server can mount the file system inside that file
//! (`mount(2)` in the personality; docs/storage.md, "Mounts").
//!
//! At start it asks the personality's shared server for its own number
//! for the backing file (the loop keeper's `ATTACH`), with the device's
//! offset in the file and size; the device's blocks are then that file's
//! pages from the offset, read and written through the file server into
//! and out of the client's ICAs as a DMA engine would (one copy, between
//! the file server's cache and the client's page). A FLUSH is the file's
//! fsync. The binding it read at start is the one it serves: a detach of
//! the device while mounted waits for the unmount (the mount holds the
//! device open).
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use core::fmt::Write;
use tessera_api::block::server::{self, Device, Server, Transfer};
use tessera_api::block::{self, BLOCK, Geometry};
use tessera_api::fs as api;
use tessera_api::linux::{self as personality, ctl, shared};
use tessera_api::wire::{Reader, Writer};
use tessera_rt::abi::Error;
use tessera_rt::{println, sys};

/// The loop keeper's operation that names a device's file
/// (servers/linux: `loopdev::ATTACH`, under `ctl::LOOP`).
const LOOP_ATTACH: u64 = 15;
const LO_FLAGS_READ_ONLY: u64 = 1;

struct Loop {
    fs: u64,
    file: u32,
    offset: u64,
    pages: u64,
    read_only: bool,
    /// Calls to the file server that failed.
    errors: u64,
}

impl Loop {
    /// Page `n` of the device into `page`: what the file holds, zeros past
    /// its end.
    fn read(&mut self, n: u64, page: &mut [u8]) -> Result<(), Error> {
        let mut done = 0;
        while done < page.len() {
            let mut msg = [0u8; 24];
            Writer::new(&mut msg)
                .u32(self.file)
                .u32(0)
                .u64(self.offset + n * BLOCK as u64 + done as u64)
                .u64((page.len() - done) as u64);
            match sys::call(self.fs, api::READ, &msg, &mut page[done..]) {
                Ok(0) => break,
                Ok(k) => done += k,
                Err(e) => return Err(e),
            }
        }
        page[done..].fill(0);
        Ok(())
    }

    fn write(&mut self, n: u64, page: &[u8]) -> Result<(), Error> {
        if self.read_only {
            return Err(Error::Denied);
        }
        let mut msg = [0u8; 16];
        Writer::new(&mut msg)
            .u32(self.file)
            .u32(0)
            .u64(self.offset + n * BLOCK as u64);
        let mut r = [0u8; 8];
        sys::call(self.fs, api::WRITE_TO, &msg, &mut r)?;
        if i64::from_le_bytes(r) < 0 {
            return Err(Error::Invalid);
        }
        let mut done = 0;
        while done < page.len() {
            let mut reply = [0u8; 16];
            sys::call(self.fs, api::WRITE, &page[done..], &mut reply)?;
            let wrote = Reader::new(&reply).i64().unwrap_or(-1);
            if wrote <= 0 {
                return Err(Error::Invalid);
            }
            done += wrote as usize;
        }
        Ok(())
    }
}

impl Device for Loop {
    fn geometry(&self) -> Geometry {
        Geometry {
            blocks: self.pages,
            max_blocks: block::MAX_BLOCKS,
            landing: 0,
            flags: 0,
        }
    }

    fn transfer(&mut self, server: &mut Server, mut t: Transfer) {
        let mut n = t.first;
        let mut result = Ok(t.blocks);
        'pieces: for piece in &mut t.pieces {
            for page in piece.bytes_mut().chunks_exact_mut(BLOCK) {
                let r = if t.write {
                    self.write(n, page)
                } else {
                    self.read(n, page)
                };
                if let Err(e) = r {
                    self.errors += 1;
                    result = Err(e);
                    break 'pieces;
                }
                n += 1;
            }
        }
        if result.is_ok() {
            server.counters.device_bytes += t.blocks * BLOCK as u64;
        }
        for piece in t.pieces {
            server.give_back(t.caller, piece.ica);
        }
        server.answer_transfer(t.rid, t.due, result);
    }

    fn flush(&mut self, server: &mut Server, rid: u64) {
        let mut msg = [0u8; 8];
        Writer::new(&mut msg).u32(self.file).u32(0);
        let mut r = [0u8; 8];
        let ok = sys::call(self.fs, api::FSYNC, &msg, &mut r).is_ok() && i64::from_le_bytes(r) >= 0;
        server.answer(rid, if ok { Ok(&[]) } else { Err(Error::Invalid) });
    }

    fn report(&self, out: &mut String) {
        let _ = writeln!(out, "backing_offset {}\nbacking_errors {}", self.offset, self.errors);
    }
}

/// Words of a reply.
fn words(b: &[u8]) -> [u64; 4] {
    let mut w = [0u64; 4];
    for (i, c) in b.chunks_exact(8).take(4).enumerate() {
        let mut x = [0u8; 8];
        x.copy_from_slice(c);
        w[i] = u64::from_le_bytes(x);
    }
    w
}

fn main(args: &[&str]) -> i32 {
    let (Some(name), Some(Ok(n))) = (args.get(1), args.get(2).map(|a| a.parse::<u64>())) else {
        println!("loopblk: usage: loopblk NAME DEVICE-NUMBER");
        return 2;
    };
    let (Ok(linux), Ok(fs)) = (sys::name_lookup(personality::NAME), sys::name_lookup(api::NAME)) else {
        println!("loopblk: no Linux personality or file server");
        return 1;
    };
    let mut msg = [0u8; 24];
    Writer::new(&mut msg).u64(ctl::LOOP).u64(LOOP_ATTACH).u64(n);
    let mut reply = [0u8; 32];
    let w = match sys::call(linux, shared::CTL, &msg, &mut reply) {
        Ok(32) => words(&reply),
        _ => {
            println!("loopblk: /dev/loop{n} is not bound to a file");
            return 1;
        }
    };
    let mut dev = Loop {
        fs,
        file: w[0] as u32,
        offset: w[1],
        pages: w[2] / BLOCK as u64,
        read_only: w[3] & LO_FLAGS_READ_ONLY != 0,
        errors: 0,
    };
    server::serve(name, 0, None, &mut dev)
}

tessera_rt::entry!(main);
