//! The resource pool (seed 000 §2.3–2.4, table 1). Its three functions:
//! - **reuse**: a process's constituents are not deleted when it ends but
//!   kept here, and the next creation takes them instead of making new ones;
//! - **add**: resources are made ahead of need, up to the administrator's
//!   settings (kind and count, e.g. "2 fully attached spaces for pa800"),
//!   when a setting is given (the administrator's, through `pool_set`);
//! - **reduce**: resources that stay unused are deleted by the paper's
//!   rules: always-usable kinds never; regions of 64 KiB or less never,
//!   larger ones after T unused; program-dependent kinds keep one per
//!   program, and that one goes after T unused. Deleting a composite gives
//!   its constituents back to the pool.
//!
//! Pooled resources belong to the kernel. Program-dependent kinds are keyed
//! by the plate the program comes from (its content). Kind 5, the text
//! region with content, is the program's shared text: one region per
//! read-only segment whose frames every process of the program maps, not
//! handed out but shared (`master`), so "keep one per program" is all
//! there is of it; it counts as unused only while nothing maps it.
//!
//! The settings arrive as structures (`abi::PoolSettings`, `abi::PoolRule`);
//! the language of `etc/pool.conf` is user space's.

use super::mediator;
use super::{KERNEL, Kind, ResId, vregion, vspace};
pub use abi::PoolKind;
use abi::{Error, MAX_POOL_REGION_PAGES, MAX_POOL_RULES};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use kcore::sync::IrqMutex;

/// Regions this small are never reduced (the paper's 64 KiB).
const SMALL_REGION_PAGES: usize = 16;

/// The most of one list (a kind, a program's, a region size's) that ended
/// processes and taken-apart composites may leave in the pool. Reduce
/// never deletes the always-usable kinds, so without a bound a list would
/// follow every resource ever given back that no creation took again, not
/// the most processes at once; beyond it a resource given back is deleted.
/// The add function's resources are the administrator's count instead.
pub const MAX_KEPT: usize = 64;

#[derive(Clone, Copy)]
struct Pooled {
    id: ResId,
    /// When it entered the pool (ns since boot): its unused time starts there.
    since: u64,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct KindStats {
    pub hits: u64,
    pub misses: u64,
    pub added: u64,
    pub reduced: u64,
}

/// One rule of the add function: keep `count` of `kind` ready. `key` is
/// the plate of a program-dependent kind, `pages` a region's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub kind: PoolKind,
    pub key: ResId,
    pub pages: usize,
    pub count: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub reuse: bool,
    pub reduce: bool,
    /// Unused time after which reduce deletes (the paper's T).
    pub unused_ns: u64,
    /// How often reduce and add run.
    pub interval_ns: u64,
    pub add: Vec<Rule>,
}

struct Pool {
    settings: Settings,
    work_areas: Vec<Pooled>,
    spaces: Vec<Pooled>,
    regions: BTreeMap<usize, Vec<Pooled>>,
    programs: BTreeMap<ResId, Vec<Pooled>>,
    texts: BTreeMap<ResId, Vec<Pooled>>,
    /// The text of each read-only segment of a plate's program, by plate
    /// and segment (table 1's text region with content, kind 5): one
    /// region whose frames every process of the program shares (seed 000
    /// §2.4.2 rule 3's text sharing), filled once for all. Its unused
    /// time starts when no process (nor pooled space) maps it any more.
    masters: BTreeMap<(ResId, usize), Pooled>,
    full: BTreeMap<ResId, Vec<Pooled>>,
    /// Ended forks' copies, emptied, by the space they copied and the
    /// process whose memory that is (`vspace::copy_reusing`): a process
    /// that forks again and again (a shell, a server, `make`) has its
    /// next child's space, attachments and page tables ready.
    forks: BTreeMap<(ResId, u64), Vec<Pooled>>,
    stats: [KindStats; 6],
    last_adjust: u64,
}

