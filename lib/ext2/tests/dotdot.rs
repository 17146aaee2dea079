//! A directory found by name is checked against its `..` entry (a second
//! name for a directory, a loop in the tree, is EIO); that entry is read
//! once while the directory is indexed. A directory that moves must be
//! found under its new parent, and a second name must stay refused after
//! the first name was looked up.

mod common;

use common::*;
use ext2fs::Errno;

#[test]
fn a_moved_directory_is_found_under_its_new_parent() {
    for (bs, isz) in CONFIGS {
        let mut fs = mount(mkfs(None, Geometry::new(bs, isz, 8 << 20)));
        let root = fs.root().unwrap();
        let a = fs.mkdir(root, b"a", 0o755, ROOT).unwrap();
        let b = fs.mkdir(root, b"b", 0o755, ROOT).unwrap();
        let c = fs.mkdir(a, b"c", 0o755, ROOT).unwrap();
        fs.create(c, b"x", 0o644, ROOT).unwrap();
        // Looked up twice: the second answer is the index's.
        assert_eq!(at(&mut fs, "/a/c/x").map(|h| h.ino), fs.lookup(c, b"x").map(|h| h.ino));
        assert_eq!(at(&mut fs, "/a/c").unwrap(), c);
        assert_eq!(at(&mut fs, "/a/c").unwrap(), c);
        fs.rename(a, b"c", b, b"c").unwrap();
        assert_eq!(at(&mut fs, "/b/c").unwrap(), c);
        assert_eq!(at(&mut fs, "/b/c").unwrap(), c);
        assert_eq!(at(&mut fs, "/b/c/..").unwrap(), b);
        assert_eq!(at(&mut fs, "/a/c"), Err(Errno::ENOENT));
        // And back, by an exchange with a file.
        fs.create(a, b"f", 0o644, ROOT).unwrap();
        fs.exchange(b, b"c", a, b"f").unwrap();
        assert_eq!(at(&mut fs, "/a/f").unwrap(), c);
        assert_eq!(at(&mut fs, "/a/f/..").unwrap(), a);
        let image = unmount(fs);
        assert_clean(&image);
    }
}

#[test]
fn a_second_name_for_a_directory_stays_refused() {
    for (bs, isz) in CONFIGS {
        let mut fs = mount(mkfs(None, Geometry::new(bs, isz, 8 << 20)));
        let root = fs.root().unwrap();
        let a = fs.mkdir(root, b"a", 0o755, ROOT).unwrap();
        fs.mkdir(root, b"b", 0o755, ROOT).unwrap();
        let c = fs.mkdir(a, b"c", 0o755, ROOT).unwrap();
        fs.create(c, b"x", 0o644, ROOT).unwrap();
        let image = debugfs_write(&unmount(fs), &["ln /a/c /b/c2".to_string()]);
        let mut fs = mount(image);
        // The first name, with the directory indexed and its `..` read.
        assert!(at(&mut fs, "/a/c/x").is_ok());
        assert!(at(&mut fs, "/a/c").is_ok());
        assert_eq!(at(&mut fs, "/b/c2"), Err(Errno::EIO));
        assert_eq!(at(&mut fs, "/b/c2/x"), Err(Errno::EIO));
        assert!(at(&mut fs, "/a/c/x").is_ok());
    }
}
