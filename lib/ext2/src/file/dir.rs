//! Directory contents: finding, adding and removing entries, block by
//! block, each block borrowed from the inode manager and each entry
//! checked before it is believed.
//!
//! The directory is linear on the disk: a directory is scanned whole once,
//! then found in the name cache (`names`). An indexed (`dir_index`)
//! directory reads the same way, and the first change to it turns its
//! index off ([`InodeManager::drop_index`]).

use super::names::DirIndex;
use super::{FileManager, Handle};
use crate::device::BlockDevice;
use crate::disk::dirent::{self, Dirent, rec_len_for};
use crate::disk::inode::FileType;
use crate::error::{Errno, Result};

/// One entry, as `read_dir` passes it on.
#[derive(Debug, Clone, Copy)]
pub struct DirEntry<'a> {
    pub ino: u32,
    /// The type recorded in the entry (none without the filetype feature).
    pub kind: Option<FileType>,
    pub name: &'a [u8],
    /// The position just after this entry: `read_dir` from there
    /// continues with the next one (a directory record's `d_off`).
    pub next: u64,
}

/// An entry found by name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    pub ino: u32,
    pub block: u64,
    pub offset: usize,
}

/// Where a new entry goes: into the space of the entry at `offset` of
/// `block`, or into a new block at the end.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Slot {
    At { block: u64, offset: usize },
    Append,
}

impl<D: BlockDevice> FileManager<D> {
    fn dir_blocks(&mut self, dir: u32) -> Result<u64> {
        let inode = self.inodes.get(dir)?;
        Ok(inode.size / self.inodes.block_size() as u64)
    }

    /// Calls `f` with each entry (and its offset) of block `l` until it
    /// returns true. Each entry is checked before `f` sees it, so a damaged
    /// entry gives `EIO` while the ones before it stay usable.
    fn scan_block(&mut self, dir: u32, l: u64, f: &mut dyn FnMut(usize, &Dirent) -> bool) -> Result<()> {
        let count = self.inodes.inodes_count();
        let filetype = self.inodes.has_filetype();
        let mut result = Ok(());
        self.inodes.read_dir_block(dir, l, &mut |b| {
            let mut off = 0;
            while off < b.len() {
                match dirent::decode(b, off, count, filetype) {
                    Ok(e) if f(off, &e) => return,
                    Ok(e) => off += e.rec_len,
                    Err(e) => {
                        result = Err(e);
                        return;
                    }
                }
            }
        })?;
        result
    }

    /// Scans directory `dir` whole into the name cache. A scan that meets
    /// a damaged entry leaves the directory out (its lookups keep scanning,
    /// and report the damage where they meet it).
    fn index(&mut self, dir: u32) -> Option<&DirIndex> {
        if self.names.get(dir).is_none() {
            let mut ix = DirIndex::default();
            for l in 0..self.dir_blocks(dir).ok()? {
                self.scan_block(dir, l, &mut |offset, e| {
                    let spare = if e.inode == 0 {
                        e.rec_len
                    } else {
                        ix.names.insert(
                            e.name.to_vec(),
                            Found {
                                ino: e.inode,
                                block: l,
                                offset,
                            },
                        );
                        e.rec_len - rec_len_for(e.name.len())
                    };
                    ix.set_room((l, offset), spare);
                    false
                })
                .ok()?;
            }
            self.names.put(dir, ix);
        }
        self.names.get(dir)
    }