static POOL: IrqMutex<Pool> = IrqMutex::new(Pool {
    settings: Settings {
        reuse: true,
        reduce: true,
        unused_ns: 50_000_000,
        interval_ns: 50_000_000,
        add: Vec::new(),
    },
    work_areas: Vec::new(),
    spaces: Vec::new(),
    regions: BTreeMap::new(),
    programs: BTreeMap::new(),
    texts: BTreeMap::new(),
    masters: BTreeMap::new(),
    full: BTreeMap::new(),
    forks: BTreeMap::new(),
    stats: [KindStats {
        hits: 0,
        misses: 0,
        added: 0,
        reduced: 0,
    }; 6],
    last_adjust: 0,
});

/// Room for a new key of one of the pool's maps: a B-tree node, and its
/// parents' if it splits them.
const MAP_NODES: core::alloc::Layout = core::alloc::Layout::new::<[u64; 256]>();

impl Pool {
    /// The pooled resources of `kind`: for a program-dependent kind those
    /// of plate `key`, for a region those of `pages`; the list is made if
    /// it is missing and `make` says so and the heap has room for it (a
    /// map has no fallible insert: room is made sure of first), else None.
    fn list(&mut self, kind: PoolKind, key: ResId, pages: usize, make: bool) -> Option<&mut Vec<Pooled>> {
        fn of<K: Ord>(map: &mut BTreeMap<K, Vec<Pooled>>, k: K, make: bool) -> Option<&mut Vec<Pooled>> {
            if make && (map.contains_key(&k) || kcore::mm::heap::room_for(MAP_NODES)) {
                Some(map.entry(k).or_default())
            } else {
                map.get_mut(&k)
            }
        }
        match kind {
            PoolKind::WorkArea => Some(&mut self.work_areas),
            PoolKind::Space => Some(&mut self.spaces),
            PoolKind::Region => of(&mut self.regions, pages, make),
            PoolKind::Program => of(&mut self.programs, key, make),
            PoolKind::Text => of(&mut self.texts, key, make),
            PoolKind::Full => of(&mut self.full, key, make),
        }
    }
}

fn now() -> u64 {
    kcore::clock::nanos()
}

// ---- taking (creation) ----

/// The pool is in use when reuse is on or the add function has work:
/// the paper's "basic" configuration has neither, and takes nothing.
fn in_use(s: &Settings) -> bool {
    s.reuse || !s.add.is_empty()
}

/// Takes a pooled `kind` (for `key` or of `pages`, as `Pool::list`),
/// counting a hit or a miss; nothing while the pool is not in use.
fn take(kind: PoolKind, key: ResId, pages: usize) -> Option<ResId> {
    let mut p = POOL.lock();
    if !in_use(&p.settings) {
        return None;
    }
    let id = p.list(kind, key, pages, false).and_then(|l| l.pop()).map(|x| x.id);
    let stats = &mut p.stats[kind as usize];
    if id.is_some() {
        stats.hits += 1;
    } else {
        stats.misses += 1;
    }
    id
}

pub fn take_work_area() -> Option<ResId> {
    take(PoolKind::WorkArea, ResId::NONE, 0)
}
pub fn take_space() -> Option<ResId> {
    take(PoolKind::Space, ResId::NONE, 0)
}
pub fn take_region(pages: usize) -> Option<ResId> {
    take(PoolKind::Region, ResId::NONE, pages)
}
pub fn take_program(plate: ResId) -> Option<ResId> {
    take(PoolKind::Program, plate, 0)
}
pub fn take_text(plate: ResId) -> Option<ResId> {
    let r = take(PoolKind::Text, plate, 0)?;
    if vregion::maps_nvm(r) {
        let pages = vregion::size(r).map_or(0, |(_, bytes)| bytes / 4096);
        count_nvm_reuse(pages);
    }
    Some(r)
}
pub fn take_full(plate: ResId) -> Option<ResId> {
    let space = take(PoolKind::Full, plate, 0)?;
    if let Ok(s) = vspace::get(KERNEL, space) {
        let nvm: u64 = s
            .lock()
            .regions()
            .filter(|a| a.region.is_nvm())
            .map(|a| a.region.resident_pages() as u64)
            .sum();
        if nvm > 0 {
            count_nvm_reuse(nvm);
        }
    }
    Some(space)
}

