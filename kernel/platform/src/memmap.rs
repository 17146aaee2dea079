//! The physical memory map: e820-style regions, normalised so that usable
//! ranges are page aligned and never overlap a reserved one.

pub const MAX_REGIONS: usize = 128;
pub const PAGE: u64 = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionKind {
    Usable,
    Reserved,
    AcpiReclaimable,
    AcpiNvs,
    Unusable,
    Persistent,
}

impl RegionKind {
    pub fn from_e820(kind: u32) -> RegionKind {
        match kind {
            1 => RegionKind::Usable,
            3 => RegionKind::AcpiReclaimable,
            4 => RegionKind::AcpiNvs,
            5 => RegionKind::Unusable,
            7 => RegionKind::Persistent,
            _ => RegionKind::Reserved,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub base: u64,
    pub size: u64,
    pub kind: RegionKind,
}

impl Region {
    pub fn end(&self) -> u64 {
        self.base.saturating_add(self.size)
    }
}

#[derive(Debug)]
pub struct MemoryMap {
    regions: [Region; MAX_REGIONS],
    len: usize,
}

impl Default for MemoryMap {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryMap {
    pub const fn new() -> Self {
        MemoryMap {
            regions: [Region {
                base: 0,
                size: 0,
                kind: RegionKind::Reserved,
            }; MAX_REGIONS],
            len: 0,
        }
    }

    /// Records a region; extra regions beyond the capacity are dropped
    /// (losing usable memory is safe, using reserved memory is not, so a
    /// dropped reserved region also drops every usable one after it).
    pub fn add(&mut self, base: u64, size: u64, kind: RegionKind) {
        if size == 0 {
            return;
        }
        if self.len == MAX_REGIONS {
            if kind != RegionKind::Usable {
                self.regions[..self.len].iter_mut().for_each(|r| {
                    if r.kind == RegionKind::Usable && r.end() > base {
                        r.size = base.saturating_sub(r.base).min(r.size);
                    }
                });
            }
            return;
        }
        self.regions[self.len] = Region { base, size, kind };
        self.len += 1;
    }

    pub fn regions(&self) -> &[Region] {
        &self.regions[..self.len]
    }

    /// Usable ranges as whole pages, with every non-usable region cut out,
    /// sorted by address. Calls `f(base, size)` for each.
    pub fn for_each_usable(&self, mut f: impl FnMut(u64, u64)) {
        let mut order: [usize; MAX_REGIONS] = core::array::from_fn(|i| i);
        let order = &mut order[..self.len];
        order.sort_unstable_by_key(|&i| self.regions[i].base);
        for &i in order.iter() {
            let r = self.regions[i];
            if r.kind != RegionKind::Usable {
                continue;
            }
            let mut start = r.base.saturating_add(PAGE - 1) & !(PAGE - 1);
            let end = r.end() & !(PAGE - 1);
            // Cut out every overlapping non-usable region (they are few).
            while start < end {
                let mut piece_end = end;
                let mut skip_to = None;
                for o in self.regions().iter().filter(|o| o.kind != RegionKind::Usable) {
                    if o.base <= start && o.end() > start {
                        skip_to = Some(skip_to.map_or(o.end(), |s: u64| s.max(o.end())));
                    } else if o.base > start && o.base < piece_end {
                        piece_end = o.base;
                    }
                }
                if let Some(s) = skip_to {
                    start = s.saturating_add(PAGE - 1) & !(PAGE - 1);
                    continue;
                }
                let piece_end = piece_end & !(PAGE - 1);
                if piece_end > start {
                    f(start, piece_end - start);
                }
                start = piece_end.max(start + PAGE);
            }
        }
    }

    pub fn usable_bytes(&self) -> u64 {
        let mut total = 0;
        self.for_each_usable(|_, s| total += s);
        total
    }

    /// One past the highest usable address.
    pub fn usable_end(&self) -> u64 {
        let mut end = 0;
        self.for_each_usable(|b, s| end = end.max(b + s));
        end
    }

    /// Is the page at `addr` entirely inside some region of RAM (any kind
    /// that is backed by memory rather than a device)?
    pub fn is_ram(&self, addr: u64, size: u64) -> bool {
        self.regions()
            .iter()
            .any(|r| r.kind != RegionKind::Reserved && r.base <= addr && r.end() >= addr + size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usable(m: &MemoryMap) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        m.for_each_usable(|b, s| v.push((b, s)));
        v
    }

    #[test]
    fn aligns_to_pages_and_sorts() {
        let mut m = MemoryMap::new();
        m.add(0x100000, 0x7f00000, RegionKind::Usable);
        m.add(0x10, 0x9fc00 - 0x10, RegionKind::Usable);
        assert_eq!(usable(&m), vec![(0x1000, 0x9e000), (0x100000, 0x7f00000)]);
    }

    #[test]
    fn reserved_overlaps_are_cut_out() {
        let mut m = MemoryMap::new();
        m.add(0, 0x100000, RegionKind::Usable);
        m.add(0x8000, 0x1000, RegionKind::Reserved);
        m.add(0x20800, 0x1000, RegionKind::AcpiNvs);
        m.add(0xff000, 0x10000, RegionKind::Reserved);
        assert_eq!(usable(&m), vec![(0, 0x8000), (0x9000, 0x17000), (0x22000, 0xdd000)]);
    }

    #[test]
    fn overflow_of_the_table_never_exposes_reserved_memory() {
        let mut m = MemoryMap::new();
        m.add(0, 1 << 30, RegionKind::Usable);
        for i in 0..MAX_REGIONS as u64 {
            m.add((1 << 31) + i * PAGE, PAGE, RegionKind::Usable);
        }
        m.add(0x4000_0000 - 0x10_0000, 0x1000, RegionKind::Reserved);
        let u = usable(&m);
        assert!(u.iter().all(|(b, s)| b + s <= 0x4000_0000 - 0x10_0000 || *b >= 1 << 31));
    }

    #[test]
    fn wraparound_region_is_harmless() {
        let mut m = MemoryMap::new();
        m.add(u64::MAX - 0x1000, 0x10000, RegionKind::Usable);
        assert!(usable(&m).iter().all(|(b, s)| b.checked_add(*s).is_some()));
    }
}
