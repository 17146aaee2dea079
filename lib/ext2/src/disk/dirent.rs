//! Directory entries. A directory block is a chain of entries, each
//! `inode u32, rec_len u16, name_len u8, file_type u8, name`, whose
//! `rec_len`s add up to the block exactly. An entry with inode 0 is unused
//! space. An indexed (`dir_index`) directory looks the same to a linear
//! reader: its index blocks are unused entries spanning the block, and the
//! root of the index hides inside the `..` entry.

use super::{put_u16, put_u32, u16_at, u32_at};
use crate::error::{Errno, Result};

pub const HEADER: usize = 8;
pub const NAME_MAX: usize = 255;

/// The space an entry with a name of `name_len` bytes needs.
pub fn rec_len_for(name_len: usize) -> usize {
    (HEADER + name_len + 3) & !3
}

/// One entry, as found in a block.
#[derive(Debug, Clone, Copy)]
pub struct Dirent<'a> {
    pub inode: u32,
    pub rec_len: usize,
    pub file_type: u8,
    pub name: &'a [u8],
}

/// `rec_len` as stored: blocks of 64 KiB do not fit 16 bits, so a whole
/// block is written as 65535 (or 0).
fn decode_rec_len(v: u16, block_size: usize) -> usize {
    if block_size == 65536 && (v == 65535 || v == 0) {
        65536
    } else {
        (v as usize & 65532) | ((v as usize & 3) << 16)
    }
}

fn encode_rec_len(len: usize) -> u16 {
    if len >= 65536 { 65535 } else { len as u16 }
}

/// Decodes the entry at `off` of a directory block and checks it as Linux
/// does: a `rec_len` that is aligned, big enough for the name and inside
/// the block, and an inode number inside the file system.
pub fn decode<'a>(block: &'a [u8], off: usize, inodes_count: u32, filetype: bool) -> Result<Dirent<'a>> {
    if off + HEADER > block.len() {
        return Err(Errno::EIO);
    }
    let inode = u32_at(block, off);
    let rec_len = decode_rec_len(u16_at(block, off + 4), block.len());
    let name_len = block[off + 6] as usize;
    // Without the filetype feature the length is 16 bits; names are still
    // at most 255 bytes, so the high byte must be 0.
    let file_type = block[off + 7];
    if !filetype && file_type != 0 {
        return Err(Errno::EIO);
    }
    if rec_len < rec_len_for(1)
        || !rec_len.is_multiple_of(4)
        || rec_len < rec_len_for(name_len)
        || off + rec_len > block.len()
    {
        return Err(Errno::EIO);
    }
    if inode > inodes_count {
        return Err(Errno::EIO);
    }
    Ok(Dirent {
        inode,
        rec_len,
        file_type: if filetype { file_type } else { 0 },
        name: &block[off + HEADER..off + HEADER + name_len],
    })
}

/// Writes an entry header and name at `off`.
pub fn encode(block: &mut [u8], off: usize, inode: u32, rec_len: usize, file_type: u8, name: &[u8]) {
    put_u32(block, off, inode);
    put_u16(block, off + 4, encode_rec_len(rec_len));
    block[off + 6] = name.len() as u8;
    block[off + 7] = file_type;
    block[off + HEADER..off + HEADER + name.len()].copy_from_slice(name);
}

/// Changes only the `rec_len` of the entry at `off`.
pub fn set_rec_len(block: &mut [u8], off: usize, rec_len: usize) {
    put_u16(block, off + 4, encode_rec_len(rec_len));
}

/// Changes only the inode (and type) of the entry at `off`.
pub fn set_inode(block: &mut [u8], off: usize, inode: u32, file_type: u8) {
    put_u32(block, off, inode);
    block[off + 7] = file_type;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(entries: &[(u32, usize, u8, &[u8])], len: usize) -> alloc::vec::Vec<u8> {
        let mut b = alloc::vec![0; len];
        let mut off = 0;
        for &(ino, rec_len, t, name) in entries {
            encode(&mut b, off, ino, rec_len, t, name);
            off += rec_len;
        }
        b
    }

    #[test]
    fn entries_decode_and_bad_lengths_are_refused() {
        let b = block(&[(2, 12, 2, b"."), (2, 1012, 2, b"..")], 1024);
        let e = decode(&b, 12, 100, true).unwrap();
        assert_eq!((e.inode, e.rec_len, e.name), (2, 1012, &b".."[..]));
        for bad in [0u16, 4, 13, 2000] {
            let mut c = b.clone();
            set_rec_len(&mut c, 0, bad as usize);
            assert_eq!(
                decode(&c, 0, 100, true).map(|e| e.rec_len),
                Err(Errno::EIO),
                "rec_len {bad}"
            );
        }
        let mut c = b.clone();
        c[6] = 9;
        assert!(decode(&c, 0, 100, true).is_err(), "name longer than the entry");
        assert!(decode(&b, 0, 1, true).is_err(), "inode past the inode count");
        assert!(decode(&b, 1020, 100, true).is_err(), "header past the block");
        assert!(
            decode(&b, 0, 100, false).is_err(),
            "type byte without the filetype feature"
        );
    }

    #[test]
    fn a_whole_64k_block_is_one_record() {
        let b = block(&[(0, 65536, 0, b"")], 65536);
        assert_eq!(decode(&b, 0, 1, true).unwrap().rec_len, 65536);
    }
}
