//! Bad images never crash a server: the small image is corrupted in one
//! kind of structure at a time (superblock, group descriptors, inodes,
//! block pointers, directory entries, directory loops), a fresh file
//! server mounts it and the test walks the whole tree: errors where the
//! damage is, the file server, the cache and the disk alive afterwards,
//! and files whose inodes were not touched read back as they were.
//!
//! The test is the cache's client between file servers: it reads the
//! image once, then writes each corruption (and later the original bytes
//! back) through the cache. Most mounts are read-only, so the file server
//! changes nothing; every eighth is read-write and also tries to write,
//! after which the whole image is put back.

use super::*;
use alloc::collections::BTreeMap;
use alloc::vec;
use tessera_api::cache::{self as cache_api, OpenReply, PAGE};
use tessera_api::fs::client::{self, File};
use tessera_api::fs::{O_CREAT, O_RDONLY, O_RDWR, S_IFMT, S_IFREG};
use tessera_rt::ica::SharedWords;

const KINDS: [&str; 6] = [
    "superblock",
    "group descriptor",
    "inode",
    "block pointer",
    "directory entry",
    "directory loop",
];

/// The test as the cache's client.
struct Raw {
    cache: u64,
}

impl Raw {
    fn open(cache: u64) -> Result<Raw, String> {
        sys::peer_grant(cache).map_err(|e| format!("grant: {e:?}"))?;
        let mut reply = [0u8; OpenReply::LEN];
        for _ in 0..1000 {
            match sys::call(cache, cache_api::OPEN, &[], &mut reply) {
                Ok(_) => {
                    // The plan area it shares is of no use here.
                    if let Some(r) = OpenReply::decode(&reply) {
                        drop(SharedWords::adopt(r.plan_area));
                    }
                    return Ok(Raw { cache });
                }
                // The last file server has not quite ended yet.
                Err(_) => sys::sleep_ns(1_000_000),
            }
        }
        Err(String::from("the cache stays taken"))
    }

    fn read(&self, at: u64, buf: &mut [u8]) -> bool {
        let mut hdr = [0u8; cache_api::HEADER];
        cache_api::encode_header(at, buf.len() as u32, &mut hdr);
        sys::call(self.cache, cache_api::READ, &hdr, buf) == Ok(buf.len())
    }

    /// READ_MANY of `msg` (raw headers) into a buffer of `cap` bytes.
    fn read_many_raw(&self, msg: &[u8], cap: usize) -> Option<Vec<u8>> {
        let mut out = vec![0u8; cap];
        let n = sys::call(self.cache, cache_api::READ_MANY, msg, &mut out).ok()?;
        out.truncate(n);
        Some(out)
    }

    fn read_many(&self, pieces: &[(u64, u32)], cap: usize) -> Option<Vec<u8>> {
        let mut msg = vec![0u8; pieces.len() * cache_api::HEADER];
        for (i, &(at, n)) in pieces.iter().enumerate() {
            cache_api::encode_header(at, n, &mut msg[i * cache_api::HEADER..]);
        }
        self.read_many_raw(&msg, cap)
    }

    fn write(&self, at: u64, data: &[u8]) -> bool {
        let mut msg = vec![0u8; cache_api::HEADER + data.len()];
        cache_api::encode_header(at, data.len() as u32, &mut msg);
        msg[cache_api::HEADER..].copy_from_slice(data);
        sys::call(self.cache, cache_api::WRITE, &msg, &mut []).is_ok()
    }

    fn close(self) {
        let _ = sys::call(self.cache, cache_api::CLOSE, &[], &mut []);
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap_or([0; 4])))
}

/// Where the structures of the pristine image are.
struct Layout {
    block: usize,
    inode_size: usize,
    inode_table: usize,
    /// (inode, directory block offset) of the root and its subdirectories.
    dirs: Vec<(u32, usize)>,
    /// Inodes of regular files (what an inode corruption targets).
    files: Vec<u32>,
}