/// Pooled spaces and text regions of OFF2F programs taken again, and the
/// NVM text pages they held mapped: pages reused with no copy at all.
pub static NVM_TEXT_REUSES: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
pub static NVM_TEXT_PAGES_REUSED: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

fn count_nvm_reuse(pages: u64) {
    use core::sync::atomic::Ordering::Relaxed;
    NVM_TEXT_REUSES.fetch_add(1, Relaxed);
    NVM_TEXT_PAGES_REUSED.fetch_add(pages, Relaxed);
}

// ---- giving back (reuse) ----

/// Whether ended processes' resources are kept (the reuse function).
pub fn reuse_enabled() -> bool {
    POOL.lock().settings.reuse
}

fn keep(list: &mut Vec<Pooled>, id: ResId) -> bool {
    if list.try_reserve(1).is_err() {
        return false;
    }
    list.push(Pooled { id, since: now() });
    true
}

/// Puts a resource into the pool; false if the pool cannot take it (the
/// caller then deletes it): out of memory, or its list already holds
/// `MAX_KEPT`.
fn put(kind: PoolKind, key: ResId, pages: usize, id: ResId) -> bool {
    put_within(kind, key, pages, id, MAX_KEPT)
}

fn put_within(kind: PoolKind, key: ResId, pages: usize, id: ResId, most: usize) -> bool {
    POOL.lock()
        .list(kind, key, pages, true)
        .is_some_and(|l| l.len() < most && keep(l, id))
}

pub fn put_work_area(id: ResId) -> bool {
    put(PoolKind::WorkArea, ResId::NONE, 0, id)
}
pub fn put_space(id: ResId) -> bool {
    put(PoolKind::Space, ResId::NONE, 0, id)
}
pub fn put_region(id: ResId) -> bool {
    // A region sharing a program's text frames is no empty region: a
    // reuse would refill frames other processes run.
    !vregion::maps_nvm(id)
        && vregion::joint(id).is_none()
        && vregion::size(id).is_some_and(|(pages, _)| put(PoolKind::Region, ResId::NONE, pages, id))
}
pub fn put_program(plate: ResId, id: ResId) -> bool {
    put(PoolKind::Program, plate, 0, id)
}
pub fn put_text(plate: ResId, id: ResId) -> bool {
    put(PoolKind::Text, plate, 0, id)
}
pub fn put_full(plate: ResId, id: ResId) -> bool {
    put(PoolKind::Full, plate, 0, id)
}

// ---- forks' copies ----

/// The most ended forks' copies kept for one process: its children alive
/// at once (a pipeline's), not every one it ever had.
const MAX_FORKS: usize = 4;

/// An ended fork's copy of space `space` of process `owner`, emptied, for
/// its next fork.
pub fn take_fork(space: ResId, owner: u64) -> Option<ResId> {
    // An emptied list stays, for the copy the child leaves at its end:
    // its key goes with the process (`drop_forks`), or after T (`reduce`).
    POOL.lock().forks.get_mut(&(space, owner))?.pop().map(|x| x.id)
}

/// Keeps `id`, an ended fork's copy of space `space` of process `owner`
/// (emptied), for that process's next fork; false if the pool will not
/// (reuse off, no memory, enough kept), and the caller deletes it.
pub fn put_fork(space: ResId, owner: u64, id: ResId) -> bool {
    let mut p = POOL.lock();
    if !p.settings.reuse {
        return false;
    }
    // A map has no fallible insert: room for a node first.
    if !p.forks.contains_key(&(space, owner)) && !kcore::mm::heap::room_for(MAP_NODES) {
        return false;
    }
    let list = p.forks.entry((space, owner)).or_default();
    list.len() < MAX_FORKS && keep(list, id)
}

/// The forks' copies kept for space `space` go (its process ended).
pub fn drop_forks(space: ResId) {
    loop {
        let id = {
            let mut p = POOL.lock();
            let Some((&key, list)) = p.forks.range_mut((space, 0)..=(space, u64::MAX)).next() else {
                break;
            };
            let x = list.pop();
            if list.is_empty() {
                p.forks.remove(&key);
            }
            x
        };
        if let Some(x) = id {
            super::proc::spawn::destroy_space(x.id);
        }
    }
}

