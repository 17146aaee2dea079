//! The block map: which physical block holds each logical block of a file.
//!
//! Twelve direct pointers, then a single indirect block (a block of
//! pointers), a double and a triple indirect block. A zero pointer at any
//! level is a hole: the whole subtree below it reads as zeros.
//!
//! Every pointer read from disk is checked with [`InodeManager::block_ok`]
//! before it is followed, so a corrupt map gives `EIO` and never sends a
//! read or a write to the superblock, a bitmap or the inode table.

use alloc::collections::BTreeSet;
use alloc::vec;
use alloc::vec::Vec;

use super::InodeManager;
use super::allocator::block_ok;
use crate::device::BlockDevice;
use crate::disk::inode::{Inode, N_DIRECT};
use crate::disk::{put_u32, u32_at};
use crate::error::{Errno, Result};

/// Where a pointer lives: in the inode or in an indirect block.
#[derive(Clone, Copy)]
enum Slot {
    Inode(usize),
    Block(u64, usize),
}

impl<D: BlockDevice> InodeManager<D> {
    /// The depth of logical block `l` (0 for the direct blocks, else the
    /// level of indirection) and its position inside that level's tree.
    fn level_of(&self, l: u64) -> Result<(usize, u64)> {
        if l < N_DIRECT as u64 {
            return Ok((0, l));
        }
        let mut base = N_DIRECT as u64;
        let mut span = self.ptrs;
        for depth in 1..=3 {
            if l - base < span {
                return Ok((depth, l - base));
            }
            base += span;
            span *= self.ptrs;
        }
        Err(Errno::EFBIG)
    }

    /// Logical blocks one pointer covers at `depth` (1 for a data pointer).
    fn span(&self, depth: usize) -> u64 {
        self.ptrs.pow(depth as u32)
    }

    /// Maps a run of logical blocks from `l`, at most `max` (at least 1):
    /// either a hole of that many blocks or that many blocks contiguous on
    /// disk. Returns the first physical block (`None` for a hole) and the
    /// length.
    pub(crate) fn lookup_run(&mut self, inode: &Inode, l: u64, max: u64) -> Result<(Option<u64>, u64)> {
        let max = max.max(1);
        let (depth, mut r) = self.level_of(l)?;
        if depth == 0 {
            let ptrs = &inode.block[l as usize..N_DIRECT];
            let n = ptrs.len().min(max as usize);
            return run_of(|k| ptrs[k], n, |p| self.block_ok(p));
        }
        let mut ptr = inode.block[N_DIRECT - 1 + depth] as u64;
        let mut d = depth;
        loop {
            if ptr == 0 {
                return Ok((None, (self.span(d) - r).min(max)));
            }
            if !self.block_ok(ptr) {
                return Err(Errno::EIO);
            }
            let sub = self.span(d - 1);
            let i = (r / sub) as usize;
            if d == 1 {
                // The leaf: the run is read from the pointers in place.
                let n = (self.ptrs as usize - i).min(max as usize);
                let (sb, groups) = (&self.sb, &self.groups);
                let mut run = Err(Errno::EIO);
                self.disk.read(ptr, &mut |b| {
                    run = run_of(|k| u32_at(b, 4 * (i + k)), n, |p| block_ok(sb, groups, p));
                })?;
                return run;
            }
            ptr = self.disk.read_u32(ptr, i)? as u64;
            r %= sub;
            d -= 1;
        }
    }

    /// Makes sure the indirect blocks on the way to logical block `l`
    /// exist, allocating the missing ones near `goal`. Returns where `l`'s
    /// pointer lives (in an indirect block, or `None` for a direct block),
    /// and how many logical blocks from `l` on share that indirect block.
    /// `inode` is changed in memory; the caller writes it.
    ///
    /// New indirect blocks are written whole (zeros and the one pointer
    /// down) and a barrier is put behind them before the pointer to the
    /// topmost new one is written: a pointer on disk never leads to a block
    /// whose contents are left over from an earlier use.
    pub(crate) fn ensure_path(&mut self, inode: &mut Inode, l: u64, goal: u64) -> Result<(Option<(u64, usize)>, u64)> {
        let (depth, mut r) = self.level_of(l)?;
        if depth == 0 {
            return Ok((None, N_DIRECT as u64 - l));
        }
        let mut parent = Slot::Inode(N_DIRECT - 1 + depth);
        let mut ptr = inode.block[N_DIRECT - 1 + depth] as u64;
        let mut d = depth;
        while ptr != 0 {
            if !self.block_ok(ptr) {
                return Err(Errno::EIO);
            }
            let sub = self.span(d - 1);
            let i = (r / sub) as usize;
            if d == 1 {
                return Ok((Some((ptr, i)), self.ptrs - i as u64));
            }
            parent = Slot::Block(ptr, i);
            ptr = self.disk.read_u32(ptr, i)? as u64;
            r %= sub;
            d -= 1;
        }
        // Levels d down to 1 are missing.
        let per_block = self.sb.block_size / 512;
        let added = per_block.checked_mul(d as u32).ok_or(Errno::EFBIG)?;
        let sectors = inode.sectors.checked_add(added).ok_or(Errno::EFBIG)?;
        let mut new = Vec::with_capacity(d);
        for _ in 0..d {
            let goal = new.last().map_or(goal, |&b: &u64| b + 1);
            match self.alloc_blocks(goal, 1) {
                Ok((b, _)) => new.push(b),
                Err(e) => {
                    for &b in &new {
                        self.free_blocks_now(b, 1)?;
                    }
                    return Err(e);
                }
            }
        }
        let mut leaf_index = 0;
        for (k, &b) in new.iter().enumerate() {
            let level = d - k;
            let sub = self.span(level - 1);
            let i = (r / sub) as usize;
            let down = if level == 1 { 0 } else { new[k + 1] as u32 };
            self.disk.fill(b, &mut |blk| {
                blk.fill(0);
                put_u32(blk, 4 * i, down);
            })?;
            leaf_index = i;
            r %= sub;
        }
        self.disk.barrier()?;
        inode.sectors = sectors;
        match parent {
            Slot::Inode(i) => inode.block[i] = new[0] as u32,
            Slot::Block(b, i) => self.disk.write_u32(b, i, new[0] as u32)?,
        }
        let leaf = *new.last().expect("at least one level was missing");
        Ok((Some((leaf, leaf_index)), self.ptrs - leaf_index as u64))
    }

