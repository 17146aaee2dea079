//! The superblock: 1024 bytes at byte 1024 of the device. It gives the
//! geometry every other structure is found by, so mount refuses any
//! superblock whose fields disagree with each other.

use super::{put_u16, put_u32, u16_at, u32_at};
use crate::error::{Errno, Result};

pub const SUPERBLOCK_OFFSET: u64 = 1024;
pub const SUPERBLOCK_SIZE: usize = 1024;
const MAGIC: u16 = 0xef53;

/// `s_state`: the file system was unmounted cleanly.
pub const STATE_VALID: u16 = 1;

pub const COMPAT_EXT_ATTR: u32 = 0x8;
pub const COMPAT_DIR_INDEX: u32 = 0x20;

pub const INCOMPAT_FILETYPE: u32 = 0x2;
const INCOMPAT_SUPPORTED: u32 = INCOMPAT_FILETYPE;

pub const RO_COMPAT_SPARSE_SUPER: u32 = 0x1;
pub const RO_COMPAT_LARGE_FILE: u32 = 0x2;
const RO_COMPAT_EXTRA_ISIZE: u32 = 0x40;
/// Features whose meaning the writer honours; with any other the file
/// system is mounted read-only.
const RO_COMPAT_WRITABLE: u32 = RO_COMPAT_SPARSE_SUPER | RO_COMPAT_LARGE_FILE | RO_COMPAT_EXTRA_ISIZE;

/// Byte offsets of the fields the library uses.
mod off {
    pub const INODES_COUNT: usize = 0;
    pub const BLOCKS_COUNT: usize = 4;
    pub const R_BLOCKS_COUNT: usize = 8;
    pub const FREE_BLOCKS: usize = 12;
    pub const FREE_INODES: usize = 16;
    pub const FIRST_DATA_BLOCK: usize = 20;
    pub const LOG_BLOCK_SIZE: usize = 24;
    pub const BLOCKS_PER_GROUP: usize = 32;
    pub const INODES_PER_GROUP: usize = 40;
    pub const MTIME: usize = 44;
    pub const WTIME: usize = 48;
    pub const MNT_COUNT: usize = 52;
    pub const MAGIC: usize = 56;
    pub const STATE: usize = 58;
    pub const REV_LEVEL: usize = 76;
    pub const FIRST_INO: usize = 84;
    pub const INODE_SIZE: usize = 88;
    pub const FEATURE_COMPAT: usize = 92;
    pub const FEATURE_INCOMPAT: usize = 96;
    pub const FEATURE_RO_COMPAT: usize = 100;
    pub const UUID: usize = 104;
    pub const RESERVED_GDT_BLOCKS: usize = 206;
    pub const MIN_EXTRA_ISIZE: usize = 0x15c;
    pub const WANT_EXTRA_ISIZE: usize = 0x15e;
}

/// The decoded superblock.
#[derive(Debug, Clone)]
pub struct Superblock {
    pub inodes_count: u32,
    pub blocks_count: u32,
    pub r_blocks_count: u32,
    pub free_blocks: u32,
    pub free_inodes: u32,
    pub first_data_block: u32,
    pub block_size: u32,
    pub blocks_per_group: u32,
    pub inodes_per_group: u32,
    pub mtime: u32,
    pub wtime: u32,
    pub mnt_count: u16,
    pub state: u16,
    pub rev_level: u32,
    pub first_ino: u32,
    pub inode_size: u32,
    pub compat: u32,
    pub incompat: u32,
    pub ro_compat: u32,
    pub uuid: [u8; 16],
    pub reserved_gdt_blocks: u32,
    /// `i_extra_isize` for new large inodes.
    pub extra_isize: u16,
    /// Derived: the number of block groups.
    pub groups: u32,
    /// Derived: blocks holding one group's inode table.
    pub inode_table_blocks: u32,
    /// Derived: blocks holding the group descriptor table.
    pub gdt_blocks: u32,
}

impl Superblock {
    /// Decodes and checks a superblock.
    ///
    /// Errors: `EINVAL` for something that is not ext2 or uses features this
    /// library does not read (as Linux refuses such a mount), `EIO` for
    /// fields that contradict each other.
    pub fn decode(b: &[u8]) -> Result<Superblock> {
        if b.len() < SUPERBLOCK_SIZE || u16_at(b, off::MAGIC) != MAGIC {
            return Err(Errno::EINVAL);
        }
        let rev_level = u32_at(b, off::REV_LEVEL);
        let (first_ino, inode_size, compat, incompat, ro_compat) = match rev_level {
            0 => (11, 128, 0, 0, 0),
            1 => (
                u32_at(b, off::FIRST_INO),
                u16_at(b, off::INODE_SIZE) as u32,
                u32_at(b, off::FEATURE_COMPAT),
                u32_at(b, off::FEATURE_INCOMPAT),
                u32_at(b, off::FEATURE_RO_COMPAT),
            ),
            _ => return Err(Errno::EINVAL),
        };
        if incompat & !INCOMPAT_SUPPORTED != 0 {
            return Err(Errno::EINVAL);
        }
        let log = u32_at(b, off::LOG_BLOCK_SIZE);
        if log > 6 {
            return Err(Errno::EIO);
        }
        let block_size = 1024u32 << log;
        let mut uuid = [0; 16];
        uuid.copy_from_slice(&b[off::UUID..off::UUID + 16]);
        let mut sb = Superblock {
            inodes_count: u32_at(b, off::INODES_COUNT),
            blocks_count: u32_at(b, off::BLOCKS_COUNT),
            r_blocks_count: u32_at(b, off::R_BLOCKS_COUNT),
            free_blocks: u32_at(b, off::FREE_BLOCKS),
            free_inodes: u32_at(b, off::FREE_INODES),
            first_data_block: u32_at(b, off::FIRST_DATA_BLOCK),
            block_size,
            blocks_per_group: u32_at(b, off::BLOCKS_PER_GROUP),
            inodes_per_group: u32_at(b, off::INODES_PER_GROUP),
            mtime: u32_at(b, off::MTIME),
            wtime: u32_at(b, off::WTIME),
            mnt_count: u16_at(b, off::MNT_COUNT),
            state: u16_at(b, off::STATE),
            rev_level,
            first_ino,
            inode_size,
            compat,
            incompat,
            ro_compat,
            uuid,
            reserved_gdt_blocks: if rev_level == 1 {
                u16_at(b, off::RESERVED_GDT_BLOCKS) as u32
            } else {
                0
            },
            extra_isize: 0,
            groups: 0,
            inode_table_blocks: 0,
            gdt_blocks: 0,
        };
        sb.check_geometry()?;
        let room = (inode_size - 128) as u16;
        let want = if rev_level == 1 {
            u16_at(b, off::WANT_EXTRA_ISIZE).max(u16_at(b, off::MIN_EXTRA_ISIZE))
        } else {
            0
        };
        // 32 covers every field up to the creation time's nanoseconds, which
        // is what mke2fs and Linux give a new large inode.
        let want = if want == 0 { 32 } else { want };
        sb.extra_isize = if room >= 4 { want.min(room) & !3 } else { 0 };
        Ok(sb)
    }

