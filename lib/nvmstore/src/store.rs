//! The store: format, mount, look up, store, delete.
//!
//! Crash consistency rests on shadow directories. The two slots hold the last
//! two directories written, told apart by a sequence number; each is covered
//! by one CRC-64. Mount takes the intact slot with the higher sequence
//! number. A change (store or delete) never writes anything the current
//! directory refers to:
//! 1. a new file's data goes to pages that are free in the current directory
//!    (the version it replaces stays where it is), then flush + fence;
//! 2. the whole new directory (sequence + 1) goes to the other slot, then
//!    flush + fence: this is the commit.
//!
//! Power lost before the commit's fence leaves the other slot torn (its CRC
//! fails) or holding the older directory, whose sequence is lower: mount
//! finds the current directory, whose slot and pages were not touched. Power
//! lost after it finds the new one, whose data was durable before it was.
//! Either way every file is, whole, one of the versions some directory
//! committed. Mount writes nothing: a torn slot is simply the next one
//! overwritten.

use crate::error::Error;
use crate::layout::{
    self, CRC64, ENTRY_SIZE, Entry, Geometry, SLOT_HEADER_SIZE, SUPER_SIZE, SlotHeader, SuperError, pages_for,
};
use crate::name::valid_name;
use crate::region::{PAGE_SIZE, Region};
use crate::space::{self, Space};
use alloc::vec;
use alloc::vec::Vec;

/// Data is written and checksummed in chunks of this size when streamed.
const CHUNK: usize = 64 * 1024;

/// A file as the kernel needs it to map its pages: `pages` pages starting at
/// byte `offset` of the region (page-aligned), of which `len` bytes are the
/// file (the rest of the last page is zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileInfo<'a> {
    pub name: &'a str,
    pub offset: u64,
    pub len: u64,
    pub pages: u64,
    /// CRC-64/XZ of the content.
    pub crc: u64,
    /// Sequence number of the directory that first held this content.
    pub version: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FormatOptions {
    /// Directory capacity (files); None picks one from the region's size.
    pub capacity: Option<u32>,
}

impl FormatOptions {
    /// One entry per 64 pages, between 16 and 1024: 1024 files for 256 MiB.
    pub fn default_capacity(region_size: u64) -> u32 {
        (region_size / PAGE_SIZE / 64).clamp(16, 1024) as u32
    }
}

pub struct Store<R: Region> {
    region: R,
    geo: Geometry,
    /// The current directory, sorted by name.
    dir: Vec<Entry>,
    seq: u64,
    /// The slot that holds `dir`.
    active: usize,
    /// Runs of pages `(first page, pages)` that a user of the store still
    /// uses though the directory may no longer name them (a kernel's
    /// mappings of a replaced or deleted file): never allocated.
    held: Vec<(u64, u64)>,
}

impl<R: Region> Store<R> {
    /// Makes an empty store on `region`, whatever it held. Not crash-safe
    /// itself, but a format cut short leaves no store that mounts (the
    /// superblock is erased first and written last).
    pub fn format(mut region: R, opts: FormatOptions) -> Result<Store<R>, Error> {
        let size = region.size() / PAGE_SIZE * PAGE_SIZE;
        let capacity = opts.capacity.unwrap_or_else(|| FormatOptions::default_capacity(size));
        let geo = Geometry::new(size, capacity).ok_or(Error::TooSmall { size: region.size() })?;
        region.write(0, &[0u8; SUPER_SIZE])?;
        region.flush(0, SUPER_SIZE as u64)?;
        region.fence()?;
        let slot0 = layout::encode_slot(1, &[]);
        region.write(geo.slot_offset(0), &slot0)?;
        region.write(geo.slot_offset(1), &[0u8; SLOT_HEADER_SIZE])?;
        region.flush(geo.slot_offset(0), slot0.len() as u64)?;
        region.flush(geo.slot_offset(1), SLOT_HEADER_SIZE as u64)?;
        region.fence()?;
        region.write(0, &geo.encode_super())?;
        region.flush(0, SUPER_SIZE as u64)?;
        region.fence()?;
        Ok(Store {
            region,
            geo,
            dir: Vec::new(),
            seq: 1,
            active: 0,
            held: Vec::new(),
        })
    }

