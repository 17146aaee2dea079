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
        // Those in the inode first, then the block's, each sorted as Linux
        // keeps them: index, then name length, then name.
        let want: &[&str] = if isz == 128 {
            &["user.k", "user.zeta", "user.\u{e9}t\u{e9}", "trusted.t", "security.s"]
        } else {
            // zeta, k and t fill the inode's 92 bytes to the last one.
            &["user.k", "user.zeta", "trusted.t", "user.\u{e9}t\u{e9}", "security.s"]
        };
        assert_eq!(names(&mut fs, a), want);
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
            Err(Errno::ENOSPC)
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
        // 40: 64 bytes each, after the header and the end mark; one more
        // in a large inode's 92 bytes (256 - 128 - 32 extra - 4 magic).
        assert_eq!(n, (bs as usize - 36) / 64 + usize::from(isz == 256));
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
        // Values too big for the inode's own area go to the block.
        let (by_two, own) = ([2u8; 200], [3u8; 200]);
        fs.xattr_set(a, b"user.shared", Some(&by_two), 0).unwrap();
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
        assert_eq!(fs.xattr_get(b, b"user.shared").unwrap(), by_two);
        fs.xattr_set(b, b"user.own", Some(&own), 0).unwrap();
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
        fs.xattr_set(a, b"user.x", Some(&[1; 200]), 0).unwrap();
        let root = fs.root().unwrap();
        fs.unlink(root, b"a").unwrap();
        let c = at(&mut fs, "/c").unwrap();
        fs.xattr_set(c, b"user.x", Some(&[2; 200]), 0).unwrap();
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

#[test]
fn a_value_moves_between_inode_and_block() {
    let mut fs = mount(mkfs(None, Geometry::new(4096, 256, 4 << 20)));
    let a = file(&mut fs, "a");
    fs.xattr_set(a, b"user.v", Some(b"small"), 0).unwrap();
    assert_eq!(fs.stat(a).unwrap().blocks, 0, "a small value stays in the inode");
    fs.xattr_set(a, b"user.v", Some(&[9; 300]), 0).unwrap();
    assert_eq!(fs.stat(a).unwrap().blocks, 8, "a large one goes to a block");
    assert_eq!(names(&mut fs, a), ["user.v"]);
    fs.xattr_set(a, b"user.w", Some(b"in the inode"), 0).unwrap();
    assert_eq!(names(&mut fs, a), ["user.w", "user.v"]);
    fs.xattr_set(a, b"user.v", Some(b"small again"), 0).unwrap();
    assert_eq!(fs.stat(a).unwrap().blocks, 0, "back in the inode, the block freed");
    assert_eq!(fs.xattr_get(a, b"user.v").unwrap(), b"small again");
    assert_eq!(fs.xattr_get(a, b"user.w").unwrap(), b"in the inode");
    let image = unmount(fs);
    assert_clean(&image);
    let listed = String::from_utf8(debugfs(&image, "ea_list /a")).unwrap();
    assert!(
        listed.contains("small again") && listed.contains("in the inode"),
        "{listed}"
    );
    // A wrong hash in the inode's area is damage e2fsck reports: the
    // first entry's, after the 128 bytes, 32 extra and the magic.
    let text = String::from_utf8(debugfs(&image, "imap /a")).unwrap();
    let field = |key: &str| -> usize {
        let at = text.find(key).unwrap() + key.len();
        let word = text[at..].split_whitespace().next().unwrap().trim_end_matches(',');
        match word.strip_prefix("0x") {
            Some(hex) => usize::from_str_radix(hex, 16).unwrap(),
            None => word.parse().unwrap(),
        }
    };
    let raw = field("located at block ") * 4096 + field("offset ");
    let mut wrong = image.clone();
    wrong[raw + 128 + 32 + 4 + 12] ^= 1;
    assert_ne!(fsck(&wrong).0, 0, "e2fsck checks the inode's entry hashes:\n{text}");
}
