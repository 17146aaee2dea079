//! A block device server's loop, one piece for every device (the RAM disk,
//! the virtio-blk driver): it accepts the calls, keeps the client, checks
//! a READ or WRITE and takes its pages before the device sees them, keeps
//! the counters, and answers. The device only moves the data ([`Device`]).
//!
//! With a disk speed model (seed 001's disks, crate `diskmodel`) each
//! READ or WRITE is answered no sooner than the modelled disk would be
//! done with it: under QEMU's instruction counter the device's own latency
//! does not show in the guest's clock, a wait does. The wait spins: a
//! sleep ends at a scheduler tick (10 ms), coarser than an SSD's whole
//! request, and the experiments run one program at a time, which waits for
//! this request anyway.

use super::{BLOCK, ENTRIES, Geometry, Piece, serve_open, text_reply, transfer_message};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use tessera_rt::abi::{ACC_EVENT, AccInfo, Error, prot};
use tessera_rt::ica::Ica;
use tessera_rt::{println, sys};

/// What a block device does: the server's loop does the rest.
pub trait Device {
    fn geometry(&self) -> Geometry;
    /// Moves the data of a checked READ or WRITE, gives its pages back
    /// ([`Server::give_back`]) and answers it ([`Server::answer_transfer`]),
    /// now or later (from [`Device::event`]).
    fn transfer(&mut self, server: &mut Server, t: Transfer);
    /// Makes every WRITE completed before durable, and answers `rid`
    /// ([`Server::answer`]), now or later.
    fn flush(&mut self, server: &mut Server, rid: u64);
    /// An event arrived on one of the entries given to [`serve`] (a
    /// device's interrupt).
    fn event(&mut self, _server: &mut Server) {}
    /// The device's own lines of the STATS report.
    fn report(&self, _out: &mut String) {}
}

/// A READ or WRITE, checked: its blocks lie on the device and the server
/// holds its pieces (in order, a block per page, each inside its ICA).
pub struct Transfer {
    pub rid: u64,
    pub caller: u64,
    pub first: u64,
    pub write: bool,
    pub pieces: Vec<Piece>,
    pub blocks: u64,
    /// When the modelled disk is done with it (ns, guest time; 0: no model).
    pub due: u64,
}

#[derive(Default)]
pub struct Counters {
    pub reads: u64,
    pub blocks_read: u64,
    pub writes: u64,
    pub blocks_written: u64,
    pub flushes: u64,
    /// Bytes moved between the device and the client's pages: what a DMA
    /// engine moves. Never a copy from one server's memory to another.
    pub device_bytes: u64,
    /// Pages given back to their client.
    pub icas_moved: u64,
    /// Calls refused before the device saw them, and calls it failed.
    pub refused: u64,
    pub failed: u64,
    /// Guest time spent waiting for the disk model (ns).
    pub model_wait_ns: u64,
}

/// The device's client, counters and model, and the answer of the call
/// being served (given with the next accept, in one system call).
pub struct Server {
    client: Option<u64>,
    /// Where the client's ICAs may land here (see the protocol), and the
    /// home each ICA held here goes back to, by id.
    landing: u64,
    homes: BTreeMap<u64, u64>,
    pub counters: Counters,
    model: Option<diskmodel::Disk>,
    serving: u64,
    answer: Option<Result<usize, Error>>,
    reply: [u8; 1024],
}

fn now_ns() -> u64 {
    sys::tsc_to_ns(sys::rdtsc())
}

impl Server {
    /// Gives a page back to its client; a client that ended takes none
    /// and the page is freed here.
    pub fn give_back(&mut self, caller: u64, page: Ica) {
        let home = self.homes.remove(&page.id()).unwrap_or(0);
        if page.move_to(caller, home).is_ok() {
            self.counters.icas_moved += 1;
        }
    }