    /// Opens the store on `region` as the last committed change left it.
    /// Checks everything it reads; writes nothing.
    pub fn mount(region: R) -> Result<Store<R>, Error> {
        if region.size() < SUPER_SIZE as u64 {
            return Err(Error::NotFormatted);
        }
        let mut sb = [0u8; SUPER_SIZE];
        region.read(0, &mut sb)?;
        let geo = Geometry::decode_super(&sb).map_err(|e| match e {
            SuperError::NoMagic => Error::NotFormatted,
            SuperError::Corrupt(what) => Error::Corrupt(what),
        })?;
        if geo.region_size > region.size() {
            return Err(Error::Corrupt("region size (the region is smaller than the store)"));
        }
        let mut best: Option<(usize, SlotHeader, Vec<u8>)> = None;
        for slot in 0..2 {
            let Some((header, entries)) = read_slot(&region, &geo, slot)? else {
                continue;
            };
            match &best {
                Some((_, b, bytes)) if b.seq == header.seq => {
                    // Never written by this code: each commit raises the sequence.
                    if *bytes != entries {
                        return Err(Error::Corrupt("directory slots (two differ with one sequence number)"));
                    }
                }
                Some((_, b, _)) if b.seq > header.seq => {}
                _ => best = Some((slot, header, entries)),
            }
        }
        let (active, header, bytes) = best.ok_or(Error::Corrupt("directory (no intact slot)"))?;
        let dir = layout::decode_entries(&bytes, geo.data_pages, header.seq).map_err(Error::Corrupt)?;
        Ok(Store {
            region,
            geo,
            dir,
            seq: header.seq,
            active,
            held: Vec::new(),
        })
    }