/// How many forks' copies the pool keeps.
pub fn forks_kept() -> usize {
    POOL.lock().forks.values().map(Vec::len).sum()
}

/// Some kept fork's copy, taken out of the pool (the lists left empty
/// go on the way).
fn take_any_fork() -> Option<ResId> {
    let mut p = POOL.lock();
    loop {
        let (&key, list) = p.forks.iter_mut().next()?;
        let x = list.pop();
        if list.is_empty() {
            p.forks.remove(&key);
        }
        if let Some(x) = x {
            return Some(x.id);
        }
    }
}

// ---- shared text ----

/// The shared text of segment `segment` of `plate`'s program, if kept:
/// a hit for kind 5, else a miss (counted while the pool is in use).
pub fn master(plate: ResId, segment: usize) -> Option<ResId> {
    let mut p = POOL.lock();
    let now = now();
    let id = p.masters.get_mut(&(plate, segment)).map(|x| {
        x.since = now;
        x.id
    });
    if in_use(&p.settings) {
        let stats = &mut p.stats[PoolKind::Text as usize];
        if id.is_some() {
            stats.hits += 1;
        } else {
            stats.misses += 1;
        }
    }
    id
}

/// What `keep_master` did with a new shared text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Master {
    /// Kept: it is the program's shared text now.
    Kept,
    /// Another was kept meanwhile (a spawn on another CPU): that one is
    /// the program's; the new one is the caller's to delete.
    Other(ResId),
    /// No room to remember it: the caller shares it and deletes it.
    Refused,
}

/// Keeps `id` as the shared text of segment `segment` of `plate`'s
/// program, unless one is kept already.
pub fn keep_master(plate: ResId, segment: usize, id: ResId) -> Master {
    let mut p = POOL.lock();
    if let Some(x) = p.masters.get(&(plate, segment)) {
        return Master::Other(x.id);
    }
    if !kcore::mm::heap::room_for(MAP_NODES) {
        return Master::Refused;
    }
    p.masters.insert((plate, segment), Pooled { id, since: now() });
    Master::Kept
}

/// A process of `plate`'s program ended. With the pool not in use (the
/// paper's basic configuration) nothing is kept for a next one: a shared
/// text no process maps any longer goes now. (Else it stays until reduce
/// finds it unused for T.)
pub fn text_unused(plate: ResId) {
    let victims: Vec<ResId> = {
        let p = POOL.lock();
        if in_use(&p.settings) {
            return;
        }
        let keys = p.masters.range((plate, 0)..=(plate, usize::MAX)).map(|(_, x)| x.id);
        match super::try_collect(keys) {
            Ok(v) => v,
            Err(_) => return,
        }
    };
    for id in victims {
        if vregion::joint(id).is_some_and(|(sharers, _)| sharers == 0) {
            let gone = {
                let mut p = POOL.lock();
                let key = p.masters.iter().find(|(_, x)| x.id == id).map(|(k, _)| *k);
                key.and_then(|k| p.masters.remove(&k)).is_some()
            };
            if gone {
                let _ = mediator::delete(KERNEL, id);
            }
        }
    }
}

// ---- deleting (reduce, flush) ----

/// Deletes a pooled resource. Composites are taken apart and their parts
/// go back to the pool (or are deleted if it refuses them).
fn delete(kind: PoolKind, key: ResId, id: ResId) {
    match kind {
        PoolKind::Full => {
            // Space + text region with content + other regions. Only the
            // one executable region is the program's text: read-only data
            // is not, and handing it out as text would run non-executable
            // pages. Taken apart one attachment at a time, so that it
            // allocates nothing (it runs when memory is gone).
            let space = vspace::get(KERNEL, id).ok();
            let texts = space
                .as_ref()
                .map_or(0, |s| s.lock().regions().filter(|a| a.region.executable).count());
            let first = || {
                let s = space.as_ref()?.lock();
                let a = s.regions().next()?;
                Some((a.link_id, a.region_id, texts == 1 && a.region.executable))
            };
            while let Some((link, region, is_text)) = first() {
                if mediator::delete(KERNEL, link).is_err() {
                    break;
                }
                // A share of the program's text goes: the text stays
                // pooled as the program's shared text itself.
                let kept = if vregion::joint(region).is_some() {
                    false
                } else if is_text {
                    put_text(key, region)
                } else {
                    put_region(region)
                };
                if !kept {
                    let _ = mediator::delete(KERNEL, region);
                }
            }
            drop(space);
            if !put_space(id) {
                let _ = mediator::delete(KERNEL, id);
            }
        }
        PoolKind::Text => {
            if !put_region(id) {
                let _ = mediator::delete(KERNEL, id);
            }
        }
        PoolKind::WorkArea => {
            let region = super::vkspace::region_of(id);
            let _ = mediator::delete(KERNEL, id);
            if let Some(r) = region {
                let _ = mediator::delete(KERNEL, r);
            }
        }
        PoolKind::Space | PoolKind::Region | PoolKind::Program => {
            let _ = mediator::delete(KERNEL, id);
        }
    }
}

