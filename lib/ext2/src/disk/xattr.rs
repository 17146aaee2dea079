//! The extended-attribute block (`i_file_acl`), as Linux's
//! `fs/ext2/xattr.c` lays it out: a 32-byte header (magic, reference
//! count, block count, hash), then the entries from the front, sorted by
//! name index, name length and name, ended by four zero bytes, and their
//! values from the back of the block, each padded to four bytes.
//!
//! A large inode may hold attributes of its own in the bytes after its
//! extra fields, as Linux's ext4 driver (which Debian's kernels mount
//! ext2 with) keeps them: the same magic, then entries whose values are
//! placed from the end of the inode, their offsets counted from the
//! first entry.
//!
//! Decoding checks every offset against the area, so a damaged one is
//! `EIO` and never an out-of-range index; encoding computes the entry and
//! block hashes e2fsck verifies.

use super::{put_u16, put_u32, u16_at, u32_at};
use crate::error::{Errno, Result};
use alloc::vec::Vec;

pub const MAGIC: u32 = 0xea02_0000;
const HEADER: usize = 32;
/// An entry's fixed part: name length, index, value offset, value block,
/// value size, hash.
const ENTRY: usize = 16;
/// The longest name (after the prefix) an entry holds.
pub const NAME_MAX: usize = 255;

/// Name indexes (Linux's `EXT2_XATTR_INDEX_*`) and their prefixes.
pub const INDEX_USER: u8 = 1;
pub const INDEX_POSIX_ACL_ACCESS: u8 = 2;
pub const INDEX_POSIX_ACL_DEFAULT: u8 = 3;
pub const INDEX_TRUSTED: u8 = 4;
pub const INDEX_SECURITY: u8 = 6;

const PREFIXES: [(u8, &[u8]); 3] = [
    (INDEX_USER, b"user."),
    (INDEX_TRUSTED, b"trusted."),
    (INDEX_SECURITY, b"security."),
];

/// One attribute: its name index, its name without the prefix, its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    pub index: u8,
    pub name: Vec<u8>,
    pub value: Vec<u8>,
}

impl Attr {
    /// The full name, prefix included (as `listxattr` gives it), or `None`
    /// for an index with no prefix the library serves.
    pub fn full_name(&self) -> Option<Vec<u8>> {
        let (_, prefix) = PREFIXES.iter().find(|(i, _)| *i == self.index)?;
        let mut n = Vec::with_capacity(prefix.len() + self.name.len());
        n.extend_from_slice(prefix);
        n.extend_from_slice(&self.name);
        Some(n)
    }

    /// The order of entries in the block (Linux's `ext2_xattr_set` search).
    fn key(&self) -> (u8, usize, &[u8]) {
        (self.index, self.name.len(), &self.name)
    }
}

/// Splits a full attribute name into index and name: an unknown prefix,
/// and the POSIX ACLs (not served), are `EOPNOTSUPP`; a known prefix with
/// nothing after it `EINVAL`; a name too long for an entry `ERANGE`.
pub fn split_name(full: &[u8]) -> Result<(u8, &[u8])> {
    for (index, prefix) in PREFIXES {
        if let Some(rest) = full.strip_prefix(prefix) {
            if rest.is_empty() {
                return Err(Errno::EINVAL);
            }
            if rest.len() > NAME_MAX {
                return Err(Errno::ERANGE);
            }
            return Ok((index, rest));
        }
    }
    Err(Errno::EOPNOTSUPP)
}

/// Bytes a value takes, padded to four.
fn value_room(len: usize) -> usize {
    (len + 3) & !3
}

/// Bytes an entry takes, padded to four.
fn entry_room(name_len: usize) -> usize {
    (ENTRY + name_len + 3) & !3
}

/// Bytes `attrs` need in a block: header, entries, the end mark, values.
pub fn room(attrs: &[Attr]) -> usize {
    HEADER + room_ibody(attrs)
}

/// Bytes `attrs` need in an inode's area after its magic: entries, the
/// end mark, values.
pub fn room_ibody(attrs: &[Attr]) -> usize {
    4 + attrs
        .iter()
        .map(|a| entry_room(a.name.len()) + value_room(a.value.len()))
        .sum::<usize>()
}

