//! The on-disk structures of ext2 revision 1, decoded into plain values and
//! encoded back. Nothing here does I/O; every decoder checks what it can
//! check from the bytes alone.

pub mod dirent;
pub mod group;
pub mod inode;
pub mod superblock;
pub mod xattr;

/// Little-endian fields at byte offsets. Every caller passes offsets inside
/// a structure whose length it checked, so these index without a check of
/// their own.
pub(crate) fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

pub(crate) fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

pub(crate) fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