/// One reduce pass at time `now` (tests drive this clock directly).
/// Returns how many resources it deleted.
pub fn reduce(now: u64) -> usize {
    // Forks' copies unused for T go (out of memory for the list, they
    // stay until the next pass).
    let mut forks: Vec<ResId> = Vec::new();
    {
        let mut guard = POOL.lock();
        let p = &mut *guard;
        let t = p.settings.unused_ns;
        for list in p.forks.values_mut() {
            list.retain(|x| {
                let go = now.saturating_sub(x.since) >= t && forks.try_reserve(1).is_ok();
                if go {
                    forks.push(x.id);
                }
                !go
            });
        }
        p.forks.retain(|_, l| !l.is_empty());
    }
    for &id in &forks {
        super::proc::spawn::destroy_space(id);
    }
    forks.len() + reduce_kinds(now)
}

fn reduce_kinds(now: u64) -> usize {
    let mut victims: Vec<(PoolKind, ResId, ResId)> = Vec::new();
    // Which shared texts processes (or pooled spaces) map: looked at
    // outside the pool's lock (the regions' table is locked for it). Out
    // of memory for the list, none is judged this pass.
    let mut texts: Vec<((ResId, usize), ResId, usize)> = {
        let p = POOL.lock();
        super::try_collect(p.masters.iter().map(|(k, x)| (*k, x.id, 0))).unwrap_or_default()
    };
    for (_, id, sharers) in texts.iter_mut() {
        *sharers = vregion::joint(*id).map_or(0, |(n, _)| n);
    }
    {
        let mut guard = POOL.lock();
        let p = &mut *guard;
        let t = p.settings.unused_ns;
        let expired = |x: &Pooled| now.saturating_sub(x.since) >= t;
        // A shared text in use is not unused: its time starts again. One
        // no process maps goes after T (rule 3: one kept per program, and
        // it too after T unused).
        for (key, id, sharers) in &texts {
            let Some(x) = p.masters.get_mut(key).filter(|x| x.id == *id) else {
                continue;
            };
            if *sharers > 0 {
                x.since = now;
            } else if expired(x) && victims.try_reserve(1).is_ok() {
                p.masters.remove(key);
                victims.push((PoolKind::Text, key.0, *id));
            }
        }
        // Program-dependent kinds, composites first so that their parts are
        // judged by their own rules afterwards.
        for (kind, map) in [
            (PoolKind::Full, &mut p.full),
            (PoolKind::Text, &mut p.texts),
            (PoolKind::Program, &mut p.programs),
        ] {
            for (plate, list) in map.iter_mut() {
                // Keep one per program: the surplus goes now, oldest first;
                // the one kept goes when it has been unused for T. (Sorted
                // in place: a stable sort allocates, and reduce runs when
                // memory may be gone.)
                list.sort_unstable_by_key(|x| x.since);
                let surplus = list.len().saturating_sub(1);
                let mut index = 0;
                list.retain(|x| {
                    // Out of memory for the list of victims, it stays.
                    let go = (index < surplus || expired(x)) && victims.try_reserve(1).is_ok();
                    index += 1;
                    if go {
                        victims.push((kind, *plate, x.id));
                    }
                    !go
                });
            }
            map.retain(|_, l| !l.is_empty());
        }
        for (pages, list) in p.regions.iter_mut() {
            if *pages > SMALL_REGION_PAGES {
                list.retain(|x| {
                    if expired(x) && victims.try_reserve(1).is_ok() {
                        victims.push((PoolKind::Region, ResId::NONE, x.id));
                        false
                    } else {
                        true
                    }
                });
            }
        }
        p.regions.retain(|_, l| !l.is_empty());
        for (kind, _, _) in &victims {
            p.stats[*kind as usize].reduced += 1;
        }
    }
    let n = victims.len();
    for (kind, key, id) in victims {
        delete(kind, key, id);
    }
    // Parts of composites re-entered the pool now; with T = 0 they are due too.
    if n > 0 && POOL.lock().settings.unused_ns == 0 {
        return n + reduce_kinds(now);
    }
    n
}

