//! Big files (every level of indirect blocks, 1 GiB and past 4 GiB),
//! truncation that gives every block back, and a disk that fills up.

mod common;

use common::*;
use ext2fs::{Errno, FileManager, Handle, MemDevice};

type Fs = FileManager<MemDevice>;

/// The image as it is on the device now (mounted, synced).
fn snapshot(fs: &mut Fs) -> Vec<u8> {
    fs.sync().unwrap();
    fs.inodes().device().data().to_vec()
}

/// The physical block debugfs finds for logical block `l`.
fn bmap(image: &[u8], path: &str, l: u64) -> u64 {
    let out = String::from_utf8(debugfs(image, &format!("bmap {path} {l}"))).unwrap();
    out.trim().parse().unwrap_or_else(|_| panic!("bmap {path} {l}: {out}"))
}

/// Writes pieces at the given offsets; returns them for checking.
fn write_pieces(fs: &mut Fs, h: Handle, offsets: &[u64], len: usize) -> Vec<(u64, Vec<u8>)> {
    offsets
        .iter()
        .enumerate()
        .map(|(i, &off)| {
            let data = pattern(500 + i as u64, len);
            assert_eq!(fs.write(h, off, &data).unwrap(), len);
            (off, data)
        })
        .collect()
}

fn check_pieces(fs: &mut Fs, h: Handle, pieces: &[(u64, Vec<u8>)]) {
    for (off, data) in pieces {
        let mut buf = vec![0; data.len()];
        assert_eq!(fs.read(h, *off, &mut buf).unwrap(), data.len());
        assert!(buf == *data, "piece at {off}");
        // Just before each piece is a hole (or an earlier piece's end).
        if *off >= 4096 && !pieces.iter().any(|(o, d)| o + d.len() as u64 > off - 4096 && o < off) {
            let mut hole = vec![1; 4096];
            fs.read(h, off - 4096, &mut hole).unwrap();
            assert!(hole.iter().all(|&b| b == 0), "hole before {off}");
        }
    }
}

/// Checks the pieces against the raw blocks debugfs maps them to.
fn check_with_debugfs(image: &[u8], path: &str, bs: u64, pieces: &[(u64, Vec<u8>)]) {
    for (off, data) in pieces {
        for (i, l) in [off / bs, (off + data.len() as u64 - 1) / bs].into_iter().enumerate() {
            let p = bmap(image, path, l);
            assert_ne!(p, 0, "{path}: block {l} unmapped");
            let block = &image[(p * bs) as usize..((p + 1) * bs) as usize];
            let (in_block, from) = if i == 0 {
                ((off % bs) as usize, 0)
            } else {
                (0, (l * bs - off) as usize)
            };
            let n = (bs as usize - in_block).min(data.len() - from);
            assert!(
                block[in_block..in_block + n] == data[from..from + n],
                "{path}: block {l} at {p}"
            );
        }
    }
}

#[test]
fn a_sparse_gibibyte_through_the_triple_indirect_block() {
    let bs = 1024u64;
    let image = mkfs(None, Geometry::new(bs as u32, 256, 32 << 20));
    let mut fs = mount(image);
    let free0 = fs.statfs().free_blocks;
    let root = fs.root().unwrap();
    let h = fs.create(root, b"big", 0o644, ROOT).unwrap();
    let tind = (12 + 256 + 65536) * bs;
    let offsets = [
        0,
        12 * bs - 3,
        268 * bs - 5,
        tind - 7,
        tind + 300 * bs + 1,
        300 << 20,
        (777 << 20) + 123,
        (1 << 30) - 10_000,
    ];
    let pieces = write_pieces(&mut fs, h, &offsets, 10_000);
    assert_eq!(fs.stat(h).unwrap().size, 1 << 30);
    check_pieces(&mut fs, h, &pieces);
    // The map shows exactly the written blocks as data.
    let segs = fs.map_read(h, 0, 1 << 30).unwrap();
    let mapped: u64 = segs.iter().filter(|s| s.block.is_some()).map(|s| s.len).sum();
    let total: u64 = segs.iter().map(|s| s.len).sum();
    assert_eq!(total, 1 << 30);
    assert!(
        mapped >= 8 * 10_000 && mapped <= 8 * (10_000 + 2 * bs),
        "{mapped} bytes mapped"
    );
    let image = snapshot(&mut fs);
    assert_clean(&image);
    check_with_debugfs(&image, "/big", bs, &pieces);
    // Truncation down through every level, checked each time.
    for size in [900 << 20, tind + 100, tind - 1, 268 * bs, 12 * bs, 100, 0] {
        fs.truncate(h, size).unwrap();
        let kept: Vec<_> = pieces
            .iter()
            .filter(|(o, d)| o + d.len() as u64 <= size)
            .cloned()
            .collect();
        check_pieces(&mut fs, h, &kept);
        assert_clean(&snapshot(&mut fs));
    }
    assert_eq!(fs.stat(h).unwrap().blocks, 0);
    fs.sync().unwrap();
    assert_eq!(fs.statfs().free_blocks, free0, "every block came back");
    let image = unmount(fs);
    assert_clean(&image);
}