    /// The entry named `name` in directory `dir`.
    pub(crate) fn find(&mut self, dir: u32, name: &[u8]) -> Result<Option<Found>> {
        if let Some(ix) = self.index(dir) {
            return Ok(ix.names.get(name).copied());
        }
        for l in 0..self.dir_blocks(dir)? {
            let mut found = None;
            self.scan_block(dir, l, &mut |offset, e| {
                if e.inode != 0 && e.name == name {
                    found = Some(Found {
                        ino: e.inode,
                        block: l,
                        offset,
                    });
                }
                found.is_some()
            })?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// Finds room for an entry named `name`, checking in the same pass
    /// that the name is not there yet (`EEXIST`).
    pub(crate) fn plan_insert(&mut self, dir: u32, name: &[u8]) -> Result<Slot> {
        let need = rec_len_for(name.len());
        if let Some(ix) = self.index(dir) {
            if ix.names.contains_key(name) {
                return Err(Errno::EEXIST);
            }
            return Ok(match ix.fit(need) {
                Some((block, offset)) => Slot::At { block, offset },
                None => Slot::Append,
            });
        }
        let mut slot = Slot::Append;
        let mut exists = false;
        for l in 0..self.dir_blocks(dir)? {
            self.scan_block(dir, l, &mut |offset, e| {
                if e.inode != 0 && e.name == name {
                    exists = true;
                    return true;
                }
                let spare = if e.inode == 0 {
                    e.rec_len
                } else {
                    e.rec_len - rec_len_for(e.name.len())
                };
                if matches!(slot, Slot::Append) && spare >= need {
                    slot = Slot::At { block: l, offset };
                }
                false
            })?;
            if exists {
                return Err(Errno::EEXIST);
            }
        }
        Ok(slot)
    }

    fn type_byte(&self, kind: FileType) -> u8 {
        if self.inodes.has_filetype() {
            kind.dirent_type()
        } else {
            0
        }
    }

    /// Writes the entry into the slot [`FileManager::plan_insert`] found.
    pub(crate) fn insert(&mut self, dir: u32, slot: Slot, name: &[u8], ino: u32, kind: FileType) -> Result<()> {
        let placed = self.place(dir, slot, name, ino, kind);
        match (placed, self.names.get_mut(dir)) {
            (Ok((at, rec_len, was_room)), Some(ix)) => {
                ix.names.insert(
                    name.to_vec(),
                    Found {
                        ino,
                        block: at.0,
                        offset: at.1,
                    },
                );
                if let Some(before) = was_room {
                    ix.set_room(before, 0);
                }
                ix.set_room(at, rec_len - rec_len_for(name.len()));
                Ok(())
            }
            (placed, _) => {
                self.names.drop_dir(dir);
                placed.map(drop)
            }
        }
    }

    /// Writes the entry; returns where it went, its record length and the
    /// entry whose room it took, if it split one.
    #[allow(clippy::type_complexity)]
    fn place(
        &mut self,
        dir: u32,
        slot: Slot,
        name: &[u8],
        ino: u32,
        kind: FileType,
    ) -> Result<((u64, usize), usize, Option<(u64, usize)>)> {
        self.inodes.drop_index(dir)?;
        let t = self.type_byte(kind);
        let bs = self.inodes.block_size() as usize;
        match slot {
            Slot::Append => {
                let block = self.dir_blocks(dir)?;
                self.inodes.append_dir_block(dir, &mut |b| {
                    b.fill(0);
                    dirent::encode(b, 0, ino, bs, t, name);
                })?;
                Ok(((block, 0), bs, None))
            }
            Slot::At { block, offset } => {
                let count = self.inodes.inodes_count();
                let filetype = self.inodes.has_filetype();
                let mut result = Err(Errno::EIO);
                // Only the entry's record length and the new entry after
                // the entry's own record can change: within the longest
                // record a name can have, plus the new entry's, from the
                // slot (and never past the block's end). A device that
                // looks for what changed looks there alone: lent the rest
                // of the block, it compared the free room too.
                let end = (offset + rec_len_for(dirent::NAME_MAX) + rec_len_for(name.len())).min(bs);
                self.inodes.update_dir_part(dir, block, offset..end, &mut |b| {
                    // The block was checked while planning; nothing ran
                    // in between, but the entry is decoded again rather
                    // than trusted.
                    let Ok(e) = dirent::decode(b, offset, count, filetype) else {
                        return;
                    };
                    let (inode, rec_len, used) = (e.inode, e.rec_len, rec_len_for(e.name.len()));
                    if inode == 0 && rec_len >= rec_len_for(name.len()) {
                        dirent::encode(b, offset, ino, rec_len, t, name);
                        result = Ok(((block, offset), rec_len, None));
                    } else if rec_len - used >= rec_len_for(name.len()) {
                        dirent::set_rec_len(b, offset, used);
                        dirent::encode(b, offset + used, ino, rec_len - used, t, name);
                        result = Ok(((block, offset + used), rec_len - used, Some((block, offset))));
                    }
                })?;
                result
            }
        }
    }

    /// Removes the entry named `name`, merging its space into the entry
    /// before it (or marking it unused if it is first in its block).
    pub(crate) fn remove(&mut self, dir: u32, name: &[u8]) -> Result<Found> {
        let found = self.find(dir, name)?.ok_or(Errno::ENOENT)?;
        let mut prev = None;
        self.scan_block(dir, found.block, &mut |offset, e| {
            if offset == found.offset {
                return true;
            }
            let used = if e.inode == 0 { 0 } else { rec_len_for(e.name.len()) };
            prev = Some((offset, e.rec_len, used));
            false
        })?;
        let mut removed = None;
        let kept = self.unlink_record(dir, &found, prev, &mut removed);
        match (kept, removed, self.names.get_mut(dir)) {
            (Ok(()), Some(rec_len), Some(ix)) => {
                ix.names.remove(name);
                ix.set_room((found.block, found.offset), 0);
                match prev {
                    Some((p, len, used)) => ix.set_room((found.block, p), len + rec_len - used),
                    None => ix.set_room((found.block, found.offset), rec_len),
                }
            }
            _ => self.names.drop_dir(dir),
        }
        kept.map(|()| found)
    }

    /// Takes the entry at `found` out of its block; `removed` gets its
    /// record length.
    fn unlink_record(
        &mut self,
        dir: u32,
        found: &Found,
        prev: Option<(usize, usize, usize)>,
        removed: &mut Option<usize>,
    ) -> Result<()> {
        self.inodes.drop_index(dir)?;
        let count = self.inodes.inodes_count();
        let filetype = self.inodes.has_filetype();
        self.inodes.update_dir_block(dir, found.block, &mut |b| {
            let Ok(e) = dirent::decode(b, found.offset, count, filetype) else {
                return;
            };
            let rec_len = e.rec_len;
            match prev {
                Some((p, len, _)) => dirent::set_rec_len(b, p, len + rec_len),
                None => dirent::set_inode(b, found.offset, 0, 0),
            }
            *removed = Some(rec_len);
        })
    }

    /// Points an existing entry at another inode (rename over a target).
    pub(crate) fn set_entry(&mut self, dir: u32, found: &Found, ino: u32, kind: FileType) -> Result<()> {
        self.names.drop_dir(dir);
        self.inodes.drop_index(dir)?;
        let t = self.type_byte(kind);
        let offset = found.offset;
        self.inodes
            .update_dir_block(dir, found.block, &mut |b| dirent::set_inode(b, offset, ino, t))
    }

    /// Whether a directory holds nothing but `.` and `..`.
    pub(crate) fn is_empty(&mut self, dir: u32) -> Result<bool> {
        let mut empty = true;
        for l in 0..self.dir_blocks(dir)? {
            self.scan_block(dir, l, &mut |_, e| {
                if e.inode != 0 && e.name != b"." && e.name != b".." {
                    empty = false;
                }
                !empty
            })?;
            if !empty {
                break;
            }
        }
        Ok(empty)
    }

    /// The parent a directory names in its `..` entry, and that entry's
    /// offset. The first block must start with `.` (naming the directory
    /// itself) and `..`.
    fn dotdot_entry(&mut self, dir: u32) -> Result<(u32, usize)> {
        let (mut dot, mut parent, mut n) = (None, None, 0);
        self.scan_block(dir, 0, &mut |offset, e| {
            match n {
                0 => dot = Some(e.inode).filter(|_| e.name == b"."),
                _ => parent = Some((e.inode, offset)).filter(|_| e.name == b".."),
            }
            n += 1;
            n == 2
        })?;
        match (dot, parent) {
            (Some(d), Some((p, offset))) if d == dir && p != 0 => Ok((p, offset)),
            _ => Err(Errno::EIO),
        }
    }

    /// The parent a directory names in its `..` entry (checked as
    /// `dotdot_entry` checks it), from its index when it has one: the
    /// look at its first block was a fifth of a path's resolution.
    pub(crate) fn dotdot(&mut self, dir: u32) -> Result<u32> {
        if let Some(parent) = self.names.get(dir).and_then(|i| i.dotdot) {
            return Ok(parent);
        }
        let parent = self.dotdot_entry(dir)?.0;
        self.names.note_dotdot(dir, parent);
        Ok(parent)
    }

    /// Points a directory's `..` at a new parent (the directory moved).
    pub(crate) fn set_dotdot(&mut self, dir: u32, parent: u32) -> Result<()> {
        let (_, offset) = self.dotdot_entry(dir)?;
        self.names.drop_dir(dir);
        self.inodes.drop_index(dir)?;
        let t = self.type_byte(FileType::Directory);
        self.inodes
            .update_dir_block(dir, 0, &mut |b| dirent::set_inode(b, offset, parent, t))
    }

    /// The first block of a new directory: `.` and `..`.
    pub(crate) fn init_dir_block(&self, b: &mut [u8], me: u32, parent: u32) {
        let t = self.type_byte(FileType::Directory);
        b.fill(0);
        dirent::encode(b, 0, me, rec_len_for(1), t, b".");
        dirent::encode(b, rec_len_for(1), parent, b.len() - rec_len_for(1), t, b"..");
    }

    /// Passes the entries of a directory, from position `pos` on, to `f`
    /// (`.` and `..` included), until `f` returns false (it could not take
    /// the entry) or the directory ends. Returns the position to continue
    /// from: a byte offset into the directory, as Linux's ext2 uses.
    ///
    /// A position that no longer falls on an entry (the block changed)
    /// continues at the next entry after it.
    pub fn read_dir(&mut self, dir: Handle, pos: u64, f: &mut dyn FnMut(&DirEntry) -> bool) -> Result<u64> {
        self.live_dir(dir)?;
        let bs = self.inodes.block_size() as u64;
        let blocks = self.dir_blocks(dir.ino)?;
        let mut l = pos / bs;
        let mut skip = (pos % bs) as usize;
        while l < blocks {
            let mut stopped = None;
            self.scan_block(dir.ino, l, &mut |offset, e| {
                if offset < skip || e.inode == 0 {
                    return false;
                }
                let entry = DirEntry {
                    ino: e.inode,
                    kind: FileType::from_dirent_type(e.file_type),
                    name: e.name,
                    next: l * bs + (offset + e.rec_len) as u64,
                };
                if !f(&entry) {
                    stopped = Some(offset);
                    return true;
                }
                false
            })?;
            if let Some(offset) = stopped {
                return Ok(l * bs + offset as u64);
            }
            l += 1;
            skip = 0;
        }
        Ok(blocks * bs)
    }
}
