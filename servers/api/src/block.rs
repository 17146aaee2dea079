//! The block protocol: what a block device server (the RAM disk now, the
//! virtio-blk driver next) serves to its client, the block cache.
//!
//! The unit is the page: block `n` is bytes `n * BLOCK .. (n + 1) * BLOCK`
//! of the device. Data never travels in messages. The client moves its
//! pages to the server as ICAs (physically contiguous, so a DMA engine can
//! use them as they are), names them in the request, and the server moves
//! them back before it replies: a READ fills them, a WRITE empties them,
//! and no server copies the data on the way (AnT's copy-less transfer).
//!
//! - `OPEN`: claims the device for the caller, who must have granted the
//!   server (`peer_grant`) so that it can move the pages back; the server
//!   grants the caller in turn. Reply: [`Geometry`]. A device has one
//!   client at a time; a client that ended is replaced by the next OPEN.
//! - `READ` / `WRITE`: message [`encode_transfer`]: the first block, then
//!   the *pieces*: each an ICA's container id, which of its pages
//!   (`pages` from page `at`) and its *home* (where the client wants it
//!   back; 0: anywhere). The pieces hold the blocks in order, a
//!   block per page, and each is one request to the device, however many
//!   pages it has (an ICA is physically contiguous, so a piece is one DMA
//!   buffer). An ICA appears in one piece at most. Reply: the number of
//!   blocks (8 bytes). Whatever happens, the server moves back every
//!   listed ICA it holds, to its home if that is free, else wherever the
//!   kernel places it (the client finds its pages again by id).
//!
//! Both sides keep the addresses their ICAs pass through: an ICA placed
//! wherever the kernel finds room lands past everything placed before,
//! and each new range of addresses costs page tables, which stay. So a
//! client asks for its ICAs back at their homes, and places them in the
//! server one after another from the *landing* address the server gives
//! at OPEN ([`LANDING`] bytes the server keeps free).
//! - `FLUSH`: every WRITE completed before is durable.
//! - `CLOSE`: gives the device up.
//! - `STATS`: a text report, `name value` per line.
//!
//! Errors are the call's: `Invalid` (a malformed request, blocks outside
//! the device), `Denied` (not the client, or an ICA it does not hold),
//! `Busy` (the device failed: the virtio status, a disk that is read-only).

use crate::wire::{Reader, Writer};
use alloc::vec::Vec;
use tessera_rt::abi::Error;
use tessera_rt::ica::Ica;
use tessera_rt::sys;

pub mod server;

pub const NAME: &str = "disk";
/// Bytes in a block: a page.
pub const BLOCK: usize = 4096;

pub const OPEN: u64 = 0;
pub const READ: u64 = 1;
pub const WRITE: u64 = 2;
pub const FLUSH: u64 = 3;
pub const CLOSE: u64 = 4;
pub const STATS: u64 = 5;
pub const ENTRIES: u64 = (1 << OPEN) | (1 << READ) | (1 << WRITE) | (1 << FLUSH) | (1 << CLOSE) | (1 << STATS);

/// Most pieces one request names.
pub const MAX_PIECES: usize = 32;
/// Bytes of a server's landing window: 32 ICAs of 256 KiB.
pub const LANDING: u64 = (MAX_PIECES * 64 * BLOCK) as u64;
/// Most blocks a request may carry, for the servers here (the device's
/// own limit, reported in [`Geometry::max_blocks`], may be lower).
pub const MAX_BLOCKS: u32 = 1024;
/// `Geometry::flags`: writes are refused.
pub const READ_ONLY: u32 = 1;

/// The device as OPEN reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Geometry {
    pub blocks: u64,
    /// Most blocks one request may carry.
    pub max_blocks: u32,
    pub flags: u32,
    /// Where in the server a client's ICAs may land (0: anywhere).
    pub landing: u64,
}

impl Geometry {
    pub const LEN: usize = 24;

    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0; Self::LEN];
        Writer::new(&mut b)
            .u64(self.blocks)
            .u32(self.max_blocks)
            .u32(self.flags)
            .u64(self.landing);
        b
    }

    pub fn decode(b: &[u8]) -> Option<Geometry> {
        let mut r = Reader::new(b);
        Some(Geometry {
            blocks: r.u64()?,
            max_blocks: r.u32()?,
            flags: r.u32()?,
            landing: r.u64()?,
        })
    }
}

/// Pages `at..at + pages` of an ICA, one piece of a transfer.
pub struct Piece {
    pub ica: Ica,
    pub at: usize,
    pub pages: usize,
}

impl Piece {
    /// The whole of `ica`.
    pub fn whole(ica: Ica) -> Piece {
        let pages = ica.len() / BLOCK;
        Piece { ica, at: 0, pages }
    }

    /// The piece's bytes (empty if it does not lie inside its ICA).
    pub fn bytes(&self) -> &[u8] {
        self.ica.as_slice().get(self.range()).unwrap_or_default()
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let range = self.range();
        self.ica.as_mut_slice().get_mut(range).unwrap_or_default()
    }

    fn range(&self) -> core::ops::Range<usize> {
        self.at * BLOCK..(self.at + self.pages) * BLOCK
    }

    /// Whether the piece has pages and lies inside its ICA.
    pub fn is_sound(&self) -> bool {
        self.pages > 0 && (self.at + self.pages) * BLOCK <= self.ica.len()
    }
}

/// A piece as a message names it: (ICA id, at, pages, home).
pub type PieceRef = (u64, u32, u32, u64);

/// Bytes of a transfer message naming `n` pieces.
pub const fn transfer_len(n: usize) -> usize {
    16 + 24 * n
}

