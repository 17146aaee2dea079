//! Everything mke2fs (and debugfs) wrote reads back through the library
//! exactly as the host tree it came from.

mod common;

use std::fs;

use common::*;
use ext2fs::{FileManager, FileType, MemDevice, MountOptions};

fn mount_ro(image: Vec<u8>) -> FileManager<MemDevice> {
    FileManager::mount(
        MemDevice::new(image),
        MountOptions {
            read_only: true,
            time: NOW,
        },
    )
    .expect("mount")
}

fn check_tree(image: Vec<u8>, src: &std::path::Path) {
    let mut fs = mount_ro(image);
    assert_walk_is(&mut fs, walk_host(src));
    // Hard links are one inode.
    let a = at(&mut fs, "/hard-a").unwrap();
    let b = at(&mut fs, "/hard-b").unwrap();
    assert_eq!(a, b);
    assert_eq!(fs.stat(a).unwrap().links, 2);
    // Holes hold no blocks: the 100 MiB file has four data blocks at most
    // and the indirect blocks above them.
    let h = at(&mut fs, "/sparse-100m").unwrap();
    let st = fs.stat(h).unwrap();
    assert_eq!(st.size, 100 << 20);
    assert!(st.blocks * 512 < 64 * 1024, "sparse file holds {} sectors", st.blocks);
    // Symlinks resolve.
    let root = fs.root().unwrap();
    let f = fs.resolve(root, b"/links/fast", true).unwrap();
    assert_eq!(f, at(&mut fs, "/files/f1000").unwrap());
    let bottom = fs.resolve(root, b"links/to-dir/level0/level1/level2/level3/level4/level5/level6/level7/level8/level9/level10/level11/level12/level13/level14/level15/level16/level17/level18/level19/level20/level21/level22/level23/level24/level25/level26/level27/level28/level29/bottom", true).unwrap();
    assert_eq!(read_all(&mut fs, bottom).unwrap(), b"at the bottom\n");
    assert_eq!(fs.resolve(root, b"/links/dangling", true), Err(ext2fs::Errno::ENOENT));
    assert_eq!(fs.resolve(root, b"/links/absolute", true), at(&mut fs, "/files/f4096"));
}

#[test]
fn reads_what_mke2fs_wrote() {
    let src = source_dir();
    for (bs, isz) in CONFIGS {
        check_tree(source_image(&src, Geometry::new(bs, isz, 24 << 20)), &src.path("tree"));
    }
}

#[test]
fn reads_indexed_directories() {
    let src = source_dir();
    for (bs, isz) in [(1024, 256), (4096, 128)] {
        let image = indexed(&source_image(&src, Geometry::new(bs, isz, 24 << 20)));
        let mut fs = mount_ro(image.clone());
        let big = at(&mut fs, "/big").unwrap();
        assert_ne!(
            fs.inodes().get(big.ino).unwrap().flags & 0x1000,
            0,
            "/big is not indexed"
        );
        drop(fs);
        check_tree(image, &src.path("tree"));
    }
}

#[test]
fn reads_what_debugfs_wrote() {
    for (bs, isz) in CONFIGS {
        let s = Scratch::new("dbgw");
        let image = mkfs(None, Geometry::new(bs, isz, 16 << 20));
        let mut commands = vec!["mkdir dir".to_string()];
        for (i, n) in [0usize, 1, 5000, 70_000, 300_000, 1_100_000].iter().enumerate() {
            let host = s.path(&format!("h{i}"));
            fs::write(&host, pattern(50 + i as u64, *n)).unwrap();
            commands.push(format!("write {} dir/w{i}", host.display()));
        }
        commands.push("symlink dir/link /dir/w1".into());
        // mknod takes a name in the current directory only.
        commands.push("cd dir".into());
        commands.push("mknod fifo p".into());
        commands.push("mknod null c 1 3".into());
        commands.push("mknod disk b 8 17".into());
        let image = debugfs_write(&image, &commands);
        let mut fs = mount_ro(image);
        for (i, n) in [0usize, 1, 5000, 70_000, 300_000, 1_100_000].iter().enumerate() {
            let h = at(&mut fs, &format!("/dir/w{i}")).unwrap();
            assert_eq!(read_all(&mut fs, h).unwrap(), pattern(50 + i as u64, *n), "w{i}");
        }
        let st = stat_at(&mut fs, "/dir/fifo").unwrap();
        assert_eq!(st.kind, FileType::Fifo);
        let st = stat_at(&mut fs, "/dir/null").unwrap();
        assert_eq!((st.kind, st.rdev), (FileType::CharDevice, (1, 3)));
        let st = stat_at(&mut fs, "/dir/disk").unwrap();
        assert_eq!((st.kind, st.rdev), (FileType::BlockDevice, (8, 17)));
        let l = at(&mut fs, "/dir/link").unwrap();
        assert_eq!(fs.readlink(l).unwrap(), b"/dir/w1");
    }
}

