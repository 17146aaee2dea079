//! Tests of the storage servers on the real device: each boots with a copy
//! of a built disk image on virtio-blk (`build/test-logs/<test>-smp<n>.img`,
//! deleted afterwards unless the test failed) and runs `fstest` on it; then
//! the host judges the image with e2fsprogs (`e2fs.rs`). The host decides
//! what the disk must hold: it puts its own files in, knows the contents
//! the guest writes (the same `pattern` as `user/programs/src/fsstack.rs`),
//! and takes from the guest only what it read and which fsyncs returned.
//!
//! - exchange (4 KiB and 1 KiB blocks): the host writes a tree into the
//!   image with debugfs; Tessera reports every object of it (size and
//!   hash), then writes, overwrites, truncates, links and removes files
//!   (`fstest rw virtio keep`). The host compares the report with its
//!   tree, reads Tessera's files with `debugfs cat`, finds its own tree
//!   intact, and `e2fsck -fn` clean.
//! - crash: QEMU killed (SIGKILL) in the middle of `fstest crash`; then
//!   `e2fsck -p` must repair without questions (status 0 or 1), the image
//!   be clean after, `lost+found` empty, the image's first files intact,
//!   and every change completed before the last fsync the guest reported
//!   be there (see docs/storage.md, "What survives a crash").
//! - full: a 1 MiB disk filled until ENOSPC (`fstest full virtio keep`);
//!   the host finds no free block, the file's bytes all the pattern's,
//!   and `e2fsck -fn` clean.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::e2fs;
use crate::machine::Machine;
use crate::progtest;
use crate::protocol::{self, Ending};
pub use testdata::{fnv64, pattern};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Exchange,
    Crash,
    Full,
}

pub struct DiskTest {
    pub name: &'static str,
    /// The built image the test's copy is made from (`disk.rs`).
    pub image: &'static str,
    pub kind: Kind,
}

pub const TESTS: &[DiskTest] = &[
    DiskTest {
        name: "disk_host_and_tessera_read_each_others_files_4k_blocks",
        image: "build/images/root.img",
        kind: Kind::Exchange,
    },
    DiskTest {
        name: "disk_host_and_tessera_read_each_others_files_1k_blocks",
        image: "build/images/small.img",
        kind: Kind::Exchange,
    },
    DiskTest {
        name: "disk_crash_keeps_every_change_before_the_last_fsync",
        image: "build/images/root.img",
        kind: Kind::Crash,
    },
    DiskTest {
        name: "disk_full_gives_enospc_and_loses_nothing",
        image: "build/images/small.img",
        kind: Kind::Full,
    },
];

impl DiskTest {
    pub fn cmdline(&self) -> String {
        let args = match self.kind {
            Kind::Exchange => format!("exchange,{HOST_DIR}"),
            Kind::Crash => "crash".to_string(),
            Kind::Full => "full,virtio,keep".to_string(),
        };
        format!("servers=off run=fstest args={args}")
    }
}

/// Where the host's tree goes in the image.
const HOST_DIR: &str = "/h";

/// Boots the machine: (cmdline, log, watcher asking for a kill) → output.
pub type Boot<'a> = dyn FnMut(&Machine, &str, &Path, &mut dyn FnMut(&str) -> Option<Duration>) -> std::io::Result<crate::proc::Output>
    + 'a;

/// Runs one disk test: Ok(note) if it passed. The image and the host's
/// files stay beside the log if it failed.
pub fn run(test: &DiskTest, machine: &Machine, log: &Path, boot: &mut Boot) -> Result<String, String> {
    let image = log.with_extension("img");
    let host = log.with_extension("host");
    let result = run_on(test, machine, log, &image, &host, boot);
    if result.is_ok() {
        let _ = fs::remove_file(&image);
        let _ = fs::remove_file(image.with_extension("debugfs"));
        let _ = fs::remove_dir_all(&host);
    }
    result
}

