//! A virtio block device whose requests own their pages while the device
//! works on them: a page is an ICA (physically contiguous, so the device
//! reads or writes it in place), handed to [`Blk::submit`] and handed back
//! by [`Blk::finished`] once the device has used it. Nothing is copied on
//! the way.

use crate::device::Device;
use crate::hal::TesseraHal;
use crate::transport::{self, error};
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use tessera_rt::abi::Error;
use tessera_rt::ica::Ica;
use virtio_drivers::device::blk::{BlkReq, BlkResp, SECTOR_SIZE, VirtIOBlk};
use virtio_drivers::transport::pci::PciTransport;

/// virtio-blk, modern and transitional.
const BLK_IDS: [u16; 2] = [0x1042, 0x1001];

/// A request the device holds: its page and the header and status it
/// reads and writes, all kept here until it is done.
struct InFlight {
    req: Box<BlkReq>,
    resp: Box<BlkResp>,
    page: Ica,
    write: bool,
    tag: u64,
}

/// A request the device finished.
pub struct Done {
    pub tag: u64,
    pub page: Ica,
    pub result: Result<(), Error>,
}

pub struct Blk {
    dev: VirtIOBlk<TesseraHal, PciTransport>,
    device: Device,
    inflight: BTreeMap<u16, InFlight>,
}

impl Blk {
    /// Claims the `index`-th virtio block device, sets it up, and binds its
    /// interrupt to `entry` of this process's port.
    pub fn open(index: u64, entry: u64) -> Result<Blk, Error> {
        let (device, transport) = transport::open(&BLK_IDS, index)?;
        let mut blk = VirtIOBlk::<TesseraHal, _>::new(transport).map_err(error)?;
        blk.enable_interrupts();
        device.bind_interrupt(entry)?;
        Ok(Blk {
            dev: blk,
            device,
            inflight: BTreeMap::new(),
        })
    }

    /// Size in 4 KiB blocks.
    pub fn blocks(&self) -> u64 {
        self.dev.capacity() * SECTOR_SIZE as u64 / 4096
    }

    pub fn readonly(&self) -> bool {
        self.dev.readonly()
    }

    /// Requests the device holds.
    pub fn busy(&self) -> usize {
        self.inflight.len()
    }

    /// Starts reading (or writing) the 4 KiB blocks from `block` on into
    /// (from) `page`, as many as it has pages. The page comes back from
    /// `finished`, or at once with the error if the request cannot start
    /// (`Limit`: the queue is full).
    pub fn submit(&mut self, write: bool, block: u64, mut page: Ica, tag: u64) -> Result<(), (Ica, Error)> {
        if page.is_empty() || !page.len().is_multiple_of(4096) {
            return Err((page, Error::Invalid));
        }
        let sector = (block * (4096 / SECTOR_SIZE as u64)) as usize;
        let (mut req, mut resp) = (Box::new(BlkReq::default()), Box::new(BlkResp::default()));
        // SAFETY: the header, status and page stay where they are, untouched,
        // until the request is completed: they move into `inflight` (a Box
        // and an ICA do not move their memory when they move) and come out
        // only in `finished`, after the device has used them.
        let token = unsafe {
            if write {
                self.dev.write_blocks_nb(sector, &mut req, page.as_slice(), &mut resp)
            } else {
                self.dev
                    .read_blocks_nb(sector, &mut req, page.as_mut_slice(), &mut resp)
            }
        };
        match token {
            Ok(token) => {
                self.inflight.insert(
                    token,
                    InFlight {
                        req,
                        resp,
                        page,
                        write,
                        tag,
                    },
                );
                Ok(())
            }
            Err(e) => Err((page, error(e))),
        }
    }

    /// After an interrupt (and `acknowledge`): the next request the device
    /// finished (call until None, then `interrupt_served`).
    pub fn finished(&mut self) -> Option<Done> {
        let token = self.dev.peek_used()?;
        let mut r = self.inflight.remove(&token)?;
        // SAFETY: the same header, page and status the request started with.
        let result = unsafe {
            if r.write {
                self.dev
                    .complete_write_blocks(token, &r.req, r.page.as_slice(), &mut r.resp)
            } else {
                self.dev
                    .complete_read_blocks(token, &r.req, r.page.as_mut_slice(), &mut r.resp)
            }
        };
        Some(Done {
            tag: r.tag,
            page: r.page,
            result: result.map_err(error),
        })
    }

    /// Reads the device's interrupt status (which lowers its line).
    pub fn acknowledge(&mut self) {
        self.dev.ack_interrupt();
    }

    /// The interrupt is served: the line may interrupt again.
    pub fn interrupt_served(&self) -> Result<(), Error> {
        self.device.interrupt_done()
    }

    /// Makes every write the device completed durable. Only with no
    /// request in flight (the flush waits for its own, polling).
    pub fn flush(&mut self) -> Result<(), Error> {
        if !self.inflight.is_empty() {
            return Err(Error::Busy);
        }
        self.dev.flush().map_err(error)
    }
}