    fn check_geometry(&mut self) -> Result<()> {
        let bs = self.block_size;
        let bad = Err(Errno::EIO);
        if self.first_data_block != u32::from(bs == 1024) {
            return bad;
        }
        if self.blocks_count <= self.first_data_block + 1 || self.r_blocks_count > self.blocks_count {
            return bad;
        }
        if self.blocks_per_group == 0 || self.blocks_per_group > 8 * bs || !self.blocks_per_group.is_multiple_of(8) {
            return bad;
        }
        if self.inodes_per_group == 0 || self.inodes_per_group > 8 * bs {
            return bad;
        }
        let isz = self.inode_size;
        if !isz.is_power_of_two() || isz < 128 || isz > bs {
            return bad;
        }
        let groups = (self.blocks_count - self.first_data_block).div_ceil(self.blocks_per_group);
        if groups as u64 * self.inodes_per_group as u64 != self.inodes_count as u64 {
            return bad;
        }
        if self.first_ino < 11 || self.first_ino > self.inodes_count {
            return bad;
        }
        self.groups = groups;
        self.inode_table_blocks = (self.inodes_per_group as u64 * isz as u64).div_ceil(bs as u64) as u32;
        self.gdt_blocks = (groups as u64 * super::group::DESC_SIZE as u64).div_ceil(bs as u64) as u32;
        // The reserved descriptor blocks may never outgrow a group.
        if self.reserved_gdt_blocks > bs / 4 {
            return bad;
        }
        let meta = 1 + self.gdt_blocks as u64 + self.reserved_gdt_blocks as u64 + 2 + self.inode_table_blocks as u64;
        if meta > self.blocks_per_group as u64 {
            return bad;
        }
        Ok(())
    }

    /// Whether the writer understands every feature.
    pub fn writable(&self) -> bool {
        self.ro_compat & !RO_COMPAT_WRITABLE == 0
    }

    pub fn has_filetype(&self) -> bool {
        self.incompat & INCOMPAT_FILETYPE != 0
    }

    /// Whether group `g` holds a copy of the superblock and descriptors.
    pub fn group_has_super(&self, g: u32) -> bool {
        if self.ro_compat & RO_COMPAT_SPARSE_SUPER == 0 || g <= 1 {
            return true;
        }
        [3u32, 5, 7].iter().any(|&base| {
            let mut p = base;
            while p < g {
                p = p.saturating_mul(base);
            }
            p == g
        })
    }

    /// The first block of group `g`.
    pub fn group_start(&self, g: u32) -> u64 {
        self.first_data_block as u64 + g as u64 * self.blocks_per_group as u64
    }

    /// The number of blocks in group `g` (the last one may be short).
    pub fn group_len(&self, g: u32) -> u32 {
        let start = self.group_start(g);
        (self.blocks_count as u64 - start).min(self.blocks_per_group as u64) as u32
    }

    /// Blocks at the start of group `g` taken by the superblock copy, the
    /// descriptors and the descriptors reserved for growth.
    pub fn group_super_blocks(&self, g: u32) -> u32 {
        if self.group_has_super(g) {
            1 + self.gdt_blocks + self.reserved_gdt_blocks
        } else {
            0
        }
    }

    /// The block holding the superblock, and its byte offset there.
    pub fn location(&self) -> (u64, usize) {
        let bs = self.block_size as u64;
        (SUPERBLOCK_OFFSET / bs, (SUPERBLOCK_OFFSET % bs) as usize)
    }

    /// Writes the fields the library changes back into the on-disk bytes,
    /// leaving every other field as it was.
    pub fn encode(&self, b: &mut [u8]) {
        put_u32(b, off::FREE_BLOCKS, self.free_blocks);
        put_u32(b, off::FREE_INODES, self.free_inodes);
        put_u32(b, off::MTIME, self.mtime);
        put_u32(b, off::WTIME, self.wtime);
        put_u16(b, off::MNT_COUNT, self.mnt_count);
        put_u16(b, off::STATE, self.state);
        if self.rev_level == 1 {
            put_u32(b, off::FEATURE_COMPAT, self.compat);
            put_u32(b, off::FEATURE_RO_COMPAT, self.ro_compat);
        }
    }
}
