//! Where everything lies in the region, and how each record is encoded
//! (little-endian, fixed offsets).
//!
//! ```text
//! page 0            superblock: geometry, written once at format
//! slot 0, slot 1    two directory copies ("slots"), each a header and up to
//!                   `capacity` entries, page-rounded
//! data area         the files' pages, each file one contiguous run
//! ```
//!
//! A slot holds a whole directory: header (magic, sequence number, entry
//! count, CRC-64 of header and entries) and the entries sorted by name.

use crate::name::{NAME_MAX, valid_name};
use crate::region::PAGE_SIZE;
use crc::{CRC_64_XZ, Crc, Table};

/// CRC-64/XZ, slice-by-16: also the content checksum of every file, so that
/// an OFF2F header's text checksum can be compared with the directory's
/// without reading the text.
pub const CRC64: Crc<u64, Table<16>> = Crc::<u64, Table<16>>::new(&CRC_64_XZ);

pub const SUPER_MAGIC: [u8; 8] = *b"TSNVMSTO";
pub const SLOT_MAGIC: [u8; 8] = *b"TSNVMDIR";
pub const VERSION: u32 = 1;
pub const SUPER_SIZE: usize = 128;
pub const SLOT_HEADER_SIZE: usize = 64;
pub const ENTRY_SIZE: usize = 128;
/// Enough for every program and library of a Debian system; bounded so that a
/// corrupt superblock cannot make mount allocate without limit.
pub const MAX_CAPACITY: u32 = 65_536;

fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

pub fn pages_for(len: u64) -> u64 {
    len.div_ceil(PAGE_SIZE)
}

/// The region's layout, derived from its size and the directory capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub region_size: u64,
    pub capacity: u32,
    pub slot_size: u64,
    pub data_offset: u64,
    pub data_pages: u64,
}

impl Geometry {
    /// None if a region of `region_size` bytes cannot hold the superblock,
    /// both slots and at least one data page.
    pub fn new(region_size: u64, capacity: u32) -> Option<Geometry> {
        if capacity == 0 || capacity > MAX_CAPACITY || !region_size.is_multiple_of(PAGE_SIZE) {
            return None;
        }
        let slot_bytes = SLOT_HEADER_SIZE as u64 + capacity as u64 * ENTRY_SIZE as u64;
        let slot_size = pages_for(slot_bytes) * PAGE_SIZE;
        let data_offset = PAGE_SIZE + 2 * slot_size;
        let data_pages = region_size.checked_sub(data_offset)? / PAGE_SIZE;
        (data_pages > 0).then_some(Geometry {
            region_size,
            capacity,
            slot_size,
            data_offset,
            data_pages,
        })
    }

    pub fn slot_offset(&self, slot: usize) -> u64 {
        PAGE_SIZE + slot as u64 * self.slot_size
    }

    pub fn page_offset(&self, page: u64) -> u64 {
        self.data_offset + page * PAGE_SIZE
    }

    pub fn encode_super(&self) -> [u8; SUPER_SIZE] {
        let mut b = [0u8; SUPER_SIZE];
        b[0..8].copy_from_slice(&SUPER_MAGIC);
        put_u32(&mut b, 8, VERSION);
        put_u32(&mut b, 12, PAGE_SIZE as u32);
        put_u64(&mut b, 16, self.region_size);
        put_u32(&mut b, 24, self.capacity);
        put_u64(&mut b, 32, self.slot_offset(0));
        put_u64(&mut b, 40, self.slot_offset(1));
        put_u64(&mut b, 48, self.slot_size);
        put_u64(&mut b, 56, self.data_offset);
        put_u64(&mut b, 64, self.data_pages);
        let crc = CRC64.checksum(&b[..SUPER_SIZE - 8]);
        put_u64(&mut b, SUPER_SIZE - 8, crc);
        b
    }