/// The reference count of a block that carries the magic.
pub fn refcount(b: &[u8]) -> Result<u32> {
    if b.len() < HEADER || u32_at(b, 0) != MAGIC || u32_at(b, 8) != 1 {
        return Err(Errno::EIO);
    }
    Ok(u32_at(b, 4))
}

/// Decodes a block's attributes.
pub fn decode(b: &[u8]) -> Result<Vec<Attr>> {
    refcount(b)?;
    decode_area(b, HEADER)
}

/// Decodes the attributes of an inode's own area (the bytes after the
/// magic), or none when the area does not start with the magic.
pub fn decode_ibody(area: &[u8]) -> Result<Vec<Attr>> {
    if area.len() < 4 || u32_at(area, 0) != MAGIC {
        return Ok(Vec::new());
    }
    decode_area(&area[4..], 0)
}

/// The entries of `s` from byte `first` on, values at offsets from the
/// start of `s`; every entry and value must lie in `s`, the values after
/// the entries.
fn decode_area(b: &[u8], first: usize) -> Result<Vec<Attr>> {
    let mut attrs = Vec::new();
    let mut at = first;
    loop {
        if at + 4 > b.len() {
            return Err(Errno::EIO);
        }
        if u32_at(b, at) == 0 {
            break;
        }
        if at + ENTRY > b.len() {
            return Err(Errno::EIO);
        }
        let name_len = b[at] as usize;
        let index = b[at + 1];
        let value_offs = u16_at(b, at + 2) as usize;
        let value_block = u32_at(b, at + 4);
        let value_size = u32_at(b, at + 8) as usize;
        let next = at + entry_room(name_len);
        if name_len == 0 || next > b.len() || value_block != 0 {
            return Err(Errno::EIO);
        }
        let value = if value_size == 0 {
            Vec::new()
        } else {
            if value_offs < next || value_offs + value_size > b.len() {
                return Err(Errno::EIO);
            }
            b[value_offs..value_offs + value_size].to_vec()
        };
        attrs.push(Attr {
            index,
            name: b[at + ENTRY..at + ENTRY + name_len].to_vec(),
            value,
        });
        at = next;
    }
    Ok(attrs)
}

/// Linux's entry hash (`ext2_xattr_hash_entry`): the name's bytes as the
/// kernel's signed `char`, then the padded value as little-endian words.
fn entry_hash(name: &[u8], padded_value: &[u8]) -> u32 {
    let mut hash: u32 = 0;
    for &c in name {
        hash = (hash << 5) ^ (hash >> 27) ^ (c as i8 as i32 as u32);
    }
    for w in padded_value.chunks_exact(4) {
        hash = (hash << 16) ^ (hash >> 16) ^ u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
    }
    hash
}

/// Writes `attrs` (sorted here) as a whole block with reference count
/// `refs`; `b` is the block. The caller checked they fit ([`room`]).
pub fn encode(attrs: &mut [Attr], refs: u32, b: &mut [u8]) {
    b.fill(0);
    put_u32(b, 0, MAGIC);
    put_u32(b, 4, refs);
    put_u32(b, 8, 1);
    let mut block_hash: u32 = 0;
    for hash in encode_area(attrs, b, HEADER) {
        block_hash = (block_hash << 16) ^ (block_hash >> 16) ^ hash;
    }
    put_u32(b, 12, block_hash);
}

/// Writes `attrs` into an inode's area (magic, then entries); no
/// attributes leave the area zeroed. The caller checked they fit
/// ([`room_ibody`]).
pub fn encode_ibody(attrs: &mut [Attr], area: &mut [u8]) {
    area.fill(0);
    if !attrs.is_empty() {
        put_u32(area, 0, MAGIC);
        encode_area(attrs, &mut area[4..], 0);
    }
}

