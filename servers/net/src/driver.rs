//! The NIC driver's side of the server (`tessera_api::nic`): a driver
//! ATTACHes, then calls with the frames it received and the pages it sent;
//! the server answers with the pages it has read, for the device to fill
//! again. Frames to send go out in `Server::flush_nic`.

use crate::server::Server;
use alloc::vec::Vec;
use tessera_api::nic::{self, FRAME_OFFSET, Link, MAX_FRAME};
use tessera_rt::abi::{AccInfo, Error};
use tessera_rt::ica::Ica;
use tessera_rt::ring::Ring;
use tessera_rt::sys;

/// Pages the server keeps to build frames in.
const TX_PAGES: usize = 64;

impl Server {
    pub fn attach(&mut self, info: &AccInfo) -> Result<(), Error> {
        let len = (info.len as usize).min(info.inline.len());
        let link = Link::decode(&info.inline[..len]).ok_or(Error::Invalid)?;
        if link.mac[0] & 1 != 0 || link.mac == [0; 6] || (link.max_frame as usize) < 590 {
            return Err(Error::Invalid);
        }
        sys::peer_grant(info.caller)?;
        if self.ring.is_none() {
            self.ring = Some(Ring::open()?);
        }
        if self.stack.nic.driver.is_some_and(|d| d != info.caller) {
            self.detach();
        }
        let nic = &mut self.stack.nic;
        while nic.free.len() < TX_PAGES {
            match Ica::create(1) {
                Ok(p) => nic.free.push(p),
                Err(e) if nic.free.is_empty() => return Err(e),
                Err(_) => break,
            }
        }
        nic.driver = Some(info.caller);
        self.stack.set_mac(link.mac);
        self.stats.attaches += 1;
        Ok(())
    }

    /// A FRAMES call: takes the pages in, lets the stack read the frames
    /// (a turn), and answers with the pages read.
    pub fn frames(&mut self, rid: u64, info: &AccInfo) -> Result<(), Error> {
        if self.stack.nic.driver != Some(info.caller) {
            return Err(Error::Denied);
        }
        let mut msg = [0u8; nic::frames_len(nic::MAX_PAGES, nic::MAX_PAGES)];
        let len = info.len as usize;
        if len > msg.len() {
            return Err(Error::Invalid);
        }
        sys::rv_read(rid, 0, &mut msg[..len])?;
        let (frames, returned) = nic::decode_frames(&msg[..len]).ok_or(Error::Invalid)?;
        for f in frames {
            let Ok(page) = Ica::adopt(f.page) else { continue };
            let flen = f.len as usize;
            if flen == 0 || flen > MAX_FRAME || page.len() < FRAME_OFFSET + flen {
                self.stack.nic.read.push(page);
            } else {
                self.stack.nic.received.push_back((page, flen));
            }
        }
        for id in returned {
            if let Ok(page) = Ica::adopt(id) {
                self.stack.nic.free.push(page);
            }
        }
        self.turn();
        // The pages read go back (frames never read, with a link that went
        // down meanwhile, stay: the next driver gets them).
        let mut back = Vec::new();
        while back.len() < nic::MAX_PAGES
            && let Some(page) = self.stack.nic.read.pop()
        {
            let id = page.id();
            match page.move_to(info.caller, 0) {
                Ok(_) => back.push(id),
                Err((page, _)) => {
                    self.stack.nic.free.push(page);
                    break;
                }
            }
        }
        self.stats.pages_moved += back.len() as u64;
        let mut reply = [0u8; nic::pages_len(nic::MAX_PAGES)];
        let n = nic::encode_pages(&back, &mut reply);
        sys::endr(rid, &reply[..n])?;
        Ok(())
    }

    /// A (re)started server asks the driver registered, if any, to attach.
    pub fn announce(&mut self) {
        let Ok(driver) = sys::name_lookup(nic::DRIVER_NAME) else {
            return;
        };
        if sys::peer_grant(driver).is_err() {
            return;
        }
        let Ok(ring) = Ring::open() else { return };
        let ring = self.ring.insert(ring);
        let c = tessera_rt::abi::Control {
            server: driver,
            entry: nic::ANNOUNCE,
            ..Default::default()
        };
        if ring.push(&c).is_ok() {
            let _ = ring.submit(1);
        }
    }
}
