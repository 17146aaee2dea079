//! RENAME_EXCHANGE: two names swap their files, directories included,
//! with the `..` of a directory that changes parent and the parents' link
//! counts right (e2fsck finds nothing to fix), and the refusals Linux
//! makes.

mod common;

use common::*;
use ext2fs::Errno;

#[test]
fn files_and_directories_swap_with_their_parents_right() {
    for (bs, isz) in CONFIGS {
        let mut fs = mount(mkfs(None, Geometry::new(bs, isz, 8 << 20)));
        let root = fs.root().unwrap();
        let d1 = fs.mkdir(root, b"d1", 0o755, ROOT).unwrap();
        let d2 = fs.mkdir(root, b"d2", 0o755, ROOT).unwrap();
        let f = fs.create(d1, b"f", 0o644, ROOT).unwrap();
        fs.write(f, 0, b"file").unwrap();
        let g = fs.create(d1, b"g", 0o644, ROOT).unwrap();
        let sub = fs.mkdir(d2, b"sub", 0o755, ROOT).unwrap();
        fs.mkdir(sub, b"inner", 0o755, ROOT).unwrap();
        // Two files of one directory.
        fs.exchange(d1, b"f", d1, b"g").unwrap();
        assert_eq!(at(&mut fs, "/d1/g").unwrap(), f);
        assert_eq!(at(&mut fs, "/d1/f").unwrap(), g);
        // A file for a directory across parents: d1 gains the
        // subdirectory, d2 loses it.
        let (l1, l2) = (fs.stat(d1).unwrap().links, fs.stat(d2).unwrap().links);
        fs.exchange(d1, b"g", d2, b"sub").unwrap();
        assert_eq!(at(&mut fs, "/d1/g").unwrap(), sub);
        assert_eq!(at(&mut fs, "/d2/sub").unwrap(), f);
        assert_eq!(fs.stat(d1).unwrap().links, l1 + 1);
        assert_eq!(fs.stat(d2).unwrap().links, l2 - 1);
        assert_eq!(at(&mut fs, "/d1/g/..").unwrap(), d1);
        // Two directories across parents: both `..` move.
        fs.exchange(root, b"d2", d1, b"g").unwrap();
        assert_eq!(at(&mut fs, "/d2").unwrap(), sub);
        assert_eq!(at(&mut fs, "/d1/g").unwrap(), d2);
        assert_eq!(at(&mut fs, "/d2/..").unwrap(), root);
        assert_eq!(at(&mut fs, "/d1/g/..").unwrap(), d1);
        assert_eq!(at(&mut fs, "/d2/inner/..").unwrap(), sub);
        // One name for both: nothing to do.
        fs.exchange(d1, b"f", d1, b"f").unwrap();
        let image = unmount(fs);
        assert_clean(&image);
    }
}

#[test]
fn refusals_are_linux_errors_and_change_nothing() {
    let mut fs = mount(mkfs(None, Geometry::new(1024, 256, 4 << 20)));
    let root = fs.root().unwrap();
    let a = fs.mkdir(root, b"a", 0o755, ROOT).unwrap();
    let b = fs.mkdir(a, b"b", 0o755, ROOT).unwrap();
    fs.create(b, b"f", 0o644, ROOT).unwrap();
    assert_eq!(fs.exchange(root, b"a", b, b"f"), Err(Errno::EINVAL));
    assert_eq!(fs.exchange(b, b"f", root, b"a"), Err(Errno::EINVAL));
    assert_eq!(fs.exchange(root, b"a", root, b"none"), Err(Errno::ENOENT));
    assert_eq!(fs.exchange(root, b"none", root, b"a"), Err(Errno::ENOENT));
    assert_eq!(fs.exchange(root, b".", a, b"b"), Err(Errno::EINVAL));
    assert_eq!(fs.exchange(a, b"b", a, b".."), Err(Errno::EINVAL));
    let long = vec![b'x'; 256];
    assert_eq!(fs.exchange(a, b"b", a, &long), Err(Errno::ENAMETOOLONG));
    assert!(at(&mut fs, "/a/b/f").is_ok());
    let image = unmount(fs);
    assert_clean(&image);
}
