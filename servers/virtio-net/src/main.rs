//! The virtio-net driver: `virtio-net [server] [index]` claims the
//! `index`-th virtio network device (default 0; it needs `rights::DEVICE`,
//! given in `etc/servers.conf`) and plugs it into the TCP/IP server
//! registered as `server` (default `net`) with the NIC protocol
//! (`tessera_api::nic`). Without a device it says so and ends with 0.
//!
//! Frames never pass through this server's hands: each is a page (an ICA)
//! that the device fills or empties by DMA, moved to and from the TCP/IP
//! server without a copy. Received frames go to the server in one call per
//! interrupt, with the transmit pages the device is done with; the reply
//! gives back the pages the server has read, which are posted to the device
//! again. The server's frames to send come as requests (it never waits for
//! this server, which does wait for it: no cycle of waits). The device's
//! interrupt comes as an event on entry `IRQ` of this server's port.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use tessera_api::nic::{self, FrameRef, Link};
use tessera_rt::abi::{ACC_EVENT, AccInfo, Error};
use tessera_rt::ica::Ica;
use tessera_rt::{println, sys};
use tessera_virtio::net::{self, Net};

/// The port entry the device's interrupt arrives on.
const IRQ: u64 = 40;
/// Pages this driver keeps for the device to receive into.
const RX_PAGES: usize = net::QUEUE;

const _: () = assert!(net::FRAME_OFFSET == nic::FRAME_OFFSET && net::MAX_FRAME == nic::MAX_FRAME);

#[derive(Default)]
struct Stats {
    frames_in: u64,
    bytes_in: u64,
    frames_out: u64,
    bytes_out: u64,
    /// Pages moved to the TCP/IP server (frames and sent pages): no copy.
    pages_moved: u64,
    interrupts: u64,
    /// Frames dropped: no server to take them, or malformed.
    dropped: u64,
    /// Frames the device could not take.
    tx_failed: u64,
    attaches: u64,
    refused: u64,
}

struct Driver {
    net: Net,
    server_name: String,
    /// The TCP/IP server this driver is plugged into.
    server: Option<u64>,
    /// Received frames and sent pages waiting to go to the server.
    frames: Vec<(Ica, usize)>,
    sent: Vec<Ica>,
    stats: Stats,
}

impl Driver {
    /// Plugs the device into the server registered under the name, if one
    /// is (waiting for it at most `wait` times 1 ms).
    fn attach(&mut self, wait: u32) {
        let mut pid = sys::name_lookup(&self.server_name).ok();
        for _ in 0..wait {
            if pid.is_some() {
                break;
            }
            sys::sleep_ns(1_000_000);
            pid = sys::name_lookup(&self.server_name).ok();
        }
        let Some(pid) = pid else { return };
        if sys::peer_grant(pid).is_err() {
            return;
        }
        let link = Link {
            mac: self.net.mac(),
            max_frame: nic::MAX_FRAME as u16,
        };
        if sys::call(pid, nic::ATTACH, &link.encode(), &mut []).is_ok() {
            self.server = Some(pid);
            self.stats.attaches += 1;
        }
    }

    /// Keeps the device's receive queue full, making pages if some were lost
    /// (with a server that ended).
    fn refill(&mut self, mut pages: Vec<Ica>) {
        while self.net.posted() + pages.len() < RX_PAGES {
            match Ica::create(1) {
                Ok(p) => pages.push(p),
                Err(_) => break,
            }
        }
        for page in pages {
            if self.net.posted() >= RX_PAGES {
                break; // dropped: deleted
            }
            if let Err((_, e)) = self.net.post(page) {
                println!("virtio-net: cannot post a receive page: {e:?}");
                break;
            }
        }
    }

    /// The device interrupted: takes what it finished and hands it on.
    fn interrupt(&mut self) {
        self.stats.interrupts += 1;
        self.net.acknowledge();
        let mut bad = Vec::new();
        while let Some(f) = self.net.received() {
            if f.len == 0 {
                self.stats.dropped += 1;
                bad.push(f.page);
            } else {
                self.stats.frames_in += 1;
                self.stats.bytes_in += f.len as u64;
                self.frames.push((f.page, f.len));
            }
        }
        while let Some(page) = self.net.transmitted() {
            self.sent.push(page);
        }
        let _ = self.net.interrupt_served();
        self.refill(bad);
        self.deliver();
    }

    /// Moves the received frames and the sent pages to the server in one
    /// call; posts the pages it gives back.
    fn deliver(&mut self) {
        if self.frames.is_empty() && self.sent.is_empty() {
            return;
        }
        if self.server.is_none() {
            self.attach(0);
        }
        let Some(server) = self.server else {
            self.stats.dropped += self.frames.len() as u64;
            let pages: Vec<Ica> = self.frames.drain(..).map(|(p, _)| p).collect();
            self.refill(pages);
            self.sent.clear();
            return;
        };
        while !self.frames.is_empty() || !self.sent.is_empty() {
            let frames: Vec<(Ica, usize)> = self.frames.drain(..self.frames.len().min(nic::MAX_PAGES)).collect();
            let sent: Vec<Ica> = self.sent.drain(..self.sent.len().min(nic::MAX_PAGES)).collect();
            let (mut listed, mut returned, mut kept) = (Vec::new(), Vec::new(), Vec::new());
            for (page, len) in frames {
                let id = page.id();
                match page.move_to(server, 0) {
                    Ok(_) => listed.push(FrameRef {
                        page: id,
                        len: len as u32,
                    }),
                    Err((page, _)) => kept.push(page),
                }
            }
            for page in sent {
                let id = page.id();
                match page.move_to(server, 0) {
                    Ok(_) => returned.push(id),
                    Err((page, _)) => kept.push(page),
                }
            }
            self.stats.pages_moved += (listed.len() + returned.len()) as u64;
            let mut msg = [0u8; nic::frames_len(nic::MAX_PAGES, nic::MAX_PAGES)];
            let len = nic::encode_frames(&listed, &returned, &mut msg);
            let mut reply = [0u8; nic::pages_len(nic::MAX_PAGES)];
            match sys::call(server, nic::FRAMES, &msg[..len], &mut reply) {
                Ok(n) => {
                    let back = nic::decode_pages(&reply[..n]).unwrap_or_default();
                    kept.extend(back.into_iter().filter_map(|id| Ica::adopt(id).ok()));
                }
                Err(_) => {
                    // The server ended: its pages went with it. The next
                    // frames look for a new one.
                    println!("virtio-net: the TCP/IP server is gone");
                    self.server = None;
                    self.stats.dropped += listed.len() as u64;
                    self.frames.clear();
                    self.sent.clear();
                }
            }
            self.refill(kept);
        }
    }