/// Deletes everything in the pool (administrator's flush; leak tests;
/// memory running out). One entry at a time, so that it allocates
/// nothing: it must work when nothing else can.
pub fn flush() -> usize {
    let mut n = 0;
    while let Some(id) = take_any_fork() {
        super::proc::spawn::destroy_space(id);
        n += 1;
    }
    while let Some((kind, key, id)) = take_any() {
        // A composite gives its parts back, and the loop takes them too.
        delete(kind, key, id);
        n += 1;
    }
    n
}

/// Some entry of the pool, taken out of it.
fn take_any() -> Option<(PoolKind, ResId, ResId)> {
    let mut guard = POOL.lock();
    let p = &mut *guard;
    for (kind, map) in [
        (PoolKind::Full, &mut p.full),
        (PoolKind::Text, &mut p.texts),
        (PoolKind::Program, &mut p.programs),
    ] {
        if let Some((&plate, list)) = map.iter_mut().next() {
            let x = list.pop();
            if list.is_empty() {
                map.remove(&plate);
            }
            if let Some(x) = x {
                return Some((kind, plate, x.id));
            }
        }
    }
    if let Some((&key, x)) = p.masters.iter().next() {
        let id = x.id;
        p.masters.remove(&key);
        return Some((PoolKind::Text, key.0, id));
    }
    if let Some((&pages, list)) = p.regions.iter_mut().next() {
        let x = list.pop();
        if list.is_empty() {
            p.regions.remove(&pages);
        }
        if let Some(x) = x {
            return Some((PoolKind::Region, ResId::NONE, x.id));
        }
    }
    if let Some(x) = p.work_areas.pop() {
        return Some((PoolKind::WorkArea, ResId::NONE, x.id));
    }
    p.spaces.pop().map(|x| (PoolKind::Space, ResId::NONE, x.id))
}

/// Memory running short: the pool gives back all it holds, then the page
/// caches nothing maps any longer go (`program::drop_page_caches`: those
/// of the programs the pool held among them), and the freed large kernel
/// allocations still mapped (`kcore::mm::large::reclaim`). How many
/// things went.
pub fn reclaim() -> usize {
    flush() + super::program::drop_page_caches() + kcore::mm::large::reclaim() as usize
}

/// Runs `f`; if it runs out of memory and the pool held anything, the
/// pool gives all it holds back and `f` runs once more: under memory
/// pressure the pool is emptied before anyone is refused. `f` must leave
/// nothing behind when it fails.
pub fn or_reclaim<T>(mut f: impl FnMut() -> Result<T, Error>) -> Result<T, Error> {
    match f() {
        Err(Error::NoMemory) if reclaim() > 0 => f(),
        done => done,
    }
}

// ---- adding ----

fn count(kind: PoolKind, key: ResId, pages: usize) -> usize {
    let p = POOL.lock();
    match kind {
        PoolKind::WorkArea => p.work_areas.len(),
        PoolKind::Space => p.spaces.len(),
        PoolKind::Region => p.regions.get(&pages).map_or(0, Vec::len),
        PoolKind::Program => p.programs.get(&key).map_or(0, Vec::len),
        PoolKind::Text => {
            p.texts.get(&key).map_or(0, Vec::len)
                + usize::from(p.masters.range((key, 0)..=(key, usize::MAX)).next().is_some())
        }
        PoolKind::Full => p.full.get(&key).map_or(0, Vec::len),
    }
}