    /// The geometry a superblock describes, if it is intact and exactly what
    /// `encode_super` would have written for it.
    pub fn decode_super(b: &[u8; SUPER_SIZE]) -> Result<Geometry, SuperError> {
        if b[0..8] != SUPER_MAGIC {
            return Err(SuperError::NoMagic);
        }
        if CRC64.checksum(&b[..SUPER_SIZE - 8]) != u64_at(b, SUPER_SIZE - 8) {
            return Err(SuperError::Corrupt("superblock checksum"));
        }
        if u32_at(b, 8) != VERSION || u32_at(b, 12) as u64 != PAGE_SIZE {
            return Err(SuperError::Corrupt("superblock version or page size"));
        }
        let geo = Geometry::new(u64_at(b, 16), u32_at(b, 24)).ok_or(SuperError::Corrupt("superblock geometry"))?;
        if geo.encode_super() != *b {
            return Err(SuperError::Corrupt("superblock geometry"));
        }
        Ok(geo)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuperError {
    NoMagic,
    Corrupt(&'static str),
}

/// One file of the directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    name: [u8; NAME_MAX + 1],
    pub first_page: u64,
    pub len: u64,
    pub crc: u64,
    /// Sequence number of the directory that first held this version.
    pub version: u64,
}

impl Entry {
    /// `name` must already be valid.
    pub fn new(name: &str, first_page: u64, len: u64, crc: u64, version: u64) -> Entry {
        let mut n = [0u8; NAME_MAX + 1];
        n[..name.len()].copy_from_slice(name.as_bytes());
        Entry {
            name: n,
            first_page,
            len,
            crc,
            version,
        }
    }

    pub fn name(&self) -> &str {
        let len = self.name.iter().position(|&c| c == 0).unwrap_or(NAME_MAX);
        // Only valid (ASCII) names get in: see `new` and `decode`.
        core::str::from_utf8(&self.name[..len]).unwrap_or("")
    }

    pub fn pages(&self) -> u64 {
        pages_for(self.len)
    }

    fn encode(&self, b: &mut [u8]) {
        b[..NAME_MAX + 1].copy_from_slice(&self.name);
        put_u64(b, 64, self.first_page);
        put_u64(b, 72, self.len);
        put_u64(b, 80, self.crc);
        put_u64(b, 88, self.version);
        b[96..ENTRY_SIZE].fill(0);
    }

    /// The entry, if its own fields are well-formed and its pages lie in a
    /// data area of `data_pages` pages. Overlaps and order are the
    /// directory's to check.
    fn decode(b: &[u8], data_pages: u64, seq: u64) -> Result<Entry, &'static str> {
        let mut name = [0u8; NAME_MAX + 1];
        name.copy_from_slice(&b[..NAME_MAX + 1]);
        let len = name.iter().position(|&c| c == 0).ok_or("entry name not terminated")?;
        if name[len..].iter().any(|&c| c != 0) || !core::str::from_utf8(&name[..len]).is_ok_and(valid_name) {
            return Err("entry name");
        }
        if b[96..ENTRY_SIZE].iter().any(|&c| c != 0) {
            return Err("entry reserved bytes");
        }
        let e = Entry {
            name,
            first_page: u64_at(b, 64),
            len: u64_at(b, 72),
            crc: u64_at(b, 80),
            version: u64_at(b, 88),
        };
        let pages = e.pages();
        let end = e.first_page.checked_add(pages).ok_or("entry extent")?;
        if end > data_pages || (pages == 0 && e.first_page != 0) {
            return Err("entry extent");
        }
        if e.version == 0 || e.version > seq {
            return Err("entry version");
        }
        Ok(e)
    }
}

/// A slot's header as read, before its entries are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotHeader {
    pub seq: u64,
    pub count: u32,
    crc: u64,
}

impl SlotHeader {
    /// None if the slot does not even start like a directory.
    pub fn decode(b: &[u8; SLOT_HEADER_SIZE], capacity: u32) -> Option<SlotHeader> {
        let count = u32_at(b, 16);
        (b[0..8] == SLOT_MAGIC && count <= capacity && u64_at(b, 8) != 0).then_some(SlotHeader {
            seq: u64_at(b, 8),
            count,
            crc: u64_at(b, SLOT_HEADER_SIZE - 8),
        })
    }

    /// Whether header and `entries` (exactly `count` of them) are what was
    /// written together.
    pub fn matches(&self, header: &[u8; SLOT_HEADER_SIZE], entries: &[u8]) -> bool {
        slot_crc(header, entries) == self.crc
    }
}