/// Entries from byte `first` of `b`, values from its end; the entries'
/// hashes, in order.
fn encode_area(attrs: &mut [Attr], b: &mut [u8], first: usize) -> Vec<u32> {
    attrs.sort_by(|x, y| x.key().cmp(&y.key()));
    let mut at = first;
    let mut value_end = b.len();
    let mut hashes = Vec::with_capacity(attrs.len());
    for a in attrs.iter() {
        let offs = if a.value.is_empty() {
            0
        } else {
            value_end -= value_room(a.value.len());
            b[value_end..value_end + a.value.len()].copy_from_slice(&a.value);
            value_end
        };
        let hash = entry_hash(&a.name, &b[offs..offs + value_room(a.value.len())]);
        b[at] = a.name.len() as u8;
        b[at + 1] = a.index;
        put_u16(b, at + 2, offs as u16);
        put_u32(b, at + 4, 0);
        put_u32(b, at + 8, a.value.len() as u32);
        put_u32(b, at + 12, hash);
        b[at + ENTRY..at + ENTRY + a.name.len()].copy_from_slice(&a.name);
        hashes.push(hash);
        at += entry_room(a.name.len());
    }
    hashes
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn attr(index: u8, name: &[u8], value: &[u8]) -> Attr {
        Attr {
            index,
            name: name.to_vec(),
            value: value.to_vec(),
        }
    }

    #[test]
    fn round_trip_sorted() {
        let mut attrs = vec![
            attr(INDEX_USER, b"zz", b"1"),
            attr(INDEX_SECURITY, b"a", b""),
            attr(INDEX_USER, b"b", b"hello world"),
            attr(INDEX_TRUSTED, b"k", &[0xff; 100]),
        ];
        let mut b = vec![0u8; 1024];
        encode(&mut attrs, 1, &mut b);
        let back = decode(&b).unwrap();
        let names: Vec<_> = back.iter().map(|a| a.full_name().unwrap()).collect();
        assert_eq!(
            names,
            vec![
                b"user.b".to_vec(),
                b"user.zz".to_vec(),
                b"trusted.k".to_vec(),
                b"security.a".to_vec()
            ]
        );
        assert_eq!(back[0].value, b"hello world");
        assert_eq!(back[2].value, vec![0xff; 100]);
        assert_eq!(refcount(&b), Ok(1));
        let mut area = vec![0u8; 96];
        let mut two = vec![attr(INDEX_USER, b"in", b"inode"), attr(INDEX_SECURITY, b"s", b"")];
        assert!(room_ibody(&two) + 4 <= area.len());
        encode_ibody(&mut two, &mut area);
        assert_eq!(decode_ibody(&area).unwrap(), two);
        encode_ibody(&mut [], &mut area);
        assert_eq!(decode_ibody(&area).unwrap(), vec![]);
    }

    #[test]
    fn names_split_as_linux() {
        assert_eq!(split_name(b"user.x"), Ok((INDEX_USER, &b"x"[..])));
        assert_eq!(split_name(b"user."), Err(Errno::EINVAL));
        assert_eq!(split_name(b"system.posix_acl_access"), Err(Errno::EOPNOTSUPP));
        assert_eq!(split_name(b"bogus"), Err(Errno::EOPNOTSUPP));
        assert_eq!(split_name(&[b"user.", &[b'a'; 256][..]].concat()), Err(Errno::ERANGE));
    }

    #[test]
    fn damaged_blocks_are_eio() {
        let mut b = vec![0u8; 1024];
        encode(&mut [attr(INDEX_USER, b"a", b"v")], 1, &mut b);
        let mut bad = b.clone();
        bad[3] = 0;
        assert_eq!(decode(&bad), Err(Errno::EIO));
        let mut bad = b.clone();
        put_u16(&mut bad, HEADER + 2, 1024);
        assert_eq!(decode(&bad), Err(Errno::EIO));
        let mut bad = b.clone();
        put_u16(&mut bad, HEADER + 2, 8);
        assert_eq!(decode(&bad), Err(Errno::EIO));
        // Entries running to the end with no end mark.
        let mut bad = b;
        for at in (HEADER..1024).step_by(4) {
            put_u32(&mut bad, at, 0x0101_0101);
        }
        assert_eq!(decode(&bad), Err(Errno::EIO));
    }
}
