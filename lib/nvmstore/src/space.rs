//! Free space of the data area: whatever pages no file of the current
//! directory uses and no user of the store holds (pages a running program
//! still maps after its file was replaced or deleted). Nothing else is
//! kept, so nothing else can go stale.

use crate::layout::Entry;
use alloc::vec::Vec;

/// Space accounting, in pages of the data area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    pub data_pages: u64,
    pub used_pages: u64,
    pub free_pages: u64,
    /// The largest file that can be stored now is this many pages: each
    /// file is one contiguous run.
    pub largest_free_run: u64,
    pub files: u32,
    pub capacity: u32,
}

/// The free runs `(first page, pages)` between the files and the held
/// runs (which may overlap files and each other), in page order.
pub fn free_runs(entries: &[Entry], held: &[(u64, u64)], data_pages: u64) -> Vec<(u64, u64)> {
    let mut used: Vec<(u64, u64)> = entries
        .iter()
        .filter(|e| e.pages() > 0)
        .map(|e| (e.first_page, e.pages()))
        .chain(held.iter().copied().filter(|&(_, n)| n > 0))
        .collect();
    used.sort_unstable();
    let mut runs = Vec::new();
    let mut next = 0u64;
    for (first, pages) in used {
        if first > next {
            runs.push((next, first.min(data_pages) - next.min(data_pages)));
        }
        next = next.max(first.saturating_add(pages));
    }
    runs.retain(|&(_, n)| n > 0);
    if data_pages > next {
        runs.push((next, data_pages - next));
    }
    runs
}

/// Best fit: the smallest free run that holds `pages` (the lowest of equals),
/// so large runs stay whole for large texts.
pub fn allocate(entries: &[Entry], held: &[(u64, u64)], data_pages: u64, pages: u64) -> Option<u64> {
    if pages == 0 {
        return Some(0);
    }
    free_runs(entries, held, data_pages)
        .into_iter()
        .filter(|&(_, n)| n >= pages)
        .min_by_key(|&(first, n)| (n, first))
        .map(|(first, _)| first)
}

pub fn space(entries: &[Entry], held: &[(u64, u64)], data_pages: u64, capacity: u32) -> Space {
    let runs = free_runs(entries, held, data_pages);
    let free_pages: u64 = runs.iter().map(|r| r.1).sum();
    Space {
        data_pages,
        used_pages: data_pages - free_pages,
        free_pages,
        largest_free_run: runs.iter().map(|r| r.1).max().unwrap_or(0),
        files: entries.len() as u32,
        capacity,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region::PAGE_SIZE;

    #[test]
    fn best_fit_between_files() {
        let files = [
            Entry::new("a", 2, 3 * PAGE_SIZE, 0, 1),
            Entry::new("b", 7, PAGE_SIZE, 0, 1),
            Entry::new("c", 0, 0, 0, 1),
        ];
        assert_eq!(free_runs(&files, &[], 20), [(0, 2), (5, 2), (8, 12)]);
        assert_eq!(allocate(&files, &[], 20, 2), Some(0));
        assert_eq!(allocate(&files, &[], 20, 3), Some(8));
        assert_eq!(allocate(&files, &[], 20, 13), None);
        assert_eq!(allocate(&files, &[], 20, 0), Some(0));
        let s = space(&files, &[], 20, 8);
        assert_eq!(
            (s.used_pages, s.free_pages, s.largest_free_run, s.files),
            (4, 16, 12, 3)
        );
    }

    #[test]
    fn held_runs_are_never_free() {
        let files = [Entry::new("a", 2, 3 * PAGE_SIZE, 0, 1)];
        // One held run inside a file, one overlapping its end, one alone,
        // one past the end of the data area.
        let held = [(3, 1), (4, 3), (10, 2), (18, 5)];
        assert_eq!(free_runs(&files, &held, 20), [(0, 2), (7, 3), (12, 6)]);
        assert_eq!(allocate(&files, &held, 20, 4), Some(12));
        assert_eq!(allocate(&files, &held, 20, 7), None);
        let s = space(&files, &held, 20, 8);
        assert_eq!((s.used_pages, s.free_pages, s.largest_free_run), (9, 11, 6));
    }
}
