//! Power lost at every point of a store or delete: after mount, every file is
//! whole, either as committed before the change or as the change made it,
//! and the store goes on working.

use nvmstore::sim::SimRegion;
use nvmstore::{Error, FormatOptions, PAGE_SIZE, Region, Store};
use std::collections::BTreeMap;
use testdata::Rng;

type Files = BTreeMap<String, Vec<u8>>;

fn content(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = Rng(seed);
    (0..len).map(|_| rng.next() as u8).collect()
}

const REGION: usize = 64 * PAGE_SIZE as usize;

/// A store with a few files and a hole left by a deleted one, all durable.
fn populated() -> (SimRegion, Files) {
    let mut store = Store::format(SimRegion::new(REGION), FormatOptions { capacity: Some(16) }).unwrap();
    let mut files = Files::new();
    for (name, len) in [
        ("a", 3 * 4096 + 100),
        ("b", 4096),
        ("c", 0),
        ("d", 5000),
        ("e", 2 * 4096),
    ] {
        let data = content(len as u64, len);
        store.store(name, &data).unwrap();
        files.insert(name.to_string(), data);
    }
    store.delete("d").unwrap();
    files.remove("d");
    (store.into_region(), files)
}

#[derive(Clone)]
enum Op {
    Store(String, Vec<u8>),
    Delete(String),
}

impl Op {
    fn apply(&self, store: &mut Store<SimRegion>) -> Result<(), Error> {
        match self {
            Op::Store(name, data) => store.store(name, data).map(|_| ()),
            Op::Delete(name) => store.delete(name),
        }
    }

    fn name(&self) -> &str {
        match self {
            Op::Store(n, _) | Op::Delete(n) => n,
        }
    }

    fn after(&self, before: &Files) -> Files {
        let mut files = before.clone();
        match self {
            Op::Store(n, d) => files.insert(n.clone(), d.clone()),
            Op::Delete(n) => files.remove(n),
        };
        files
    }
}

/// What the store holds, every file read back and its checksum verified.
fn contents(store: &Store<SimRegion>) -> Files {
    let mut files = Files::new();
    for f in store.files() {
        let mut buf = vec![0u8; f.len as usize];
        store.read(f.name, 0, &mut buf).unwrap();
        assert!(store.verify(f.name).unwrap(), "{}: checksum", f.name);
        assert_eq!(f.offset % PAGE_SIZE, 0);
        files.insert(f.name.to_string(), buf);
    }
    let space = store.space();
    assert_eq!(space.used_pages, store.files().map(|f| f.pages).sum::<u64>());
    files
}

/// The states the medium may be in after `region` lost power: nothing
/// pending reached it, all did, prefixes and suffixes in program order,
/// random subsets.
fn crash_images(region: &SimRegion, rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut images = vec![region.image(|_| 0), region.image(|n| n)];
    let numbers = region.pending_write_numbers();
    let step = (numbers.len() / 24).max(1);
    for n in numbers.iter().step_by(step) {
        images.push(region.image_upto(*n));
        images.push(region.image_from(*n));
    }
    for _ in 0..8 {
        images.push(region.image(|n| rng.below(n as u64 + 1) as usize));
    }
    images
}

/// Cuts the power after each operation `op` makes, and checks every image.
fn crash_everywhere(region: &SimRegion, before: &Files, op: &Op, rng: &mut Rng) -> usize {
    let after = op.after(before);
    let mut dry = Store::mount(region.clone()).unwrap();
    let start = dry.region().ops();
    op.apply(&mut dry).unwrap();
    assert_eq!(contents(&dry), after);
    let total = dry.region().ops() - start;
    let mut checked = 0;
    for cut in 0..=total {
        let mut r = region.clone();
        r.cut_power_after(cut);
        let mut store = Store::mount(r).unwrap();
        let _ = op.apply(&mut store);
        for image in crash_images(store.region(), rng) {
            let store = Store::mount(SimRegion::from_image(image)).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            let found = contents(&store);
            assert!(
                found == *before || found == after,
                "cut after {cut} of {total} operations: {} is neither old nor new",
                op.name()
            );
            // The store goes on: a further change commits and survives.
            let mut store = store;
            store.store("z", b"after the crash").unwrap();
            let again = Store::mount(store.into_region()).unwrap();
            assert_eq!(
                contents(&again).get("z").map(Vec::as_slice),
                Some(&b"after the crash"[..])
            );
            checked += 1;
        }
    }
    checked
}