fn slot_crc(header: &[u8; SLOT_HEADER_SIZE], entries: &[u8]) -> u64 {
    let mut d = CRC64.digest();
    d.update(&header[..SLOT_HEADER_SIZE - 8]);
    d.update(entries);
    d.finalize()
}

/// A whole slot, header then entries, ready to be written.
pub fn encode_slot(seq: u64, entries: &[Entry]) -> alloc::vec::Vec<u8> {
    let mut b = alloc::vec![0u8; SLOT_HEADER_SIZE + entries.len() * ENTRY_SIZE];
    for (i, e) in entries.iter().enumerate() {
        let at = SLOT_HEADER_SIZE + i * ENTRY_SIZE;
        e.encode(&mut b[at..at + ENTRY_SIZE]);
    }
    let mut header = [0u8; SLOT_HEADER_SIZE];
    header[0..8].copy_from_slice(&SLOT_MAGIC);
    put_u64(&mut header, 8, seq);
    put_u32(&mut header, 16, entries.len() as u32);
    let crc = slot_crc(&header, &b[SLOT_HEADER_SIZE..]);
    put_u64(&mut header, SLOT_HEADER_SIZE - 8, crc);
    b[..SLOT_HEADER_SIZE].copy_from_slice(&header);
    b
}

/// The entries of an intact slot, if they form a directory: each well-formed,
/// names strictly ascending, no two files sharing a page.
pub fn decode_entries(b: &[u8], data_pages: u64, seq: u64) -> Result<alloc::vec::Vec<Entry>, &'static str> {
    let mut entries = alloc::vec::Vec::with_capacity(b.len() / ENTRY_SIZE);
    for chunk in b.chunks_exact(ENTRY_SIZE) {
        let e = Entry::decode(chunk, data_pages, seq)?;
        if let Some(prev) = entries.last()
            && Entry::name(prev) >= e.name()
        {
            return Err("entry names not sorted or not unique");
        }
        entries.push(e);
    }
    let mut extents: alloc::vec::Vec<(u64, u64)> = entries
        .iter()
        .filter(|e| e.pages() > 0)
        .map(|e| (e.first_page, e.first_page + e.pages()))
        .collect();
    extents.sort_unstable();
    if extents.windows(2).any(|w| w[0].1 > w[1].0) {
        return Err("two files share pages");
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn superblock_round_trip_and_rejects_any_flipped_bit() {
        let geo = Geometry::new(1 << 20, 16).unwrap();
        let b = geo.encode_super();
        assert_eq!(Geometry::decode_super(&b), Ok(geo));
        for i in 0..SUPER_SIZE * 8 {
            let mut c = b;
            c[i / 8] ^= 1 << (i % 8);
            assert!(Geometry::decode_super(&c).is_err(), "bit {i}");
        }
    }

    #[test]
    fn geometry_refuses_regions_too_small() {
        assert_eq!(Geometry::new(3 * PAGE_SIZE, 1), None);
        assert!(Geometry::new(4 * PAGE_SIZE, 1).is_some());
        assert_eq!(Geometry::new(4 * PAGE_SIZE + 1, 1), None);
        assert_eq!(Geometry::new(1 << 30, 0), None);
        assert_eq!(Geometry::new(1 << 30, MAX_CAPACITY + 1), None);
    }

    #[test]
    fn entries_that_share_pages_are_refused() {
        let a = Entry::new("a", 0, 2 * PAGE_SIZE, 0, 1);
        let b = Entry::new("b", 1, 1, 0, 1);
        let slot = encode_slot(1, &[a, b]);
        assert!(decode_entries(&slot[SLOT_HEADER_SIZE..], 10, 1).is_err());
        let b = Entry::new("b", 2, 1, 0, 1);
        let slot = encode_slot(1, &[a, b]);
        assert_eq!(decode_entries(&slot[SLOT_HEADER_SIZE..], 10, 1), Ok(alloc::vec![a, b]));
        assert!(
            decode_entries(&slot[SLOT_HEADER_SIZE..], 2, 1).is_err(),
            "past the data area"
        );
        let slot = encode_slot(1, &[b, a]);
        assert!(decode_entries(&slot[SLOT_HEADER_SIZE..], 10, 1).is_err(), "unsorted");
    }
}