/// Makes one resource of `kind` and pools it, past `MAX_KEPT` if the
/// rule says so; one the pool cannot keep is deleted again.
fn make(kind: PoolKind, key: ResId, pages: usize) -> Result<(), Error> {
    use crate::proc::spawn;
    let id = match kind {
        PoolKind::WorkArea => spawn::new_work_area()?,
        PoolKind::Space => vspace::create(KERNEL)?,
        PoolKind::Region => spawn::new_region(pages)?,
        PoolKind::Program => super::program::create(KERNEL, key)?,
        // A program's shared text is kept by the pool as it is made.
        PoolKind::Text => match spawn::new_text_region(key)? {
            Some(id) => id,
            None => return Ok(()),
        },
        PoolKind::Full => spawn::compose_space(key)?,
    };
    if put_within(kind, key, pages, id, usize::MAX) {
        Ok(())
    } else {
        delete(kind, key, id);
        Err(Error::NoMemory)
    }
}

/// The add function: fills the pool up to the settings.
pub fn add() -> Result<usize, Error> {
    let rules = POOL.lock().settings.add.clone();
    let mut made = 0;
    for &Rule {
        kind,
        key,
        pages,
        count: want,
    } in &rules
    {
        // A program has one shared text (per read-only segment): more
        // would be copies of it.
        let want = if kind == PoolKind::Text { want.min(1) } else { want };
        // A resource `make` returns from is kept, but a spawn on another
        // CPU may take it at once (a burst running while its pool is
        // filled): the count need not rise. Twice what is wanted is as
        // many as this rule makes, so that such a race ends the rule
        // rather than failing it, and nothing loops for ever.
        let mut left = want.saturating_mul(2);
        while count(kind, key, pages) < want && left > 0 {
            make(kind, key, pages)?;
            POOL.lock().stats[kind as usize].added += 1;
            made += 1;
            left -= 1;
        }
    }
    Ok(made)
}

/// The resource adjustment part's periodic work, run by CPU 0 when idle:
/// every interval, a reduce pass (when reduce is on).
pub fn on_idle() {
    let t = now();
    {
        let mut p = POOL.lock();
        if !p.settings.reduce || t.saturating_sub(p.last_adjust) < p.settings.interval_ns {
            return;
        }
        p.last_adjust = t;
    }
    reduce(t);
}

// ---- settings ----

/// The settings `pool_set` gives, checked: flags are 0 or 1, the interval
/// is not 0, and each rule names what its kind needs (an existing plate for
/// the program-dependent kinds, a size for regions) and nothing else.
pub fn settings_from(s: &abi::PoolSettings, rules: &[abi::PoolRule]) -> Result<Settings, Error> {
    let flag = |v: u64| match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::Invalid),
    };
    if s.interval_ns == 0 {
        return Err(Error::Invalid);
    }
    if rules.len() as u64 > MAX_POOL_RULES {
        return Err(Error::Limit);
    }
    let mut add = Vec::new();
    add.try_reserve_exact(rules.len()).map_err(|_| Error::NoMemory)?;
    for r in rules {
        add.push(rule_from(r)?);
    }
    Ok(Settings {
        reuse: flag(s.reuse)?,
        reduce: flag(s.reduce)?,
        unused_ns: s.unused_ns,
        interval_ns: s.interval_ns,
        add,
    })
}

fn rule_from(r: &abi::PoolRule) -> Result<Rule, Error> {
    let kind = PoolKind::from_u64(r.kind).ok_or(Error::Invalid)?;
    let count = usize::try_from(r.count).map_err(|_| Error::Invalid)?;
    let (key, pages) = match kind {
        PoolKind::WorkArea | PoolKind::Space if r.plate == 0 && r.pages == 0 => (ResId::NONE, 0),
        PoolKind::Region if r.plate == 0 && (1..=MAX_POOL_REGION_PAGES).contains(&r.pages) => {
            (ResId::NONE, r.pages as usize)
        }
        PoolKind::Program | PoolKind::Text | PoolKind::Full if r.pages == 0 => {
            let plate = ResId::from_raw(r.plate);
            if plate.kind() != Kind::Plate as u8 {
                return Err(Error::Invalid);
            }
            super::plate::content(plate)?;
            (plate, 0)
        }
        _ => return Err(Error::Invalid),
    };
    Ok(Rule {
        kind,
        key,
        pages,
        count,
    })
}