fn run_on(
    test: &DiskTest,
    machine: &Machine,
    log: &Path,
    image: &Path,
    host: &Path,
    boot: &mut Boot,
) -> Result<String, String> {
    let _ = fs::remove_dir_all(host);
    fs::copy(test.image, image).map_err(|e| format!("copying {} to {}: {e}", test.image, image.display()))?;
    let tree = match test.kind {
        Kind::Exchange => Some(put_host_tree(image, host)?),
        _ => None,
    };
    e2fs::check(image).map_err(|e| format!("the image before the boot: {e}"))?;

    let machine = machine.with_disk(Some(&image.to_string_lossy()));
    let mut fsynced = 0;
    let delay = kill_delay();
    let mut watch = |line: &str| {
        if test.kind != Kind::Crash || after(line, "fstest: fsynced ").is_none() {
            return None;
        }
        fsynced += 1;
        // After a few rounds, at a moment of the host's choosing.
        (fsynced == 5).then_some(delay)
    };
    let out = boot(&machine, &test.cmdline(), log, &mut watch).map_err(|e| format!("cannot boot: {e}"))?;
    let lines = out.texts();
    note(log, &format!("the host checks {}", image.display()));

    match test.kind {
        Kind::Exchange => {
            progtest::verdict("fstest", out.ending, &lines)?;
            check_exchange(image, &tree.unwrap_or_default(), &lines)?;
            Ok(String::new())
        }
        Kind::Full => {
            progtest::verdict("fstest", out.ending, &lines)?;
            check_full(image)
        }
        Kind::Crash => {
            if out.ending != Ending::Signal(9) {
                let why = progtest::verdict("fstest", out.ending, &lines).err();
                return Err(format!(
                    "the workload was not killed: {}",
                    why.unwrap_or_else(|| out.ending.to_string())
                ));
            }
            note(
                log,
                &format!("QEMU killed {} ms after the fifth fsync", delay.as_millis()),
            );
            check_crash(image, &lines, log)
        }
    }
}

/// Appends the host's own remarks to a boot's log.
fn note(log: &Path, what: &str) {
    if let Ok(mut f) = fs::OpenOptions::new().append(true).open(log) {
        let _ = writeln!(f, "# xtask: {what}");
    }
}

/// A different moment in each run (0.1 to 0.9 s), so that runs together
/// cut the workload at many points; the log says which.
fn kill_delay() -> Duration {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    Duration::from_millis(100 + u64::from(nanos) % 800)
}

// ---- exchange ----

/// An object of the host's tree: (path in the image, kind and content).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Object {
    Dir,
    File(Vec<u8>),
    Link(String),
}

/// Files around the block sizes and the first indirect blocks, a sparse
/// file, a nested directory, fast and slow symbolic links.
fn host_tree() -> Vec<(String, Object)> {
    let file = |seed: u64, len: usize| Object::File(pattern(500 + seed, len));
    let mut sparse = vec![0u8; 64 * 1024];
    sparse.extend_from_slice(b"after the hole");
    let d = HOST_DIR;
    vec![
        (d.to_string(), Object::Dir),
        (format!("{d}/empty"), file(0, 0)),
        (format!("{d}/one"), file(1, 1)),
        (format!("{d}/k1"), file(2, 1023)),
        (format!("{d}/k1-block"), file(3, 1024)),
        (format!("{d}/page-and-one"), file(4, 4097)),
        (format!("{d}/indirect-1k"), file(5, 13 * 1024 + 5)),
        (format!("{d}/indirect-4k"), file(6, 70_000)),
        (format!("{d}/sparse"), Object::File(sparse)),
        (format!("{d}/Name.With-Dots_and_UPPER"), file(7, 10)),
        (format!("{d}/fast"), Object::Link("one".to_string())),
        (
            format!("{d}/slow"),
            Object::Link(format!("sub/{}", "long-target-".repeat(8))),
        ),
        (format!("{d}/sub"), Object::Dir),
        (format!("{d}/sub/inner"), file(8, 3000)),
        (format!("{d}/sub/deeper"), Object::Dir),
        (format!("{d}/sub/deeper/x"), file(9, 10)),
    ]
}

/// Writes the host's tree into the image with debugfs (the files pass
/// through `host`, a folder beside the log).
fn put_host_tree(image: &Path, host: &Path) -> Result<Vec<(String, Object)>, String> {
    let tree = host_tree();
    fs::create_dir_all(host).map_err(|e| format!("{}: {e}", host.display()))?;
    let mut script = String::new();
    for (i, (path, object)) in tree.iter().enumerate() {
        match object {
            Object::Dir => script += &format!("mkdir {path}\n"),
            Object::Link(target) => script += &format!("symlink {path} {target}\n"),
            Object::File(data) => {
                let src = host.join(format!("{i}"));
                write_sparse(&src, data)?;
                script += &format!("write {} {path}\n", src.display());
            }
        }
    }
    e2fs::write(image, &script)?;
    Ok(tree)
}