/// A READ or WRITE message: block `first`, then the pieces.
pub fn encode_transfer(first: u64, pieces: &[PieceRef], buf: &mut [u8]) -> usize {
    let mut w = Writer::new(buf);
    w.u64(first).u32(pieces.len() as u32).u32(0);
    for &(id, at, pages, home) in pieces {
        w.u64(id).u32(at).u32(pages).u64(home);
    }
    w.len()
}

/// The first block and the pieces of a transfer message.
pub fn decode_transfer(msg: &[u8]) -> Option<(u64, Vec<PieceRef>)> {
    let mut r = Reader::new(msg);
    let first = r.u64()?;
    let n = r.u32()? as usize;
    r.u32()?;
    if n == 0 || n > MAX_PIECES {
        return None;
    }
    let mut pieces = Vec::with_capacity(n);
    for _ in 0..n {
        pieces.push((r.u64()?, r.u32()?, r.u32()?, r.u64()?));
    }
    Some((first, pieces))
}

// ---- what every block device server does alike ----

/// OPEN, served: the caller becomes the device's client unless another
/// living one has it (`Busy`); each grants the other (the pages move both
/// ways); the reply is the geometry. Returns the reply's length.
pub fn serve_open(client: &mut Option<u64>, caller: u64, g: Geometry, reply: &mut [u8]) -> Result<usize, Error> {
    if let Some(c) = *client
        && c != caller
        && sys::alive(c)
    {
        return Err(Error::Busy);
    }
    sys::peer_grant(caller)?;
    *client = Some(caller);
    reply[..Geometry::LEN].copy_from_slice(&g.encode());
    Ok(Geometry::LEN)
}

/// The message of READ or WRITE call `rid` (from its description when it
/// is short, else read by reference) into `msg`; returns its length.
pub fn transfer_message(rid: u64, info: &tessera_rt::abi::AccInfo, msg: &mut [u8]) -> Result<usize, Error> {
    let len = (info.len as usize).min(msg.len());
    if len <= info.inline.len() {
        msg[..len].copy_from_slice(&info.inline[..len]);
    } else {
        sys::rv_read(rid, 0, &mut msg[..len])?;
    }
    Ok(len)
}

/// A STATS reply: as much of `text` as `reply` takes.
pub fn text_reply(text: &str, reply: &mut [u8]) -> usize {
    let n = text.len().min(reply.len());
    reply[..n].copy_from_slice(&text.as_bytes()[..n]);
    n
}

/// A client's connection to a block device server.
pub struct Disk {
    pub pid: u64,
    pub geometry: Geometry,
}

impl Disk {
    /// Opens the device served under `name`.
    pub fn open(name: &str) -> Result<Disk, Error> {
        let pid = sys::wait_for_name(name);
        if pid == 0 {
            return Err(Error::NotFound);
        }
        sys::peer_grant(pid)?;
        let mut reply = [0u8; Geometry::LEN];
        sys::call(pid, OPEN, &[], &mut reply)?;
        let geometry = Geometry::decode(&reply).ok_or(Error::Invalid)?;
        Ok(Disk { pid, geometry })
    }

    /// Reads blocks `first..` into `pieces` (in order, a block per page).
    /// The ICAs come back in `pieces`, whatever the outcome; one the
    /// server failed to return is missing from it.
    pub fn read(&self, first: u64, pieces: &mut Vec<Piece>) -> Result<(), Error> {
        self.transfer(READ, first, pieces)
    }

    /// Writes `pieces` to blocks `first..`.
    pub fn write(&self, first: u64, pieces: &mut Vec<Piece>) -> Result<(), Error> {
        self.transfer(WRITE, first, pieces)
    }

    pub fn flush(&self) -> Result<(), Error> {
        sys::call(self.pid, FLUSH, &[], &mut []).map(|_| ())
    }

    fn transfer(&self, entry: u64, first: u64, pieces: &mut Vec<Piece>) -> Result<(), Error> {
        if pieces.is_empty() || pieces.len() > MAX_PIECES {
            return Err(Error::Invalid);
        }
        let mut listed = [(0u64, 0u32, 0u32, 0u64); MAX_PIECES];
        let mut n = 0;
        let mut result = Ok(());
        let mut kept = Vec::new();
        let landing = self.geometry.landing;
        let mut place = landing;
        for p in core::mem::take(pieces) {
            let (id, at, pages, home) = (p.ica.id(), p.at as u32, p.pages as u32, p.ica.addr());
            let len = p.ica.len() as u64;
            let hint = if landing != 0 && place + len <= landing + LANDING {
                place
            } else {
                0
            };
            place += len;
            match p.ica.move_to(self.pid, hint) {
                Ok(_) => {
                    listed[n] = (id, at, pages, home);
                    n += 1;
                }
                Err((ica, e)) => {
                    // Not moved: it stays here, and the request does not go.
                    kept.push(Piece {
                        ica,
                        at: at as usize,
                        pages: pages as usize,
                    });
                    result = Err(e);
                }
            }
        }
        let mut msg = [0u8; transfer_len(MAX_PIECES)];
        if result.is_ok() {
            let len = encode_transfer(first, &listed[..n], &mut msg);
            result = sys::call(self.pid, entry, &msg[..len], &mut [0u8; 8]).map(|_| ());
        } else if n > 0 {
            // Some went: ask the server for them back with a request that
            // does nothing but name them (no block lies at u64::MAX, so it
            // answers Invalid and returns them).
            let len = encode_transfer(u64::MAX, &listed[..n], &mut msg);
            let _ = sys::call(self.pid, entry, &msg[..len], &mut [0u8; 8]);
        }
        *pieces = kept;
        for &(id, at, pages, _) in &listed[..n] {
            if let Ok(ica) = Ica::adopt(id) {
                pieces.push(Piece {
                    ica,
                    at: at as usize,
                    pages: pages as usize,
                });
            }
        }
        result
    }
}
