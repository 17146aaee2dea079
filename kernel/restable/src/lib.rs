//! Resource identifiers and tables (Tender's 資源識別子 and 管理表).
//!
//! Every resource is named by a [`ResId`]: its kind, its slot in the kind's
//! table, and the generation of that slot. Deleting a resource bumps the
//! slot's generation, so an identifier kept after deletion (stale) or made
//! up (forged) no longer matches and is rejected, even once the slot is
//! reused. The encoding fits one u64 so identifiers cross the system-call
//! boundary unchanged.
#![cfg_attr(not(test), no_std)]

extern crate alloc;

use alloc::vec::Vec;
use core::alloc::Layout;

/// `kind` (8 bits) | `generation` (24 bits) | `index` (32 bits).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResId(u64);

impl ResId {
    pub const NONE: ResId = ResId(0);

    pub fn new(kind: u8, index: u32, generation: u32) -> ResId {
        ResId(((kind as u64) << 56) | (((generation & 0xff_ffff) as u64) << 32) | index as u64)
    }
    pub fn from_raw(raw: u64) -> ResId {
        ResId(raw)
    }
    pub fn raw(self) -> u64 {
        self.0
    }
    pub fn kind(self) -> u8 {
        (self.0 >> 56) as u8
    }
    pub fn index(self) -> u32 {
        self.0 as u32
    }
    pub fn generation(self) -> u32 {
        ((self.0 >> 32) & 0xff_ffff) as u32
    }
}

impl core::fmt::Debug for ResId {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        write!(f, "{}:{}.{}", self.kind(), self.index(), self.generation())
    }
}

/// Why an identifier was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdError {
    /// The identifier names another kind.
    WrongKind,
    /// No such slot, or the slot was deleted (stale), or never had this
    /// generation (forged).
    NoSuch,
    /// The table holds as many as it may.
    Full,
    /// The table cannot grow: no memory for it.
    NoMemory,
}

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// The table of one resource kind.
pub struct Table<T> {
    kind: u8,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
    limit: usize,
}

impl<T> Table<T> {
    /// A table for `kind` holding at most `limit` resources at once.
    pub const fn new(kind: u8, limit: usize) -> Table<T> {
        Table {
            kind,
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            limit,
        }
    }

    pub fn kind(&self) -> u8 {
        self.kind
    }

    pub fn len(&self) -> usize {
        self.live
    }

    /// The heap blocks its slots take, live or free (the slots, and the
    /// list of free ones): a table keeps the room it grew to (a leak check
    /// counts this apart, as the heap counts each block).
    pub fn reserved(&self) -> [Layout; 2] {
        // The layouts the vectors were allocated with, so they fit.
        [
            Layout::array::<Slot<T>>(self.slots.capacity()).expect("allocated"),
            Layout::array::<u32>(self.free.capacity()).expect("allocated"),
        ]
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Stores `value` and returns its new identifier. Growth of the table
    /// is fallible: memory exhaustion is an error, not a crash.
    pub fn insert(&mut self, value: T) -> Result<ResId, (IdError, T)> {
        if self.live >= self.limit {
            return Err((IdError::Full, value));
        }
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                if self.slots.try_reserve(1).is_err() || self.free.try_reserve(self.slots.len() + 1).is_err() {
                    return Err((IdError::NoMemory, value));
                }
                self.slots.push(Slot {
                    generation: 1,
                    value: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.value = Some(value);
        self.live += 1;
        Ok(ResId::new(self.kind, index, slot.generation))
    }

    #[inline(always)]
    fn slot(&self, id: ResId) -> Result<&Slot<T>, IdError> {
        if id.kind() != self.kind {
            return Err(IdError::WrongKind);
        }
        let slot = self.slots.get(id.index() as usize).ok_or(IdError::NoSuch)?;
        if slot.generation != id.generation() || slot.value.is_none() {
            return Err(IdError::NoSuch);
        }
        Ok(slot)
    }

    /// Checks an identifier without touching the resource.
    #[inline(always)]
    pub fn check(&self, id: ResId) -> Result<(), IdError> {
        self.slot(id).map(|_| ())
    }

    #[inline(always)]
    pub fn get(&self, id: ResId) -> Result<&T, IdError> {
        self.slot(id).map(|s| s.value.as_ref().expect("checked"))
    }

    #[inline(always)]
    pub fn get_mut(&mut self, id: ResId) -> Result<&mut T, IdError> {
        self.slot(id)?;
        Ok(self.slots[id.index() as usize].value.as_mut().expect("checked"))
    }

    /// Deletes the resource; its identifier becomes stale for ever (the
    /// generation wraps after 2^24 reuses of one slot). Inlined: out of
    /// line, the entry it gives back (most of a hundred bytes or more) was
    /// copied whole two or three times on its way to a caller that mostly
    /// keeps one field of it and drops the rest.
    #[inline(always)]
    pub fn remove(&mut self, id: ResId) -> Result<T, IdError> {
        self.slot(id)?;
        let slot = &mut self.slots[id.index() as usize];
        let value = slot.value.take().expect("checked");
        slot.generation = (slot.generation + 1) & 0xff_ffff;
        if slot.generation == 0 {
            slot.generation = 1;
        }
        self.live -= 1;
        // Room for this index was reserved when the slot was created.
        self.free.push(id.index());
        Ok(value)
    }

    pub fn iter(&self) -> impl Iterator<Item = (ResId, &T)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.value
                .as_ref()
                .map(|v| (ResId::new(self.kind, i as u32, s.generation), v))
        })
    }