impl Layout {
    fn of(img: &[u8]) -> Option<Layout> {
        let sb = &img[1024..2048];
        let block = 1024usize << u32_at(sb, 24);
        let inode_size = u32::from(u16::from_le_bytes([sb[88], sb[89]])) as usize;
        let first_data = u32_at(sb, 20) as usize;
        let gd = (first_data + 1) * block;
        let inode_table = u32_at(img, gd + 8) as usize * block;
        let mut l = Layout {
            block,
            inode_size,
            inode_table,
            dirs: Vec::new(),
            files: Vec::new(),
        };
        let root = l.block_of(img, 2)?;
        l.dirs.push((2, root));
        // The root's entries: subdirectories and files.
        let mut at = root;
        while at < root + block {
            let ino = u32_at(img, at);
            let rec = u16::from_le_bytes([img[at + 4], img[at + 5]]) as usize;
            let name_len = img[at + 6] as usize;
            if rec < 8 {
                break;
            }
            let name = &img[at + 8..at + 8 + name_len];
            if ino > 2 && name != b"." && name != b".." {
                let mode = u16::from_le_bytes([img[l.inode(ino)], img[l.inode(ino) + 1]]) as u32;
                match mode & S_IFMT {
                    fs::S_IFDIR => {
                        if let Some(b) = l.block_of(img, ino) {
                            l.dirs.push((ino, b));
                        }
                    }
                    S_IFREG => l.files.push(ino),
                    _ => {}
                }
            }
            at += rec;
        }
        Some(l)
    }

    /// Byte offset of inode `ino`'s record.
    fn inode(&self, ino: u32) -> usize {
        self.inode_table + (ino as usize - 1) * self.inode_size
    }

    /// Byte offset of inode `ino`'s first block.
    fn block_of(&self, img: &[u8], ino: u32) -> Option<usize> {
        let b = u32_at(img, self.inode(ino) + 40) as usize;
        (b != 0 && (b + 1) * self.block <= img.len()).then_some(b * self.block)
    }
}

/// One corruption: bytes to write at offsets, and the inode it damaged
/// if it damaged only one file's inode.
fn corrupt(kind: usize, l: &Layout, img: &[u8], rng: &mut Rng) -> (Vec<(usize, Vec<u8>)>, Option<u32>) {
    let mut out = Vec::new();
    let random_bytes = |rng: &mut Rng, from: usize, len: usize, out: &mut Vec<(usize, Vec<u8>)>| {
        for _ in 0..1 + rng.below(4) {
            let at = from + rng.below(len as u64) as usize;
            out.push((at, vec![rng.next() as u8]));
        }
    };
    let mut file = None;
    match kind {
        0 => random_bytes(rng, 1024, 1024, &mut out),
        1 => random_bytes(rng, (u32_at(img, 1024 + 20) as usize + 1) * l.block, 32, &mut out),
        2 => {
            let ino = l.files[rng.below(l.files.len() as u64) as usize];
            random_bytes(rng, l.inode(ino), l.inode_size.min(128), &mut out);
            file = Some(ino);
        }
        3 => {
            let ino = l.files[rng.below(l.files.len() as u64) as usize];
            let slot = rng.below(15) as usize;
            let v = match rng.below(3) {
                0 => rng.next() as u32,
                1 => rng.below(16) as u32,
                _ => (rng.below(img.len() as u64 / l.block as u64)) as u32,
            };
            out.push((l.inode(ino) + 40 + 4 * slot, v.to_le_bytes().to_vec()));
            file = Some(ino);
        }
        4 => {
            let (_, at) = l.dirs[rng.below(l.dirs.len() as u64) as usize];
            random_bytes(rng, at, 64, &mut out);
        }
        _ => {
            // An entry of a subdirectory (or of the root) names the root or
            // the directory itself: a loop in the tree.
            let (ino, at) = l.dirs[rng.below(l.dirs.len() as u64) as usize];
            let target = if rng.below(2) == 0 { 2 } else { ino };
            // The third entry (after . and ..), where there is one.
            let dot = u16::from_le_bytes([img[at + 4], img[at + 5]]) as usize;
            let dotdot = u16::from_le_bytes([img[at + dot + 4], img[at + dot + 5]]) as usize;
            let third = at + dot + dotdot;
            let entry = if third < at + l.block { third } else { at + dot };
            out.push((entry, target.to_le_bytes().to_vec()));
        }
    }
    (out, file)
}

