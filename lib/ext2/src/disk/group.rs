//! Block group descriptors: where a group's bitmaps and inode table are,
//! and its free counts. The table starts in the block after the superblock.

use super::superblock::Superblock;
use super::{put_u16, u16_at, u32_at};

pub const DESC_SIZE: usize = 32;

#[derive(Debug, Clone, Copy, Default)]
pub struct GroupDesc {
    pub block_bitmap: u32,
    pub inode_bitmap: u32,
    pub inode_table: u32,
    pub free_blocks: u16,
    pub free_inodes: u16,
    pub used_dirs: u16,
    /// Whether the descriptor passed [`GroupDesc::check`]. A group that did
    /// not is never read or allocated from: its inodes give `EIO`.
    pub valid: bool,
}

impl GroupDesc {
    pub fn decode(b: &[u8]) -> GroupDesc {
        GroupDesc {
            block_bitmap: u32_at(b, 0),
            inode_bitmap: u32_at(b, 4),
            inode_table: u32_at(b, 8),
            free_blocks: u16_at(b, 12),
            free_inodes: u16_at(b, 14),
            used_dirs: u16_at(b, 16),
            valid: false,
        }
    }

    /// Writes the counts back, leaving the locations and flags as they were.
    pub fn encode_counts(&self, b: &mut [u8]) {
        put_u16(b, 12, self.free_blocks);
        put_u16(b, 14, self.free_inodes);
        put_u16(b, 16, self.used_dirs);
    }

    /// Whether the bitmaps and the inode table lie inside group `g`, clear
    /// of its superblock copy and of each other, and the counts fit the group.
    pub fn check(&self, sb: &Superblock, g: u32) -> bool {
        let start = sb.group_start(g);
        let end = start + sb.group_len(g) as u64;
        let meta_end = start + sb.group_super_blocks(g) as u64;
        let inside = |first: u64, len: u64| first >= meta_end && first + len <= end;
        let (bb, ib, it) = (
            self.block_bitmap as u64,
            self.inode_bitmap as u64,
            self.inode_table as u64,
        );
        let itb = sb.inode_table_blocks as u64;
        let apart = |a: u64, alen: u64, b: u64, blen: u64| a + alen <= b || b + blen <= a;
        inside(bb, 1)
            && inside(ib, 1)
            && inside(it, itb)
            && apart(bb, 1, ib, 1)
            && apart(bb, 1, it, itb)
            && apart(ib, 1, it, itb)
            && self.free_blocks as u32 <= sb.group_len(g)
            && self.free_inodes as u32 <= sb.inodes_per_group
            && self.used_dirs as u32 <= sb.inodes_per_group
    }

    /// Whether block `n` (inside this group) holds the group's metadata.
    pub fn holds_metadata(&self, sb: &Superblock, g: u32, n: u64) -> bool {
        let start = sb.group_start(g);
        n < start + sb.group_super_blocks(g) as u64
            || n == self.block_bitmap as u64
            || n == self.inode_bitmap as u64
            || (n >= self.inode_table as u64 && n < self.inode_table as u64 + sb.inode_table_blocks as u64)
    }
}