#[test]
fn a_dense_file_across_every_level() {
    let bs = 1024u64;
    let image = mkfs(None, Geometry::new(bs as u32, 128, 80 << 20));
    let mut fs = mount(image);
    let free0 = fs.statfs().free_blocks;
    let root = fs.root().unwrap();
    let h = fs.create(root, b"dense", 0o644, ROOT).unwrap();
    // 66 MiB reaches into the triple indirect block with 1 KiB blocks.
    let len = 66u64 << 20;
    let chunk = pattern(3, 1 << 20);
    for i in 0..len >> 20 {
        // Every MiB differs in its first bytes.
        let mut c = chunk.clone();
        c[..8].copy_from_slice(&i.to_le_bytes());
        assert_eq!(fs.write(h, i << 20, &c).unwrap(), c.len());
    }
    let image = snapshot(&mut fs);
    assert_clean(&image);
    let data = debugfs(&image, "cat /dense");
    assert_eq!(data.len() as u64, len);
    for i in 0..len >> 20 {
        let part = &data[(i << 20) as usize..((i + 1) << 20) as usize];
        assert_eq!(&part[..8], &i.to_le_bytes());
        assert!(part[8..] == chunk[8..], "MiB {i}");
    }
    // Shrink level by level; each step frees what it should.
    let tind = (12 + 256 + 65536) * bs;
    for size in [tind + 5, tind, 268 * bs + 1, 268 * bs, 12 * bs + 1, 12 * bs, 1, 0] {
        fs.truncate(h, size).unwrap();
        let image = snapshot(&mut fs);
        assert_clean(&image);
        let mut buf = vec![0; size.min(4096) as usize];
        fs.read(h, size - buf.len() as u64, &mut buf).unwrap();
    }
    fs.sync().unwrap();
    assert_eq!(fs.statfs().free_blocks, free0);
    // Grow again: holes, not old data.
    fs.truncate(h, 10 << 20).unwrap();
    let mut buf = vec![1; 1 << 20];
    fs.read(h, 5 << 20, &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 0));
    assert_clean(&unmount(fs));
}

#[test]
fn past_four_gibibytes_with_4k_blocks() {
    let bs = 4096u64;
    let image = mkfs(None, Geometry::new(bs as u32, 128, 16 << 20));
    let mut fs = mount(image);
    let free0 = fs.statfs().free_blocks;
    let root = fs.root().unwrap();
    let h = fs.create(root, b"huge", 0o644, ROOT).unwrap();
    // The triple indirect block of a 4 KiB file system starts past 4 GiB.
    let tind = (12 + 1024 + 1024 * 1024) * bs;
    let pieces = write_pieces(&mut fs, h, &[1 << 30, tind - 100, 5 << 30, (6 << 30) + 1], 50_000);
    check_pieces(&mut fs, h, &pieces);
    let image = snapshot(&mut fs);
    assert_clean(&image);
    check_with_debugfs(&image, "/huge", bs, &pieces);
    let st = String::from_utf8(debugfs(&image, "stat /huge")).unwrap();
    assert!(st.contains(&format!("Size: {}", (6u64 << 30) + 1 + 50_000)), "{st}");
    fs.truncate(h, 0).unwrap();
    fs.sync().unwrap();
    assert_eq!(fs.statfs().free_blocks, free0);
    assert_clean(&unmount(fs));
}

