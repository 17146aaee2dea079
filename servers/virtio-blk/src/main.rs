//! The virtio-blk driver (seed 003's disk process): `virtio-blk [name]
//! [index]` claims the `index`-th virtio block device (default 0; it needs
//! `rights::DEVICE`, given in `etc/servers.conf`) and serves it under
//! `name` (default `disk`) with the block protocol (`tessera_api::block`).
//!
//! The data never passes through this server: a client's pages arrive as
//! ICAs, each is handed to the device as it is (physically contiguous, the
//! device reads or writes it by DMA), and goes back to the client when the
//! device is done (AnT's copy-less transfer). Requests from one call go to
//! the device together, up to its queue's depth, and the call is answered
//! when the last of them is done. The device's interrupt comes as an event
//! on entry `IRQ` of this server's port (seed 003: the kernel turns external
//! interrupts into communication), between the calls.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use tessera_api::block::{self, BLOCK, Geometry};
use tessera_rt::abi::{ACC_EVENT, AccInfo, Error};
use tessera_rt::ica::Ica;
use tessera_rt::{println, sys};
use tessera_virtio::blk::{Blk, Done};

/// The port entry the device's interrupt arrives on (not a callable entry:
/// calls to it are refused, as it is not among the served ones).
const IRQ: u64 = 40;

#[derive(Default)]
struct Stats {
    reads: u64,
    blocks_read: u64,
    writes: u64,
    blocks_written: u64,
    flushes: u64,
    /// Bytes the device moved by DMA to and from the clients' pages.
    device_bytes: u64,
    interrupts: u64,
    /// Most requests the device held at once.
    max_depth: u64,
    refused: u64,
    failed: u64,
}

/// A READ or WRITE call being served: answered when its last page is done.
struct Call {
    caller: u64,
    pages_left: usize,
    blocks: u64,
    result: Result<(), Error>,
}

struct Driver {
    blk: Blk,
    blocks: u64,
    client: Option<u64>,
    /// Calls in service, by rid.
    calls: BTreeMap<u64, Call>,
    /// Pages waiting for room in the device's queue: (rid, write, block, page).
    waiting: VecDeque<(u64, bool, u64, Ica)>,
    /// FLUSH calls waiting for the requests before them.
    flushes: Vec<u64>,
    stats: Stats,
}

impl Driver {
    /// Starts a READ or WRITE: takes the named pages and queues one device
    /// request per page. Pages it cannot take are refused, the call too.
    fn transfer(&mut self, rid: u64, info: &AccInfo, msg: &[u8], write: bool) -> Result<(), Error> {
        let (first, list) = block::decode_transfer(msg).ok_or(Error::Invalid)?;
        let mut pages: Vec<Ica> = Vec::with_capacity(list.len());
        let mut result = Ok(());
        for &id in &list {
            match Ica::adopt(id) {
                Ok(ica) => pages.push(ica),
                Err(_) => result = Err(Error::Denied),
            }
        }
        let count: u64 = pages.iter().map(|p| (p.len() / BLOCK) as u64).sum();
        if result.is_ok() && (count == 0 || first.checked_add(count).is_none_or(|end| end > self.blocks)) {
            result = Err(Error::Invalid);
        }
        if write && self.blk.readonly() {
            result = Err(Error::Busy);
        }
        if let Err(e) = result {
            for page in pages {
                let _ = page.move_to(info.caller, 0);
            }
            return Err(e);
        }
        self.calls.insert(
            rid,
            Call {
                caller: info.caller,
                pages_left: pages.len(),
                blocks: count,
                result: Ok(()),
            },
        );
        let mut block = first;
        for page in pages {
            let n = (page.len() / BLOCK) as u64;
            self.waiting.push_back((rid, write, block, page));
            block += n;
        }
        if write {
            self.stats.writes += 1;
            self.stats.blocks_written += count;
        } else {
            self.stats.reads += 1;
            self.stats.blocks_read += count;
        }
        self.pump();
        Ok(())
    }

    /// Hands waiting pages to the device while its queue has room.
    fn pump(&mut self) {
        while let Some((rid, write, block, page)) = self.waiting.pop_front() {
            match self.blk.submit(write, block, page, rid) {
                Ok(()) => {}
                Err((page, Error::Limit)) if self.blk.busy() > 0 => {
                    self.waiting.push_front((rid, write, block, page));
                    break;
                }
                Err((page, e)) => self.page_done(Done {
                    tag: rid,
                    page,
                    result: Err(e),
                }),
            }
            self.stats.max_depth = self.stats.max_depth.max(self.blk.busy() as u64);
        }
    }

    /// A page is back from the device (or never went): it returns to its
    /// client, and its call is answered if it was the last.
    fn page_done(&mut self, done: Done) {
        let Some(call) = self.calls.get_mut(&done.tag) else {
            return;
        };
        if done.result.is_ok() {
            self.stats.device_bytes += done.page.len() as u64;
        } else {
            call.result = done.result;
        }
        // A client that ended takes no page back: it is freed here, after
        // the device is done with it.
        let _ = done.page.move_to(call.caller, 0);
        call.pages_left -= 1;
        if call.pages_left == 0
            && let Some(call) = self.calls.remove(&done.tag)
        {
            let _ = match call.result {
                Ok(()) => sys::endr(done.tag, &call.blocks.to_le_bytes()),
                Err(e) => {
                    self.stats.failed += 1;
                    sys::rv_fail(done.tag, e)
                }
            };
        }
    }

