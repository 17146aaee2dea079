//! The NIC protocol: between a network device's driver (virtio-net) and
//! the TCP/IP server, which the driver plugs into as a link comes up.
//!
//! Frames never travel in messages. Each is in a page of its own, an ICA
//! (physically contiguous: the device reads or writes it in place), at
//! [`FRAME_OFFSET`]; the page moves between the two servers without a copy
//! (AnT's re-attach) and the messages only name pages.
//!
//! No call ever waits on a process that may be waiting on it: the driver
//! *calls* the TCP/IP server, and the server *requests* (through its
//! request ring, without waiting) from the driver.
//!
//! To the TCP/IP server (entries beside its socket protocol's):
//! - `ATTACH` [`Link`]: the driver's device is up. Both have granted each
//!   other (`peer_grant`) so that pages can move both ways. A new ATTACH
//!   (a restarted driver) replaces the old driver, whose pages are gone.
//! - `FRAMES` [`encode_frames`]: frames received (page id, length), and
//!   transmit pages the device is done with (page id), all moved to the
//!   server before the call. Reply [`encode_pages`]: pages the server moved
//!   to the driver, empty, to receive into.
//!
//! To the driver (its own entries):
//! - `TX` [`encode_tx`]: up to [`MAX_TX`] frames to send, their pages moved
//!   to the driver before the request. The reply is empty; the pages come
//!   back in a later `FRAMES` once the device has sent them, or at once if
//!   it cannot.
//! - `ANNOUNCE`: a (restarted) TCP/IP server, registered under the name
//!   the driver plugs into, is up: the driver ATTACHes to it.
//! - `STATS`: a text report, `name value` per line.

use crate::wire::{Reader, Writer};
use alloc::vec::Vec;

/// Where a frame starts in its page (the device's header goes before it).
pub const FRAME_OFFSET: usize = 64;
/// The largest Ethernet frame a page carries (without the check sequence).
pub const MAX_FRAME: usize = 1514;

/// Entries of the TCP/IP server.
pub const ATTACH: u64 = 40;
pub const FRAMES: u64 = 41;
pub const SERVER_ENTRIES: u64 = (1 << ATTACH) | (1 << FRAMES);

/// Entries of the driver.
pub const TX: u64 = 0;
pub const STATS: u64 = 1;
pub const ANNOUNCE: u64 = 2;
pub const DRIVER_ENTRIES: u64 = (1 << TX) | (1 << STATS) | (1 << ANNOUNCE);

/// The name a driver registers for its STATS.
pub const DRIVER_NAME: &str = "nic";

/// Most frames one TX request names: its message fits the call's first
/// 64 bytes, which the kernel keeps, so the requester's buffer is free as
/// soon as the request is sent.
pub const MAX_TX: usize = 5;
/// Most pages one FRAMES call or its reply names.
pub const MAX_PAGES: usize = 64;

/// What ATTACH says of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    pub mac: [u8; 6],
    /// The largest frame the device takes, at most `MAX_FRAME`.
    pub max_frame: u16,
}

impl Link {
    pub const LEN: usize = 8;

    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        Writer::new(&mut b)
            .bytes(&self.mac)
            .bytes(&self.max_frame.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Option<Link> {
        let mut r = Reader::new(b);
        let mac: [u8; 6] = r.bytes(6)?.try_into().ok()?;
        let max_frame = u16::from_le_bytes(r.bytes(2)?.try_into().ok()?);
        Some(Link { mac, max_frame })
    }
}

/// A frame in a page: the page's container id and the frame's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRef {
    pub page: u64,
    pub len: u32,
}

/// Bytes of a FRAMES message with `frames` frames and `returned` pages.
pub const fn frames_len(frames: usize, returned: usize) -> usize {
    8 + 16 * frames + 8 * returned
}

/// A FRAMES message: the frames received, then the transmit pages given back.
pub fn encode_frames(frames: &[FrameRef], returned: &[u64], buf: &mut [u8]) -> usize {
    let mut w = Writer::new(buf);
    w.u32(frames.len() as u32).u32(returned.len() as u32);
    for f in frames {
        w.u64(f.page).u32(f.len).u32(0);
    }
    for &p in returned {
        w.u64(p);
    }
    w.len()
}

pub fn decode_frames(msg: &[u8]) -> Option<(Vec<FrameRef>, Vec<u64>)> {
    let mut r = Reader::new(msg);
    let (n, m) = (r.u32()? as usize, r.u32()? as usize);
    if n > MAX_PAGES || m > MAX_PAGES {
        return None;
    }
    let mut frames = Vec::with_capacity(n);
    for _ in 0..n {
        let page = r.u64()?;
        let len = r.u32()?;
        r.u32()?;
        frames.push(FrameRef { page, len });
    }
    let mut returned = Vec::with_capacity(m);
    for _ in 0..m {
        returned.push(r.u64()?);
    }
    Some((frames, returned))
}

/// Bytes of a page list naming `n` pages.
pub const fn pages_len(n: usize) -> usize {
    8 + 8 * n
}

/// A list of pages (FRAMES's reply).
pub fn encode_pages(pages: &[u64], buf: &mut [u8]) -> usize {
    let mut w = Writer::new(buf);
    w.u32(pages.len() as u32).u32(0);
    for &p in pages {
        w.u64(p);
    }
    w.len()
}

pub fn decode_pages(msg: &[u8]) -> Option<Vec<u64>> {
    let mut r = Reader::new(msg);
    let n = r.u32()? as usize;
    r.u32()?;
    if n > MAX_PAGES {
        return None;
    }
    (0..n).map(|_| r.u64()).collect()
}

/// Bytes of a TX message naming `n` frames.
pub const fn tx_len(n: usize) -> usize {
    4 + 12 * n
}

/// A TX message: the frames to send, in order.
pub fn encode_tx(frames: &[FrameRef], buf: &mut [u8; 64]) -> usize {
    let mut w = Writer::new(buf);
    w.u32(frames.len() as u32);
    for f in frames.iter().take(MAX_TX) {
        w.u64(f.page).u32(f.len);
    }
    w.len()
}

pub fn decode_tx(msg: &[u8]) -> Option<Vec<FrameRef>> {
    let mut r = Reader::new(msg);
    let n = r.u32()? as usize;
    if n == 0 || n > MAX_TX {
        return None;
    }
    (0..n)
        .map(|_| {
            Some(FrameRef {
                page: r.u64()?,
                len: r.u32()?,
            })
        })
        .collect()
}