#[test]
fn a_full_disk_loses_nothing() {
    for (bs, isz) in [(1024, 128), (4096, 256)] {
        let image = mkfs(None, Geometry::new(bs, isz, 3 << 20));
        let mut fs = mount(image);
        let root = fs.root().unwrap();
        let mut files: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut full = false;
        for i in 0.. {
            let name = format!("f{i}").into_bytes();
            let h = match fs.create(root, &name, 0o644, ROOT) {
                Ok(h) => h,
                Err(e) => {
                    assert_eq!(e, Errno::ENOSPC);
                    break;
                }
            };
            let data = pattern(i, 150_000 + i as usize * 1000);
            let mut written = 0;
            while written < data.len() {
                match fs.write(h, written as u64, &data[written..]) {
                    Ok(n) => written += n,
                    Err(e) => {
                        assert_eq!(e, Errno::ENOSPC);
                        full = true;
                        break;
                    }
                }
            }
            files.push((name, data[..written].to_vec()));
            if full {
                break;
            }
        }
        assert!(full, "the disk never filled");
        assert!(files.len() > 5);
        // A block or two may be left that a file could not use (it needed
        // an indirect block too): directories take them.
        let mut dirs = 0;
        while fs.mkdir(root, format!("dir{dirs}").as_bytes(), 0o755, ROOT).is_ok() {
            dirs += 1;
        }
        assert!(dirs < 4, "{dirs} directories fitted on a full disk");
        assert_eq!(fs.mkdir(root, b"newdir", 0o755, ROOT), Err(Errno::ENOSPC));
        let (_, last) = files.last().unwrap();
        let h = fs.lookup(root, &files.last().unwrap().0).unwrap();
        assert_eq!(fs.write(h, last.len() as u64, b"more"), Err(Errno::ENOSPC));
        assert_eq!(fs.map_write(h, last.len() as u64, 100_000), Err(Errno::ENOSPC));
        assert_eq!(fs.statfs().free_blocks, 0);
        for (name, data) in &files {
            let h = fs.lookup(root, name).unwrap();
            assert!(
                read_all(&mut fs, h).unwrap() == *data,
                "{}",
                String::from_utf8_lossy(name)
            );
        }
        let image = snapshot(&mut fs);
        assert_clean(&image);
        // Space freed by a removal is usable at once (the pending free is
        // committed when allocation runs dry).
        fs.unlink(root, &files[0].0).unwrap();
        let h = fs.create(root, b"after", 0o644, ROOT).unwrap();
        assert_eq!(fs.write(h, 0, &pattern(1, 100_000)).unwrap(), 100_000);
        let image = unmount(fs);
        assert_clean(&image);
    }
}

#[test]
fn running_out_of_inodes() {
    let mut g = Geometry::new(1024, 128, 2 << 20);
    g.inodes = 32;
    let image = mkfs(None, g);
    let mut fs = mount(image);
    let root = fs.root().unwrap();
    let mut made = 0;
    loop {
        match fs.mkdir(root, format!("d{made}").as_bytes(), 0o755, ROOT) {
            Ok(_) => made += 1,
            Err(e) => {
                assert_eq!(e, Errno::ENOSPC);
                break;
            }
        }
    }
    assert!(made > 10);
    assert_eq!(fs.statfs().free_inodes, 0);
    assert_eq!(fs.create(root, b"file", 0o644, ROOT), Err(Errno::ENOSPC));
    assert_eq!(fs.symlink(root, b"link", b"target", ROOT), Err(Errno::ENOSPC));
    let image = snapshot(&mut fs);
    assert_clean(&image);
    fs.rmdir(root, b"d0").unwrap();
    fs.create(root, b"file", 0o644, ROOT).unwrap();
    assert_clean(&unmount(fs));
}