/// Writes `data`, leaving its zero pages out (a hole that debugfs keeps).
fn write_sparse(path: &Path, data: &[u8]) -> Result<(), String> {
    use std::io::{Seek, SeekFrom};
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut f = fs::File::create(path).map_err(err)?;
    for (i, page) in data.chunks(4096).enumerate() {
        if page.iter().any(|&b| b != 0) {
            f.seek(SeekFrom::Start(i as u64 * 4096)).map_err(err)?;
            f.write_all(page).map_err(err)?;
        }
    }
    f.set_len(data.len() as u64).map_err(err)
}

/// What `fstest tree` must say of the host's tree, one line per object.
fn expected_report(tree: &[(String, Object)]) -> Vec<String> {
    let mut lines: Vec<String> = tree
        .iter()
        .map(|(path, object)| match object {
            Object::Dir => format!("d {path}"),
            Object::File(data) => format!("f {path} {} {:016x}", data.len(), fnv64(data)),
            Object::Link(target) => format!("l {path} {target}"),
        })
        .collect();
    lines.sort();
    lines
}

/// What follows `marker` in a line of the guest's, if it says it.
fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let line = protocol::clean(line);
    line.find(marker).map(|i| line[i + marker.len()..].trim())
}

fn reported(lines: &[String]) -> Vec<String> {
    let mut out: Vec<String> = lines
        .iter()
        .filter_map(|l| after(l, "fstest: tree ").map(str::to_string))
        .collect();
    out.sort();
    out
}

/// The files `fstest rw` leaves with `keep`: `/t/f<size>` holding
/// `pattern(size)` for each size (as in user/programs/src/fstest/rw.rs),
/// and `/t/sparse`.
use testdata::FILE_SIZES as RW_SIZES;

fn check_exchange(image: &Path, tree: &[(String, Object)], lines: &[String]) -> Result<(), String> {
    let want = expected_report(tree);
    let got = reported(lines);
    let missing: Vec<&String> = want.iter().filter(|l| !got.contains(l)).collect();
    let extra: Vec<&String> = got.iter().filter(|l| !want.contains(l)).collect();
    if !missing.is_empty() || !extra.is_empty() {
        return Err(format!(
            "Tessera read the host's tree otherwise: missing {missing:?}, instead {extra:?}"
        ));
    }
    e2fs::check(image)?;
    let mut names: Vec<String> = RW_SIZES.iter().map(|s| format!("f{s}")).collect();
    names.push("sparse".to_string());
    names.sort();
    let mut listed = e2fs::list(image, "/t")?;
    listed.sort();
    if listed != names {
        return Err(format!("/t holds {listed:?}, not {names:?}"));
    }
    for &size in RW_SIZES {
        same(image, &format!("/t/f{size}"), &pattern(size as u64, size))?;
    }
    let mut sparse = vec![0u8; 1 << 20];
    sparse.extend_from_slice(b"end");
    same(image, "/t/sparse", &sparse)?;
    // The extended attribute `fstest rw` left, as e2fsprogs reads it.
    let kept = e2fs::xattr(image, "/t/f100", "user.kept")?;
    if kept.trim_ascii_end() != b"on ext" {
        return Err(format!("user.kept of /t/f100: {:?}", String::from_utf8_lossy(&kept)));
    }
    for (path, object) in tree {
        match object {
            Object::File(data) => same(image, path, data)?,
            Object::Dir | Object::Link(_) => {}
        }
    }
    Ok(())
}

/// The file at `path` in the image holds exactly `want`.
fn same(image: &Path, path: &str, want: &[u8]) -> Result<(), String> {
    let got = e2fs::cat(image, path)?;
    if got == want {
        return Ok(());
    }
    let at = got
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    Err(format!(
        "{path} on the host: {} bytes, {} expected, first difference at {at}",
        got.len(),
        want.len()
    ))
}

// ---- full ----

fn check_full(image: &Path) -> Result<String, String> {
    e2fs::check(image)?;
    let free = e2fs::free_blocks(image)?;
    if free != 0 {
        return Err(format!("{free} blocks free: the disk was not full"));
    }
    let big = e2fs::cat(image, "/big")?;
    if big.len() <= 512 * 1024 {
        return Err(format!("/big holds only {} bytes", big.len()));
    }
    // fstest full writes pattern 7 in 4 KiB pieces until ENOSPC.
    if big != pattern(7, big.len()) {
        return Err("/big on the host differs from what was written".to_string());
    }
    same(image, "/hello.txt", &read_root_file("hello.txt")?)?;
    Ok(format!("{} bytes written until ENOSPC", big.len()))
}

