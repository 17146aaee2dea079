//! The virtio-blk driver (seed 003's disk process): `virtio-blk [name]
//! [index] [model]` claims the `index`-th virtio block device (default 0; it needs
//! `rights::DEVICE`, given in `etc/servers.conf`) and serves it under
//! `name` (default `disk`) with the block protocol (`tessera_api::block`),
//! as fast as it is or, with `model` (`dk`, `sata`, `nvme`; crate
//! `diskmodel`), answering no sooner than seed 001's disk would.
//!
//! The data never passes through this server: a client's pages arrive as
//! ICAs, each piece of a call (a run of an ICA's pages) is handed to the
//! device as one request (physically contiguous, the device reads or
//! writes the whole run by DMA), and the ICA goes back to the client when
//! the device is done (AnT's copy-less transfer). The requests of one
//! call go to the device together, up to its queue's depth, and the call
//! is answered when the last of them is done. The device's interrupt comes as an event
//! on entry `IRQ` of this server's port (seed 003: the kernel turns external
//! interrupts into communication), between the calls. The loop around it
//! is every block server's (`tessera_api::block::server`).
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use tessera_api::block::server::{self, Device, Server, Transfer};
use tessera_api::block::{self, BLOCK, Geometry};
use tessera_rt::abi::Error;
use tessera_rt::println;
use tessera_virtio::blk::{Blk, Done, Run};

/// The port entry the device's interrupt arrives on (not a callable entry:
/// calls to it are refused, as it is not among the served ones).
const IRQ: u64 = 40;

/// A READ or WRITE being served: answered when its last piece is done.
struct Call {
    caller: u64,
    pieces_left: usize,
    blocks: u64,
    due: u64,
    result: Result<(), Error>,
}

struct Driver {
    blk: Blk,
    /// Calls in service, by rid.
    calls: BTreeMap<u64, Call>,
    /// Pieces waiting for room in the device's queue: (rid, write, block, run).
    waiting: VecDeque<(u64, bool, u64, Run)>,
    /// FLUSH calls waiting for the requests before them.
    flushes: Vec<u64>,
    interrupts: u64,
    /// Most requests the device held at once.
    max_depth: u64,
}

impl Driver {
    /// Hands waiting pieces to the device while its queue has room.
    fn pump(&mut self, server: &mut Server) {
        while let Some((rid, write, block, run)) = self.waiting.pop_front() {
            match self.blk.submit(write, block, run, rid) {
                Ok(()) => {}
                Err((run, Error::Limit)) if self.blk.busy() > 0 => {
                    self.waiting.push_front((rid, write, block, run));
                    break;
                }
                Err((run, e)) => self.piece_done(
                    server,
                    Done {
                        tag: rid,
                        run,
                        result: Err(e),
                    },
                ),
            }
            self.max_depth = self.max_depth.max(self.blk.busy() as u64);
        }
    }

    /// A piece is back from the device (or never went): its ICA returns to
    /// its client, and its call is answered if it was the last.
    fn piece_done(&mut self, server: &mut Server, done: Done) {
        let Some(call) = self.calls.get_mut(&done.tag) else {
            return;
        };
        if done.result.is_ok() {
            server.counters.device_bytes += (done.run.pages * BLOCK) as u64;
        } else {
            call.result = done.result;
        }
        server.give_back(call.caller, done.run.ica);
        call.pieces_left -= 1;
        if call.pieces_left == 0
            && let Some(call) = self.calls.remove(&done.tag)
        {
            server.answer_transfer(done.tag, call.due, call.result.map(|()| call.blocks));
        }
    }

    /// Serves call `rid` to its end by polling the device, not waiting for
    /// its interrupt: with a disk model the wait must be the model's in
    /// guest time, and under icount an idle guest's clock jumps to its
    /// next timer tick (10 ms), which would be measured instead.
    fn poll(&mut self, server: &mut Server, rid: u64) {
        while self.calls.contains_key(&rid) {
            match self.blk.finished() {
                Some(done) => {
                    self.piece_done(server, done);
                    self.pump(server);
                }
                None => core::hint::spin_loop(),
            }
        }
    }

    fn run_flushes(&mut self, server: &mut Server) {
        if self.flushes.is_empty() || self.blk.busy() > 0 || !self.waiting.is_empty() {
            return;
        }
        let result = self.blk.flush();
        for rid in core::mem::take(&mut self.flushes) {
            server.answer(rid, result.map(|()| &[][..]));
        }
    }
}

impl Device for Driver {
    fn geometry(&self) -> Geometry {
        Geometry {
            blocks: self.blk.blocks(),
            max_blocks: block::MAX_BLOCKS,
            landing: 0,
            flags: if self.blk.readonly() { block::READ_ONLY } else { 0 },
        }
    }

    /// Queues one device request per piece; the call is answered when the
    /// last is done.
    fn transfer(&mut self, server: &mut Server, t: Transfer) {
        self.calls.insert(
            t.rid,
            Call {
                caller: t.caller,
                pieces_left: t.pieces.len(),
                blocks: t.blocks,
                due: t.due,
                result: Ok(()),
            },
        );
        let (rid, modelled) = (t.rid, t.due != 0);
        let mut block = t.first;
        for p in t.pieces {
            let n = p.pages as u64;
            let run = Run {
                ica: p.ica,
                at: p.at,
                pages: p.pages,
            };
            self.waiting.push_back((t.rid, t.write, block, run));
            block += n;
        }
        self.pump(server);
        if modelled {
            self.poll(server, rid);
        }
    }

    fn flush(&mut self, server: &mut Server, rid: u64) {
        self.flushes.push(rid);
        self.run_flushes(server);
    }

    /// The device interrupted: every finished request is taken back, then
    /// the queue refilled, then flushes that waited for them run.
    fn event(&mut self, server: &mut Server) {
        self.interrupts += 1;
        self.blk.acknowledge();
        while let Some(done) = self.blk.finished() {
            self.piece_done(server, done);
        }
        let _ = self.blk.interrupt_served();
        self.pump(server);
        self.run_flushes(server);
    }

    fn report(&self, out: &mut String) {
        let _ = write!(
            out,
            "interrupts {}\nmax_depth {}\nshared_direct {}\nbounced_bytes {}\n",
            self.interrupts,
            self.max_depth,
            tessera_virtio::hal::shared_direct(),
            tessera_virtio::hal::bounced_bytes(),
        );
    }
}

fn main(args: &[&str]) -> i32 {
    let name = args.get(1).copied().unwrap_or(block::NAME);
    let index = match args.get(2).map(|a| a.parse::<u64>()) {
        None => 0,
        Some(Ok(i)) => i,
        Some(Err(_)) => {
            println!("virtio-blk: usage: virtio-blk [name] [index] [model]");
            return 2;
        }
    };
    let model = match server::model_arg("virtio-blk", args.get(3).copied()) {
        Ok(m) => m,
        Err(status) => return status,
    };
    let blk = match Blk::open(index, IRQ) {
        Ok(b) => b,
        Err(e) => {
            println!("virtio-blk: no virtio block device {index}: {e:?}");
            return 1;
        }
    };
    let mut driver = Driver {
        blk,
        calls: BTreeMap::new(),
        waiting: VecDeque::new(),
        flushes: Vec::new(),
        interrupts: 0,
        max_depth: 0,
    };
    server::serve(name, 1 << IRQ, model, &mut driver)
}

tessera_rt::entry!(main);