/// What a walk saw: the regular files' contents by path, with their
/// inode numbers, and how many objects gave errors.
#[derive(Default)]
struct Walk {
    files: BTreeMap<String, (u64, Vec<u8>)>,
    errors: u32,
}

/// Reads at most 256 KiB of a file: a damaged size must not size a buffer.
fn read_bounded(path: &str) -> Result<Vec<u8>, fs::Errno> {
    let mut f = File::open(path, O_RDONLY, 0)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 16384];
    while out.len() < 256 * 1024 {
        let n = f.read(&mut buf)?;
        out.extend_from_slice(&buf[..n]);
        if n < buf.len() {
            break;
        }
    }
    Ok(out)
}

fn walk(dir: &str, depth: u32, w: &mut Walk) {
    let entries = match client::read_dir(dir) {
        Ok(e) => e,
        Err(_) => {
            w.errors += 1;
            return;
        }
    };
    for e in entries.iter().take(200) {
        if e.name == b"." || e.name == b".." {
            continue;
        }
        let path = format!("{}/{}", dir.trim_end_matches('/'), String::from_utf8_lossy(&e.name));
        let Ok(st) = client::lstat(&path) else {
            w.errors += 1;
            continue;
        };
        if st.is_dir() {
            if depth < 8 {
                walk(&path, depth + 1, w);
            }
        } else if st.is_symlink() {
            if client::readlink(&path).is_err() {
                w.errors += 1;
            }
        } else {
            match read_bounded(&path) {
                Ok(data) => {
                    w.files.insert(path, (st.ino, data));
                }
                Err(_) => w.errors += 1,
            }
        }
    }
}

/// Writes to a damaged file system: any outcome but a crash will do.
fn try_writes() {
    if let Ok(mut f) = File::open("/fz", O_RDWR | O_CREAT, 0o644) {
        let _ = f.write(&pattern(9, 10_000));
    }
    let _ = client::mkdir("/fzd", 0o755);
    let _ = client::rename("/fz", "/fzd/fz");
    let _ = client::unlink("/fzd/fz");
    let _ = client::unlink("/hello.txt");
    let _ = client::rmdir("/fzd");
    let _ = client::sync();
}

/// Whether the three servers still answer.
fn alive(stack: &Stack) -> bool {
    [DISK, CACHE, fs::NAME]
        .iter()
        .zip([tessera_api::block::STATS, cache_api::STATS, fs::STATS])
        .all(|(name, entry)| client::stats_of(name, entry).is_ok())
        && sys::alive(stack.disk)
}

/// The cache's READ_MANY: pieces back to back, and bad requests refused
/// or cut short where the first bad piece is.
fn read_many_checks(raw: &Raw, img: &[u8], c: &mut Checks) {
    let p = PAGE as u64;
    let pieces = [(0, PAGE as u32), (2 * p + 100, 50), (3 * p, PAGE as u32)];
    let mut want = img[..PAGE].to_vec();
    want.extend_from_slice(&img[2 * PAGE + 100..2 * PAGE + 150]);
    want.extend_from_slice(&img[3 * PAGE..4 * PAGE]);
    c.check(
        raw.read_many(&pieces, want.len()) == Some(want.clone()),
        "READ_MANY: the pieces back to back",
    );
    c.check(raw.read_many_raw(&[], 4096).is_none(), "READ_MANY: no piece is refused");
    c.check(
        raw.read_many_raw(&[0u8; cache_api::HEADER + 1], 4096).is_none(),
        "READ_MANY: a message of no whole number of headers is refused",
    );
    let many = vec![(0u64, 16u32); cache_api::MAX_PIECES + 1];
    c.check(
        raw.read_many(&many, 4096).is_none(),
        "READ_MANY: more than MAX_PIECES pieces are refused",
    );
    c.check(
        raw.read_many(&[(p - 10, 20)], 4096).is_none(),
        "READ_MANY: a piece across a page is refused",
    );
    c.check(
        raw.read_many(&[(1 << 40, 16)], 4096).is_none(),
        "READ_MANY: a piece past the device is refused",
    );
    c.check(
        raw.read_many(&[(0, 0)], 4096).is_none(),
        "READ_MANY: an empty piece is refused",
    );
    c.check(
        raw.read_many(&[(0, 16), (p - 10, 20), (p, 16)], 4096) == Some(img[..16].to_vec()),
        "READ_MANY: stops at the first bad piece",
    );
    c.check(
        raw.read_many(&[(0, PAGE as u32), (p, PAGE as u32)], PAGE + 100) == Some(img[..PAGE].to_vec()),
        "READ_MANY: stops at the first piece the buffer has no room for",
    );
}