    /// The server's frames to send.
    fn transmit(&mut self, info: &AccInfo) -> Result<(), Error> {
        if self.server != Some(info.caller) {
            return Err(Error::Denied);
        }
        let len = (info.len as usize).min(info.inline.len());
        let frames = nic::decode_tx(&info.inline[..len]).ok_or(Error::Invalid)?;
        for f in frames {
            let Ok(page) = Ica::adopt(f.page) else {
                self.stats.refused += 1;
                continue;
            };
            match self.net.transmit(page, f.len as usize) {
                Ok(()) => {
                    self.stats.frames_out += 1;
                    self.stats.bytes_out += f.len as u64;
                }
                Err((page, _)) => {
                    self.stats.tx_failed += 1;
                    self.sent.push(page);
                }
            }
        }
        // Pages the device finished meanwhile go back with the next call.
        while let Some(page) = self.net.transmitted() {
            self.sent.push(page);
        }
        Ok(())
    }

    fn report(&self) -> String {
        let s = &self.stats;
        let mut out = String::new();
        let m = self.net.mac();
        let _ = write!(
            out,
            "mac {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}\nserver {}\nframes_in {}\nbytes_in {}\n\
             frames_out {}\nbytes_out {}\npages_moved {}\ninterrupts {}\ndropped {}\ntx_failed {}\n\
             attaches {}\nrefused {}\nrx_posted {}\ntx_in_flight {}\nshared_direct {}\nbounced_bytes {}\n",
            m[0],
            m[1],
            m[2],
            m[3],
            m[4],
            m[5],
            self.server.unwrap_or(0),
            s.frames_in,
            s.bytes_in,
            s.frames_out,
            s.bytes_out,
            s.pages_moved,
            s.interrupts,
            s.dropped,
            s.tx_failed,
            s.attaches,
            s.refused,
            self.net.posted(),
            self.net.in_flight(),
            tessera_virtio::hal::shared_direct(),
            tessera_virtio::hal::bounced_bytes(),
        );
        out
    }
}

fn main(args: &[&str]) -> i32 {
    let server_name = args.get(1).copied().unwrap_or(tessera_api::net::NAME);
    let index = match args.get(2).map(|a| a.parse::<u64>()) {
        None => 0,
        Some(Ok(i)) => i,
        Some(Err(_)) => {
            println!("virtio-net: usage: virtio-net [server] [index]");
            return 2;
        }
    };
    let net = match Net::open(index, IRQ) {
        Ok(n) => n,
        Err(Error::NotFound) => {
            println!("virtio-net: no network device");
            return 0;
        }
        Err(e) => {
            println!("virtio-net: network device {index}: {e:?}");
            return 1;
        }
    };
    if let Err(e) = sys::name_register(nic::DRIVER_NAME, nic::DRIVER_ENTRIES) {
        println!("virtio-net: cannot register '{}': {e:?}", nic::DRIVER_NAME);
        return 1;
    }
    let mut driver = Driver {
        net,
        server_name: String::from(server_name),
        server: None,
        frames: Vec::new(),
        sent: Vec::new(),
        stats: Stats::default(),
    };
    driver.refill(Vec::new());
    driver.attach(2000);
    if driver.server.is_none() {
        println!("virtio-net: no TCP/IP server '{server_name}' yet");
    }
    let mut info = AccInfo::default();
    let mut rid = 0;
    let mut reply = String::new();
    loop {
        rid = match sys::endr_acc(rid, reply.as_bytes(), nic::DRIVER_ENTRIES | 1 << IRQ, &mut info) {
            Ok(r) => r,
            Err(_) => return 1,
        };
        reply.clear();
        if info.flags & ACC_EVENT != 0 {
            driver.interrupt();
            continue;
        }
        match info.entry {
            nic::TX => {
                if let Err(e) = driver.transmit(&info) {
                    let _ = sys::rv_fail(rid, e);
                    rid = 0;
                }
                // Pages the device could not take go back at once.
                if !driver.sent.is_empty() && driver.net.in_flight() == 0 {
                    let _ = sys::endr(rid, &[]);
                    rid = 0;
                    driver.deliver();
                }
            }
            nic::ANNOUNCE => {
                // A (new) server asks for the device: answered first, as it
                // does not wait for this call, then plugged in.
                let _ = sys::endr(rid, &[]);
                rid = 0;
                if sys::name_lookup(&driver.server_name) == Ok(info.caller) {
                    driver.attach(0);
                } else {
                    driver.stats.refused += 1;
                }
            }
            nic::STATS => reply = driver.report(),
            _ => {
                driver.stats.refused += 1;
                let _ = sys::rv_fail(rid, Error::Denied);
                rid = 0;
            }
        }
    }
}

tessera_rt::entry!(main);
