//! Space allocated ahead and holes punched (fallocate): the blocks are
//! really allocated or freed (the free count and `st_blocks` move), the
//! bytes read as they must, a full disk loses nothing, and e2fsck finds
//! nothing to fix.

mod common;

use common::*;
use ext2fs::{Errno, FileManager, MemDevice, MountOptions};

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) | 1)
        .collect()
}

#[test]
fn allocation_takes_blocks_that_read_as_zeros() {
    for (bs, isz) in CONFIGS {
        let mut fs = mount(mkfs(None, Geometry::new(bs, isz, 16 << 20)));
        let root = fs.root().unwrap();
        let f = fs.create(root, b"pre", 0o644, ROOT).unwrap();
        let head = bytes(1000, 3);
        fs.write(f, 0, &head).unwrap();
        let free = fs.statfs().free_blocks;
        let len = 40 * bs as u64 + 123;
        fs.allocate(f, 500, len, false).unwrap();
        let st = fs.stat(f).unwrap();
        assert_eq!(st.size, 500 + len);
        let data_blocks = (500 + len).div_ceil(bs as u64);
        assert!(
            st.blocks >= data_blocks * (bs as u64 / 512),
            "{bs}: {} sectors",
            st.blocks
        );
        assert!(
            free - fs.statfs().free_blocks >= data_blocks - 1,
            "{bs}: free count did not drop"
        );
        let mut want = head.clone();
        want.resize((500 + len) as usize, 0);
        assert_eq!(
            read_all(&mut fs, f).unwrap(),
            want,
            "{bs}: the old bytes stay, the rest is zeros"
        );
        // A write into the allocated range takes no more blocks.
        let free = fs.statfs().free_blocks;
        fs.write(f, 5 * bs as u64, &bytes(bs as usize, 9)).unwrap();
        assert_eq!(fs.statfs().free_blocks, free);
        let image = unmount(fs);
        assert_clean(&image);
    }
}

#[test]
fn keep_size_allocates_without_growing() {
    let bs = 1024u64;
    let mut fs = mount(mkfs(None, Geometry::new(bs as u32, 256, 8 << 20)));
    let root = fs.root().unwrap();
    let f = fs.create(root, b"keep", 0o644, ROOT).unwrap();
    fs.write(f, 0, &bytes(3000, 1)).unwrap();
    let before = fs.stat(f).unwrap();
    fs.allocate(f, 0, 2000, true).unwrap();
    assert_eq!(
        fs.stat(f).unwrap().blocks,
        before.blocks,
        "already allocated: nothing new"
    );
    fs.allocate(f, 3000, 20 * bs, true).unwrap();
    let st = fs.stat(f).unwrap();
    assert_eq!(st.size, 3000);
    assert!(st.blocks > before.blocks);
    // Growing over the allocated blocks shows zeros.
    fs.truncate(f, 10 * bs).unwrap();
    let got = read_all(&mut fs, f).unwrap();
    assert_eq!(&got[..3000], &bytes(3000, 1)[..]);
    assert!(got[3000..].iter().all(|&b| b == 0));
}

#[test]
fn punched_holes_free_whole_blocks_and_zero_the_rest() {
    for (bs, isz) in CONFIGS {
        let bsz = bs as u64;
        let mut fs = mount(mkfs(None, Geometry::new(bs, isz, 16 << 20)));
        let root = fs.root().unwrap();
        let f = fs.create(root, b"holes", 0o644, ROOT).unwrap();
        // Past the direct blocks, into the single and double indirect ones.
        let size = (12 + bsz / 4 + 40) * bsz;
        let data = bytes(size as usize, 7);
        fs.write(f, 0, &data).unwrap();
        let st = fs.stat(f).unwrap();
        let free = fs.statfs().free_blocks;
        // From the middle of block 2 to the middle of a block past the
        // single indirect ones.
        let (off, end) = (2 * bsz + 100, (12 + bsz / 4 + 20) * bsz + 7);
        fs.punch_hole(f, off, end - off).unwrap();
        let whole = end / bsz - off.div_ceil(bsz);
        assert_eq!(fs.stat(f).unwrap().size, size, "{bs}: the size stays");
        assert_eq!(
            st.blocks - fs.stat(f).unwrap().blocks,
            whole * (bsz / 512),
            "{bs}: the whole blocks are freed"
        );
        assert_eq!(fs.statfs().free_blocks - free, whole);
        let mut want = data.clone();
        want[off as usize..end as usize].fill(0);
        assert_eq!(read_all(&mut fs, f).unwrap(), want);
        // Inside one block: zeros, nothing freed. Past the end: nothing.
        fs.punch_hole(f, 10, 20).unwrap();
        want[10..30].fill(0);
        fs.punch_hole(f, size + 5 * bsz, bsz).unwrap();
        assert_eq!(read_all(&mut fs, f).unwrap(), want);
        // The hole takes data again.
        fs.write(f, 3 * bsz, &bytes(bs as usize, 2)).unwrap();
        want[3 * bsz as usize..4 * bsz as usize].copy_from_slice(&bytes(bs as usize, 2));
        assert_eq!(read_all(&mut fs, f).unwrap(), want);
        let image = unmount(fs);
        assert_clean(&image);
    }
}

