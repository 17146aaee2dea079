//! Extended attributes written through the library: e2fsck (which checks
//! every entry's hash, the values' places and the reference counts) finds
//! nothing to fix, and debugfs reads back what was written; a block two
//! inodes share is read by both and unshared by a change.

mod common;

use common::*;
use ext2fs::{Errno, FileManager, Handle, MemDevice, XATTR_CREATE, XATTR_REPLACE};

type Fs = FileManager<MemDevice>;

fn file(fs: &mut Fs, name: &str) -> Handle {
    let root = fs.root().unwrap();
    fs.create(root, name.as_bytes(), 0o644, ROOT).unwrap()
}

fn names(fs: &mut Fs, h: Handle) -> Vec<String> {
    fs.xattr_list(h)
        .unwrap()
        .into_iter()
        .map(|n| String::from_utf8(n).unwrap())
        .collect()
}

/// The File ACL block debugfs reports for `path`.
fn acl_block(image: &[u8], path: &str) -> u64 {
    let text = String::from_utf8(debugfs(image, &format!("stat {path}"))).unwrap();
    let at = text.find("File ACL: ").expect("debugfs stat gives the File ACL");
    text[at + 10..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn set_get_list_remove_fsck_clean() {
    for (bs, isz) in CONFIGS {
        let mut fs = mount(mkfs(None, Geometry::new(bs, isz, 4 << 20)));
        let a = file(&mut fs, "a");
        let root = fs.root().unwrap();
        let d = fs.mkdir(root, b"d", 0o755, ROOT).unwrap();
        assert_eq!(fs.xattr_list(a).unwrap(), Vec::<Vec<u8>>::new());
        assert_eq!(fs.xattr_get(a, b"user.k"), Err(Errno::ENODATA));
        fs.xattr_set(a, b"user.zeta", Some(b"last"), 0).unwrap();
        fs.xattr_set(a, b"user.k", Some(b"value one"), XATTR_CREATE).unwrap();
        fs.xattr_set(a, b"trusted.t", Some(&[0x80, 0xff, 0]), 0).unwrap();
        fs.xattr_set(a, b"security.s", Some(b""), 0).unwrap();
        fs.xattr_set(a, "user.\u{e9}t\u{e9}".as_bytes(), Some(b"high bytes in the name"), 0)
            .unwrap();
        fs.xattr_set(d, b"user.on_dir", Some(b"x"), 0).unwrap();
        assert_eq!(fs.xattr_set(a, b"user.k", Some(b"v"), XATTR_CREATE), Err(Errno::EEXIST));
        assert_eq!(
            fs.xattr_set(a, b"user.nope", Some(b"v"), XATTR_REPLACE),
            Err(Errno::ENODATA)
        );
        assert_eq!(fs.xattr_set(a, b"user.nope", None, 0), Err(Errno::ENODATA));
        fs.xattr_set(a, b"user.k", Some(b"value two, longer"), XATTR_REPLACE)
            .unwrap();
        assert_eq!(fs.xattr_get(a, b"user.k").unwrap(), b"value two, longer");
        assert_eq!(fs.xattr_get(a, b"security.s").unwrap(), b"");
        assert_eq!(fs.xattr_get(a, b"trusted.t").unwrap(), [0x80, 0xff, 0]);
        // Sorted as Linux keeps them: index, then name length, then name.
        assert_eq!(
            names(&mut fs, a),
            ["user.k", "user.zeta", "user.\u{e9}t\u{e9}", "trusted.t", "security.s"]
        );
        // Names the library does not serve, and bad ones.
        assert_eq!(
            fs.xattr_set(a, b"system.posix_acl_access", Some(b""), 0),
            Err(Errno::EOPNOTSUPP)
        );
        assert_eq!(fs.xattr_set(a, b"other.x", Some(b""), 0), Err(Errno::EOPNOTSUPP));
        assert_eq!(fs.xattr_set(a, b"user.", Some(b""), 0), Err(Errno::EINVAL));
        let long = [b"user.".to_vec(), vec![b'n'; 256]].concat();
        assert_eq!(fs.xattr_set(a, &long, Some(b""), 0), Err(Errno::ERANGE));
        assert_eq!(
            fs.xattr_set(a, b"user.big", Some(&vec![1; bs as usize + 1]), 0),
            Err(Errno::ERANGE)
        );
        let blocks_before = fs.stat(a).unwrap().blocks;
        let image = unmount(fs);
        assert_clean(&image);
        let listed = String::from_utf8(debugfs(&image, "ea_list /a")).unwrap();
        assert!(
            listed.contains("user.k") && listed.contains("value two, longer"),
            "{listed}"
        );
        assert!(
            listed.contains("trusted.t") && listed.contains("security.s"),
            "{listed}"
        );
        let got = debugfs(&image, "ea_get /d user.on_dir");
        assert!(String::from_utf8_lossy(&got).contains('x'));
        // The check above would see a wrong hash: the first entry's, off.
        let mut wrong = image.clone();
        wrong[acl_block(&image, "/a") as usize * bs as usize + 32 + 12] ^= 1;
        assert_ne!(fsck(&wrong).0, 0, "e2fsck checks the entry hashes");

        // Removing every attribute frees the block.
        let mut fs = mount(image);
        let a = at(&mut fs, "/a").unwrap();
        assert_eq!(blocks_before, fs.stat(a).unwrap().blocks);
        for n in names(&mut fs, a) {
            fs.xattr_set(a, n.as_bytes(), None, 0).unwrap();
        }
        assert_eq!(fs.xattr_list(a).unwrap(), Vec::<Vec<u8>>::new());
        assert_eq!(fs.stat(a).unwrap().blocks, 0);
        let image = unmount(fs);
        assert_clean(&image);
        assert_eq!(acl_block(&image, "/a"), 0);
    }
}

#[test]
fn a_full_block_is_enospc_and_stays_clean() {
    for (bs, isz) in CONFIGS {
        let mut fs = mount(mkfs(None, Geometry::new(bs, isz, 4 << 20)));
        let a = file(&mut fs, "a");
        let mut n = 0;
        let err = loop {
            match fs.xattr_set(a, format!("user.attr{n:04}").as_bytes(), Some(&[n as u8; 40]), 0) {
                Ok(()) => n += 1,
                Err(e) => break e,
            }
        };
        assert_eq!(err, Errno::ENOSPC);
        // Entry 16 + name 8 ("attr0000", the prefix is the index), value
        // 40: 64 bytes each, after the header and the end mark.
        assert_eq!(n, (bs as usize - 36) / 64);
        assert_eq!(fs.xattr_list(a).unwrap().len(), n);
        // A whole block's value never fits beside the header.
        fs.xattr_set(a, b"user.attr0000", None, 0).unwrap();
        assert_eq!(
            fs.xattr_set(a, b"user.v", Some(&vec![7; bs as usize]), 0),
            Err(Errno::ENOSPC)
        );
        assert_eq!(fs.xattr_get(a, b"user.attr0001").unwrap(), [1; 40]);
        let image = unmount(fs);
        assert_clean(&image);
    }
}

#[test]
fn shared_block_is_read_and_unshared_on_change() {
    for (bs, isz) in CONFIGS {
        let mut fs = mount(mkfs(None, Geometry::new(bs, isz, 4 << 20)));
        let a = file(&mut fs, "a");
        file(&mut fs, "b");
        fs.xattr_set(a, b"user.shared", Some(b"by two"), 0).unwrap();
        let image = unmount(fs);
        // Point b at a's block and count the reference, as Linux's ext2
        // does for inodes whose attributes are equal.
        let block = acl_block(&image, "/a");
        assert_ne!(block, 0);
        let mut image = debugfs_write(
            &image,
            &[
                format!("sif /b file_acl {block}"),
                format!("sif /b blocks {}", bs / 512),
            ],
        );
        let refs = block as usize * bs as usize + 4;
        image[refs..refs + 4].copy_from_slice(&2u32.to_le_bytes());
        assert_clean(&image);

        let mut fs = mount(image);
        let a = at(&mut fs, "/a").unwrap();
        let b = at(&mut fs, "/b").unwrap();
        assert_eq!(fs.xattr_get(b, b"user.shared").unwrap(), b"by two");
        fs.xattr_set(b, b"user.own", Some(b"b's"), 0).unwrap();
        assert_eq!(names(&mut fs, a), ["user.shared"]);
        assert_eq!(names(&mut fs, b), ["user.own", "user.shared"]);
        let image = unmount(fs);
        assert_clean(&image);
        assert_eq!(acl_block(&image, "/a"), block);
        assert_ne!(acl_block(&image, "/b"), block);
        assert_eq!(image[refs..refs + 4], 1u32.to_le_bytes());
    }
}

#[test]
fn unlinking_frees_the_block_and_a_damaged_block_is_eio() {
    for (bs, isz) in CONFIGS {
        let mut fs = mount(mkfs(None, Geometry::new(bs, isz, 4 << 20)));
        let a = file(&mut fs, "a");
        file(&mut fs, "c");
        fs.xattr_set(a, b"user.x", Some(b"1"), 0).unwrap();
        let root = fs.root().unwrap();
        fs.unlink(root, b"a").unwrap();
        let c = at(&mut fs, "/c").unwrap();
        fs.xattr_set(c, b"user.x", Some(b"2"), 0).unwrap();
        let image = unmount(fs);
        assert_clean(&image);
        let block = acl_block(&image, "/c") as usize;
        let mut bad = image.clone();
        bad[block * bs as usize + 3] ^= 0xff;
        let mut fs = mount(bad);
        let c = at(&mut fs, "/c").unwrap();
        assert_eq!(fs.xattr_get(c, b"user.x"), Err(Errno::EIO));
        assert_eq!(fs.xattr_list(c), Err(Errno::EIO));
        assert_eq!(fs.xattr_set(c, b"user.y", Some(b""), 0), Err(Errno::EIO));
    }
}
