//! Bad images never panic: small images made by mke2fs are corrupted in
//! memory (superblock, group descriptors, inodes, block pointers, directory
//! entries, directory and symlink loops, bitmaps, whole blocks), then the
//! whole tree is walked and written to. Every object the damage touches
//! may fail (and for the damage the library can see, must fail with an
//! error); everything else must read exactly as before.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use common::*;
use ext2fs::{Errno, FileManager, MemDevice, MountOptions};

/// Corrupted images per run, spread over the base images.
const ROUNDS: u64 = 2400;

/// What the baseline knows of a base image.
struct Base {
    image: Vec<u8>,
    bs: usize,
    isz: usize,
    ipg: u32,
    inodes: u32,
    blocks: u32,
    groups: u32,
    /// Per group: block bitmap, inode bitmap, inode table.
    gd: Vec<(u32, u32, u32)>,
    tree: BTreeMap<String, Node>,
    /// Path to inode number, for every path.
    ino: BTreeMap<String, u32>,
    /// Directories: inode and their blocks.
    dirs: Vec<(u32, Vec<u64>)>,
    /// Files with an indirect block: inode and that block.
    indirect: Vec<(u32, u64)>,
    /// Inodes in use, with their paths.
    used: Vec<(u32, String)>,
    /// Fast symbolic links: inode and path.
    fast_links: Vec<(u32, String)>,
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

fn put16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

fn small_tree(root: &std::path::Path) {
    use std::os::unix::fs::symlink;
    fs::create_dir_all(root.join("a/b/c")).unwrap();
    fs::create_dir_all(root.join("d/e")).unwrap();
    for (i, n) in [0usize, 100, 5000, 14_000, 70_000, 300_000].iter().enumerate() {
        fs::write(root.join(format!("a/f{n}")), pattern(i as u64 + 9, *n)).unwrap();
    }
    fs::write(root.join("a/b/c/leaf"), b"leaf\n").unwrap();
    fs::write(root.join("d/e/deep"), pattern(3, 2000)).unwrap();
    for i in 0..60 {
        fs::write(root.join(format!("d/entry-number-{i}")), format!("{i}")).unwrap();
    }
    symlink("a/f100", root.join("fast")).unwrap();
    symlink(format!("a/{}/../f100", "b/..".repeat(20)), root.join("slow")).unwrap();
    fs::hard_link(root.join("a/f5000"), root.join("d/hard")).unwrap();
}

fn base(src: &std::path::Path, bs: u32, isz: u32) -> Base {
    let mut g = Geometry::new(bs, isz, 4 << 20);
    g.group_blocks = if bs == 1024 { 1024 } else { 256 };
    g.inodes = 128;
    let image = mkfs(Some(src), g);
    let sb = &image[1024..2048];
    let (inodes, blocks, ipg) = (u32_at(sb, 0), u32_at(sb, 4), u32_at(sb, 40));
    let groups = inodes / ipg;
    let gdt = if bs == 1024 { 2048 } else { 4096 };
    let gd = (0..groups as usize)
        .map(|i| {
            let d = &image[gdt + 32 * i..];
            (u32_at(d, 0), u32_at(d, 4), u32_at(d, 8))
        })
        .collect();
    let mut fs = FileManager::mount(
        MemDevice::new(image.clone()),
        MountOptions {
            read_only: true,
            time: NOW,
        },
    )
    .unwrap();
    let tree = walk(&mut fs, 1 << 20);
    assert!(
        tree.values().all(|n| !matches!(n, Node::Error(_))),
        "the base image reads with errors"
    );
    let mut ino = BTreeMap::new();
    ino.insert(String::new(), 2);
    let (mut dirs, mut indirect, mut used, mut fast_links) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (path, node) in &tree {
        let h = at(&mut fs, path).unwrap();
        ino.insert(path.clone(), h.ino);
        used.push((h.ino, path.clone()));
        let inode = fs.inodes().get(h.ino).unwrap();
        match node {
            Node::Dir { .. } => {
                let segs = fs.inodes().map(h.ino, 0, inode.size).unwrap();
                let blocks = segs
                    .iter()
                    .flat_map(|s| {
                        let first = s.block.unwrap();
                        (0..s.len.div_ceil(bs as u64)).map(move |k| first + k)
                    })
                    .collect();
                dirs.push((h.ino, blocks));
            }
            Node::File { .. } if inode.block[12] != 0 => indirect.push((h.ino, inode.block[12] as u64)),
            Node::Symlink { .. } if inode.sectors == 0 => fast_links.push((h.ino, path.clone())),
            _ => {}
        }
    }
    let root = at(&mut fs, "/").unwrap();
    let root_inode = fs.inodes().get(root.ino).unwrap();
    let segs = fs.inodes().map(2, 0, root_inode.size).unwrap();
    dirs.push((2, vec![segs[0].block.unwrap()]));
    Base {
        image,
        bs: bs as usize,
        isz: isz as usize,
        ipg,
        inodes,
        blocks,
        groups,
        gd,
        tree,
        ino,
        dirs,
        indirect,
        used,
        fast_links,
    }
}

/// What the damage reaches and what must be seen to fail.
#[derive(Default)]
struct Damage {
    /// Inodes whose state may now be anything: paths through them may
    /// differ or fail.
    inodes: BTreeSet<u32>,
    /// The whole tree may differ (the damage is in the geometry).
    everything: bool,
    /// Mount must fail.
    mount_fails: bool,
    /// The path (or, for a directory, its listing) must give an error.
    must_fail: Vec<String>,
    /// Following this symlink must give ELOOP.
    must_loop: Option<String>,
    what: String,
}

impl Base {
    fn inode_offset(&self, ino: u32) -> usize {
        let g = ((ino - 1) / self.ipg) as usize;
        let idx = ((ino - 1) % self.ipg) as usize;
        self.gd[g].2 as usize * self.bs + idx * self.isz
    }

