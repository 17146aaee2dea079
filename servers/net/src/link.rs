//! The two links under the stack, as smoltcp devices: the loopback inside
//! the guest, and the NIC, whose frames are pages moved to and from its
//! driver (the NIC protocol, `tessera_api::nic`).
//!
//! The stack writes a frame it sends into the link's buffer and reads a
//! frame it receives from it: for the NIC those buffers are the pages the
//! device itself reads and writes, so no byte is copied between the stack
//! and the wire.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use smoltcp::phy::{self, Checksum, ChecksumCapabilities, DeviceCapabilities, Medium};
use smoltcp::time::Instant;
use tessera_api::nic::{FRAME_OFFSET, MAX_FRAME};
use tessera_rt::ica::Ica;

/// The loopback's largest packet: IPv4's largest, as Linux's `lo` allows.
pub const LOOPBACK_MTU: usize = 65535;
/// Packets the loopback holds before the stack must take them in.
const LOOPBACK_QUEUE: usize = 256;

/// Packets sent on the loopback, to be received on it, in buffers reused
/// from packet to packet. A packet is the first bytes of its buffer (the
/// length beside it): a buffer keeps the length it once grew to, so that
/// a large packet after a small one is not zero-filled again (64 KiB of
/// stores for every large send).
#[derive(Default)]
pub struct Loopback {
    queue: VecDeque<(Vec<u8>, usize)>,
    spare: Vec<Vec<u8>>,
    /// Buffers the stack has read, spare again at the next turn.
    returned: Vec<Vec<u8>>,
    pub packets: u64,
    pub bytes: u64,
}

impl Loopback {
    pub fn pending(&self) -> bool {
        !self.queue.is_empty()
    }

    /// The next packet waiting to be taken in.
    pub fn front(&self) -> Option<&[u8]> {
        self.queue.front().map(|(b, len)| &b[..*len])
    }

    /// Drops the next packet waiting, as a full queue on a wire would.
    pub fn drop_front(&mut self) {
        if let Some((b, _)) = self.queue.pop_front()
            && self.spare.len() < LOOPBACK_QUEUE
        {
            self.spare.push(b);
        }
    }
}

pub struct LoopRx<'a> {
    buf: Vec<u8>,
    len: usize,
    spare: &'a mut Vec<Vec<u8>>,
}

pub struct LoopTx<'a> {
    queue: &'a mut VecDeque<(Vec<u8>, usize)>,
    spare: &'a mut Vec<Vec<u8>>,
    packets: &'a mut u64,
    bytes: &'a mut u64,
}

impl phy::RxToken for LoopRx<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let r = f(&self.buf[..self.len]);
        if self.spare.len() < LOOPBACK_QUEUE {
            self.spare.push(self.buf);
        }
        r
    }
}

impl phy::TxToken for LoopTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut buf = self.spare.pop().unwrap_or_default();
        // Only bytes never used before are zeroed: smoltcp writes every
        // byte of the packet it builds (headers, options with their
        // padding, payload), and the packet goes nowhere but back into
        // this stack.
        if buf.len() < len {
            buf.resize(len, 0);
        }
        let r = f(&mut buf[..len]);
        *self.packets += 1;
        *self.bytes += len as u64;
        self.queue.push_back((buf, len));
        r
    }
}

impl phy::Device for Loopback {
    type RxToken<'a> = LoopRx<'a>;
    type TxToken<'a> = LoopTx<'a>;

    fn receive(&mut self, _: Instant) -> Option<(LoopRx<'_>, LoopTx<'_>)> {
        let (buf, len) = self.queue.pop_front()?;
        self.spare.append(&mut self.returned);
        Some((
            LoopRx {
                buf,
                len,
                spare: &mut self.returned,
            },
            LoopTx {
                queue: &mut self.queue,
                spare: &mut self.spare,
                packets: &mut self.packets,
                bytes: &mut self.bytes,
            },
        ))
    }

    fn transmit(&mut self, _: Instant) -> Option<LoopTx<'_>> {
        if self.queue.len() >= LOOPBACK_QUEUE {
            return None;
        }
        self.spare.append(&mut self.returned);
        Some(LoopTx {
            queue: &mut self.queue,
            spare: &mut self.spare,
            packets: &mut self.packets,
            bytes: &mut self.bytes,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ip;
        caps.max_transmission_unit = LOOPBACK_MTU;
        // Nothing corrupts a packet between the stack and itself: Linux's
        // `lo` skips the checksums too.
        let mut sums = ChecksumCapabilities::ignored();
        sums.ipv4 = Checksum::Both;
        caps.checksum = sums;
        caps
    }
}

/// The NIC as the stack sees it: frames received (pages from the driver),
/// pages the stack has read (to go back to the driver), free pages to
/// build frames in, and frames built (to go to the driver).
#[derive(Default)]
pub struct Nic {
    /// The driver's pid, while one is attached.
    pub driver: Option<u64>,
    pub mac: [u8; 6],
    pub received: VecDeque<(Ica, usize)>,
    pub read: Vec<Ica>,
    pub free: Vec<Ica>,
    pub built: Vec<(Ica, usize)>,
    /// A frame with nowhere to go (no free page) is built here and dropped.
    scratch: Vec<u8>,
    pub frames_in: u64,
    pub bytes_in: u64,
    pub frames_out: u64,
    pub bytes_out: u64,
    pub dropped: u64,
}

pub struct NicRx<'a> {
    page: Ica,
    len: usize,
    read: &'a mut Vec<Ica>,
}

pub struct NicTx<'a> {
    free: &'a mut Vec<Ica>,
    built: &'a mut Vec<(Ica, usize)>,
    scratch: &'a mut Vec<u8>,
    dropped: &'a mut u64,
}

impl phy::RxToken for NicRx<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let r = f(&self.page.as_slice()[FRAME_OFFSET..FRAME_OFFSET + self.len]);
        self.read.push(self.page);
        r
    }
}

impl phy::TxToken for NicTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        match self.free.pop() {
            Some(mut page) if len <= MAX_FRAME => {
                let r = f(&mut page.as_mut_slice()[FRAME_OFFSET..FRAME_OFFSET + len]);
                self.built.push((page, len));
                r
            }
            page => {
                if let Some(p) = page {
                    self.free.push(p);
                }
                *self.dropped += 1;
                self.scratch.resize(len, 0);
                f(self.scratch)
            }
        }
    }
}

impl phy::Device for Nic {
    type RxToken<'a> = NicRx<'a>;
    type TxToken<'a> = NicTx<'a>;

    fn receive(&mut self, _: Instant) -> Option<(NicRx<'_>, NicTx<'_>)> {
        let (page, len) = self.received.pop_front()?;
        self.frames_in += 1;
        self.bytes_in += len as u64;
        Some((
            NicRx {
                page,
                len,
                read: &mut self.read,
            },
            NicTx {
                free: &mut self.free,
                built: &mut self.built,
                scratch: &mut self.scratch,
                dropped: &mut self.dropped,
            },
        ))
    }

    fn transmit(&mut self, _: Instant) -> Option<NicTx<'_>> {
        self.driver?;
        if self.free.is_empty() {
            return None;
        }
        Some(NicTx {
            free: &mut self.free,
            built: &mut self.built,
            scratch: &mut self.scratch,
            dropped: &mut self.dropped,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = MAX_FRAME;
        caps.max_burst_size = Some(16);
        caps
    }
}