#[test]
fn statfs_agrees_with_the_superblock() {
    let src = source_dir();
    let image = source_image(&src, Geometry::new(1024, 256, 24 << 20));
    let dump = String::from_utf8(debugfs(&image, "stats")).unwrap();
    let field = |name: &str| -> u64 {
        let line = dump
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in {dump}"));
        line.split(':').nth(1).unwrap().trim().parse().unwrap()
    };
    let fs = mount_ro(image);
    let st = fs.statfs();
    assert_eq!(st.free_blocks, field("Free blocks"));
    assert_eq!(st.free_inodes, field("Free inodes"));
    assert_eq!(st.inodes, field("Inode count"));
    // Less the metadata, as Linux's statfs counts it: a superblock and the
    // descriptors in groups 0, 1 and powers of 3, 5, 7; bitmaps and inode
    // tables in every group.
    let groups = field("Inode count") / field("Inodes per group");
    let copies = (0..groups)
        .filter(|&g| g <= 1 || [3, 5, 7].iter().any(|&b| (1..12).any(|k| u64::pow(b, k) == g)))
        .count() as u64;
    let gdt = (groups * 32).div_ceil(1024);
    let overhead = 1 + copies * (1 + gdt) + groups * (2 + field("Inode blocks per group"));
    assert_eq!(st.blocks, field("Block count") - overhead);
    assert_eq!(st.block_size, 1024);
}

#[test]
fn read_dir_resumes_where_it_stopped() {
    let src = source_dir();
    let image = source_image(&src, Geometry::new(4096, 128, 24 << 20));
    let mut fs = mount_ro(image);
    let big = at(&mut fs, "/big").unwrap();
    let all = names(&mut fs, big).unwrap();
    assert_eq!(all.len(), BIG_DIR);
    // Seven at a time, as a client with a small buffer reads.
    let mut got = Vec::new();
    let mut pos = 0;
    loop {
        let mut taken = 0;
        let next = fs
            .read_dir(big, pos, &mut |e| {
                if taken == 7 {
                    return false;
                }
                taken += 1;
                if e.name != b"." && e.name != b".." {
                    got.push((e.name.to_vec(), e.ino));
                }
                true
            })
            .unwrap();
        if taken == 0 {
            break;
        }
        pos = next;
    }
    assert_eq!(got, all);
}

#[test]
fn reads_and_writes_revision_0() {
    let s = Scratch::new("rev0");
    let src = s.path("tree");
    fs::create_dir_all(src.join("dir")).unwrap();
    fs::write(src.join("dir/file"), pattern(8, 20_000)).unwrap();
    let img = s.path("img");
    fs::File::create(&img).unwrap().set_len(4 << 20).unwrap();
    let out = std::process::Command::new(tool("mke2fs"))
        .args(["-q", "-F", "-t", "ext2", "-r", "0", "-b", "1024", "-d"])
        .arg(&src)
        .arg(&img)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut fs = mount(fs::read(&img).unwrap());
    assert_eq!(fs.inodes().superblock().rev_level, 0);
    let f = at(&mut fs, "/dir/file").unwrap();
    assert_eq!(read_all(&mut fs, f).unwrap(), pattern(8, 20_000));
    let d = at(&mut fs, "/dir").unwrap();
    let g = fs.create(d, b"new", 0o644, ROOT).unwrap();
    fs.write(g, 0, b"revision 0").unwrap();
    fs.rename(d, b"file", d, b"renamed").unwrap();
    assert!(fs.inodes().max_file_size() < 1 << 31);
    let image = unmount(fs);
    assert_clean(&image);
    assert_eq!(debugfs(&image, "cat /dir/new"), b"revision 0");
    assert_eq!(debugfs(&image, "cat /dir/renamed"), pattern(8, 20_000));
}