#[test]
fn store_new_file_replace_and_delete_survive_power_loss_anywhere() {
    let (region, files) = populated();
    let mut rng = Rng(1);
    let ops = [
        Op::Store("new".into(), content(7, 2 * 4096 + 17)),
        Op::Store("a".into(), content(8, 4096 + 1)),
        Op::Store("a".into(), content(9, 6 * 4096)),
        Op::Store("b".into(), content(10, 4096)),
        Op::Store("e".into(), Vec::new()),
        Op::Store("c".into(), content(11, 10)),
        Op::Delete("a".into()),
    ];
    let mut checked = 0;
    for op in &ops {
        checked += crash_everywhere(&region, &files, op, &mut rng);
    }
    assert!(checked > 500, "only {checked} crash images checked");
}

#[test]
fn replacing_in_a_nearly_full_store_never_touches_the_old_version() {
    let (region, mut files) = populated();
    let mut store = Store::mount(region).unwrap();
    // Leave one run of 8 free pages (and the small hole of "d"): a
    // replacement of 8 pages must go there, or nowhere.
    let largest = store.space().largest_free_run;
    let filler = content(3, ((largest - 8) * PAGE_SIZE) as usize);
    store.store("filler", &filler).unwrap();
    files.insert("filler".into(), filler);
    let region = store.into_region();
    let mut rng = Rng(2);
    crash_everywhere(&region, &files, &Op::Store("a".into(), content(4, 8 * 4096)), &mut rng);
    let mut store = Store::mount(region).unwrap();
    let err = store.store("a", &content(5, 9 * 4096)).unwrap_err();
    assert!(matches!(err, Error::NoSpace { needed_pages: 9, .. }), "{err}");
    assert_eq!(contents(&store), files, "a refused store changes nothing");
}

#[test]
fn repeated_crashes_in_a_long_random_history() {
    let (mut region, mut files) = populated();
    let mut rng = Rng(3);
    let names = ["a", "b", "c", "e", "f", "g", "h"];
    for round in 0..300 {
        let name = names[rng.below(names.len() as u64) as usize].to_string();
        let op = if rng.below(4) == 0 {
            Op::Delete(name)
        } else {
            let len = rng.below(5 * 4096) as usize;
            Op::Store(name, content(rng.next(), len))
        };
        let after = op.after(&files);
        let mut dry = Store::mount(region.clone()).unwrap();
        let start = dry.region().ops();
        let outcome = op.apply(&mut dry);
        let total = dry.region().ops() - start;
        if let Err(e) = outcome {
            // Out of room or no such file: refused, and nothing changed.
            assert!(matches!(e, Error::NoSpace { .. } | Error::NotFound), "{e}");
            assert_eq!(contents(&dry), files);
            continue;
        }
        let cut = rng.below(total + 2);
        let mut r = region.clone();
        r.cut_power_after(cut);
        let mut store = Store::mount(r).unwrap();
        let _ = op.apply(&mut store);
        let images = crash_images(store.region(), &mut rng);
        let image = images[rng.below(images.len() as u64) as usize].clone();
        let store = Store::mount(SimRegion::from_image(image)).unwrap();
        let found = contents(&store);
        assert!(found == files || found == after, "round {round}");
        files = found;
        region = store.into_region();
        region = SimRegion::from_image(region.image(|n| n));
    }
}

#[test]
fn refusals_change_nothing() {
    let (region, files) = populated();
    let mut store = Store::mount(region).unwrap();
    assert_eq!(store.store("a/b", b"x").unwrap_err(), Error::BadName);
    assert_eq!(store.store("", b"x").unwrap_err(), Error::BadName);
    assert_eq!(store.delete("nope").unwrap_err(), Error::NotFound);
    assert_eq!(
        store.store_from("f", 10, |_, _| Err(())).unwrap_err(),
        Error::Source,
        "a failing source"
    );
    for i in 0..12 {
        store.store(&format!("n{i}"), b"").unwrap();
    }
    let full = store.store("one-too-many", b"").unwrap_err();
    assert_eq!(full, Error::DirectoryFull { capacity: 16 });
    store.store("n0", b"replacing needs no new entry").unwrap();
    let mut expect = files;
    for i in 1..12 {
        expect.insert(format!("n{i}"), Vec::new());
    }
    expect.insert("n0".into(), b"replacing needs no new entry".to_vec());
    let store = Store::mount(store.into_region()).unwrap();
    assert_eq!(contents(&store), expect);
}

