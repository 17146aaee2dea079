//! The name cache: for a directory scanned whole once, where each name is
//! and where there is room for another, so that a lookup or a create no
//! longer scans the directory (a create in a directory of n entries cost
//! a scan of all n, twice).
//!
//! A directory's index is made only from a scan that found every entry
//! sound; a damaged directory keeps being scanned, giving its error where
//! it is met. Every change the file manager makes to a directory's
//! entries goes through here too; a change it cannot follow exactly (and
//! any that fails part way) drops the directory's index, which the next
//! lookup makes again.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::dir::Found;

/// Directories indexed at once: past this, the one indexed first is
/// dropped (a whole scan makes it again).
const MAX_DIRS: usize = 64;

/// One directory's index.
#[derive(Default)]
pub(crate) struct DirIndex {
    /// Each entry in use, by name.
    pub names: BTreeMap<Vec<u8>, Found>,
    /// Room for new entries: (block, offset) of each entry with space
    /// beyond its own record (all of it, for an unused entry) and that
    /// space in bytes.
    pub room: BTreeMap<(u64, usize), usize>,
    /// The parent its `..` entry names, once read and found sound
    /// (`dotdot`): a lookup of the directory by name checks it every time.
    /// Only `set_dotdot` changes that entry, and it drops the index.
    pub dotdot: Option<u32>,
}

impl DirIndex {
    /// Where an entry of record length `need` fits first, in directory
    /// order (the place a scan would choose).
    pub fn fit(&self, need: usize) -> Option<(u64, usize)> {
        self.room.iter().find(|&(_, &spare)| spare >= need).map(|(&at, _)| at)
    }

    /// Records the spare space of the entry at `at` (none: no room).
    pub fn set_room(&mut self, at: (u64, usize), spare: usize) {
        if spare > 0 {
            self.room.insert(at, spare);
        } else {
            self.room.remove(&at);
        }
    }
}

/// The indexes, by directory inode.
#[derive(Default)]
pub(crate) struct NameCache {
    dirs: BTreeMap<u32, DirIndex>,
    /// Directories in the order they were indexed.
    order: Vec<u32>,
}

impl NameCache {
    pub fn get(&self, dir: u32) -> Option<&DirIndex> {
        self.dirs.get(&dir)
    }

    pub fn get_mut(&mut self, dir: u32) -> Option<&mut DirIndex> {
        self.dirs.get_mut(&dir)
    }

    pub fn put(&mut self, dir: u32, index: DirIndex) {
        if self.dirs.len() >= MAX_DIRS && !self.dirs.contains_key(&dir) && !self.order.is_empty() {
            let oldest = self.order.remove(0);
            self.dirs.remove(&oldest);
        }
        self.order.retain(|&d| d != dir);
        self.order.push(dir);
        self.dirs.insert(dir, index);
    }

    /// Forgets directory `dir` (its entries changed in a way not followed,
    /// or its inode is gone).
    pub fn drop_dir(&mut self, dir: u32) {
        if self.dirs.remove(&dir).is_some() {
            self.order.retain(|&d| d != dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_in_directory_order_and_oldest_dropped() {
        let mut d = DirIndex::default();
        d.set_room((1, 40), 100);
        d.set_room((0, 500), 20);
        d.set_room((0, 12), 0);
        assert_eq!(d.fit(16), Some((0, 500)));
        assert_eq!(d.fit(24), Some((1, 40)));
        assert_eq!(d.fit(200), None);
        d.set_room((0, 500), 0);
        assert_eq!(d.fit(16), Some((1, 40)));

        let mut c = NameCache::default();
        for dir in 0..MAX_DIRS as u32 + 1 {
            c.put(dir, DirIndex::default());
        }
        assert!(c.get(0).is_none());
        assert!(c.get(1).is_some() && c.get(MAX_DIRS as u32).is_some());
        c.drop_dir(1);
        assert!(c.get(1).is_none());
    }
}
