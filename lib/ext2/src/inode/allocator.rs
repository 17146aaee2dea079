//! Allocation of blocks and inodes in the groups' bitmaps.
//!
//! Allocation writes the bitmap and the group descriptor at once. Freeing
//! is deferred: a freed block or inode stays marked in use until the next
//! commit, which first puts a barrier behind every write so far. So the
//! writes that removed the pointers to a block are on disk before the block
//! can be handed out again, and no crash can leave one block claimed by two
//! inodes, whatever order a write-back cache flushes in.

use alloc::vec::Vec;

use super::InodeManager;
use crate::device::BlockDevice;
use crate::disk::group::{DESC_SIZE, GroupDesc};
use crate::disk::superblock::Superblock;
use crate::error::{Errno, Result};

/// Frees waiting for the next commit.
#[derive(Default)]
pub(crate) struct Pending {
    /// Runs of blocks: first block and length.
    pub ranges: Vec<(u64, u32)>,
    /// The blocks in `ranges`.
    pub blocks: u64,
    /// Inodes, and whether each was a directory.
    pub inodes: Vec<(u32, bool)>,
}

/// Pending runs of blocks (or inodes) after which the end of an operation
/// commits.
const COMMIT_AFTER: usize = 4096;

/// The first clear bit in `from..to`.
fn find_clear(b: &[u8], from: usize, to: usize) -> Option<usize> {
    let mut i = from;
    while i < to {
        // Full stretches a word at a time: past a big file's blocks a
        // byte at a time was most of a small file's allocation.
        if i.is_multiple_of(64) && i + 64 <= to && b.get(i / 8..i / 8 + 8).is_some_and(|w| w.iter().all(|&x| x == 0xff))
        {
            i += 64;
            continue;
        }
        if i.is_multiple_of(8) && b[i / 8] == 0xff {
            i += 8;
            continue;
        }
        if b[i / 8] & (1 << (i % 8)) == 0 {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Whether block `n` may be a file's block: inside the file system and
/// not the superblock, a descriptor, a bitmap or the inode table.
pub(crate) fn block_ok(sb: &Superblock, groups: &[GroupDesc], n: u64) -> bool {
    if n < sb.first_data_block as u64 || n >= sb.blocks_count as u64 {
        return false;
    }
    let g = ((n - sb.first_data_block as u64) / sb.blocks_per_group as u64) as u32;
    let gd = &groups[g as usize];
    if gd.valid {
        !gd.holds_metadata(sb, g, n)
    } else {
        n >= sb.group_start(g) + sb.group_super_blocks(g) as u64
    }
}

fn bit(b: &[u8], i: usize) -> bool {
    b[i / 8] & (1 << (i % 8)) != 0
}

impl<D: BlockDevice> InodeManager<D> {
    /// Whether block `n` may be a file's block (see [`block_ok`]).
    pub(crate) fn block_ok(&self, n: u64) -> bool {
        block_ok(&self.sb, &self.groups, n)
    }

    fn write_group(&mut self, g: u32) -> Result<()> {
        let bs = self.sb.block_size as usize;
        let byte = g as usize * DESC_SIZE;
        let block = self.sb.first_data_block as u64 + 1 + (byte / bs) as u64;
        let off = byte % bs;
        let gd = self.groups[g as usize];
        self.disk.write_part(block, off..off + DESC_SIZE, &mut |b| {
            gd.encode_counts(&mut b[off..off + DESC_SIZE])
        })
    }

    /// Allocates up to `want` (at least 1) contiguous blocks, the first as
    /// close after `goal` as possible. Returns the first block and count.
    pub(crate) fn alloc_blocks(&mut self, goal: u64, want: u32) -> Result<(u64, u32)> {
        self.writable()?;
        if let Some(run) = self.try_alloc_blocks(goal, want)? {
            return Ok(run);
        }
        // Blocks freed since the last commit become usable by committing.
        if !self.pending.ranges.is_empty() {
            self.commit_frees()?;
            if let Some(run) = self.try_alloc_blocks(goal, want)? {
                return Ok(run);
            }
        }
        Err(Errno::ENOSPC)
    }

    fn try_alloc_blocks(&mut self, goal: u64, want: u32) -> Result<Option<(u64, u32)>> {
        if self.sb.free_blocks == 0 {
            return Ok(None);
        }
        let sb = &self.sb;
        let first = sb.first_data_block as u64;
        let goal = goal.clamp(first, sb.blocks_count as u64 - 1);
        let g0 = ((goal - first) / sb.blocks_per_group as u64) as u32;
        let goal_bit = (goal - sb.group_start(g0)) as usize;
        let groups = sb.groups;
        // The goal's group from the goal on, every other group, then the
        // goal's group before the goal.
        for i in 0..=groups {
            let g = (g0 + i) % groups;
            let (from, to) = match i {
                0 => (goal_bit, self.sb.group_len(g) as usize),
                _ if i == groups => (0, goal_bit),
                _ => (0, self.sb.group_len(g) as usize),
            };
            let gd = self.groups[g as usize];
            if !gd.valid || gd.free_blocks == 0 || from >= to {
                continue;
            }
            let start = self.sb.group_start(g);
            let mut found = None;
            let mut skipped = 0;
            let sb = &self.sb;
            self.disk.read(gd.block_bitmap as u64, &mut |b| {
                let mut at = from;
                while let Some(i) = find_clear(b, at, to) {
                    // A clear bit on the group's own metadata is a damaged
                    // bitmap: never hand such a block out.
                    if gd.holds_metadata(sb, g, start + i as u64) {
                        skipped += 1;
                        at = i + 1;
                        continue;
                    }
                    let mut n = 1;
                    while n < want as usize
                        && i + n < to
                        && !bit(b, i + n)
                        && !gd.holds_metadata(sb, g, start + (i + n) as u64)
                    {
                        n += 1;
                    }
                    found = Some((i, n));
                    break;
                }
            })?;
            self.disk.stats.inconsistencies += skipped;
            let Some((i, n)) = found else { continue };
            self.disk
                .write_part(gd.block_bitmap as u64, i / 8..(i + n).div_ceil(8), &mut |b| {
                    for j in i..i + n {
                        b[j / 8] |= 1 << (j % 8);
                    }
                })?;
            let gd = &mut self.groups[g as usize];
            gd.free_blocks = gd.free_blocks.saturating_sub(n as u16);
            self.sb.free_blocks = self.sb.free_blocks.saturating_sub(n as u32);
            self.write_group(g)?;
            return Ok(Some((start + i as u64, n as u32)));
        }
        Ok(None)
    }

    /// Frees blocks that nothing on disk points to (they were allocated by
    /// an operation that then failed): they are free again at once.
    pub(crate) fn free_blocks_now(&mut self, first: u64, n: u32) -> Result<()> {
        self.clear_block_bits(first, n)
    }

    /// Frees a block that something on disk pointed to until now: at the
    /// next commit.
    pub(crate) fn free_block_later(&mut self, n: u64) {
        self.pending.blocks += 1;
        if let Some((first, len)) = self.pending.ranges.last_mut()
            && *first + *len as u64 == n
            && *len < u32::MAX
        {
            *len += 1;
            return;
        }
        self.pending.ranges.push((n, 1));
    }

    pub(crate) fn free_inode_later(&mut self, ino: u32, dir: bool) {
        self.pending.inodes.push((ino, dir));
        if let Ok((block, _)) = self.locate(ino) {
            self.freed_itable.insert(block);
        }
    }

    /// Commits at the end of an operation that left many frees pending.
    pub(crate) fn maybe_commit(&mut self) -> Result<()> {
        if self.pending.ranges.len() >= COMMIT_AFTER || self.pending.inodes.len() >= COMMIT_AFTER {
            self.commit_frees()?;
        }
        Ok(())
    }

    /// Makes the pending frees real, behind a barrier.
    pub(crate) fn commit_frees(&mut self) -> Result<()> {
        if self.pending.ranges.is_empty() && self.pending.inodes.is_empty() {
            return Ok(());
        }
        self.disk.barrier()?;
        let ranges = core::mem::take(&mut self.pending.ranges);
        self.pending.blocks = 0;
        for (first, n) in ranges {
            self.clear_block_bits(first, n)?;
        }
        let inodes = core::mem::take(&mut self.pending.inodes);
        for (ino, dir) in inodes {
            self.clear_inode_bit(ino, dir)?;
        }
        Ok(())
    }

    /// Clears the bits of a run of blocks, group by group. A bit found
    /// clear already (a block freed twice: the file system was damaged) is
    /// counted as an inconsistency, not as a free block.
    fn clear_block_bits(&mut self, mut first: u64, mut n: u32) -> Result<()> {
        while n > 0 {
            if first < self.sb.first_data_block as u64 || first >= self.sb.blocks_count as u64 {
                self.disk.stats.inconsistencies += 1;
                return Ok(());
            }
            let g = ((first - self.sb.first_data_block as u64) / self.sb.blocks_per_group as u64) as u32;
            let start = self.sb.group_start(g);
            let from = (first - start) as usize;
            let len = (n as usize).min(self.sb.group_len(g) as usize - from);
            let gd = self.groups[g as usize];
            if gd.valid {
                let mut cleared = 0u32;
                let bytes = from / 8..(from + len).div_ceil(8);
                self.disk.write_part(gd.block_bitmap as u64, bytes, &mut |b| {
                    for j in from..from + len {
                        if bit(b, j) {
                            b[j / 8] &= !(1 << (j % 8));
                            cleared += 1;
                        }
                    }
                })?;
                self.disk.stats.inconsistencies += (len as u32 - cleared) as u64;
                let gd = &mut self.groups[g as usize];
                gd.free_blocks = gd.free_blocks.saturating_add(cleared as u16);
                self.sb.free_blocks = self.sb.free_blocks.saturating_add(cleared);
                self.write_group(g)?;
            }
            first += len as u64;
            n -= len as u32;
        }
        Ok(())
    }

    fn clear_inode_bit(&mut self, ino: u32, dir: bool) -> Result<()> {
        let ipg = self.sb.inodes_per_group;
        let g = (ino - 1) / ipg;
        let i = ((ino - 1) % ipg) as usize;
        let gd = self.groups[g as usize];
        if !gd.valid {
            return Ok(());
        }
        let mut was_set = false;
        self.disk
            .write_part(gd.inode_bitmap as u64, i / 8..i / 8 + 1, &mut |b| {
                was_set = bit(b, i);
                b[i / 8] &= !(1 << (i % 8));
            })?;
        if !was_set {
            self.disk.stats.inconsistencies += 1;
            return Ok(());
        }
        if let Some(h) = self.inode_hints.get_mut(g as usize) {
            *h = (*h).min(i as u32);
        }
        let gd = &mut self.groups[g as usize];
        gd.free_inodes = gd.free_inodes.saturating_add(1);
        if dir {
            gd.used_dirs = gd.used_dirs.saturating_sub(1);
        }
        self.sb.free_inodes = self.sb.free_inodes.saturating_add(1);
        self.write_group(g)
    }

    /// Allocates an inode: a directory in a group with many free inodes
    /// and blocks (spreading directories out, as Linux's Orlov allocator
    /// does for the top levels), anything else in its parent's group or the
    /// next group with room. Also says whether its block of the inode table
    /// may be written unread (see [`InodeManager::create`]).
    pub(crate) fn alloc_inode(&mut self, parent: u32, dir: bool) -> Result<(u32, bool)> {
        if let Some(found) = self.try_alloc_inode(parent, dir)? {
            return Ok(found);
        }
        if !self.pending.inodes.is_empty() {
            self.commit_frees()?;
            if let Some(found) = self.try_alloc_inode(parent, dir)? {
                return Ok(found);
            }
        }
        Err(Errno::ENOSPC)
    }

    fn try_alloc_inode(&mut self, parent: u32, dir: bool) -> Result<Option<(u32, bool)>> {
        let ipg = self.sb.inodes_per_group;
        let groups = self.sb.groups;
        let per_block = (self.sb.block_size / self.sb.inode_size).max(1) as usize;
        let mut first = (parent.max(1) - 1) / ipg % groups;
        if dir {
            let avg = self.sb.free_inodes / groups;
            let best = (0..groups)
                .filter(|&g| {
                    let gd = &self.groups[g as usize];
                    gd.valid && gd.free_inodes > 0 && gd.free_inodes as u32 >= avg
                })
                .max_by_key(|&g| (self.groups[g as usize].free_blocks, u32::MAX - g));
            if let Some(g) = best {
                first = g;
            }
        }
        for k in 0..groups {
            let g = (first + k) % groups;
            let gd = self.groups[g as usize];
            if !gd.valid || gd.free_inodes == 0 {
                continue;
            }
            // Inodes below the first ordinary one are reserved.
            let from = (self.sb.first_ino - 1).saturating_sub(g * ipg).min(ipg) as usize;
            let mut at = from.max(self.inode_hints.get(g as usize).map_or(0, |&h| h as usize));
            loop {
                let mut found = None;
                self.disk.read(gd.inode_bitmap as u64, &mut |b| {
                    found = find_clear(b, at, ipg as usize).map(|i| {
                        // The rest of its block of the table free too (and
                        // none of it reserved): nothing there to read.
                        let start = i - i % per_block;
                        let end = (start + per_block).min(ipg as usize);
                        let alone = start >= from && (start..end).all(|j| j == i || !bit(b, j));
                        (i, alone)
                    })
                })?;
                let Some((i, alone)) = found else { break };
                let ino = g * ipg + i as u32 + 1;
                let unread = alone
                    && self
                        .locate(ino)
                        .is_ok_and(|(block, _)| !self.freed_itable.contains(&block));
                self.disk
                    .write_part(gd.inode_bitmap as u64, i / 8..i / 8 + 1, &mut |b| {
                        b[i / 8] |= 1 << (i % 8)
                    })?;
                // Bits from `at` to `i` were set, and `i` is now.
                if self.inode_hints.len() < groups as usize {
                    self.inode_hints.resize(groups as usize, 0);
                }
                self.inode_hints[g as usize] = i as u32 + 1;
                // Unless its block is free, the inode is read: a bitmap that
                // says free while the inode is live is damage to step around.
                let in_use = !unread && {
                    let inode = self.get(ino)?;
                    inode.links != 0 && inode.dtime == 0
                };
                let gd = &mut self.groups[g as usize];
                gd.free_inodes = gd.free_inodes.saturating_sub(1);
                self.sb.free_inodes = self.sb.free_inodes.saturating_sub(1);
                if in_use {
                    // The bitmap said free but the inode is live: the bit
                    // is now set as it should have been; look further.
                    self.disk.stats.inconsistencies += 1;
                    self.write_group(g)?;
                    at = i + 1;
                    continue;
                }
                if dir {
                    gd.used_dirs = gd.used_dirs.saturating_add(1);
                }
                self.write_group(g)?;
                return Ok(Some((ino, unread)));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::find_clear;

    #[test]
    fn find_clear_skips_full_words_and_stops_at_the_first_clear_bit() {
        let mut b = [0xffu8; 64];
        assert_eq!(find_clear(&b, 0, 512), None);
        for bit in [0, 7, 8, 63, 64, 65, 200, 447, 448, 511] {
            b = [0xff; 64];
            b[bit / 8] &= !(1 << (bit % 8));
            assert_eq!(find_clear(&b, 0, 512), Some(bit), "bit {bit}");
            assert_eq!(find_clear(&b, 3, 512), (bit >= 3).then_some(bit), "bit {bit} from 3");
            // Never past `to`, even inside a word.
            assert_eq!(find_clear(&b, 0, bit), None, "bit {bit} beyond the end");
        }
        b = [0; 64];
        assert_eq!(find_clear(&b, 100, 512), Some(100));
    }
}
