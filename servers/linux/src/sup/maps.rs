//! /proc/PID/maps and /proc/PID/smaps of the supervisor's own process,
//! from the kernel's list of its mappings (`proc_maps`), in Linux's format.
//! Adjacent mappings alike are one line, as Linux merges such areas (the
//! kernel keeps each mmap apart). What Tessera does not have is shown as
//! Linux shows its absence: no file offset, device or inode (a file's
//! mapping is a copy of its bytes, made at mmap), and no swap.

use super::Sup;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use linuxabi::errno;
use tessera_rt::abi::linux::{
    MAPS_BRK, MAPS_EXEC, MAPS_FILE, MAPS_LOCKED, MAPS_PROGRAM, MAPS_READ, MAPS_SHARED, MAPS_STACK, MAPS_WORDS,
    MAPS_WRITE,
};
use tessera_rt::sys::calls;

/// Records asked of the kernel per call.
const BATCH: usize = 64;

/// One line: start, end, flags, present pages.
#[derive(Clone, Copy)]
struct Area {
    start: u64,
    end: u64,
    flags: u64,
    present: u64,
}

impl Sup {
    /// Its process's mappings, alike neighbours merged.
    fn areas(&self) -> Result<Vec<Area>, i64> {
        let mut out: Vec<Area> = Vec::new();
        let mut from = 0;
        loop {
            let mut buf = [0u8; BATCH * MAPS_WORDS * 8];
            let n = calls::proc_maps(self.tpid, from, &mut buf).map_err(|_| errno::ESRCH)? as usize;
            let word = |i: usize| u64::from_le_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap_or_default());
            for r in 0..n.min(BATCH) {
                let a = Area {
                    start: word(r * MAPS_WORDS),
                    end: word(r * MAPS_WORDS + 1),
                    flags: word(r * MAPS_WORDS + 2),
                    present: word(r * MAPS_WORDS + 3),
                };
                match out.last_mut() {
                    Some(l) if l.end == a.start && l.flags == a.flags && a.flags & (MAPS_FILE | MAPS_PROGRAM) == 0 => {
                        l.end = a.end;
                        l.present += a.present;
                    }
                    _ => out.push(a),
                }
                from = a.start + 1;
            }
            if n < BATCH {
                return Ok(out);
            }
        }
    }

    /// A line's header: range, permissions, offset, device, inode, name.
    fn area_line(&self, a: &Area) -> String {
        let bit = |f: u64, c: char| if a.flags & f != 0 { c } else { '-' };
        let mut line = format!(
            "{:08x}-{:08x} {}{}{}{} 00000000 00:00 0 ",
            a.start,
            a.end,
            bit(MAPS_READ, 'r'),
            bit(MAPS_WRITE, 'w'),
            bit(MAPS_EXEC, 'x'),
            if a.flags & MAPS_SHARED != 0 { 's' } else { 'p' },
        );
        let name = if a.flags & MAPS_STACK != 0 {
            "[stack]"
        } else if a.flags & MAPS_BRK != 0 {
            "[heap]"
        } else if a.flags & MAPS_PROGRAM != 0 {
            self.exe.as_str()
        } else {
            ""
        };
        if !name.is_empty() {
            // Linux pads the line to 73 characters before the name (seq_pad).
            while line.len() < 73 {
                line.push(' ');
            }
            line.push_str(name);
        }
        line.push('\n');
        line
    }

    /// Whether any mapping of its process meets `[start, end)`.
    pub(super) fn maps_overlap(&self, start: u64, end: u64) -> Result<bool, i64> {
        Ok(self.areas()?.iter().any(|a| a.start < end && start < a.end))
    }

    /// Whether its process's mappings cover `[start, end)` without a hole.
    pub(super) fn maps_cover(&self, start: u64, end: u64) -> Result<bool, i64> {
        let mut at = start;
        for a in self.areas()? {
            if a.start <= at && at < a.end {
                at = a.end;
            }
        }
        Ok(at >= end)
    }

    /// The bytes its process has locked (VmLck): the kernel marks what
    /// is locked, and a munmap takes the mark with the mapping.
    pub(super) fn locked_bytes(&self) -> u64 {
        self.areas()
            .map(|l| {
                l.iter()
                    .filter(|a| a.flags & MAPS_LOCKED != 0)
                    .map(|a| a.end - a.start)
                    .sum()
            })
            .unwrap_or(0)
    }

    pub(super) fn maps_text(&self) -> Result<Vec<u8>, i64> {
        let mut text = String::new();
        for a in self.areas()? {
            text.push_str(&self.area_line(&a));
        }
        Ok(text.into_bytes())
    }

    pub(super) fn smaps_text(&self) -> Result<Vec<u8>, i64> {
        let mut text = String::new();
        for a in self.areas()? {
            text.push_str(&self.area_line(&a));
            let size = (a.end - a.start) / 1024;
            let rss = a.present * 4;
            let locked = if a.flags & MAPS_LOCKED != 0 { size } else { 0 };
            let (shared, private) = if a.flags & MAPS_SHARED != 0 { (rss, 0) } else { (0, rss) };
            let anon = if a.flags & (MAPS_FILE | MAPS_PROGRAM) == 0 {
                rss
            } else {
                0
            };
            text.push_str(&format!(
                "Size:           {size:8} kB\nKernelPageSize:        4 kB\nMMUPageSize:           4 kB\nRss:            {rss:8} kB\nPss:            {rss:8} kB\nShared_Clean:          0 kB\nShared_Dirty:   {shared:8} kB\nPrivate_Clean:         0 kB\nPrivate_Dirty:  {private:8} kB\nReferenced:     {rss:8} kB\nAnonymous:      {anon:8} kB\nLazyFree:              0 kB\nAnonHugePages:         0 kB\nShmemPmdMapped:        0 kB\nShared_Hugetlb:        0 kB\nPrivate_Hugetlb:       0 kB\nSwap:                  0 kB\nSwapPss:               0 kB\nLocked:         {locked:8} kB\n"
            ));
        }
        Ok(text.into_bytes())
    }
}
