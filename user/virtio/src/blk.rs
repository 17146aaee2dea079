//! A virtio block device whose requests own their pages while the device
//! works on them: a request's buffer is a run of pages of an ICA
//! (physically contiguous, so the device reads or writes the whole run in
//! place, one request for many pages), handed to [`Blk::submit`] and
//! handed back by [`Blk::finished`] once the device has used it. Nothing
//! is copied on the way.

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

/// Pages `at..at + pages` of an ICA: one request's buffer.
pub struct Run {
    pub ica: Ica,
    pub at: usize,
    pub pages: usize,
}

impl Run {
    fn range(&self) -> core::ops::Range<usize> {
        self.at * 4096..(self.at + self.pages) * 4096
    }
}

/// A request the device holds: its pages and the header and status it
/// reads and writes, all kept here until it is done.
struct InFlight {
    req: Box<BlkReq>,
    resp: Box<BlkResp>,
    run: Run,
    write: bool,
    tag: u64,
}

/// A request the device finished.
pub struct Done {
    pub tag: u64,
    pub run: Run,
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
    /// (from) `run`, a block per page, as one request. The run comes back
    /// from `finished`, or at once with the error if the request cannot
    /// start (`Limit`: the queue is full).
    pub fn submit(&mut self, write: bool, block: u64, mut run: Run, tag: u64) -> Result<(), (Run, Error)> {
        if run.pages == 0 || run.ica.len() < (run.at + run.pages) * 4096 {
            return Err((run, Error::Invalid));
        }
        let sector = (block * (4096 / SECTOR_SIZE as u64)) as usize;
        let (mut req, mut resp) = (Box::new(BlkReq::default()), Box::new(BlkResp::default()));
        let range = run.range();
        // SAFETY: the header, status and pages stay where they are,
        // untouched, until the request is completed: they move into
        // `inflight` (a Box and an ICA do not move their memory when they
        // move) and come out only in `finished`, after the device has used
        // them.
        let token = unsafe {
            if write {
                self.dev
                    .write_blocks_nb(sector, &mut req, &run.ica.as_slice()[range], &mut resp)
            } else {
                self.dev
                    .read_blocks_nb(sector, &mut req, &mut run.ica.as_mut_slice()[range], &mut resp)
            }
        };
        match token {
            Ok(token) => {
                self.inflight.insert(
                    token,
                    InFlight {
                        req,
                        resp,
                        run,
                        write,
                        tag,
                    },
                );
                Ok(())
            }
            Err(e) => Err((run, error(e))),
        }
    }

    /// After an interrupt (and `acknowledge`): the next request the device
    /// finished (call until None, then `interrupt_served`).
    pub fn finished(&mut self) -> Option<Done> {
        let token = self.dev.peek_used()?;
        let mut r = self.inflight.remove(&token)?;
        let range = r.run.range();
        // SAFETY: the same header, pages and status the request started with.
        let result = unsafe {
            if r.write {
                self.dev
                    .complete_write_blocks(token, &r.req, &r.run.ica.as_slice()[range], &mut r.resp)
            } else {
                self.dev
                    .complete_read_blocks(token, &r.req, &mut r.run.ica.as_mut_slice()[range], &mut r.resp)
            }
        };
        Some(Done {
            tag: r.tag,
            run: r.run,
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