    /// Answers READ or WRITE `t` (its pages already given back) when the
    /// modelled disk is done with it.
    pub fn answer_transfer(&mut self, rid: u64, due: u64, blocks: Result<u64, Error>) {
        if due != 0 {
            let start = now_ns();
            while now_ns() < due {
                core::hint::spin_loop();
            }
            self.counters.model_wait_ns += now_ns().saturating_sub(start);
        }
        match blocks {
            Ok(n) => self.answer(rid, Ok(&n.to_le_bytes())),
            Err(e) => self.answer(rid, Err(e)),
        }
    }

    /// Answers call `rid`: the call being served with the next accept,
    /// another at once.
    pub fn answer(&mut self, rid: u64, result: Result<&[u8], Error>) {
        if result.is_err() {
            self.counters.failed += 1;
        }
        if rid == self.serving {
            self.answer = Some(result.map(|r| text_reply_bytes(r, &mut self.reply)));
            return;
        }
        let _ = match result {
            Ok(r) => sys::endr(rid, r),
            Err(e) => sys::rv_fail(rid, e),
        };
    }

    /// READ or WRITE: the pieces taken and checked, then the device's.
    /// The ICAs of a refused call go back at once.
    fn transfer(&mut self, device: &mut dyn Device, rid: u64, info: &AccInfo, write: bool) -> Result<(), Error> {
        let mut msg = [0u8; super::transfer_len(super::MAX_PIECES)];
        let len = transfer_message(rid, info, &mut msg)?;
        let (first, list) = super::decode_transfer(&msg[..len]).ok_or(Error::Invalid)?;
        let mut pieces: Vec<Piece> = Vec::with_capacity(list.len());
        let mut result = Ok(());
        for &(id, at, pages, home) in &list {
            // A second piece of an ICA already taken finds it held here.
            match Ica::adopt(id) {
                Ok(ica) => {
                    self.homes.insert(id, home);
                    pieces.push(Piece {
                        ica,
                        at: at as usize,
                        pages: pages as usize,
                    })
                }
                Err(_) => result = Err(Error::Denied),
            }
        }
        if result.is_ok() && !pieces.iter().all(Piece::is_sound) {
            result = Err(Error::Invalid);
        }
        let blocks: u64 = pieces.iter().map(|p| p.pages as u64).sum();
        let g = device.geometry();
        if result.is_ok()
            && (blocks == 0
                || blocks > g.max_blocks as u64
                || first.checked_add(blocks).is_none_or(|end| end > g.blocks))
        {
            result = Err(Error::Invalid);
        }
        if result.is_ok() && write && g.flags & super::READ_ONLY != 0 {
            result = Err(Error::Busy);
        }
        if let Err(e) = result {
            for p in pieces {
                self.give_back(info.caller, p.ica);
            }
            return Err(e);
        }
        let c = &mut self.counters;
        if write {
            c.writes += 1;
            c.blocks_written += blocks;
        } else {
            c.reads += 1;
            c.blocks_read += blocks;
        }
        let due = match &mut self.model {
            Some(m) => m.request(now_ns(), first, blocks, BLOCK as u64).max(1),
            None => 0,
        };
        let t = Transfer {
            rid,
            caller: info.caller,
            first,
            write,
            pieces,
            blocks,
            due,
        };
        device.transfer(self, t);
        Ok(())
    }

    fn report(&self, device: &dyn Device) -> String {
        let c = &self.counters;
        let mut out = String::new();
        let _ = write!(
            out,
            "blocks {}\nmodel {}\nreads {}\nblocks_read {}\nwrites {}\nblocks_written {}\nflushes {}\n\
             device_bytes {}\nicas_moved {}\nrefused {}\nfailed {}\nmodel_wait_ns {}\n",
            device.geometry().blocks,
            self.model.as_ref().map_or(diskmodel::NONE, |m| m.model().name),
            c.reads,
            c.blocks_read,
            c.writes,
            c.blocks_written,
            c.flushes,
            c.device_bytes,
            c.icas_moved,
            c.refused,
            c.failed,
            c.model_wait_ns,
        );
        device.report(&mut out);
        out
    }

