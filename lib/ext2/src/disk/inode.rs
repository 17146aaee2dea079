//! The on-disk inode: 128 bytes, or more with room for nanosecond times
//! and in-inode extended attributes. Decoding picks out the fields the
//! library uses; encoding writes only those back, so everything it does not
//! understand (attributes in the inode, reserved fields) survives.

use super::{put_u16, put_u32, u16_at, u32_at};
use crate::time::Timestamp;

/// Direct blocks, then the single, double and triple indirect block.
pub const N_BLOCKS: usize = 15;
pub const N_DIRECT: usize = 12;

pub const ROOT_INO: u32 = 2;

/// `i_flags` bits the library looks at.
pub const FLAG_INDEX: u32 = 0x1000;
/// Extents and inline data belong to ext4: such an inode cannot be read as
/// ext2 and is reported as corrupt.
pub const FLAGS_FOREIGN: u32 = 0x8_0000 | 0x1000_0000;

const S_IFMT: u16 = 0xf000;

/// The kinds of inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileType {
    Regular,
    Directory,
    Symlink,
    CharDevice,
    BlockDevice,
    Fifo,
    Socket,
}

impl FileType {
    pub fn from_mode(mode: u16) -> Option<FileType> {
        Some(match mode & S_IFMT {
            0x8000 => FileType::Regular,
            0x4000 => FileType::Directory,
            0xa000 => FileType::Symlink,
            0x2000 => FileType::CharDevice,
            0x6000 => FileType::BlockDevice,
            0x1000 => FileType::Fifo,
            0xc000 => FileType::Socket,
            _ => return None,
        })
    }

    /// The type bits of `i_mode`.
    pub fn mode_bits(self) -> u16 {
        match self {
            FileType::Regular => 0x8000,
            FileType::Directory => 0x4000,
            FileType::Symlink => 0xa000,
            FileType::CharDevice => 0x2000,
            FileType::BlockDevice => 0x6000,
            FileType::Fifo => 0x1000,
            FileType::Socket => 0xc000,
        }
    }

    /// The type byte of a directory entry (the `filetype` feature).
    pub fn dirent_type(self) -> u8 {
        match self {
            FileType::Regular => 1,
            FileType::Directory => 2,
            FileType::CharDevice => 3,
            FileType::BlockDevice => 4,
            FileType::Fifo => 5,
            FileType::Socket => 6,
            FileType::Symlink => 7,
        }
    }

    pub fn from_dirent_type(t: u8) -> Option<FileType> {
        Some(match t {
            1 => FileType::Regular,
            2 => FileType::Directory,
            3 => FileType::CharDevice,
            4 => FileType::BlockDevice,
            5 => FileType::Fifo,
            6 => FileType::Socket,
            7 => FileType::Symlink,
            _ => return None,
        })
    }
}

/// The fields of an inode the library uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inode {
    /// Type and permission bits.
    pub mode: u16,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub atime: Timestamp,
    pub ctime: Timestamp,
    pub mtime: Timestamp,
    pub dtime: u32,
    pub links: u16,
    /// Blocks held, data and indirect, in 512-byte units.
    pub sectors: u32,
    pub flags: u32,
    pub block: [u32; N_BLOCKS],
    pub generation: u32,
    /// The extended-attribute block, if any.
    pub file_acl: u32,
    /// Bytes of the large-inode fields in use (0 in a 128-byte inode).
    pub extra_isize: u16,
}

mod off {
    pub const MODE: usize = 0;
    pub const UID: usize = 2;
    pub const SIZE: usize = 4;
    pub const ATIME: usize = 8;
    pub const CTIME: usize = 12;
    pub const MTIME: usize = 16;
    pub const DTIME: usize = 20;
    pub const GID: usize = 24;
    pub const LINKS: usize = 26;
    pub const BLOCKS: usize = 28;
    pub const FLAGS: usize = 32;
    pub const BLOCK: usize = 40;
    pub const GENERATION: usize = 100;
    pub const FILE_ACL: usize = 104;
    pub const SIZE_HIGH: usize = 108;
    pub const FILE_ACL_HIGH: usize = 118;
    pub const UID_HIGH: usize = 120;
    pub const GID_HIGH: usize = 122;
    pub const EXTRA_ISIZE: usize = 128;
    pub const CTIME_EXTRA: usize = 132;
    pub const MTIME_EXTRA: usize = 136;
    pub const ATIME_EXTRA: usize = 140;
    pub const CRTIME: usize = 144;
    pub const CRTIME_EXTRA: usize = 148;
}

impl Inode {
    pub fn kind(&self) -> Option<FileType> {
        FileType::from_mode(self.mode)
    }

    pub fn is_dir(&self) -> bool {
        self.kind() == Some(FileType::Directory)
    }