    pub fn files(&self) -> impl Iterator<Item = FileInfo<'_>> {
        self.dir.iter().map(|e| self.info(e))
    }

    pub fn lookup(&self, name: &str) -> Option<FileInfo<'_>> {
        self.find(name).ok().map(|i| self.info(&self.dir[i]))
    }

    pub fn space(&self) -> Space {
        space::space(&self.dir, &self.held, self.geo.data_pages, self.geo.capacity)
    }

    /// The files (as [`FileInfo`]'s `offset` and `pages`) a user of the
    /// store still maps, such as a kernel's text pages: a store after this
    /// never writes their pages, whether or not the directory still names
    /// them. Replaces the files given before.
    pub fn set_held(&mut self, files: impl IntoIterator<Item = (u64, u64)>) {
        let data = self.geo.page_offset(0);
        self.held.clear();
        for (offset, pages) in files {
            if let Some(from_data) = offset.checked_sub(data) {
                self.held.push((from_data / PAGE_SIZE, pages));
            }
        }
    }

    /// Sequence number of the current directory: it grows by one per change.
    pub fn sequence(&self) -> u64 {
        self.seq
    }

    pub fn geometry(&self) -> Geometry {
        self.geo
    }

    /// Reads `buf.len()` bytes of the file from `offset`.
    pub fn read(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<(), Error> {
        let f = self.lookup(name).ok_or(Error::NotFound)?;
        let end = offset.checked_add(buf.len() as u64).filter(|&e| e <= f.len);
        if end.is_none() {
            return Err(Error::Region(crate::RegionError {
                offset,
                len: buf.len() as u64,
            }));
        }
        Ok(self.region.read(f.offset + offset, buf)?)
    }

    /// Whether the content still has the checksum it was stored with.
    pub fn verify(&self, name: &str) -> Result<bool, Error> {
        let f = self.lookup(name).ok_or(Error::NotFound)?;
        let mut digest = CRC64.digest();
        let mut buf = vec![0u8; CHUNK];
        let mut done = 0;
        while done < f.len {
            let n = (f.len - done).min(CHUNK as u64) as usize;
            self.region.read(f.offset + done, &mut buf[..n])?;
            digest.update(&buf[..n]);
            done += n as u64;
        }
        Ok(digest.finalize() == f.crc)
    }

    /// Stores `data` as `name`, replacing any file of that name. Storing the
    /// very content the file already has changes nothing.
    pub fn store(&mut self, name: &str, data: &[u8]) -> Result<FileInfo<'_>, Error> {
        if let Ok(i) = self.find(name) {
            let e = self.dir[i];
            if e.len == data.len() as u64 && e.crc == CRC64.checksum(data) && self.same_content(&e, data)? {
                return Ok(self.info(&self.dir[i]));
            }
        }
        let len = data.len() as u64;
        self.store_from(name, len, |offset, buf| {
            let at = offset as usize;
            buf.copy_from_slice(&data[at..at + buf.len()]);
            Ok(())
        })
    }

    /// Stores `len` bytes that `fill(offset, buf)` provides chunk by chunk,
    /// in order (for data that is not in memory as a whole). If `fill`
    /// fails, the store is as before.
    pub fn store_from(
        &mut self,
        name: &str,
        len: u64,
        mut fill: impl FnMut(u64, &mut [u8]) -> Result<(), ()>,
    ) -> Result<FileInfo<'_>, Error> {
        if !valid_name(name) {
            return Err(Error::BadName);
        }
        let existing = self.find(name);
        if existing.is_err() && self.dir.len() >= self.geo.capacity as usize {
            return Err(Error::DirectoryFull {
                capacity: self.geo.capacity,
            });
        }
        let pages = pages_for(len);
        let first_page = space::allocate(&self.dir, &self.held, self.geo.data_pages, pages).ok_or_else(|| {
            let s = self.space();
            Error::NoSpace {
                needed_pages: pages,
                free_pages: s.free_pages,
                largest_free_run: s.largest_free_run,
            }
        })?;

        // Step 1: the data, into pages the current directory leaves free.
        let base = self.geo.page_offset(first_page);
        let mut digest = CRC64.digest();
        let mut buf = vec![0u8; CHUNK.min(len as usize)];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK as u64) as usize;
            fill(done, &mut buf[..n]).map_err(|()| Error::Source)?;
            digest.update(&buf[..n]);
            self.region.write(base + done, &buf[..n])?;
            done += n as u64;
        }
        // The rest of the last page is mapped with the file: no stale bytes.
        let tail = pages * PAGE_SIZE - len;
        if tail > 0 {
            self.region.write(base + len, &vec![0u8; tail as usize])?;
        }
        if pages > 0 {
            self.region.flush(base, pages * PAGE_SIZE)?;
            self.region.fence()?;
        }

        // Step 2: the new directory into the other slot: the commit.
        let entry = Entry::new(name, first_page, len, digest.finalize(), self.seq + 1);
        let mut dir = self.dir.clone();
        match existing {
            Ok(i) => dir[i] = entry,
            Err(i) => dir.insert(i, entry),
        }
        self.commit(dir)?;
        self.lookup(name).ok_or(Error::NotFound)
    }

    pub fn delete(&mut self, name: &str) -> Result<(), Error> {
        let i = self.find(name).map_err(|_| Error::NotFound)?;
        let mut dir = self.dir.clone();
        dir.remove(i);
        self.commit(dir)
    }

    pub fn region(&self) -> &R {
        &self.region
    }

    pub fn into_region(self) -> R {
        self.region
    }

    fn commit(&mut self, dir: Vec<Entry>) -> Result<(), Error> {
        let slot = 1 - self.active;
        let bytes = layout::encode_slot(self.seq + 1, &dir);
        let at = self.geo.slot_offset(slot);
        self.region.write(at, &bytes)?;
        self.region.flush(at, bytes.len() as u64)?;
        self.region.fence()?;
        self.dir = dir;
        self.seq += 1;
        self.active = slot;
        Ok(())
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.dir.binary_search_by(|e| e.name().cmp(name))
    }

    fn info<'a>(&self, e: &'a Entry) -> FileInfo<'a> {
        FileInfo {
            name: e.name(),
            offset: self.geo.page_offset(e.first_page),
            len: e.len,
            pages: e.pages(),
            crc: e.crc,
            version: e.version,
        }
    }

    fn same_content(&self, e: &Entry, data: &[u8]) -> Result<bool, Error> {
        let mut buf = vec![0u8; CHUNK.min(data.len())];
        for (i, chunk) in data.chunks(CHUNK).enumerate() {
            let part = &mut buf[..chunk.len()];
            self.region
                .read(self.geo.page_offset(e.first_page) + (i * CHUNK) as u64, part)?;
            if part != chunk {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// A slot's header and entry bytes if the slot is intact (magic, count and
/// CRC), None if it is not: a torn or never-written slot is no error.
fn read_slot<R: Region>(region: &R, geo: &Geometry, slot: usize) -> Result<Option<(SlotHeader, Vec<u8>)>, Error> {
    let at = geo.slot_offset(slot);
    let mut hb = [0u8; SLOT_HEADER_SIZE];
    region.read(at, &mut hb)?;
    let Some(header) = SlotHeader::decode(&hb, geo.capacity) else {
        return Ok(None);
    };
    let mut entries = vec![0u8; header.count as usize * ENTRY_SIZE];
    region.read(at + SLOT_HEADER_SIZE as u64, &mut entries)?;
    Ok(header.matches(&hb, &entries).then_some((header, entries)))
}