pub fn run(count: u32, seed: u64) -> u32 {
    let mut c = Checks::new("fstest");
    let mut stack = match Stack::start("small", 64, 0, true) {
        Ok(s) => s,
        Err(e) => {
            println!("fstest: {e}");
            return 1;
        }
    };
    let mut clean = Walk::default();
    walk("/", 0, &mut clean);
    c.check(
        clean.errors == 0 && clean.files.len() >= 4,
        "the pristine image walks cleanly",
    );
    sys::stop(stack.fs);
    let Ok(raw) = Raw::open(stack.cache) else {
        c.check(false, "the test becomes the cache's client");
        stack.stop();
        return c.failed;
    };
    let mut img = vec![0u8; 1 << 20];
    let pristine_ok = img
        .chunks_mut(PAGE)
        .enumerate()
        .all(|(i, p)| raw.read((i * PAGE) as u64, p));
    let layout = Layout::of(&img).filter(|_| pristine_ok);
    let Some(layout) = layout else {
        c.check(false, "the small image reads and parses");
        raw.close();
        stack.stop();
        return c.failed;
    };
    read_many_checks(&raw, &img, &mut c);
    let mut rng = Rng(seed | 1);
    let mut refused = [0u32; 6];
    let mut damaged = [0u32; 6];
    let mut raw = Some(raw);
    for i in 0..count {
        let kind = (i % KINDS.len() as u32) as usize;
        let writable = i % 8 == 7;
        let (bytes, file) = corrupt(kind, &layout, &img, &mut rng);
        let Some(r) = raw.take() else { break };
        let mut ok = bytes.iter().all(|(at, b)| r.write(*at as u64, b));
        r.close();
        match Stack::start_fs(!writable) {
            Ok(pid) => stack.fs = pid,
            Err(e) => {
                c.check(false, &format!("image {i}: {e}"));
                break;
            }
        }
        let mut w = Walk::default();
        if client::stat("/").is_err() {
            refused[kind] += 1;
        } else {
            walk("/", 0, &mut w);
            if writable {
                try_writes();
            }
        }
        if w.errors > 0 {
            damaged[kind] += 1;
        }
        let up = alive(&stack);
        c.check(up, &format!("image {i} ({}): every server alive", KINDS[kind]));
        // A damaged file's inode leaves the other files as they were.
        if let Some(ino) = file {
            for (path, (fino, data)) in &clean.files {
                if *fino != ino as u64 && !writable {
                    let same = w.files.get(path).is_some_and(|(_, d)| d == data);
                    c.check(same, &format!("image {i}: {path} intact beside inode {ino}"));
                }
            }
        }
        sys::stop(stack.fs);
        stack.fs = 0;
        if !up {
            break;
        }
        let Ok(r) = Raw::open(stack.cache) else {
            c.check(false, "the test becomes the cache's client again");
            break;
        };
        // Put back what changed: the corrupted bytes, or everything after a
        // read-write mount.
        if writable {
            ok &= img.chunks(PAGE).enumerate().all(|(k, p)| r.write((k * PAGE) as u64, p));
        } else {
            ok &= bytes
                .iter()
                .all(|(at, b)| r.write(*at as u64, &img[*at..*at + b.len()]));
        }
        c.check(ok, &format!("image {i}: written and restored"));
        raw = Some(r);
    }
    if let Some(r) = raw {
        r.close();
    }
    for k in 0..KINDS.len() {
        println!(
            "fstest bad: {}: {} images refused at mount, {} with errors in the walk",
            KINDS[k], refused[k], damaged[k]
        );
    }
    stack.stop();
    println!(
        "fstest bad ({count} images): {} checks passed, {} failed",
        c.passed, c.failed
    );
    c.failed
}