    /// Points logical block `l` at `phys` (see [`Self::ensure_path`]).
    pub(crate) fn set_block(&mut self, inode: &mut Inode, l: u64, phys: u64) -> Result<()> {
        match self.ensure_path(inode, l, phys)? {
            (None, _) => inode.block[l as usize] = phys as u32,
            (Some((block, i)), _) => self.disk.write_u32(block, i, phys as u32)?,
        }
        Ok(())
    }

    /// Frees every block of logical index `keep` and beyond, with the
    /// indirect blocks that no longer point anywhere. `inode` is changed in
    /// memory; the caller writes it.
    ///
    /// Damage met on the way (a pointer out of range, an indirect block
    /// reached twice) is stepped around so that the rest is still freed,
    /// and reported as `EIO` at the end.
    pub(crate) fn free_blocks_from(&mut self, inode: &mut Inode, keep: u64) -> Result<()> {
        let mut walk = FreeWalk {
            damaged: false,
            seen: BTreeSet::new(),
        };
        for i in (keep.min(N_DIRECT as u64) as usize)..N_DIRECT {
            let p = core::mem::take(&mut inode.block[i]) as u64;
            self.free_subtree(inode, p, 0, &mut walk)?;
        }
        let mut base = N_DIRECT as u64;
        for depth in 1..=3 {
            let span = self.span(depth);
            let slot = N_DIRECT - 1 + depth;
            let p = inode.block[slot] as u64;
            if keep <= base {
                inode.block[slot] = 0;
                self.free_subtree(inode, p, depth, &mut walk)?;
            } else if keep < base + span {
                self.free_partial(inode, p, depth, keep - base, &mut walk)?;
            }
            base += span;
        }
        if walk.damaged { Err(Errno::EIO) } else { Ok(()) }
    }

    /// Frees the blocks of the subtree under `ptr` (at `depth`) from
    /// position `from` on; `from` > 0, so `ptr` itself stays.
    fn free_partial(
        &mut self,
        inode: &mut Inode,
        ptr: u64,
        depth: usize,
        from: u64,
        walk: &mut FreeWalk,
    ) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        if !self.block_ok(ptr) {
            walk.damaged = true;
            return Ok(());
        }
        let sub = self.span(depth - 1);
        let first = (from / sub) as usize;
        let rem = from % sub;
        let entries = self.read_pointers(ptr)?;
        let whole_from = if rem > 0 { first + 1 } else { first };
        let mut changed = false;
        for &e in entries.iter().skip(whole_from) {
            if e != 0 {
                self.free_subtree(inode, e as u64, depth - 1, walk)?;
                changed = true;
            }
        }
        if rem > 0 && depth > 1 {
            self.free_partial(inode, entries[first] as u64, depth - 1, rem, walk)?;
        }
        if changed {
            self.disk.write(ptr, &mut |b| b[4 * whole_from..].fill(0))?;
        }
        Ok(())
    }

    /// Frees the whole subtree under `ptr`, which is at `depth` (0 for a
    /// data block), and `ptr` itself.
    fn free_subtree(&mut self, inode: &mut Inode, ptr: u64, depth: usize, walk: &mut FreeWalk) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        if !self.block_ok(ptr) {
            walk.damaged = true;
            self.disk.stats.inconsistencies += 1;
            return Ok(());
        }
        if depth > 0 {
            // An indirect block reached twice would make the walk repeat
            // (and a loop of them never end).
            if !walk.seen.insert(ptr) {
                walk.damaged = true;
                self.disk.stats.inconsistencies += 1;
                return Ok(());
            }
            let entries = self.read_pointers(ptr)?;
            for e in entries {
                self.free_subtree(inode, e as u64, depth - 1, walk)?;
            }
        }
        self.free_block_later(ptr);
        inode.sectors = inode.sectors.saturating_sub(self.sb.block_size / 512);
        Ok(())
    }

    fn read_pointers(&mut self, block: u64) -> Result<Vec<u32>> {
        let mut entries = vec![0u32; self.ptrs as usize];
        self.disk.read(block, &mut |b| {
            for (i, e) in entries.iter_mut().enumerate() {
                *e = u32_at(b, 4 * i);
            }
        })?;
        Ok(entries)
    }
}

struct FreeWalk {
    damaged: bool,
    /// Indirect blocks freed so far in this walk.
    seen: BTreeSet<u64>,
}

/// The run at the start of `n` (at least 1) pointers: a hole as long as
/// the zeros, or blocks as long as they are contiguous.
fn run_of(ptr: impl Fn(usize) -> u32, n: usize, ok: impl Fn(u64) -> bool) -> Result<(Option<u64>, u64)> {
    let first = ptr(0) as u64;
    if first == 0 {
        let len = (0..n).take_while(|&k| ptr(k) == 0).count();
        return Ok((None, len as u64));
    }
    if !ok(first) {
        return Err(Errno::EIO);
    }
    let len = 1
        + (1..n)
            .take_while(|&k| ptr(k) as u64 == first + k as u64 && ok(first + k as u64))
            .count();
    Ok((Some(first), len as u64))
}
