//! A name looked up once is answered from the name cache after that; every
//! change to a directory's entries must show in the next lookup (no stale
//! answer), and the caller's search permission is asked on every walk, a
//! cached one too.

mod common;

use std::cell::Cell;

use common::*;
use ext2fs::{Errno, FileManager, MemDevice, SetAttr, Stat};

type Fs = FileManager<MemDevice>;

fn ino(fs: &mut Fs, path: &str) -> Result<u32, Errno> {
    at(fs, path).map(|h| h.ino)
}

#[test]
fn every_change_to_an_entry_shows_in_the_next_lookup() {
    for (bs, isz) in CONFIGS {
        let mut fs = mount(mkfs(None, Geometry::new(bs, isz, 8 << 20)));
        let root = fs.root().unwrap();
        let d = fs.mkdir(root, b"d", 0o755, ROOT).unwrap();
        let e = fs.mkdir(root, b"e", 0o755, ROOT).unwrap();

        // Absent, then created: no answer kept from before the create.
        assert_eq!(ino(&mut fs, "/d/f"), Err(Errno::ENOENT));
        let f = fs.create(d, b"f", 0o644, ROOT).unwrap();
        assert_eq!(ino(&mut fs, "/d/f"), Ok(f.ino));
        assert_eq!(ino(&mut fs, "/d/f"), Ok(f.ino));

        // Renamed within the directory and to another one.
        fs.rename(d, b"f", d, b"g").unwrap();
        assert_eq!(ino(&mut fs, "/d/f"), Err(Errno::ENOENT));
        assert_eq!(ino(&mut fs, "/d/g"), Ok(f.ino));
        fs.rename(d, b"g", e, b"g").unwrap();
        assert_eq!(ino(&mut fs, "/d/g"), Err(Errno::ENOENT));
        assert_eq!(ino(&mut fs, "/e/g"), Ok(f.ino));

        // Renamed over an existing name: the name now gives the moved
        // file, and the file it replaced is gone.
        let h = fs.create(d, b"h", 0o644, ROOT).unwrap();
        assert_eq!(ino(&mut fs, "/d/h"), Ok(h.ino));
        fs.rename(e, b"g", d, b"h").unwrap();
        assert_eq!(ino(&mut fs, "/d/h"), Ok(f.ino));
        assert_eq!(ino(&mut fs, "/e/g"), Err(Errno::ENOENT));

        // Unlinked, then the name made again for another file.
        fs.unlink(d, b"h").unwrap();
        assert_eq!(ino(&mut fs, "/d/h"), Err(Errno::ENOENT));
        let h2 = fs.create(d, b"h", 0o644, ROOT).unwrap();
        assert_eq!(ino(&mut fs, "/d/h"), Ok(h2.ino));

        // A hard link, and a symbolic link that replaces a removed file.
        fs.link(h2, e, b"l").unwrap();
        assert_eq!(ino(&mut fs, "/e/l"), Ok(h2.ino));
        fs.unlink(e, b"l").unwrap();
        assert_eq!(ino(&mut fs, "/e/l"), Err(Errno::ENOENT));
        let s = fs.symlink(e, b"l", b"/d/h", ROOT).unwrap();
        assert_eq!(ino(&mut fs, "/e/l"), Ok(s.ino));
        let followed = fs.resolve(root, b"/e/l", true).unwrap();
        assert_eq!(followed.ino, h2.ino);

        // A directory removed and made again: the walk through it finds
        // the new one, and nothing under the old one.
        let sub = fs.mkdir(d, b"sub", 0o755, ROOT).unwrap();
        fs.create(sub, b"x", 0o644, ROOT).unwrap();
        assert!(at(&mut fs, "/d/sub/x").is_ok());
        fs.unlink(sub, b"x").unwrap();
        fs.rmdir(d, b"sub").unwrap();
        assert_eq!(ino(&mut fs, "/d/sub"), Err(Errno::ENOENT));
        assert_eq!(ino(&mut fs, "/d/sub/x"), Err(Errno::ENOENT));
        let sub2 = fs.mkdir(d, b"sub", 0o755, ROOT).unwrap();
        assert_eq!(ino(&mut fs, "/d/sub"), Ok(sub2.ino));
        assert_eq!(ino(&mut fs, "/d/sub/x"), Err(Errno::ENOENT));

        // An exchange swaps what the two names give.
        assert_eq!(ino(&mut fs, "/e/l"), Ok(s.ino));
        fs.exchange(d, b"h", e, b"l").unwrap();
        assert_eq!(ino(&mut fs, "/d/h"), Ok(s.ino));
        assert_eq!(ino(&mut fs, "/e/l"), Ok(h2.ino));

        let image = unmount(fs);
        assert_clean(&image);
    }
}

#[test]
fn search_permission_is_asked_on_every_walk() {
    let mut fs = mount(mkfs(None, Geometry::new(1024, 128, 8 << 20)));
    let root = fs.root().unwrap();
    let d = fs.mkdir(root, b"d", 0o755, ROOT).unwrap();
    let f = fs.create(d, b"f", 0o644, ROOT).unwrap();
    let asked = Cell::new(0);
    // Search as a caller who is neither owner nor in the group: the
    // others' execute bit.
    let may = |st: &Stat| {
        asked.set(asked.get() + 1);
        st.mode & 0o001 != 0
    };
    for _ in 0..2 {
        asked.set(0);
        assert_eq!(fs.resolve_as(root, b"/d/f", true, Some(&may)), Ok(f));
        // The root and `d`, each time.
        assert_eq!(asked.get(), 2);
    }
    let no_search = SetAttr {
        perm: Some(0o754),
        ..SetAttr::default()
    };
    fs.setattr(d, &no_search).unwrap();
    assert_eq!(fs.resolve_as(root, b"/d/f", true, Some(&may)), Err(Errno::EACCES));
    assert_eq!(fs.resolve_as(root, b"/d/f", true, None), Ok(f));
    let search = SetAttr {
        perm: Some(0o755),
        ..SetAttr::default()
    };
    fs.setattr(d, &search).unwrap();
    assert_eq!(fs.resolve_as(root, b"/d/f", true, Some(&may)), Ok(f));
}