    /// Serves call `rid`; its answer, if it has one yet, is in `answer`.
    fn call(&mut self, device: &mut dyn Device, rid: u64, info: &AccInfo) {
        let owner = self.client == Some(info.caller);
        let result = match info.entry {
            super::OPEN => {
                let g = Geometry {
                    landing: self.landing,
                    ..device.geometry()
                };
                let opened = serve_open(&mut self.client, info.caller, g, &mut self.reply);
                if opened == Err(Error::Busy) {
                    self.counters.refused += 1;
                }
                Some(opened)
            }
            super::READ | super::WRITE if owner => self
                .transfer(device, rid, info, info.entry == super::WRITE)
                .err()
                .map(Err),
            super::FLUSH if owner => {
                self.counters.flushes += 1;
                device.flush(self, rid);
                None
            }
            super::CLOSE if owner => {
                self.client = None;
                Some(Ok(0))
            }
            super::STATS => {
                let text = self.report(device);
                Some(Ok(text_reply(&text, &mut self.reply)))
            }
            _ => {
                self.counters.refused += 1;
                Some(Err(Error::Denied))
            }
        };
        if let Some(r) = result {
            self.answer = Some(r);
        }
    }
}

fn text_reply_bytes(bytes: &[u8], reply: &mut [u8]) -> usize {
    let n = bytes.len().min(reply.len());
    reply[..n].copy_from_slice(&bytes[..n]);
    n
}

/// The disk model a server's argument names (none without one); for a
/// name no model has, the names there are are printed and the exit status
/// is the error.
pub fn model_arg(server: &str, arg: Option<&str>) -> Result<Option<diskmodel::Model>, i32> {
    diskmodel::named(arg.unwrap_or(diskmodel::NONE)).map_err(|names| {
        println!("{server}: no disk model '{}' ({names})", arg.unwrap_or_default());
        2
    })
}

/// The server's loop: registers `name`, then serves the block protocol on
/// `device`, as slow as `model` if there is one, with the events of
/// entries `events` going to [`Device::event`]. Returns only if the
/// name cannot be registered or accepting fails.
pub fn serve(name: &str, events: u64, model: Option<diskmodel::Model>, device: &mut dyn Device) -> i32 {
    if let Err(e) = sys::name_register(name, ENTRIES) {
        println!("block server: cannot register '{name}': {e:?}");
        return 1;
    }
    // The landing window: a range of addresses taken and given back, which
    // nothing placed later (always past it) takes again.
    let landing = sys::map(super::LANDING, prot::READ | prot::WRITE)
        .and_then(|a| sys::unmap(a, super::LANDING).map(|_| a))
        .unwrap_or(0);
    let mut server = Server {
        client: None,
        landing,
        homes: BTreeMap::new(),
        counters: Counters::default(),
        model: model.map(diskmodel::Disk::new),
        serving: 0,
        answer: None,
        reply: [0; 1024],
    };
    let mut info = AccInfo::default();
    let (mut rid, mut len) = (0, 0);
    loop {
        rid = match sys::endr_acc(rid, &server.reply[..len], ENTRIES | events, &mut info) {
            Ok(r) => r,
            // Ending the last call failed (its caller is gone): accept anew.
            Err(_) if rid != 0 => {
                (rid, len) = (0, 0);
                continue;
            }
            Err(_) => return 1,
        };
        len = 0;
        if info.flags & ACC_EVENT != 0 {
            device.event(&mut server);
            rid = 0;
            continue;
        }
        server.serving = rid;
        server.call(device, rid, &info);
        server.serving = 0;
        match server.answer.take() {
            Some(Ok(n)) => len = n,
            Some(Err(e)) => {
                let _ = sys::rv_fail(rid, e);
                rid = 0;
            }
            None => rid = 0,
        }
    }
}