#[test]
fn pages_still_held_after_a_replace_or_delete_are_never_reused() {
    let (region, _) = populated();
    let mut store = Store::mount(region).unwrap();
    let old_a = content(3 * 4096 + 100, 3 * 4096 + 100);
    let a = store.lookup("a").map(|f| (f.offset, f.pages)).unwrap();
    let e = store.lookup("e").map(|f| (f.offset, f.pages)).unwrap();
    let held = [a, e];
    store.set_held(held);
    let free_before = store.space().free_pages;
    // Replace "a" and delete "e": their old pages stay held, then fill
    // every free page with new files.
    store.store("a", &content(77, 2 * 4096)).unwrap();
    store.delete("e").unwrap();
    assert_eq!(store.space().free_pages, free_before - 2, "the new a's two pages only");
    let mut i = 0;
    while store.space().free_pages > 0 {
        let n = store.space().largest_free_run;
        store
            .store(&format!("fill{i}"), &content(i, (n * PAGE_SIZE) as usize))
            .unwrap();
        i += 1;
    }
    for f in store.files() {
        for (off, pages) in held {
            let overlap = f.offset < off + pages * PAGE_SIZE && off < f.offset + f.pages * PAGE_SIZE;
            assert!(!overlap, "{} was given held pages", f.name);
        }
    }
    let mut buf = vec![0u8; old_a.len()];
    store.region().read(a.0, &mut buf).unwrap();
    assert_eq!(buf, old_a, "the old a's pages are as they were");
    // Released, they are free again.
    store.set_held([]);
    assert_eq!(store.space().free_pages, a.1 + e.1);
}

#[test]
fn storing_the_same_content_again_writes_nothing() {
    let (region, _) = populated();
    let mut store = Store::mount(region).unwrap();
    let seq = store.sequence();
    let ops = store.region().ops();
    let a = content(3 * 4096 + 100, 3 * 4096 + 100);
    store.store("a", &a).unwrap();
    assert_eq!((store.sequence(), store.region().ops()), (seq, ops));
}

#[test]
fn format_cut_short_leaves_no_store_that_mounts() {
    let (old, _) = populated();
    let start = old.ops();
    let dry = Store::format(old.clone(), FormatOptions { capacity: Some(8) })
        .unwrap()
        .into_region();
    let total = dry.ops() - start;
    let mut rng = Rng(4);
    for cut in 0..total {
        let mut r = old.clone();
        r.cut_power_after(cut);
        let r = Store::format(r, FormatOptions { capacity: Some(8) })
            .unwrap()
            .into_region();
        for image in crash_images(&r, &mut rng) {
            match Store::mount(SimRegion::from_image(image)) {
                // Either the old store, untouched so far, or none at all:
                // never a mixture of two geometries.
                Ok(s) => assert!(s.geometry().capacity == 16 || s.files().count() == 0),
                Err(e) => assert!(matches!(e, Error::NotFormatted | Error::Corrupt(_)), "{e}"),
            }
        }
    }
}

#[test]
fn hostile_images_never_panic() {
    let (region, _) = populated();
    let good = region.image(|n| n);
    let mut rng = Rng(5);
    let mut mounted = 0;
    for round in 0..3000 {
        let mut img = good.clone();
        // Most mutations go to the superblock and the directory slots.
        let hot = if round % 4 == 0 {
            img.len()
        } else {
            3 * PAGE_SIZE as usize
        };
        for _ in 0..1 + rng.below(8) {
            let at = rng.below(hot as u64) as usize;
            img[at] = match rng.below(3) {
                0 => rng.next() as u8,
                1 => img[at] ^ (1 << rng.below(8)),
                _ => 0xff,
            };
        }
        if round % 50 == 0 {
            img = content(round, img.len());
        }
        let Ok(mut store) = Store::mount(SimRegion::from_image(img)) else {
            continue;
        };
        mounted += 1;
        let names: Vec<String> = store.files().map(|f| f.name.to_string()).collect();
        for n in &names {
            let mut buf = vec![0u8; store.lookup(n).unwrap().len as usize];
            store.read(n, 0, &mut buf).unwrap();
            let _ = store.verify(n);
        }
        let _ = store.store("new", &[1; 5000]);
        if let Some(n) = names.first() {
            let _ = store.delete(n);
        }
        Store::mount(store.into_region()).unwrap();
    }
    assert!(
        mounted > 100,
        "mutations only in file data should still mount ({mounted})"
    );
}

#[test]
fn regions_too_small_or_unformatted_are_refused() {
    assert_eq!(
        Store::format(SimRegion::new(3 * 4096), FormatOptions { capacity: Some(1) }).err(),
        Some(Error::TooSmall { size: 3 * 4096 })
    );
    assert_eq!(Store::mount(SimRegion::new(REGION)).err(), Some(Error::NotFormatted));
    // A store formatted for a larger region than the one it is found in.
    let store = Store::format(SimRegion::new(REGION), FormatOptions::default()).unwrap();
    let image = store.into_region().image(|n| n);
    let small = SimRegion::from_image(image[..REGION / 2].to_vec());
    assert!(matches!(Store::mount(small), Err(Error::Corrupt(_))));
}
