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
//!
//! In front of the indexes, a fixed table of recent lookups: (directory,
//! name) to inode, or to no entry. It keeps no permission: a walk asks
//! for search permission on each directory, and checks the inode found,
//! every time. Any change to any directory's entries ends every recent
//! lookup, so a rename, removal or create is never answered from before
//! it.

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

/// Recent lookups kept: a fixed table, each (directory, name) in one slot
/// chosen by hash, a new one taking the slot from the old.
const RECENT_SLOTS: usize = 256;
/// The longest name a recent lookup keeps (longer ones go to the index
/// each time): most names in a path are far shorter.
pub(crate) const RECENT_NAME_MAX: usize = 32;

/// One recent lookup: `name` in directory `dir` gave inode `ino` (0: no
/// such entry), while the entries stood as they did at change `era`.
#[derive(Clone, Copy)]
struct Recent {
    dir: u32,
    ino: u32,
    era: u64,
    len: u8,
    name: [u8; RECENT_NAME_MAX],
}

/// The indexes, by directory inode, and recent lookups.
#[derive(Default)]
pub(crate) struct NameCache {
    dirs: BTreeMap<u32, DirIndex>,
    /// Directories in the order they were indexed.
    order: Vec<u32>,
    /// Recent lookups, answered before the index: the index's search by
    /// name compares the name with a dozen others at each step of a path,
    /// the larger part of resolving it.
    recent: Vec<Option<Recent>>,
    /// Counts the changes to any directory's entries: every change goes
    /// through `get_mut` or `drop_dir`, and a recent lookup made before
    /// the last change is not believed (a create after a lookup that
    /// found nothing, as well as a rename or removal).
    era: u64,
}

/// The slot of (`dir`, `name`): FNV-1a.
fn slot(dir: u32, name: &[u8]) -> usize {
    let mut h: u32 = 0x811c_9dc5;
    for &b in dir.to_le_bytes().iter().chain(name) {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    (h ^ (h >> 16)) as usize % RECENT_SLOTS
}

impl NameCache {
    pub fn get(&self, dir: u32) -> Option<&DirIndex> {
        self.dirs.get(&dir)
    }

    /// The index of `dir`, for a change to its entries.
    pub fn get_mut(&mut self, dir: u32) -> Option<&mut DirIndex> {
        self.era += 1;
        self.dirs.get_mut(&dir)
    }

    /// Keeps the parent `dir`'s `..` entry names, read and found sound
    /// (no change to any entry).
    pub fn note_dotdot(&mut self, dir: u32, parent: u32) {
        if let Some(ix) = self.dirs.get_mut(&dir) {
            ix.dotdot = Some(parent);
        }
    }

    /// What a lookup of `name` in `dir` gave since the last change to any
    /// directory: `Some(0)` for no entry, `None` if not known.
    pub fn recent(&self, dir: u32, name: &[u8]) -> Option<u32> {
        if name.len() > RECENT_NAME_MAX {
            return None;
        }
        let r = self.recent.get(slot(dir, name))?.as_ref()?;
        (r.era == self.era && r.dir == dir && &r.name[..r.len as usize] == name).then_some(r.ino)
    }

    /// Keeps what a lookup of `name` in `dir` found (`ino` 0: nothing).
    pub fn note(&mut self, dir: u32, name: &[u8], ino: u32) {
        if name.len() > RECENT_NAME_MAX {
            return;
        }
        if self.recent.is_empty() {
            self.recent = alloc::vec![None; RECENT_SLOTS];
        }
        let mut kept = [0; RECENT_NAME_MAX];
        kept[..name.len()].copy_from_slice(name);
        self.recent[slot(dir, name)] = Some(Recent {
            dir,
            ino,
            era: self.era,
            len: name.len() as u8,
            name: kept,
        });
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
        self.era += 1;
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

    #[test]
    fn recent_lookups_last_until_any_change() {
        let mut c = NameCache::default();
        assert_eq!(c.recent(2, b"bin"), None);
        c.note(2, b"bin", 12);
        c.note(2, b"gone", 0);
        assert_eq!(c.recent(2, b"bin"), Some(12));
        assert_eq!(c.recent(2, b"gone"), Some(0));
        assert_eq!(c.recent(3, b"bin"), None);
        assert_eq!(c.recent(2, b"bi"), None);
        // A change to any directory's entries, followed or not.
        c.get_mut(7);
        assert_eq!(c.recent(2, b"bin"), None);
        c.note(2, b"bin", 12);
        c.drop_dir(9);
        assert_eq!(c.recent(2, b"bin"), None);
        // Reading a `..` entry changes nothing.
        c.note(2, b"bin", 12);
        c.note_dotdot(2, 2);
        assert_eq!(c.recent(2, b"bin"), Some(12));
        // Too long a name is not kept.
        let long = [b'x'; RECENT_NAME_MAX + 1];
        c.note(2, &long, 13);
        assert_eq!(c.recent(2, &long), None);
        c.note(2, &long[..RECENT_NAME_MAX], 14);
        assert_eq!(c.recent(2, &long[..RECENT_NAME_MAX]), Some(14));
        // Each slot holds one lookup: of many, the latest is kept and
        // none gives another's answer.
        for ino in 100..100 + 4 * RECENT_SLOTS as u32 {
            c.note(5, &ino.to_le_bytes(), ino);
        }
        let mut kept = 0;
        for ino in 100..100 + 4 * RECENT_SLOTS as u32 {
            if let Some(found) = c.recent(5, &ino.to_le_bytes()) {
                assert_eq!(found, ino);
                kept += 1;
            }
        }
        assert!(kept <= RECENT_SLOTS);
        assert_eq!(
            c.recent(5, &(99 + 4 * RECENT_SLOTS as u32).to_le_bytes()),
            Some(99 + 4 * RECENT_SLOTS as u32)
        );
    }
}
