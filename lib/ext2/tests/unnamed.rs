//! Unnamed files (O_TMPFILE): no entry names one, its bytes live while it
//! is open, a linkable one gets a name once, and what a crash leaves of
//! one is freed by `e2fsck -p`.

mod common;

use std::process::Command;

use common::*;
use ext2fs::{Errno, Handle, Owner};

#[test]
fn an_unnamed_file_is_freed_at_its_last_close() {
    let mut fs = mount(mkfs(None, Geometry::new(1024, 256, 4 << 20)));
    let root = fs.root().unwrap();
    fs.sync().unwrap();
    let (blocks, inodes) = (fs.statfs().free_blocks, fs.statfs().free_inodes);
    let t = fs.create_unnamed(root, 0o600, ROOT, true).unwrap();
    fs.write(t, 0, &pattern(7, 40_000)).unwrap();
    assert_eq!(read_all(&mut fs, t).unwrap(), pattern(7, 40_000));
    let st = fs.stat(t).unwrap();
    assert_eq!((st.links, st.mode & 0o7777, st.size), (0, 0o600, 40_000));
    // No entry names it.
    assert!(names(&mut fs, root).unwrap().iter().all(|(_, ino)| *ino != t.ino));
    fs.close(t).unwrap();
    assert_eq!(fs.stat(t), Err(Errno::ESTALE));
    fs.sync().unwrap();
    assert_eq!((fs.statfs().free_blocks, fs.statfs().free_inodes), (blocks, inodes));
    assert_clean(&unmount(fs));
}

#[test]
fn a_linkable_unnamed_file_gets_one_first_name() {
    let mut fs = mount(mkfs(None, Geometry::new(4096, 256, 8 << 20)));
    let root = fs.root().unwrap();
    let t = fs.create_unnamed(root, 0o7777, ROOT, true).unwrap();
    assert!(fs.is_linkable(t.ino));
    fs.write(t, 0, b"kept").unwrap();
    fs.link(t, root, b"named").unwrap();
    assert!(!fs.is_linkable(t.ino));
    assert_eq!(at(&mut fs, "/named"), Ok(t));
    let st = fs.stat(t).unwrap();
    assert_eq!((st.links, st.mode & 0o7777), (1, 0o7777));
    fs.link(t, root, b"second").unwrap();
    fs.close(t).unwrap();
    // Named, it outlives its close, as any file.
    let h = at(&mut fs, "/named").unwrap();
    assert_eq!(read_all(&mut fs, h).unwrap(), b"kept");
    // Unlinked while open, it is an orphan again, and no longer linkable.
    fs.open(h).unwrap();
    fs.unlink(root, b"named").unwrap();
    fs.unlink(root, b"second").unwrap();
    assert_eq!(fs.link(h, root, b"again"), Err(Errno::ENOENT));
    fs.close(h).unwrap();
    assert_clean(&unmount(fs));
}

#[test]
fn an_exclusive_unnamed_file_takes_no_name() {
    let mut fs = mount(mkfs(None, Geometry::new(1024, 256, 4 << 20)));
    let root = fs.root().unwrap();
    let t = fs.create_unnamed(root, 0o644, ROOT, false).unwrap();
    assert_eq!(fs.link(t, root, b"x"), Err(Errno::ENOENT));
    assert_eq!(fs.lookup(root, b"x"), Err(Errno::ENOENT));
    // Open at unmount: freed then.
    fs.write(t, 0, &pattern(1, 9000)).unwrap();
    assert_clean(&unmount(fs));
}

#[test]
fn a_removed_directory_makes_no_unnamed_file() {
    let mut fs = mount(mkfs(None, Geometry::new(1024, 256, 4 << 20)));
    let root = fs.root().unwrap();
    let d = fs.mkdir(root, b"d", 0o755, ROOT).unwrap();
    fs.open(d).unwrap();
    fs.rmdir(root, b"d").unwrap();
    assert_eq!(fs.create_unnamed(d, 0o600, ROOT, true).err(), Some(Errno::ENOENT));
    fs.close(d).unwrap();
    let stale = Handle {
        ino: d.ino,
        generation: d.generation.wrapping_add(1),
    };
    assert_eq!(fs.create_unnamed(stale, 0o600, ROOT, true).err(), Some(Errno::ESTALE));
    // A set-group-id directory gives its group.
    let g = fs.mkdir(root, b"g", 0o2775, Owner { uid: 0, gid: 42 }).unwrap();
    let t = fs.create_unnamed(g, 0o600, Owner { uid: 5, gid: 6 }, true).unwrap();
    assert_eq!((fs.stat(t).unwrap().uid, fs.stat(t).unwrap().gid), (5, 42));
    fs.close(t).unwrap();
    assert_clean(&unmount(fs));
}

/// A crash while an unnamed file is open (its data written and synced)
/// leaves an inode and blocks in use that read as deleted: `e2fsck -p`
/// frees them without asking, and finds nothing else.
#[test]
fn a_crash_leaves_what_e2fsck_p_frees() {
    let mut fs = mount(mkfs(None, Geometry::new(1024, 256, 4 << 20)));
    let root = fs.root().unwrap();
    let keep = fs.create(root, b"keep", 0o644, ROOT).unwrap();
    fs.write(keep, 0, b"stays").unwrap();
    let t = fs.create_unnamed(root, 0o600, ROOT, true).unwrap();
    fs.write(t, 0, &pattern(2, 30_000)).unwrap();
    fs.sync().unwrap();
    let crashed = fs.inodes().device().data().to_vec();
    assert_ne!(fsck(&crashed).0, 0, "the crash left nothing to free");
    let s = Scratch::new("unnamed-crash");
    let img = s.path("img");
    std::fs::write(&img, &crashed).unwrap();
    let out = Command::new(tool("e2fsck")).arg("-fp").arg(&img).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().unwrap_or(-1) <= 1, "e2fsck -fp: {text}");
    let fixed = std::fs::read(&img).unwrap();
    assert_clean(&fixed);
    let mut fs = mount(fixed);
    let h = at(&mut fs, "/keep").unwrap();
    assert_eq!(read_all(&mut fs, h).unwrap(), b"stays");
    // Every block the unnamed file held is free again.
    let free_after = fs.statfs().free_blocks;
    let h2 = fs.create(root, b"probe", 0o644, ROOT).unwrap();
    fs.write(h2, 0, &pattern(3, 30_000)).unwrap();
    assert!(fs.statfs().free_blocks < free_after);
    assert_clean(&unmount(fs));
}