#[test]
fn a_full_disk_fails_with_enospc_and_loses_nothing() {
    let bs = 1024u64;
    let mut fs = mount(mkfs(None, Geometry::new(bs as u32, 256, 2 << 20)));
    let root = fs.root().unwrap();
    let keep = fs.create(root, b"keep", 0o644, ROOT).unwrap();
    let kept = bytes(5000, 4);
    fs.write(keep, 0, &kept).unwrap();
    let f = fs.create(root, b"big", 0o644, ROOT).unwrap();
    assert_eq!(fs.allocate(f, 0, 64 << 20, false), Err(Errno::ENOSPC));
    assert_eq!(fs.statfs().free_blocks, 0);
    // What was allocated is the file's, inside its size, and reads as zeros.
    let st = fs.stat(f).unwrap();
    assert!(st.size > 0 && st.size.div_ceil(bs) * (bs / 512) <= st.blocks);
    assert!(read_all(&mut fs, f).unwrap().iter().all(|&b| b == 0));
    assert_eq!(read_all(&mut fs, keep).unwrap(), kept);
    // One more block past the end: still ENOSPC, the size unchanged.
    assert_eq!(fs.allocate(f, st.size, bs, false), Err(Errno::ENOSPC));
    assert_eq!(fs.stat(f).unwrap().size, st.size);
    // A punched hole gives the space back for another allocation.
    fs.punch_hole(f, 0, 8 * bs).unwrap();
    fs.allocate(f, st.size, bs, true).unwrap();
    let image = unmount(fs);
    let (code, text) = fsck(&image);
    // Only the kept-size block past the end is e2fsck's business (ext2's
    // indirect map has no flag for blocks past the end).
    assert!(code == 0 || text.contains("i_size is"), "e2fsck: {text}");
}

#[test]
fn bad_ranges_and_read_only_mounts_are_refused() {
    let mut fs = mount(mkfs(None, Geometry::new(1024, 256, 4 << 20)));
    let root = fs.root().unwrap();
    let f = fs.create(root, b"f", 0o644, ROOT).unwrap();
    let max = fs.inodes().max_file_size();
    assert_eq!(fs.allocate(f, max, 1, false), Err(Errno::EFBIG));
    assert_eq!(fs.allocate(f, u64::MAX - 1, 4, false), Err(Errno::EFBIG));
    assert_eq!(fs.allocate(f, 0, 0, false), Err(Errno::EINVAL));
    assert_eq!(fs.punch_hole(f, 0, 0), Err(Errno::EINVAL));
    assert_eq!(fs.allocate(root, 0, 10, false), Err(Errno::EISDIR));
    // A huge punch ends at the largest file.
    fs.punch_hole(f, 0, u64::MAX).unwrap();
    let image = unmount(fs);
    let mut ro = FileManager::mount(
        MemDevice::new(image),
        MountOptions {
            read_only: true,
            time: NOW,
        },
    )
    .unwrap();
    let f = at(&mut ro, "/f").unwrap();
    assert_eq!(ro.allocate(f, 0, 10, false), Err(Errno::EROFS));
    assert_eq!(ro.punch_hole(f, 0, 10), Err(Errno::EROFS));
}

#[test]
fn seek_finds_data_and_holes() {
    let bs = 1024u64;
    let mut fs = mount(mkfs(None, Geometry::new(bs as u32, 256, 8 << 20)));
    let root = fs.root().unwrap();
    let f = fs.create(root, b"sparse", 0o644, ROOT).unwrap();
    // Data in blocks 0-1, a hole to block 20 (past the direct blocks),
    // data in 20, a hole to the end at 30.5 blocks.
    fs.write(f, 0, &bytes(2 * bs as usize, 1)).unwrap();
    fs.write(f, 20 * bs + 10, &bytes(100, 2)).unwrap();
    fs.truncate(f, 30 * bs + 512).unwrap();
    let data = |fs: &mut FileManager<MemDevice>, off| fs.seek_data_or_hole(f, off, true).unwrap();
    let hole = |fs: &mut FileManager<MemDevice>, off| fs.seek_data_or_hole(f, off, false).unwrap();
    assert_eq!(data(&mut fs, 0), Some(0));
    assert_eq!(data(&mut fs, 5), Some(5));
    assert_eq!(hole(&mut fs, 0), Some(2 * bs));
    assert_eq!(data(&mut fs, 2 * bs), Some(20 * bs));
    assert_eq!(hole(&mut fs, 2 * bs + 7), Some(2 * bs + 7));
    assert_eq!(hole(&mut fs, 20 * bs), Some(21 * bs));
    assert_eq!(data(&mut fs, 21 * bs), None);
    assert_eq!(hole(&mut fs, 30 * bs + 100), Some(30 * bs + 100));
    assert_eq!(data(&mut fs, 30 * bs + 512), None);
    assert_eq!(hole(&mut fs, 1 << 40), None);
    // A punched range is a hole again; an allocated one is data.
    fs.punch_hole(f, 0, 2 * bs).unwrap();
    assert_eq!(data(&mut fs, 0), Some(20 * bs));
    fs.allocate(f, 25 * bs, bs, true).unwrap();
    assert_eq!(data(&mut fs, 21 * bs), Some(25 * bs));
}