    /// Decodes an inode from its `b.len()` bytes (the inode size).
    pub fn decode(b: &[u8]) -> Inode {
        let mode = u16_at(b, off::MODE);
        let size_lo = u32_at(b, off::SIZE) as u64;
        // In a directory the high size word is the old `i_dir_acl`.
        let size = if FileType::from_mode(mode) == Some(FileType::Directory) {
            size_lo
        } else {
            size_lo | (u32_at(b, off::SIZE_HIGH) as u64) << 32
        };
        let mut block = [0; N_BLOCKS];
        for (i, p) in block.iter_mut().enumerate() {
            *p = u32_at(b, off::BLOCK + 4 * i);
        }
        let extra_isize = if b.len() > 128 {
            u16_at(b, off::EXTRA_ISIZE).min(b.len() as u16 - 128)
        } else {
            0
        };
        let time = |base: usize, extra: usize| {
            if b.len() > 128 && extra + 4 <= 128 + extra_isize as usize {
                Timestamp::from_parts(u32_at(b, base), u32_at(b, extra))
            } else {
                Timestamp::from_lo(u32_at(b, base))
            }
        };
        // The high half of the file ACL block is only meaningful with the
        // 64bit feature, which this library refuses; a nonzero value makes
        // the block number out of range and so is reported when used.
        let acl_high = u16_at(b, off::FILE_ACL_HIGH) as u32;
        Inode {
            mode,
            uid: u16_at(b, off::UID) as u32 | (u16_at(b, off::UID_HIGH) as u32) << 16,
            gid: u16_at(b, off::GID) as u32 | (u16_at(b, off::GID_HIGH) as u32) << 16,
            size,
            atime: time(off::ATIME, off::ATIME_EXTRA),
            ctime: time(off::CTIME, off::CTIME_EXTRA),
            mtime: time(off::MTIME, off::MTIME_EXTRA),
            dtime: u32_at(b, off::DTIME),
            links: u16_at(b, off::LINKS),
            sectors: u32_at(b, off::BLOCKS),
            flags: u32_at(b, off::FLAGS),
            block,
            generation: u32_at(b, off::GENERATION),
            file_acl: if acl_high != 0 {
                u32::MAX
            } else {
                u32_at(b, off::FILE_ACL)
            },
            extra_isize,
        }
    }

    /// Writes the fields back into the inode's bytes.
    pub fn encode(&self, b: &mut [u8]) {
        put_u16(b, off::MODE, self.mode);
        put_u16(b, off::UID, self.uid as u16);
        put_u16(b, off::UID_HIGH, (self.uid >> 16) as u16);
        put_u16(b, off::GID, self.gid as u16);
        put_u16(b, off::GID_HIGH, (self.gid >> 16) as u16);
        put_u32(b, off::SIZE, self.size as u32);
        if !self.is_dir() {
            put_u32(b, off::SIZE_HIGH, (self.size >> 32) as u32);
        }
        put_u32(b, off::ATIME, self.atime.lo());
        put_u32(b, off::CTIME, self.ctime.lo());
        put_u32(b, off::MTIME, self.mtime.lo());
        put_u32(b, off::DTIME, self.dtime);
        put_u16(b, off::LINKS, self.links);
        put_u32(b, off::BLOCKS, self.sectors);
        put_u32(b, off::FLAGS, self.flags);
        for (i, p) in self.block.iter().enumerate() {
            put_u32(b, off::BLOCK + 4 * i, *p);
        }
        put_u32(b, off::GENERATION, self.generation);
        if self.file_acl != u32::MAX {
            put_u32(b, off::FILE_ACL, self.file_acl);
        }
        if b.len() > 128 {
            let room = 128 + self.extra_isize as usize;
            put_u16(b, off::EXTRA_ISIZE, self.extra_isize);
            for (field, t) in [
                (off::CTIME_EXTRA, self.ctime),
                (off::MTIME_EXTRA, self.mtime),
                (off::ATIME_EXTRA, self.atime),
            ] {
                if field + 4 <= room {
                    put_u32(b, field, t.extra());
                }
            }
        }
    }

    /// A fast symlink's target, kept in the block pointers.
    pub fn inline_data(&self) -> [u8; 4 * N_BLOCKS] {
        let mut out = [0; 4 * N_BLOCKS];
        for (i, p) in self.block.iter().enumerate() {
            out[4 * i..4 * i + 4].copy_from_slice(&p.to_le_bytes());
        }
        out
    }

    /// Stores up to 60 bytes in the block pointers (the rest zero).
    pub fn set_inline(&mut self, bytes: &[u8]) {
        let mut raw = [0; 4 * N_BLOCKS];
        raw[..bytes.len()].copy_from_slice(bytes);
        for (i, p) in self.block.iter_mut().enumerate() {
            *p = u32::from_le_bytes([raw[4 * i], raw[4 * i + 1], raw[4 * i + 2], raw[4 * i + 3]]);
        }
    }

    /// Stamps the creation time of a new large inode (the field is not
    /// kept in [`Inode`]: nothing reads it back).
    pub fn encode_crtime(b: &mut [u8], extra_isize: u16, t: Timestamp) {
        let room = 128 + extra_isize as usize;
        if b.len() > 128 && off::CRTIME_EXTRA + 4 <= room {
            put_u32(b, off::CRTIME, t.lo());
            put_u32(b, off::CRTIME_EXTRA, t.extra());
        }
    }
}