/// Replaces the settings and the add function's rules.
pub fn set(settings: Settings) {
    POOL.lock().settings = settings;
}

pub fn settings() -> Settings {
    POOL.lock().settings.clone()
}

// ---- statistics ----

#[derive(Debug, Clone, Copy, Default)]
pub struct KindReport {
    pub count: usize,
    pub bytes: u64,
    pub stats: KindStats,
}

/// A pooled space's memory: its page tables and its regions' pages, but
/// not the program's shared text, which the shared text's own entry
/// counts once for every space that maps it.
fn space_bytes(id: ResId) -> u64 {
    vspace::get(KERNEL, id).map_or(0, |s| {
        let s = s.lock();
        let shared_text: usize = s
            .regions()
            .filter(|a| !a.region.writable && a.region.frame_set().is_some())
            .map(|a| a.region.resident_pages())
            .sum();
        vspace::bytes(&s) - shared_text as u64 * 4096
    })
}

/// Count, memory and counters of every pool kind.
pub fn report() -> [KindReport; 6] {
    let (wa, sp, rg, pr, tx, fu, stats, ms) = {
        let p = POOL.lock();
        // Out of heap, a list is empty: the report is the inspector's, and
        // must not fail for want of memory (nor panic).
        let ids = |l: &Vec<Pooled>| super::try_collect(l.iter().map(|x| x.id)).unwrap_or_default();
        fn flat<K>(m: &BTreeMap<K, Vec<Pooled>>) -> Vec<ResId> {
            super::try_collect(m.values().flat_map(|l| l.iter().map(|x| x.id))).unwrap_or_default()
        }
        // A fork's kept copy counts as a space: empty, its page tables
        // and attachments all it holds.
        let mut spaces = ids(&p.spaces);
        let forks = flat(&p.forks);
        if spaces.try_reserve(forks.len()).is_ok() {
            spaces.extend_from_slice(&forks);
        }
        (
            ids(&p.work_areas),
            spaces,
            flat(&p.regions),
            flat(&p.programs),
            flat(&p.texts),
            flat(&p.full),
            p.stats,
            super::try_collect(p.masters.values().map(|x| x.id)).unwrap_or_default(),
        )
    };
    // A shared text holds the pages its processes filled: the pool's
    // memory while only the pool's own spaces map it, a live process's
    // while one does (as its text was before it was shared).
    let pooled_maps = |set: usize| -> usize {
        fu.iter()
            .filter_map(|id| vspace::get(KERNEL, *id).ok())
            .map(|s| {
                s.lock()
                    .regions()
                    .filter(|a| a.region.frame_set().is_some_and(|(k, _)| k == set))
                    .count()
            })
            .sum()
    };
    let shared_bytes: u64 = ms
        .iter()
        .filter_map(|id| Some((vregion::joint(*id)?, vregion::joint_set(*id)?)))
        .filter(|&((sharers, _), set)| sharers <= pooled_maps(set))
        .map(|((_, present), _)| present as u64 * 4096)
        .sum();
    let region_bytes = |ids: &[ResId]| ids.iter().map(|id| vregion::size(*id).map_or(0, |s| s.1)).sum::<u64>();
    let bytes = [
        wa.len() as u64 * 4096,
        sp.iter().map(|id| space_bytes(*id)).sum(),
        region_bytes(&rg),
        0,
        region_bytes(&tx) + shared_bytes,
        fu.iter().map(|id| space_bytes(*id)).sum(),
    ];
    let counts = [wa.len(), sp.len(), rg.len(), pr.len(), tx.len() + ms.len(), fu.len()];
    core::array::from_fn(|i| KindReport {
        count: counts[i],
        bytes: bytes[i],
        stats: stats[i],
    })
}

/// Memory held by the pool, in bytes.
pub fn bytes() -> u64 {
    report().iter().map(|r| r.bytes).sum()
}