    /// The first live entry at slot `from` or after that `f` accepts: a
    /// walk that allocates nothing, for teardown, which must not.
    pub fn find_from(&self, from: u32, mut f: impl FnMut(&T) -> bool) -> Option<ResId> {
        self.slots.iter().enumerate().skip(from as usize).find_map(|(i, s)| {
            s.value
                .as_ref()
                .filter(|v| f(v))
                .map(|_| ResId::new(self.kind, i as u32, s.generation))
        })
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (ResId, &mut T)> {
        let kind = self.kind;
        self.slots.iter_mut().enumerate().filter_map(move |(i, s)| {
            let generation = s.generation;
            s.value.as_mut().map(|v| (ResId::new(kind, i as u32, generation), v))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        let id = ResId::new(7, 0xdead_beef, 0x12_3456);
        assert_eq!((id.kind(), id.index(), id.generation()), (7, 0xdead_beef, 0x12_3456));
        assert_eq!(ResId::from_raw(id.raw()), id);
    }

    #[test]
    fn stale_forged_and_wrong_kind_ids_are_refused() {
        let mut t: Table<&str> = Table::new(3, 100);
        let a = t.insert("a").unwrap();
        assert_eq!(t.get(a), Ok(&"a"));
        assert_eq!(t.remove(a), Ok("a"));
        assert_eq!(t.get(a), Err(IdError::NoSuch), "stale");
        let b = t.insert("b").unwrap();
        assert_eq!(b.index(), a.index(), "slot reused");
        assert_ne!(b, a);
        assert_eq!(t.get(a), Err(IdError::NoSuch), "stale after reuse");
        assert_eq!(
            t.get(ResId::new(3, b.index(), b.generation() + 5)),
            Err(IdError::NoSuch),
            "forged"
        );
        assert_eq!(t.get(ResId::new(3, 999, 1)), Err(IdError::NoSuch), "out of range");
        assert_eq!(t.get(ResId::new(4, b.index(), b.generation())), Err(IdError::WrongKind));
        assert_eq!(t.remove(a), Err(IdError::NoSuch), "double delete");
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn limit_is_enforced_and_values_come_back() {
        let mut t: Table<u32> = Table::new(1, 2);
        t.insert(1).unwrap();
        t.insert(2).unwrap();
        assert_eq!(t.insert(3).map_err(|e| e.0), Err(IdError::Full));
        let ids: Vec<_> = t.iter().map(|(id, _)| id).collect();
        for id in ids {
            t.remove(id).unwrap();
        }
        assert!(t.is_empty());
        assert!(t.insert(9).is_ok());
    }

    #[test]
    fn a_walk_from_a_slot_finds_each_match_once() {
        let mut t: Table<u32> = Table::new(2, 16);
        let ids: Vec<_> = (0..6).map(|v| t.insert(v).unwrap()).collect();
        t.remove(ids[2]).unwrap();
        for (_, v) in t.iter_mut() {
            *v *= 10;
        }
        let mut seen = Vec::new();
        let mut from = 0;
        while let Some(id) = t.find_from(from, |v| v % 20 == 0) {
            seen.push(*t.get(id).unwrap());
            // Deleting what was found, as a teardown does, leaves the walk whole.
            t.remove(id).unwrap();
            from = id.index() + 1;
        }
        assert_eq!(seen, [0, 40]);
        assert_eq!(t.find_from(0, |_| true).map(|id| *t.get(id).unwrap()), Some(10));
        assert_eq!(t.find_from(99, |_| true), None);
    }
}
