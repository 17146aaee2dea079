//! A virtio network device whose buffers are pages the driver owns while
//! the device works on them: each is an ICA (physically contiguous, so the
//! device reads or writes the frame in place), handed to [`Net::post`] or
//! [`Net::transmit`] and handed back by [`Net::received`] or
//! [`Net::transmitted`] once the device has used it. Nothing is copied.
//!
//! A frame sits at [`FRAME_OFFSET`] in its page in both directions; the
//! device's header (`virtio_net_hdr`) goes just before it, so the frame
//! lands where a transmitted one is put and a page can change direction
//! without its bytes moving.

use crate::device::Device;
use crate::hal::TesseraHal;
use crate::transport::{self, error};
use alloc::collections::BTreeMap;
use tessera_rt::abi::Error;
use tessera_rt::ica::Ica;
use virtio_drivers::device::net::VirtIONetRaw;
use virtio_drivers::transport::pci::PciTransport;

/// virtio-net, modern and transitional.
const NET_IDS: [u16; 2] = [0x1041, 0x1000];
/// Descriptors per queue: a frame takes one.
pub const QUEUE: usize = 64;
/// Where a frame starts in its page: room for any device header before it.
pub const FRAME_OFFSET: usize = 64;
/// The largest Ethernet frame (without its check sequence) a page carries
/// here: a 1500-byte IP packet and its 14-byte header.
pub const MAX_FRAME: usize = 1514;

/// A frame the device received: its page and where the frame is in it.
pub struct Frame {
    pub page: Ica,
    pub len: usize,
}

pub struct Net {
    dev: VirtIONetRaw<TesseraHal, PciTransport, QUEUE>,
    device: Device,
    /// The device's header length (12 with VERSION_1).
    header: usize,
    receiving: BTreeMap<u16, Ica>,
    /// Frames being sent, with their lengths.
    sending: BTreeMap<u16, (Ica, usize)>,
}

impl Net {
    /// Claims the `index`-th virtio network device, sets it up, and binds
    /// its interrupt to `entry` of this process's port. `NotFound`: there
    /// is none.
    pub fn open(index: u64, entry: u64) -> Result<Net, Error> {
        let (device, transport) = transport::open(&NET_IDS, index)?;
        let mut raw = VirtIONetRaw::<TesseraHal, _, QUEUE>::new(transport).map_err(error)?;
        let mut probe = [0u8; FRAME_OFFSET];
        let header = raw.fill_buffer_header(&mut probe).map_err(error)?;
        raw.enable_interrupts();
        device.bind_interrupt(entry)?;
        Ok(Net {
            dev: raw,
            device,
            header,
            receiving: BTreeMap::new(),
            sending: BTreeMap::new(),
        })
    }

    pub fn mac(&self) -> [u8; 6] {
        self.dev.mac_address()
    }

    /// Pages the device holds to receive into, and frames it is sending.
    pub fn posted(&self) -> usize {
        self.receiving.len()
    }

    pub fn in_flight(&self) -> usize {
        self.sending.len()
    }

    /// Gives the device `page` (one page) to receive a frame into. The page
    /// comes back from `received`, or at once with the error.
    pub fn post(&mut self, mut page: Ica) -> Result<(), (Ica, Error)> {
        if page.len() < FRAME_OFFSET + MAX_FRAME {
            return Err((page, Error::Invalid));
        }
        let start = FRAME_OFFSET - self.header;
        // SAFETY: the page stays where it is, untouched, until the device
        // has used it: it moves into `receiving` (an ICA does not move its
        // memory when it moves) and comes out only in `received`.
        let token = unsafe { self.dev.receive_begin(&mut page.as_mut_slice()[start..]) };
        match token {
            Ok(t) => {
                self.receiving.insert(t, page);
                Ok(())
            }
            Err(e) => Err((page, error(e))),
        }
    }

    /// The next frame the device received (after an interrupt, until None).
    /// A frame the device reports wrongly comes back with length 0.
    pub fn received(&mut self) -> Option<Frame> {
        let token = self.dev.poll_receive()?;
        let mut page = self.receiving.remove(&token)?;
        let start = FRAME_OFFSET - self.header;
        // SAFETY: the same page, from the same offset, as `post` lent.
        let done = unsafe { self.dev.receive_complete(token, &mut page.as_mut_slice()[start..]) };
        let len = match done {
            Ok((header, len)) if header == self.header && len <= MAX_FRAME => len,
            _ => 0,
        };
        Some(Frame { page, len })
    }

    /// Starts sending the `len`-byte frame at `FRAME_OFFSET` in `page`.
    /// The page comes back from `transmitted`, or at once with the error
    /// (`Limit`: the queue is full).
    pub fn transmit(&mut self, mut page: Ica, len: usize) -> Result<(), (Ica, Error)> {
        if len == 0 || len > MAX_FRAME || page.len() < FRAME_OFFSET + len {
            return Err((page, Error::Invalid));
        }
        let start = FRAME_OFFSET - self.header;
        if let Err(e) = self
            .dev
            .fill_buffer_header(&mut page.as_mut_slice()[start..FRAME_OFFSET])
        {
            return Err((page, error(e)));
        }
        // SAFETY: as in `post`: the page is untouched until `transmitted`.
        let token = unsafe { self.dev.transmit_begin(&page.as_slice()[start..FRAME_OFFSET + len]) };
        match token {
            Ok(t) => {
                self.sending.insert(t, (page, len));
                Ok(())
            }
            Err(e) => Err((page, error(e))),
        }
    }

    /// A page whose frame the device has sent (until None).
    pub fn transmitted(&mut self) -> Option<Ica> {
        let token = self.dev.poll_transmit()?;
        let (page, len) = self.sending.remove(&token)?;
        let start = FRAME_OFFSET - self.header;
        // SAFETY: the same bytes `transmit` lent, found by their token.
        let _ = unsafe {
            self.dev
                .transmit_complete(token, &page.as_slice()[start..FRAME_OFFSET + len])
        };
        Some(page)
    }

    /// Reads the device's interrupt status (which lowers its line).
    pub fn acknowledge(&mut self) {
        self.dev.ack_interrupt();
    }

    /// The interrupt is served: the line may interrupt again.
    pub fn interrupt_served(&self) -> Result<(), Error> {
        self.device.interrupt_done()
    }
}