    /// The device interrupted: every finished request is taken back, then
    /// the queue refilled, then flushes that waited for them run.
    fn interrupt(&mut self) {
        self.stats.interrupts += 1;
        self.blk.acknowledge();
        while let Some(done) = self.blk.finished() {
            self.page_done(done);
        }
        let _ = self.blk.interrupt_served();
        self.pump();
        self.run_flushes();
    }

    fn run_flushes(&mut self) {
        if self.flushes.is_empty() || self.blk.busy() > 0 || !self.waiting.is_empty() {
            return;
        }
        let result = self.blk.flush();
        self.stats.flushes += 1;
        for rid in core::mem::take(&mut self.flushes) {
            let _ = match result {
                Ok(()) => sys::endr(rid, &[]),
                Err(e) => sys::rv_fail(rid, e),
            };
        }
    }

    fn report(&self) -> String {
        let s = &self.stats;
        let mut out = String::new();
        let _ = write!(
            out,
            "blocks {}\nreads {}\nblocks_read {}\nwrites {}\nblocks_written {}\nflushes {}\n\
             device_bytes {}\ninterrupts {}\nmax_depth {}\nrefused {}\nfailed {}\n\
             shared_direct {}\nbounced_bytes {}\n",
            self.blocks,
            s.reads,
            s.blocks_read,
            s.writes,
            s.blocks_written,
            s.flushes,
            s.device_bytes,
            s.interrupts,
            s.max_depth,
            s.refused,
            s.failed,
            tessera_virtio::hal::shared_direct(),
            tessera_virtio::hal::bounced_bytes(),
        );
        out
    }

    /// Serves one call. Ok(Some(n)): answer now with `reply[..n]`;
    /// Ok(None): the call stays held and is answered later.
    fn serve(&mut self, rid: u64, info: &AccInfo, reply: &mut [u8]) -> Result<Option<usize>, Error> {
        let owner = self.client == Some(info.caller);
        match info.entry {
            block::OPEN => {
                let g = Geometry {
                    blocks: self.blocks,
                    max_blocks: block::MAX_ICAS as u32,
                    flags: if self.blk.readonly() { block::READ_ONLY } else { 0 },
                };
                let opened = block::serve_open(&mut self.client, info.caller, g, reply);
                if opened == Err(Error::Busy) {
                    self.stats.refused += 1;
                }
                opened.map(Some)
            }
            block::READ | block::WRITE if owner => {
                let mut msg = [0u8; block::transfer_len(block::MAX_ICAS)];
                let len = block::transfer_message(rid, info, &mut msg)?;
                self.transfer(rid, info, &msg[..len], info.entry == block::WRITE)?;
                Ok(None)
            }
            block::FLUSH if owner => {
                self.flushes.push(rid);
                self.run_flushes();
                Ok(None)
            }
            block::CLOSE if owner => {
                self.client = None;
                Ok(Some(0))
            }
            block::STATS => Ok(Some(block::text_reply(&self.report(), reply))),
            _ => {
                self.stats.refused += 1;
                Err(Error::Denied)
            }
        }
    }
}

fn main(args: &[&str]) -> i32 {
    let name = args.get(1).copied().unwrap_or(block::NAME);
    let index = match args.get(2).map(|a| a.parse::<u64>()) {
        None => 0,
        Some(Ok(i)) => i,
        Some(Err(_)) => {
            println!("virtio-blk: usage: virtio-blk [name] [index]");
            return 2;
        }
    };
    let blk = match Blk::open(index, IRQ) {
        Ok(b) => b,
        Err(e) => {
            println!("virtio-blk: no virtio block device {index}: {e:?}");
            return 1;
        }
    };
    if let Err(e) = sys::name_register(name, block::ENTRIES) {
        println!("virtio-blk: cannot register '{name}': {e:?}");
        return 1;
    }
    let mut driver = Driver {
        blocks: blk.blocks(),
        blk,
        client: None,
        calls: BTreeMap::new(),
        waiting: VecDeque::new(),
        flushes: Vec::new(),
        stats: Stats::default(),
    };
    let mut info = AccInfo::default();
    let mut reply = [0u8; 1024];
    loop {
        let rid = match sys::acc(block::ENTRIES | 1 << IRQ, &mut info) {
            Ok(r) => r,
            Err(_) => return 1,
        };
        if info.flags & ACC_EVENT != 0 {
            driver.interrupt();
            continue;
        }
        match driver.serve(rid, &info, &mut reply) {
            Ok(Some(n)) => {
                let _ = sys::endr(rid, &reply[..n]);
            }
            Ok(None) => {}
            Err(e) => {
                let _ = sys::rv_fail(rid, e);
            }
        }
    }
}

tessera_rt::entry!(main);