    fn path_of(&self, ino: u32) -> Vec<String> {
        self.used
            .iter()
            .filter(|(i, _)| *i == ino)
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// Inodes whose records share the inode table block of `ino`.
    fn inodes_in_block(&self, block: usize) -> BTreeSet<u32> {
        (1..=self.inodes)
            .filter(|&i| self.inode_offset(i) / self.bs == block)
            .collect()
    }

    fn corrupt(&self, img: &mut [u8], rng: &mut Rng) -> Damage {
        let mut d = Damage::default();
        let bs = self.bs;
        let out_of_range = |rng: &mut Rng| self.blocks + rng.below(u32::MAX as u64 - self.blocks as u64) as u32;
        match rng.below(12) {
            0 => {
                // A superblock field the reader does not need.
                let (off, name) = [
                    (12, "free blocks"),
                    (16, "free inodes"),
                    (44, "mtime"),
                    (48, "wtime"),
                    (52, "mount count"),
                    (58, "state"),
                    (92, "compat features"),
                    (104, "uuid"),
                ][rng.below(8) as usize];
                put32(img, 1024 + off, rng.next() as u32);
                d.what = format!("superblock {name}");
            }
            1 => {
                // A geometry field: mount may fail or read garbage.
                let off = [0usize, 4, 20, 24, 32, 40, 56, 76, 84, 88, 96, 100][rng.below(12) as usize];
                let v = match rng.below(3) {
                    0 => rng.next() as u32,
                    1 => u32_at(img, 1024 + off) ^ (1 << rng.below(32)),
                    _ => u32_at(img, 1024 + off).wrapping_add(1),
                };
                put32(img, 1024 + off, v);
                d.everything = true;
                if off == 56 && (v & 0xffff) != 0xef53 {
                    d.mount_fails = true;
                }
                d.what = format!("superblock at {off} = {v:#x}");
            }
            2 => {
                // A group descriptor's bitmap or table outside its group.
                let g = rng.below(self.groups as u64) as usize;
                let field = rng.below(4) as usize;
                let gdt = if bs == 1024 { 2048 } else { 4096 };
                let at = gdt + 32 * g;
                match field {
                    3 => put16(img, at + 12, 0xffff),
                    f => put32(img, at + 4 * f, out_of_range(rng)),
                }
                d.inodes = (g as u32 * self.ipg + 1..=(g as u32 + 1) * self.ipg).collect();
                if g == 0 {
                    d.mount_fails = true;
                }
                d.must_fail = d.inodes.iter().flat_map(|&i| self.path_of(i)).collect();
                d.what = format!("group {g} field {field}");
            }
            3 | 4 => {
                // A field of an inode in use.
                let (ino, path) = &self.used[rng.below(self.used.len() as u64) as usize];
                let off = self.inode_offset(*ino);
                let field = rng.below(8);
                match field {
                    0 => put16(img, off, rng.next() as u16),
                    1 => put32(img, off + 4, rng.next() as u32),
                    2 => put16(img, off + 26, 0),
                    3 => put32(img, off + 28, rng.next() as u32),
                    4 => put32(img, off + 32, 0x80000),
                    5 => put32(img, off + 104, rng.next() as u32),
                    _ => {
                        // A block pointer in use, out of range.
                        let used: Vec<usize> = (0..15).filter(|&k| u32_at(img, off + 40 + 4 * k) != 0).collect();
                        let is_fast = self.fast_links.iter().any(|(i, _)| i == ino);
                        if !used.is_empty() && !is_fast {
                            let k = used[rng.below(used.len() as u64) as usize];
                            put32(img, off + 40 + 4 * k, out_of_range(rng));
                            d.must_fail = self.path_of(*ino);
                        }
                    }
                }
                d.inodes.insert(*ino);
                if field == 2 || field == 4 {
                    // No links, or an ext4-only flag: the inode is refused.
                    d.must_fail = self.path_of(*ino);
                }
                if *ino == 2 && !d.must_fail.is_empty() {
                    d.mount_fails = true;
                }
                d.what = format!("inode {ino} ({path}) field {field}");
            }
            5 => {
                // A pointer in an indirect block, out of range.
                if self.indirect.is_empty() {
                    return self.corrupt(img, rng);
                }
                let (ino, block) = self.indirect[rng.below(self.indirect.len() as u64) as usize];
                put32(img, block as usize * bs, out_of_range(rng));
                d.inodes.insert(ino);
                d.must_fail = self.path_of(ino);
                d.what = format!("indirect block {block} of inode {ino}");
            }
            6 | 7 => {
                // A directory entry's lengths or inode number.
                let (dir, blocks) = &self.dirs[rng.below(self.dirs.len() as u64) as usize];
                let block = blocks[rng.below(blocks.len() as u64) as usize] as usize;
                // Walk to a random entry of the block.
                let b = &img[block * bs..(block + 1) * bs];
                let mut offs = vec![0usize];
                let mut o = 0;
                while o < bs {
                    let rl = u16::from_le_bytes([b[o + 4], b[o + 5]]) as usize;
                    if rl == 0 {
                        break;
                    }
                    o += rl;
                    if o < bs {
                        offs.push(o);
                    }
                }
                let e = block * bs + offs[rng.below(offs.len() as u64) as usize];
                let kind = rng.below(5);
                match kind {
                    0 => put16(img, e + 4, [0u16, 3, 6, 13, (bs + 4) as u16][rng.below(5) as usize]),
                    1 => img[e + 6] = 200 + rng.below(56) as u8,
                    2 => put32(img, e, self.inodes + 1 + rng.below(1000) as u32),
                    _ => put32(img, e, rng.below(self.inodes as u64 + 1) as u32),
                }
                d.inodes.insert(*dir);
                if kind < 3 {
                    d.must_fail = self.path_of(*dir).iter().map(|p| format!("{p}/")).collect();
                    if *dir == 2 {
                        d.must_fail = vec!["/".into()];
                    }
                }
                d.what = format!("entry at {e} in directory {dir}, kind {kind}");
            }
            8 => {
                // A directory loop: a subdirectory's entry names an ancestor.
                let subdirs: Vec<(&String, u32)> = self
                    .tree
                    .iter()
                    .filter(|(p, n)| matches!(n, Node::Dir { .. }) && p.matches('/').count() >= 2)
                    .map(|(p, _)| (p, self.ino[p]))
                    .collect();
                let (path, ino) = subdirs[rng.below(subdirs.len() as u64) as usize];
                let parent_path = &path[..path.rfind('/').unwrap()];
                let parent_ino = self.ino[parent_path];
                let (_, blocks) = self.dirs.iter().find(|(i, _)| *i == parent_ino).unwrap();
                let name = &path.as_bytes()[path.rfind('/').unwrap() + 1..];
                let ancestor = if rng.below(2) == 0 { 2 } else { parent_ino };
                let mut done = false;
                for &blk in blocks {
                    let b = blk as usize * bs;
                    let mut o = 0;
                    while o < bs && !done {
                        let rl = u16::from_le_bytes([img[b + o + 4], img[b + o + 5]]) as usize;
                        let nl = img[b + o + 6] as usize;
                        if u32_at(img, b + o) == ino && &img[b + o + 8..b + o + 8 + nl] == name {
                            put32(img, b + o, ancestor);
                            done = true;
                        }
                        o += rl.max(12);
                    }
                }
                assert!(done, "entry {path} not found");
                d.inodes.insert(parent_ino);
                d.must_fail = vec![path.clone()];
                d.what = format!("{path} made a link to inode {ancestor}");
            }
            9 => {
                // A symbolic link to itself.
                let (ino, path) = &self.fast_links[rng.below(self.fast_links.len() as u64) as usize];
                let name = &path[1..];
                let off = self.inode_offset(*ino);
                img[off + 40..off + 100].fill(0);
                img[off + 40..off + 40 + name.len()].copy_from_slice(name.as_bytes());
                put32(img, off + 4, name.len() as u32);
                d.inodes.insert(*ino);
                d.must_loop = Some(path.clone());
                d.what = format!("{path} made a loop");
            }
            10 => {
                // Bitmaps that disagree with the tree: reading never looks.
                let g = rng.below(self.groups as u64) as usize;
                let bitmap = if rng.below(2) == 0 { self.gd[g].0 } else { self.gd[g].1 } as usize;
                for _ in 0..1 + rng.below(8) {
                    let at = bitmap * bs + rng.below(bs as u64) as usize;
                    img[at] = rng.next() as u8;
                }
                d.what = format!("bitmap block {bitmap}");
            }
            _ => {
                // Garbage over a whole metadata block.
                let which = rng.below(3);
                let block = match which {
                    0 => {
                        let g = rng.below(self.groups as u64) as usize;
                        let table_blocks = (self.ipg as usize * self.isz).div_ceil(bs);
                        self.gd[g].2 as usize + rng.below(table_blocks as u64) as usize
                    }
                    1 => {
                        let (_, blocks) = &self.dirs[rng.below(self.dirs.len() as u64) as usize];
                        blocks[rng.below(blocks.len() as u64) as usize] as usize
                    }
                    _ => match self.indirect.get(rng.below(self.indirect.len().max(1) as u64) as usize) {
                        Some(&(_, b)) => b as usize,
                        None => return self.corrupt(img, rng),
                    },
                };
                let junk = pattern(rng.next(), bs);
                img[block * bs..(block + 1) * bs].copy_from_slice(&junk);
                d.inodes = match which {
                    0 => self.inodes_in_block(block),
                    1 => self
                        .dirs
                        .iter()
                        .filter(|(_, b)| b.contains(&(block as u64)))
                        .map(|(i, _)| *i)
                        .collect(),
                    _ => self
                        .indirect
                        .iter()
                        .filter(|(_, b)| *b == block as u64)
                        .map(|(i, _)| *i)
                        .collect(),
                };
                if d.inodes.contains(&2) {
                    d.everything = true;
                }
                d.what = format!("garbage over block {block} ({which})");
            }
        }
        d
    }

    /// Whether a path resolves through a damaged inode.
    fn touched(&self, path: &str, d: &Damage) -> bool {
        if d.everything {
            return true;
        }
        let mut p = path.trim_end_matches('/').to_string();
        loop {
            if let Some(i) = self.ino.get(&p)
                && d.inodes.contains(i)
            {
                return true;
            }
            match p.rfind('/') {
                Some(i) => p.truncate(i),
                None => return d.inodes.contains(&2),
            }
        }
    }

    fn check(&self, img: Vec<u8>, d: &Damage, rng: &mut Rng) {
        let ctx = &d.what;
        let mut fs = match FileManager::mount(
            MemDevice::new(img),
            MountOptions {
                read_only: false,
                time: NOW,
            },
        ) {
            Ok(fs) => fs,
            Err(e) => {
                assert!(
                    d.everything || d.mount_fails || d.inodes.contains(&2),
                    "{ctx}: mount failed ({e})"
                );
                return;
            }
        };
        fs.set_time(NOW);
        assert!(!d.mount_fails, "{ctx}: mounted");
        let got = walk(&mut fs, 1 << 20);
        for (path, want) in &self.tree {
            if self.touched(path, d) {
                continue;
            }
            match got.get(path) {
                Some(node) => assert!(same_node(node, want), "{ctx}: {path} changed: {node:?}"),
                None => panic!(
                    "{ctx}: {path} vanished; damaged {:?}; found {:?}",
                    d.inodes,
                    got.keys().collect::<Vec<_>>()
                ),
            }
        }
        for path in got.keys() {
            if !self.tree.contains_key(path) && !path.ends_with('/') {
                let parent = &path[..path.rfind('/').unwrap()];
                assert!(
                    self.touched(parent, d) || self.touched(path, d),
                    "{ctx}: {path} appeared"
                );
            }
        }
        for path in &d.must_fail {
            let failed = matches!(got.get(path.as_str()), Some(Node::Error(_)) | None)
                || matches!(got.get(&format!("{path}/")), Some(Node::Error(_)))
                || (path == "/" && got.contains_key("//"));
            assert!(
                failed,
                "{ctx}: {path} read without an error: {:?}",
                got.get(path.as_str())
            );
        }
        if let Some(path) = &d.must_loop {
            let root = fs.root().unwrap();
            assert_eq!(fs.resolve(root, path.as_bytes(), true), Err(Errno::ELOOP), "{ctx}");
        }
        // Writing to a damaged file system may fail anywhere, but must not
        // panic or hang.
        if rng.below(2) == 0 {
            scribble(&mut fs, rng);
            if let Ok(dev) = fs.unmount()
                && let Ok(mut fs) = FileManager::mount(
                    dev,
                    MountOptions {
                        read_only: true,
                        time: NOW,
                    },
                )
            {
                walk(&mut fs, 1 << 20);
            }
        }
    }
}

/// Writes of every kind to wherever they land.
fn scribble(fs: &mut FileManager<MemDevice>, rng: &mut Rng) {
    let Ok(root) = fs.root() else { return };
    let paths = [
        "/a",
        "/a/f5000",
        "/a/f300000",
        "/d",
        "/d/e",
        "/fast",
        "/a/b/c/leaf",
        "/d/entry-number-7",
    ];
    let pick = |rng: &mut Rng| paths[rng.below(paths.len() as u64) as usize].as_bytes();
    let _ = fs.mkdir(root, b"new-dir", 0o755, ROOT);
    if let Ok(h) = fs.create(root, b"new-file", 0o644, ROOT) {
        let _ = fs.write(h, rng.below(100_000), &pattern(rng.next(), 20_000));
    }
    for _ in 0..4 {
        let p = pick(rng);
        let Ok(h) = fs.resolve(root, p, false) else { continue };
        let _ = match rng.below(6) {
            0 => fs.truncate(h, rng.below(400_000)),
            1 => fs.write(h, rng.below(400_000), &pattern(rng.next(), 5000)).map(|_| ()),
            2 => fs.resolve_parent(root, p).and_then(|(d, n)| fs.unlink(d, &n)),
            3 => fs
                .resolve_parent(root, p)
                .and_then(|(d, n)| fs.rename(d, &n, root, b"renamed")),
            4 => fs.resolve_parent(root, p).and_then(|(d, n)| fs.rmdir(d, &n)),
            _ => fs.symlink(root, b"new-link", p, ROOT).map(|_| ()),
        };
    }
    let _ = fs.sync();
}

#[test]
fn corrupted_images_give_errors_not_panics() {
    let src = Scratch::new("fuzz");
    small_tree(&src.0);
    let bases: Vec<Base> = CONFIGS.iter().map(|&(bs, isz)| base(&src.0, bs, isz)).collect();
    // A fixed seed keeps runs alike; EXT2_FUZZ_SEED explores others.
    let seed = std::env::var("EXT2_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1234_abcd_0001);
    let mut rng = Rng(seed);
    let (mut mount_failures, mut strict) = (0, 0);
    for round in 0..ROUNDS {
        let b = &bases[(round % bases.len() as u64) as usize];
        let mut img = b.image.clone();
        let d = b.corrupt(&mut img, &mut rng);
        if d.mount_fails {
            mount_failures += 1;
        }
        if !d.must_fail.is_empty() || d.must_loop.is_some() {
            strict += 1;
        }
        b.check(img, &d, &mut rng);
    }
    // Most damage is local: the file system still mounts; and much of it
    // is of a kind the library must report.
    assert!(strict > ROUNDS / 4, "only {strict} images had damage that must show");
    assert!(
        mount_failures < ROUNDS / 4,
        "{mount_failures} of {ROUNDS} images did not mount"
    );
}