fn read_root_file(name: &str) -> Result<Vec<u8>, String> {
    let path: PathBuf = Path::new(crate::disk::ROOT_DIR).join(name);
    fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))
}

// ---- crash ----

/// `fstest crash`'s sizes of the fsynced files (`crash::synced_size`).
fn synced_size(i: u64) -> usize {
    [1, 4096, 12 * 1024 + 1, 70_000, 5000][(i % 5) as usize]
}

/// The last round whose fsync the guest reported.
fn last_fsync(lines: &[String]) -> Option<u64> {
    lines
        .iter()
        .filter_map(|l| after(l, "fstest: fsynced /c/s")?.parse().ok())
        .max()
}

fn check_crash(image: &Path, lines: &[String], log: &Path) -> Result<String, String> {
    let k = last_fsync(lines).ok_or("no fsync was reported")?;
    let (status, report) = e2fs::repair(image)?;
    note(log, &format!("e2fsck -fp: status {status}"));
    for line in report.lines() {
        note(log, &format!("  {line}"));
    }
    if !(0..=1).contains(&status) {
        return Err(format!("e2fsck -p could not repair alone: status {status}"));
    }
    e2fs::check(image).map_err(|e| format!("after e2fsck -p: {e}"))?;
    let orphans = e2fs::list(image, "/lost+found")?;
    if !orphans.is_empty() {
        return Err(format!("lost+found holds {orphans:?}: a file lost its name"));
    }
    for name in ["hello.txt", "README", "etc/motd", "docs/storage.txt"] {
        same(image, &format!("/{name}"), &read_root_file(name)?)?;
    }
    expected_after_crash(image, k)?;
    Ok(format!("{} rounds fsynced; e2fsck -p status {status}", k + 1))
}

/// Everything round k's fsync made durable (it syncs the whole file
/// system): the fsynced files, the renames, the last rewrite of the slot
/// no later round touched. Rounds k+1 and k+2 may have begun (k+1's line
/// may have been lost in the kill): nothing of theirs is expected, and
/// no later round's file may exist.
fn expected_after_crash(image: &Path, k: u64) -> Result<(), String> {
    for i in 0..=k {
        same(image, &format!("/c/s{i}"), &pattern(1000 + i, synced_size(i)))?;
    }
    for i in 0..k {
        same(image, &format!("/c/r{i}"), &pattern(3000 + i, 5000))?;
    }
    // Round k+1 renames t<k>: either name, or both (a rename interrupted
    // between its new entry and the removal of the old one), holds it.
    let names = e2fs::list(image, "/c")?;
    let t = pattern(3000 + k, 5000);
    let holders: Vec<String> = [format!("t{k}"), format!("r{k}")]
        .into_iter()
        .filter(|n| names.contains(n))
        .collect();
    if holders.is_empty() {
        return Err(format!("/c/t{k}, fsynced in round {k}, has no name left"));
    }
    for n in &holders {
        same(image, &format!("/c/{n}"), &t)?;
    }
    same(image, &format!("/c/u{}", k % 3), &pattern(2000 + k, 150 * 1024))?;
    for name in &names {
        let round = name.get(1..).and_then(|r| r.parse::<u64>().ok());
        let known = matches!(name.chars().next(), Some('s' | 't' | 'r' | 'u')) && round.is_some();
        if !known || (!name.starts_with('u') && round > Some(k + 2)) {
            return Err(format!("/c/{name}: no round made it"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_are_read_and_sorted() {
        let lines = vec![
            "fstest: tree f /h/b 3 0000000000000001\r".to_string(),
            "noise".to_string(),
            "[server] fstest: tree d /h".to_string(),
        ];
        assert_eq!(reported(&lines), vec!["d /h", "f /h/b 3 0000000000000001"]);
    }

    #[test]
    fn the_last_fsync_is_the_highest_round() {
        let lines: Vec<String> = [
            "fstest: fsynced /c/s0",
            "fstest: fsynced /c/s1",
            "fstest: fsynced /c/sx",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(last_fsync(&lines), Some(1));
        assert_eq!(last_fsync(&[]), None);
    }

    #[test]
    fn names_are_unique_and_images_are_built_ones() {
        for (i, a) in TESTS.iter().enumerate() {
            assert!(TESTS[i + 1..].iter().all(|b| b.name != a.name), "{}", a.name);
            assert!(crate::disk::IMAGES.iter().any(|im| im.path == a.image), "{}", a.image);
        }
    }
}
