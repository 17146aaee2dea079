//! Disk images packed for a RAM disk to carry in its own binary: only the
//! pages that hold something, so an image of many megabytes that is mostly
//! empty (a fresh file system) costs the archive and the RAM disk's memory
//! only what it holds.
//!
//! Layout (little-endian): `TSRD`, the number of images; then per image
//! its name's length (u32), the name, its size in pages (u64), the number
//! of pages stored (u64), their page numbers in ascending order (u64 each),
//! and the pages.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec::Vec;

pub const PAGE: usize = 4096;
const MAGIC: &[u8; 4] = b"TSRD";

/// Packs `images` (name, bytes); an image's last partial page is padded
/// with zeros.
pub fn pack(images: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(images.len() as u32).to_le_bytes());
    for (name, data) in images {
        let pages = data.len().div_ceil(PAGE);
        let page = |i: usize| &data[i * PAGE..((i + 1) * PAGE).min(data.len())];
        let present: Vec<usize> = (0..pages).filter(|&i| page(i).iter().any(|&b| b != 0)).collect();
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(pages as u64).to_le_bytes());
        out.extend_from_slice(&(present.len() as u64).to_le_bytes());
        for &i in &present {
            out.extend_from_slice(&(i as u64).to_le_bytes());
        }
        for &i in &present {
            let p = page(i);
            out.extend_from_slice(p);
            out.resize(out.len() + PAGE - p.len(), 0);
        }
    }
    out
}

/// One packed image, borrowed from the pack.
#[derive(Debug, Clone, Copy)]
pub struct Image<'a> {
    /// Its size in pages.
    pub pages: u64,
    index: &'a [u8],
    data: &'a [u8],
}

impl<'a> Image<'a> {
    /// Page `n`'s bytes, or `None` for a page of zeros (or one beyond the
    /// image).
    pub fn page(&self, n: u64) -> Option<&'a [u8]> {
        let count = self.index.len() / 8;
        let at = |i: usize| u64::from_le_bytes(self.index[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
        let (mut lo, mut hi) = (0, count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match at(mid).cmp(&n) {
                core::cmp::Ordering::Less => lo = mid + 1,
                core::cmp::Ordering::Greater => hi = mid,
                core::cmp::Ordering::Equal => return self.data.get(mid * PAGE..(mid + 1) * PAGE),
            }
        }
        None
    }

    /// Pages stored (not zero).
    pub fn stored(&self) -> usize {
        self.index.len() / 8
    }
}

/// The images of `pack`, with their names, in order; a pack that is cut
/// short or garbled ends where it goes wrong.
pub fn images(pack: &[u8]) -> impl Iterator<Item = (&[u8], Image<'_>)> {
    let mut at: usize = 0;
    let mut take = move |n: usize| -> Option<&[u8]> {
        let b = pack.get(at..at.checked_add(n)?)?;
        at += n;
        Some(b)
    };
    let count = match take(4) {
        Some(m) if m == MAGIC => take(4).map_or(0, |c| u32::from_le_bytes(c.try_into().unwrap_or([0; 4]))),
        _ => 0,
    };
    let mut left = count;
    core::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        left -= 1;
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        let name_len = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        let name = take(name_len)?;
        let pages = word(take(8)?);
        let stored = usize::try_from(word(take(8)?)).ok()?;
        let index = take(stored.checked_mul(8)?)?;
        let data = take(stored.checked_mul(PAGE)?)?;
        Some((name, Image { pages, index, data }))
    })
}

/// The image called `name` in `pack`, if the pack holds it whole.
pub fn find<'a>(pack: &'a [u8], name: &str) -> Option<Image<'a>> {
    images(pack).find(|(n, _)| *n == name.as_bytes()).map(|(_, i)| i)
}

/// The names of the images in `pack`.
pub fn names(pack: &[u8]) -> Vec<&str> {
    images(pack).filter_map(|(n, _)| core::str::from_utf8(n).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_every_page() {
        let mut a = vec![0u8; 5 * PAGE + 100];
        a[PAGE + 7] = 1;
        a[5 * PAGE + 99] = 9;
        let b = vec![3u8; 2 * PAGE];
        let pack = pack(&[("a", &a), ("b", &b)]);
        assert_eq!(names(&pack), ["a", "b"]);
        let ia = find(&pack, "a").unwrap();
        assert_eq!(ia.pages, 6);
        assert_eq!(ia.stored(), 2);
        for n in 0..6 {
            let want = &a[n * PAGE..((n + 1) * PAGE).min(a.len())];
            match ia.page(n as u64) {
                Some(p) => assert_eq!(&p[..want.len()], want),
                None => assert!(want.iter().all(|&x| x == 0)),
            }
        }
        assert!(ia.page(6).is_none());
        let ib = find(&pack, "b").unwrap();
        assert_eq!(ib.page(1).unwrap(), &b[PAGE..]);
        assert!(find(&pack, "c").is_none());
    }

    #[test]
    fn a_cut_or_garbled_pack_finds_nothing() {
        let a = vec![1u8; 3 * PAGE];
        let pack = pack(&[("a", &a)]);
        for cut in [0, 3, 8, 20, pack.len() - 1] {
            assert!(find(&pack[..cut], "a").is_none(), "cut at {cut}");
        }
        let mut bad = pack.clone();
        bad[0] = b'X';
        assert!(find(&bad, "a").is_none());
        let mut huge = pack.clone();
        huge[17..25].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(find(&huge, "a").is_none());
    }
}
