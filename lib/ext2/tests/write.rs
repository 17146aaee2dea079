//! Workloads written through the library: e2fsck finds nothing to fix
//! afterwards, and debugfs (cat, rdump, stat) gives back what was written.

mod common;

use std::collections::BTreeMap;
use std::fs;

use common::*;
use ext2fs::{Errno, FileManager, FileType, Handle, MemDevice, MountOptions, Owner, SetAttr, Timestamp};

type Fs = FileManager<MemDevice>;
type Model = BTreeMap<String, Node>;

fn dir_node() -> Node {
    Node::Dir {
        mode: 0o755,
        uid: 0,
        gid: 0,
    }
}

fn mkdir(fs: &mut Fs, model: &mut Model, path: &str) {
    let (dir, name) = parent(fs, path);
    fs.mkdir(dir, &name, 0o755, ROOT).unwrap();
    model.insert(path.into(), dir_node());
}

/// Creates a file and writes `data` in pieces of `chunk` bytes.
fn put(fs: &mut Fs, model: &mut Model, path: &str, data: &[u8], chunk: usize) -> Handle {
    let (dir, name) = parent(fs, path);
    let h = fs.create(dir, &name, 0o644, ROOT).unwrap();
    for (i, piece) in data.chunks(chunk.max(1)).enumerate() {
        assert_eq!(fs.write(h, (i * chunk) as u64, piece).unwrap(), piece.len());
    }
    model.insert(
        path.into(),
        Node::File {
            mode: 0o644,
            uid: 0,
            gid: 0,
            data: data.to_vec(),
            ino: 0,
        },
    );
    h
}

fn file_data<'a>(model: &'a mut Model, path: &str) -> &'a mut Vec<u8> {
    match model.get_mut(path) {
        Some(Node::File { data, .. }) => data,
        _ => panic!("{path} is not a file in the model"),
    }
}

/// The library's walk of a mounted image, device files aside.
fn check_model(fs: &mut Fs, model: &Model) {
    assert_walk_is(fs, model.clone());
}

/// The same tree as dumped by debugfs.
fn check_rdump(image: &[u8], model: &Model) {
    let s = Scratch::new("rdump");
    rdump(image, "/", &s.0);
    // rdump of / writes the root's entries into the target directory.
    let mut got = walk_host(&s.0);
    got.remove("/lost+found");
    // rdump chowns after chmod, which drops set-user-ID bits on the host.
    let plain = |n: &Node| match n {
        Node::File {
            mode,
            uid,
            gid,
            data,
            ino,
        } => Node::File {
            mode: mode & 0o777,
            uid: *uid,
            gid: *gid,
            data: data.clone(),
            ino: *ino,
        },
        n => n.clone(),
    };
    let want: Model = model
        .iter()
        .filter(|(_, n)| !matches!(n, Node::Special { .. }))
        .map(|(k, v)| (k.clone(), plain(v)))
        .collect();
    let got: Model = got
        .into_iter()
        .filter(|(_, n)| !matches!(n, Node::Special { .. }))
        .map(|(k, v)| (k, plain(&v)))
        .collect();
    assert_same_tree(&got, &want);
}

/// A mixed workload: every kind of object, every size boundary, writes in
/// many piece sizes, appends, overwrites, holes, truncation both ways,
/// links, renames and removals.
fn workload(fs: &mut Fs, model: &mut Model, bs: usize) {
    mkdir(fs, model, "/w");
    mkdir(fs, model, "/w/sub");
    mkdir(fs, model, "/w/sub/deeper");
    mkdir(fs, model, "/other");
    for (i, &n) in SIZES.iter().enumerate() {
        let chunk = [1, 7, 512, bs, bs + 3, 100_000][i % 6];
        put(fs, model, &format!("/w/f{n}"), &pattern(1000 + i as u64, n), chunk);
    }
    // Appends.
    let h = put(fs, model, "/w/log", b"", 1);
    for i in 0..50 {
        let line = format!("line {i} {}\n", "x".repeat(i * 37));
        let (off, n) = fs.append(h, line.as_bytes()).unwrap();
        assert_eq!(n, line.len());
        let data = file_data(model, "/w/log");
        assert_eq!(off, data.len() as u64);
        data.extend_from_slice(line.as_bytes());
    }
    // An overwrite across block boundaries.
    let h = at(fs, "/w/f1048576").unwrap_or_else(|_| at(fs, &format!("/w/f{}", 1024 * 1024 + 12345)).unwrap());
    let patch = pattern(77, 3 * bs + 5);
    fs.write(h, (bs as u64) * 5 - 2, &patch).unwrap();
    let data = file_data(model, &format!("/w/f{}", 1024 * 1024 + 12345));
    data[bs * 5 - 2..bs * 5 - 2 + patch.len()].copy_from_slice(&patch);
    // Holes: data far out, and a file grown by truncate.
    let h = put(fs, model, "/w/holes", b"start", 5);
    let far = 200u64 << 20;
    fs.write(h, far, b"far away").unwrap();
    let data = file_data(model, "/w/holes");
    data.resize(far as usize, 0);
    data.extend_from_slice(b"far away");
    let h = put(fs, model, "/w/grown", &pattern(5, 1500), 1500);
    fs.truncate(h, 3 * bs as u64 + 17).unwrap();
    file_data(model, "/w/grown").resize(3 * bs + 17, 0);
    // Shrinking to every level's boundary.
    for (name, to) in [
        ("f5242887", 13 * bs + 1),
        ("f1060921", 12 * bs),
        ("f276480", 100),
        ("f53248", 0),
    ] {
        let path = format!("/w/{name}");
        let h = at(fs, &path).unwrap();
        fs.truncate(h, to as u64).unwrap();
        file_data(model, &path).truncate(to);
    }
    // Shrink then grow: the old bytes must not come back.
    let h = at(fs, "/w/f4097").unwrap();
    fs.truncate(h, 10).unwrap();
    fs.truncate(h, 4097).unwrap();
    let data = file_data(model, "/w/f4097");
    data.truncate(10);
    data.resize(4097, 0);
    let h = at(fs, "/w/f1025").unwrap();
    fs.truncate(h, 3).unwrap();
    fs.write(h, 1000, b"after the gap").unwrap();
    let data = file_data(model, "/w/f1025");
    data.truncate(3);
    data.resize(1000, 0);
    data.extend_from_slice(b"after the gap");
    // Symbolic links, fast and slow.
    let (dir, _) = parent(fs, "/w/x");
    for (name, target) in [
        ("fast", "f1000".to_string()),
        ("len59", "a".repeat(59)),
        ("len60", "b".repeat(60)),
        ("slow", format!("/{}", "dir/".repeat(50))),
        ("longest", "c".repeat(bs - 1)),
    ] {
        fs.symlink(dir, name.as_bytes(), target.as_bytes(), ROOT).unwrap();
        model.insert(
            format!("/w/{name}"),
            Node::Symlink {
                target: target.into_bytes(),
            },
        );
    }
    assert_eq!(
        fs.symlink(dir, b"too-long", &vec![b'd'; bs], ROOT),
        Err(Errno::ENAMETOOLONG)
    );
    // Hard links.
    let f = at(fs, "/w/f4096").unwrap();
    let (other, _) = parent(fs, "/other/x");
    fs.link(f, other, b"link-to-f4096").unwrap();
    let n = model["/w/f4096"].clone();
    model.insert("/other/link-to-f4096".into(), n);
    assert_eq!(fs.stat(f).unwrap().links, 2);
    // Special files.
    for (name, kind, rdev) in [
        ("fifo", FileType::Fifo, (0, 0)),
        ("sock", FileType::Socket, (0, 0)),
        ("null", FileType::CharDevice, (1, 3)),
        ("nvme", FileType::BlockDevice, (259, 65537)),
    ] {
        fs.mknod(other, name.as_bytes(), kind, 0o640, Owner { uid: 5, gid: 6 }, rdev)
            .unwrap();
        model.insert(
            format!("/other/{name}"),
            Node::Special {
                kind,
                mode: 0o640,
                rdev,
            },
        );
    }
    // Owners and modes.
    let h = at(fs, "/w/f1").unwrap();
    fs.setattr(
        h,
        &SetAttr {
            perm: Some(0o4711),
            uid: Some(1234),
            gid: Some(70000),
            ..SetAttr::default()
        },
    )
    .unwrap();
    model.insert(
        "/w/f1".into(),
        Node::File {
            mode: 0o4711,
            uid: 1234,
            gid: 70000,
            data: pattern(1001, 1),
            ino: 0,
        },
    );
    // Renames: in place, across directories, over a file, a directory
    // across directories and over an empty directory.
    let root = fs.root().unwrap();
    let w = at(fs, "/w").unwrap();
    fs.rename(w, b"f0", w, b"renamed-empty").unwrap();
    move_in_model(model, "/w/f0", "/w/renamed-empty");
    fs.rename(w, b"f59", other, b"moved").unwrap();
    move_in_model(model, "/w/f59", "/other/moved");
    fs.rename(w, b"f60", other, b"moved").unwrap();
    move_in_model(model, "/w/f60", "/other/moved");
    let sub = at(fs, "/w/sub").unwrap();
    fs.rename(w, b"f1023", sub, b"f1023").unwrap();
    move_in_model(model, "/w/f1023", "/w/sub/f1023");
    fs.rename(w, b"sub", root, b"sub-moved").unwrap();
    move_in_model(model, "/w/sub", "/sub-moved");
    mkdir(fs, model, "/other/empty");
    fs.rename(root, b"sub-moved", other, b"empty").unwrap();
    model.remove("/other/empty");
    move_in_model(model, "/sub-moved", "/other/empty");
    // Removals.
    fs.unlink(w, b"f12288").unwrap();
    model.remove("/w/f12288");
    let deeper = at(fs, "/other/empty/deeper").unwrap();
    let _ = deeper;
    let empty = at(fs, "/other/empty").unwrap();
    fs.rmdir(empty, b"deeper").unwrap();
    model.remove("/other/empty/deeper");
}

fn move_in_model(model: &mut Model, from: &str, to: &str) {
    let moved: Vec<(String, Node)> = model
        .iter()
        .filter(|(k, _)| *k == from || k.starts_with(&format!("{from}/")))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in moved {
        model.remove(&k);
        model.insert(format!("{to}{}", &k[from.len()..]), v);
    }
}

#[test]
fn workload_is_clean_and_reads_back_in_debugfs() {
    for (bs, isz) in CONFIGS {
        let image = mkfs(None, Geometry::new(bs, isz, 32 << 20));
        let mut fs = mount(image);
        let mut model = Model::new();
        workload(&mut fs, &mut model, bs as usize);
        check_model(&mut fs, &model);
        let image = unmount(fs);
        assert_clean(&image);
        check_rdump(&image, &model);
        // Device numbers as debugfs reads them.
        let st = String::from_utf8(debugfs(&image, "stat /other/nvme")).unwrap();
        assert!(st.contains("Device major/minor number: 259:65537"), "{st}");
        let st = String::from_utf8(debugfs(&image, "stat /other/null")).unwrap();
        assert!(st.contains("Device major/minor number: 01:03"), "{st}");
        // And the library reads its own image again after remounting.
        let mut fs = mount(image);
        check_model(&mut fs, &model);
        let image = unmount(fs);
        assert_clean(&image);
    }
}

#[test]
fn files_debugfs_wrote_can_be_changed() {
    let s = Scratch::new("dbg");
    let image = mkfs(None, Geometry::new(1024, 256, 8 << 20));
    let host = s.path("data");
    fs::write(&host, pattern(9, 300_000)).unwrap();
    let image = debugfs_write(&image, &[format!("write {} data", host.display()), "mkdir d".into()]);
    let mut fs = mount(image);
    let h = at(&mut fs, "/data").unwrap();
    let mut want = pattern(9, 300_000);
    fs.write(h, 299_990, b"0123456789abcdef").unwrap();
    want.truncate(299_990);
    want.extend_from_slice(b"0123456789abcdef");
    let d = at(&mut fs, "/d").unwrap();
    let root = fs.root().unwrap();
    fs.rename(root, b"data", d, b"moved").unwrap();
    let image = unmount(fs);
    assert_clean(&image);
    assert_eq!(debugfs(&image, "cat /d/moved"), want);
}

#[test]
fn a_search_check_runs_on_every_directory_of_a_path() {
    let image = mkfs(None, Geometry::new(1024, 128, 4 << 20));
    let mut fs = mount(image);
    let root = fs.root().unwrap();
    let open = fs.mkdir(root, b"open", 0o755, ROOT).unwrap();
    let closed = fs.mkdir(open, b"closed", 0o700, ROOT).unwrap();
    fs.create(closed, b"inner", 0o644, ROOT).unwrap();
    fs.symlink(root, b"via", b"open/closed", ROOT).unwrap();
    let search = |st: &ext2fs::Stat| st.mode & 0o001 != 0;
    let guarded = Some(&search as &dyn Fn(&ext2fs::Stat) -> bool);
    assert!(fs.resolve_as(root, b"/open/closed", true, guarded).is_ok());
    assert_eq!(
        fs.resolve_as(root, b"/open/closed/inner", true, guarded),
        Err(Errno::EACCES)
    );
    // Not there either: the directory may not be searched for the answer.
    assert_eq!(
        fs.resolve_as(root, b"/open/closed/missing", true, guarded),
        Err(Errno::EACCES)
    );
    assert_eq!(fs.resolve_as(root, b"/via/inner", true, guarded), Err(Errno::EACCES));
    assert_eq!(
        fs.resolve_parent_as(root, b"/open/closed/new", guarded),
        Err(Errno::EACCES)
    );
    assert!(fs.resolve_parent_as(root, b"/open/new", guarded).is_ok());
    assert!(fs.resolve_as(root, b"/open/closed/inner", true, None).is_ok());
    assert_clean(&unmount(fs));
}

#[test]
fn nothing_resolves_above_a_callers_root() {
    let image = mkfs(None, Geometry::new(1024, 128, 4 << 20));
    let mut fs = mount(image);
    let root = fs.root().unwrap();
    let jail = fs.mkdir(root, b"jail", 0o755, ROOT).unwrap();
    let inside = fs.mkdir(jail, b"in", 0o755, ROOT).unwrap();
    let secret = fs.create(root, b"secret", 0o644, ROOT).unwrap();
    let decoy = fs.create(jail, b"secret", 0o644, ROOT).unwrap();
    fs.symlink(inside, b"abs", b"/secret", ROOT).unwrap();
    fs.symlink(inside, b"up", b"../../../secret", ROOT).unwrap();
    fs.symlink(inside, b"dir", b"/", ROOT).unwrap();
    for path in [
        &b"/secret"[..],
        b"/../secret",
        b"../../../secret",
        b"/in/../../secret",
        b"/in/abs",
        b"/in/up",
        b"/in/dir/../secret",
    ] {
        let start = if path[0] == b'/' { root } else { inside };
        assert_eq!(fs.resolve_in(jail, start, path, true, None), Ok(decoy), "{path:?}");
    }
    assert_eq!(fs.resolve_in(jail, inside, b"/..", true, None), Ok(jail));
    // A start outside the root walks up as it would without one.
    assert_eq!(fs.resolve_in(jail, root, b"secret", true, None), Ok(secret));
    assert_eq!(fs.resolve_in(jail, root, b"jail/in/..", true, None), Ok(jail));
    // Entries are made under the root too.
    assert_eq!(
        fs.resolve_parent_in(jail, inside, b"/new", None),
        Ok((jail, b"new".to_vec()))
    );
    assert_eq!(
        fs.resolve_parent_in(jail, inside, b"../../new", None),
        Ok((jail, b"new".to_vec()))
    );
    assert_eq!(fs.resolve_as(root, b"/jail/in/abs", true, None), Ok(secret));
    assert_clean(&unmount(fs));
}

#[test]
fn a_directory_removed_while_open_has_no_entries() {
    let image = mkfs(None, Geometry::new(1024, 128, 4 << 20));
    let mut fs = mount(image);
    let root = fs.root().unwrap();
    let gone = fs.mkdir(root, b"gone", 0o755, ROOT).unwrap();
    fs.open(gone).unwrap();
    fs.rmdir(root, b"gone").unwrap();
    assert_eq!(fs.create(gone, b"x", 0o644, ROOT), Err(Errno::ENOENT));
    assert_eq!(fs.mkdir(gone, b"d", 0o755, ROOT), Err(Errno::ENOENT));
    assert_eq!(fs.lookup(gone, b"x"), Err(Errno::ENOENT));
    assert_eq!(fs.read_dir(gone, 0, &mut |_| true), Err(Errno::ENOENT));
    assert_eq!(fs.lookup(gone, b".."), Ok(root));
    assert!(fs.stat(gone).is_ok());
    fs.close(gone).unwrap();
    assert_clean(&unmount(fs));
}

#[test]
fn errors_match_linux() {
    let image = mkfs(None, Geometry::new(1024, 128, 4 << 20));
    let mut fs = mount(image);
    let root = fs.root().unwrap();
    let d = fs.mkdir(root, b"d", 0o755, ROOT).unwrap();
    let f = fs.create(d, b"f", 0o644, ROOT).unwrap();
    fs.mkdir(d, b"sub", 0o755, ROOT).unwrap();
    let sub = at(&mut fs, "/d/sub").unwrap();
    fs.create(sub, b"inner", 0o644, ROOT).unwrap();
    assert_eq!(fs.lookup(root, b"missing"), Err(Errno::ENOENT));
    assert_eq!(fs.create(d, b"f", 0o644, ROOT), Err(Errno::EEXIST));
    assert_eq!(fs.mkdir(root, b"d", 0o755, ROOT), Err(Errno::EEXIST));
    assert_eq!(fs.lookup(f, b"x"), Err(Errno::ENOTDIR));
    assert_eq!(fs.resolve(root, b"/d/f/x", true), Err(Errno::ENOTDIR));
    assert_eq!(fs.resolve(root, b"/d/f/", true), Err(Errno::ENOTDIR));
    assert_eq!(fs.unlink(d, b"sub"), Err(Errno::EISDIR));
    assert_eq!(fs.rmdir(d, b"f"), Err(Errno::ENOTDIR));
    assert_eq!(fs.rmdir(d, b"sub"), Err(Errno::ENOTEMPTY));
    assert_eq!(fs.rmdir(d, b"."), Err(Errno::EINVAL));
    assert_eq!(fs.read(d, 0, &mut [0; 4]), Err(Errno::EISDIR));
    assert_eq!(fs.write(d, 0, b"x"), Err(Errno::EISDIR));
    assert_eq!(fs.create(d, &[b'n'; 256], 0o644, ROOT), Err(Errno::ENAMETOOLONG));
    assert_eq!(fs.lookup(d, &[b'n'; 256]), Err(Errno::ENAMETOOLONG));
    fs.create(d, &[b'n'; 255], 0o644, ROOT).unwrap();
    assert_eq!(fs.create(d, b"a/b", 0o644, ROOT), Err(Errno::EINVAL));
    assert_eq!(fs.create(d, b"", 0o644, ROOT), Err(Errno::ENOENT));
    // A directory into its own subtree.
    assert_eq!(fs.rename(root, b"d", sub, b"d"), Err(Errno::EINVAL));
    assert_eq!(fs.rename(d, b"sub", sub, b"again"), Err(Errno::EINVAL));
    // Over the wrong kind, over a non-empty directory.
    assert_eq!(fs.rename(d, b"f", d, b"sub"), Err(Errno::EISDIR));
    let e = fs.mkdir(root, b"e", 0o755, ROOT).unwrap();
    fs.create(e, b"x", 0o644, ROOT).unwrap();
    assert_eq!(fs.rename(d, b"sub", e, b"x"), Err(Errno::ENOTDIR));
    assert_eq!(fs.rename(root, b"e", d, b"sub"), Err(Errno::ENOTEMPTY));
    assert_eq!(fs.rename(d, b"missing", d, b"x"), Err(Errno::ENOENT));
    // Renaming a file onto another name of itself does nothing.
    fs.link(f, d, b"f2").unwrap();
    fs.rename(d, b"f", d, b"f2").unwrap();
    assert_eq!(fs.stat(f).unwrap().links, 2);
    // Links to directories, too many links.
    assert_eq!(fs.link(sub, root, b"dirlink"), Err(Errno::EPERM));
    fs.inodes()
        .change(
            f.ino,
            &ext2fs::inode::Change {
                links: Some(32000),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(fs.link(f, d, b"one-more"), Err(Errno::EMLINK));
    fs.inodes()
        .change(
            f.ino,
            &ext2fs::inode::Change {
                links: Some(2),
                ..Default::default()
            },
        )
        .unwrap();
    // Symbolic link loops.
    fs.symlink(root, b"loop1", b"loop2", ROOT).unwrap();
    fs.symlink(root, b"loop2", b"loop1", ROOT).unwrap();
    fs.symlink(root, b"self", b"self/x", ROOT).unwrap();
    assert_eq!(fs.resolve(root, b"/loop1", true), Err(Errno::ELOOP));
    assert_eq!(fs.resolve(root, b"/self", true), Err(Errno::ELOOP));
    assert!(fs.resolve(root, b"/loop1", false).is_ok());
    // Too big.
    let max = fs.inodes().max_file_size();
    assert_eq!(fs.write(f, max, b"x"), Err(Errno::EFBIG));
    assert_eq!(fs.truncate(f, max + 1), Err(Errno::EFBIG));
    // The root is busy.
    assert_eq!(fs.rename(root, b"..", d, b"x"), Err(Errno::EINVAL));
    assert_eq!(fs.resolve_parent(root, b"/"), Err(Errno::EBUSY));
    let image = unmount(fs);
    assert_clean(&image);
    // Read-only.
    let mut fs = FileManager::mount(
        MemDevice::new(image),
        MountOptions {
            read_only: true,
            time: NOW,
        },
    )
    .unwrap();
    let root = fs.root().unwrap();
    assert_eq!(fs.create(root, b"new", 0o644, ROOT), Err(Errno::EROFS));
    let f = at(&mut fs, "/d/f").unwrap();
    assert_eq!(fs.write(f, 0, b"x"), Err(Errno::EROFS));
    assert_eq!(Errno::from_code(Errno::ENOTEMPTY.code()), Some(Errno::ENOTEMPTY));
    assert_eq!(Errno::ENOENT.code(), 2);
    assert_eq!(Errno::ESTALE.code(), 116);
}

#[test]
fn stale_handles_are_refused() {
    let image = mkfs(None, Geometry::new(1024, 256, 4 << 20));
    let mut fs = mount(image);
    let root = fs.root().unwrap();
    let a = fs.create(root, b"a", 0o644, ROOT).unwrap();
    fs.unlink(root, b"a").unwrap();
    assert_eq!(fs.stat(a), Err(Errno::ESTALE));
    assert_eq!(fs.read(a, 0, &mut [0; 1]), Err(Errno::ESTALE));
    // Reuse of the inode (after the free is committed) makes a new
    // generation.
    fs.sync().unwrap();
    let b = fs.create(root, b"b", 0o644, ROOT).unwrap();
    assert_eq!(b.ino, a.ino);
    assert_ne!(b.generation, a.generation);
    assert_eq!(fs.write(a, 0, b"x"), Err(Errno::ESTALE));
    fs.write(b, 0, b"x").unwrap();
    assert_eq!(fs.stat(ext2fs::Handle { ino: 0, generation: 0 }), Err(Errno::ESTALE));
    assert_eq!(
        fs.stat(ext2fs::Handle {
            ino: u32::MAX,
            generation: 0
        }),
        Err(Errno::ESTALE)
    );
    let image = unmount(fs);
    assert_clean(&image);
}

#[test]
fn open_files_outlive_their_last_name() {
    let image = mkfs(None, Geometry::new(4096, 256, 8 << 20));
    let mut fs = mount(image);
    let root = fs.root().unwrap();
    let free_before = fs.statfs().free_blocks;
    let a = fs.create(root, b"a", 0o644, ROOT).unwrap();
    fs.write(a, 0, &pattern(3, 100_000)).unwrap();
    fs.open(a).unwrap();
    fs.unlink(root, b"a").unwrap();
    assert_eq!(fs.lookup(root, b"a"), Err(Errno::ENOENT));
    // Still readable and writable through the handle.
    assert_eq!(read_all(&mut fs, a).unwrap(), pattern(3, 100_000));
    fs.write(a, 100_000, b"more").unwrap();
    assert_eq!(fs.stat(a).unwrap().links, 0);
    fs.close(a).unwrap();
    assert_eq!(fs.stat(a), Err(Errno::ESTALE));
    fs.sync().unwrap();
    assert_eq!(fs.statfs().free_blocks, free_before);
    // One still open at unmount is freed then.
    let b = fs.create(root, b"b", 0o644, ROOT).unwrap();
    fs.write(b, 0, &pattern(4, 50_000)).unwrap();
    fs.open(b).unwrap();
    fs.unlink(root, b"b").unwrap();
    let image = unmount(fs);
    assert_clean(&image);
}

#[test]
fn times_are_the_callers() {
    let image = mkfs(None, Geometry::new(1024, 256, 4 << 20));
    let mut fs = mount(image);
    let t1 = Timestamp::new(1_700_000_000, 1);
    let t2 = Timestamp::new(1_700_000_100, 2);
    let t3 = Timestamp::new(1_700_200_000, 3);
    fs.set_time(t1);
    let root = fs.root().unwrap();
    let f = fs.create(root, b"f", 0o644, ROOT).unwrap();
    let st = fs.stat(f).unwrap();
    assert_eq!((st.atime, st.mtime, st.ctime), (t1, t1, t1));
    assert_eq!(fs.stat(root).unwrap().mtime, t1);
    fs.set_time(t2);
    fs.write(f, 0, b"data").unwrap();
    let st = fs.stat(f).unwrap();
    assert_eq!((st.atime, st.mtime, st.ctime), (t1, t2, t2));
    // relatime: a read updates atime while it is not newer than mtime or
    // ctime...
    fs.read(f, 0, &mut [0; 4]).unwrap();
    assert_eq!(fs.stat(f).unwrap().atime, t2);
    let t2b = Timestamp::new(t2.secs + 10, 0);
    fs.set_time(t2b);
    fs.read(f, 0, &mut [0; 4]).unwrap();
    assert_eq!(fs.stat(f).unwrap().atime, t2b);
    // ...and then only once a day.
    fs.set_time(Timestamp::new(t2.secs + 20, 0));
    fs.read(f, 0, &mut [0; 4]).unwrap();
    assert_eq!(fs.stat(f).unwrap().atime, t2b);
    fs.set_time(t3);
    fs.read(f, 0, &mut [0; 4]).unwrap();
    assert_eq!(fs.stat(f).unwrap().atime, t3);
    // chmod changes ctime only; utimes sets what it is given.
    let t4 = Timestamp::new(1_800_000_000, 4);
    fs.set_time(t4);
    let st = fs
        .setattr(
            f,
            &SetAttr {
                perm: Some(0o600),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!((st.mtime, st.ctime), (t2, t4));
    let old = Timestamp::new(1_000_000_000, 500);
    let st = fs
        .setattr(
            f,
            &SetAttr {
                atime: Some(old),
                mtime: Some(old),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!((st.atime, st.mtime), (old, old));
    // Past 2038 in a large inode.
    let late = Timestamp::new(5_000_000_000, 999);
    fs.setattr(
        f,
        &SetAttr {
            mtime: Some(late),
            ..SetAttr::default()
        },
    )
    .unwrap();
    // The superblock's write time must not be in the future for e2fsck.
    fs.set_time(NOW);
    let image = unmount(fs);
    assert_clean(&image);
    let st = String::from_utf8(debugfs(&image, "stat /f")).unwrap();
    assert!(st.contains("atime: 0x3b9aca00:000007d0"), "{st}");
    let mut fs = mount(image);
    let f = at(&mut fs, "/f").unwrap();
    assert_eq!(fs.stat(f).unwrap().mtime, late);
}

#[test]
fn big_directories_stay_clean() {
    for (bs, isz) in [(1024, 128), (4096, 256)] {
        let mut g = Geometry::new(bs, isz, 16 << 20);
        g.inodes = 8192;
        let image = mkfs(None, g);
        let mut fs = mount(image);
        let root = fs.root().unwrap();
        let d = fs.mkdir(root, b"many", 0o755, ROOT).unwrap();
        let name = |i: usize| {
            format!(
                "file-{i:05}{}",
                if i.is_multiple_of(3) { "-longer-name-here" } else { "" }
            )
        };
        for i in 0..BIG_DIR {
            fs.create(d, name(i).as_bytes(), 0o644, ROOT).unwrap();
        }
        for i in (0..BIG_DIR).step_by(2) {
            fs.unlink(d, name(i).as_bytes()).unwrap();
        }
        for i in (1..BIG_DIR).step_by(4) {
            fs.rename(d, name(i).as_bytes(), d, format!("r{i}").as_bytes()).unwrap();
        }
        // The freed room is used again.
        for i in 0..500 {
            fs.mkdir(d, format!("sub{i}").as_bytes(), 0o755, ROOT).unwrap();
        }
        let listed = names(&mut fs, d).unwrap();
        assert_eq!(listed.len(), BIG_DIR / 2 + 500);
        assert_eq!(fs.stat(d).unwrap().links, 502);
        // The name cache answers as the blocks do, before and after a
        // mount that starts without it.
        let lookups = |fs: &mut Fs| {
            for (name, ino) in &listed {
                assert_eq!(fs.lookup(d, name).map(|h| h.ino), Ok(*ino));
            }
            assert_eq!(fs.lookup(d, name(0).as_bytes()).map(|h| h.ino), Err(Errno::ENOENT));
            assert_eq!(fs.lookup(d, name(1).as_bytes()).map(|h| h.ino), Err(Errno::ENOENT));
        };
        lookups(&mut fs);
        let image = unmount(fs);
        assert_clean(&image);
        let mut again = mount(image.clone());
        lookups(&mut again);
        drop(again);
        // debugfs lists a removed entry that starts a block (inode 0) too.
        let ls = String::from_utf8(debugfs(&image, "ls -p /many")).unwrap();
        let live = ls
            .lines()
            .filter(|l| l.starts_with('/') && !l.starts_with("/0/"))
            .count();
        assert_eq!(live, BIG_DIR / 2 + 500 + 2);
    }
}

#[test]
fn indexed_directories_lose_their_index_when_changed() {
    let src = source_dir();
    let image = indexed(&source_image(&src, Geometry::new(4096, 256, 24 << 20)));
    let mut fs = mount(image);
    let big = at(&mut fs, "/big").unwrap();
    assert_ne!(fs.inodes().get(big.ino).unwrap().flags & 0x1000, 0);
    fs.create(big, b"a-new-one", 0o644, ROOT).unwrap();
    fs.unlink(big, b"e1").unwrap();
    assert_eq!(fs.inodes().get(big.ino).unwrap().flags & 0x1000, 0);
    assert_eq!(names(&mut fs, big).unwrap().len(), BIG_DIR);
    let image = unmount(fs);
    assert_clean(&image);
    let ls = String::from_utf8(debugfs(&image, "ls -p /big")).unwrap();
    assert!(ls.contains("/a-new-one/"));
    assert!(!ls.contains("/e1/"));
}

#[test]
fn mapped_io_copies_nothing() {
    for bs in [1024u64, 4096] {
        let image = mkfs(None, Geometry::new(bs as u32, 256, 8 << 20));
        let mut fs = mount(image);
        let root = fs.root().unwrap();
        let f = fs.create(root, b"mapped", 0o644, ROOT).unwrap();
        let data = pattern(11, 200_000);
        let copied = fs.stats().bytes_copied;
        // Write: allocate, put the bytes into the device blocks directly,
        // commit.
        let off = 777u64;
        let segs = fs.map_write(f, off, data.len() as u64).unwrap();
        let mut at_byte = 0usize;
        let dev = fs.inodes().device().data_mut();
        for s in &segs {
            let start = (s.block.expect("mapped write has no holes") * bs + s.offset as u64) as usize;
            dev[start..start + s.len as usize].copy_from_slice(&data[at_byte..at_byte + s.len as usize]);
            at_byte += s.len as usize;
        }
        assert_eq!(at_byte, data.len());
        fs.commit_write(f, off, data.len() as u64).unwrap();
        assert_eq!(fs.stats().bytes_copied, copied, "the mapped path copied");
        // Read back through the map.
        let segs = fs.map_read(f, 0, u64::MAX).unwrap();
        let mut got = Vec::new();
        let dev = fs.inodes().device().data().to_vec();
        for s in &segs {
            match s.block {
                None => got.resize(got.len() + s.len as usize, 0),
                Some(b) => {
                    let start = (b * bs + s.offset as u64) as usize;
                    got.extend_from_slice(&dev[start..start + s.len as usize]);
                }
            }
        }
        let mut want = vec![0; off as usize];
        want.extend_from_slice(&data);
        assert_eq!(got, want);
        assert_eq!(read_all(&mut fs, f).unwrap(), want);
        assert!(fs.stats().bytes_copied >= copied + want.len() as u64);
        let image = unmount(fs);
        assert_clean(&image);
        assert_eq!(debugfs(&image, "cat /mapped"), want);
    }
}

#[test]
fn attribute_blocks_are_released_with_their_inode() {
    for isz in [128, 256] {
        let s = Scratch::new("xattr");
        let image = mkfs(None, Geometry::new(1024, isz, 4 << 20));
        let host = s.path("data");
        fs::write(&host, pattern(4, 5000)).unwrap();
        // A value too big for the inode's spare room goes to a block.
        let value = "v".repeat(300);
        let image = debugfs_write(
            &image,
            &[
                format!("write {} a", host.display()),
                format!("ea_set /a user.big {value}"),
                format!("write {} b", host.display()),
                format!("ea_set /b user.big {value}"),
            ],
        );
        let mut fs = mount(image);
        let free_before = fs.statfs().free_blocks;
        let a = at(&mut fs, "/a").unwrap();
        assert_ne!(fs.inodes().get(a.ino).unwrap().file_acl, 0, "no attribute block");
        // Changing a file keeps its attributes.
        fs.write(a, 100, b"changed").unwrap();
        let root = fs.root().unwrap();
        fs.unlink(root, b"b").unwrap();
        fs.sync().unwrap();
        // Five data blocks and the attribute block came back.
        assert_eq!(fs.statfs().free_blocks, free_before + 6);
        let image = unmount(fs);
        assert_clean(&image);
        let ea = String::from_utf8(debugfs(&image, "ea_list /a")).unwrap();
        assert!(ea.contains("user.big"), "{ea}");
    }
}

#[test]
fn set_group_id_directories_pass_on_their_group() {
    let image = mkfs(None, Geometry::new(1024, 256, 4 << 20));
    let mut fs = mount(image);
    let root = fs.root().unwrap();
    let user = Owner { uid: 5, gid: 6 };
    let d = fs.mkdir(root, b"d", 0o2775, Owner { uid: 0, gid: 3 }).unwrap();
    let f = fs.create(d, b"f", 0o644, user).unwrap();
    let st = fs.stat(f).unwrap();
    assert_eq!((st.uid, st.gid, st.mode & 0o2000), (5, 3, 0), "the folder's group");
    let sub = fs.mkdir(d, b"sub", 0o755, user).unwrap();
    let st = fs.stat(sub).unwrap();
    assert_eq!((st.gid, st.mode & 0o2000), (3, 0o2000), "a folder keeps the bit");
    let p = fs.mknod(d, b"p", FileType::Fifo, 0o600, user, (0, 0)).unwrap();
    assert_eq!(fs.stat(p).unwrap().gid, 3);
    let plain = fs.create(root, b"g", 0o644, user).unwrap();
    assert_eq!(fs.stat(plain).unwrap().gid, 6, "elsewhere the maker's group");
}

/// What the library asked of the device, block by block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Read, or lent with its contents for a change.
    Read,
    /// Lent for overwriting whole: its contents not needed.
    Fill,
}

/// A `MemDevice` that records the uses of each block.
struct Recorder {
    mem: MemDevice,
    uses: Vec<(u64, Use)>,
}

impl ext2fs::BlockDevice for Recorder {
    fn read_block(&mut self, n: u64, size: usize, f: &mut dyn FnMut(&[u8])) -> ext2fs::Result<()> {
        self.uses.push((n, Use::Read));
        self.mem.read_block(n, size, f)
    }
    fn write_block(&mut self, n: u64, size: usize, f: &mut dyn FnMut(&mut [u8])) -> ext2fs::Result<()> {
        self.uses.push((n, Use::Read));
        self.mem.write_block(n, size, f)
    }
    fn write_part(
        &mut self,
        n: u64,
        size: usize,
        part: std::ops::Range<usize>,
        f: &mut dyn FnMut(&mut [u8]),
    ) -> ext2fs::Result<()> {
        self.uses.push((n, Use::Read));
        self.mem.write_part(n, size, part, f)
    }
    fn fill_block(&mut self, n: u64, size: usize, f: &mut dyn FnMut(&mut [u8])) -> ext2fs::Result<()> {
        self.uses.push((n, Use::Fill));
        self.mem.fill_block(n, size, f)
    }
    fn barrier(&mut self) -> ext2fs::Result<()> {
        self.mem.barrier()
    }
    fn sync(&mut self) -> ext2fs::Result<()> {
        self.mem.sync()
    }
}

impl Recorder {
    /// How block `n` was first used since the record was last cleared.
    fn first_use(&self, n: u64) -> Option<Use> {
        self.uses.iter().find(|&&(b, _)| b == n).map(|&(_, u)| u)
    }
}

#[test]
fn new_inodes_in_free_blocks_of_the_table_are_written_unread() {
    // 4 KiB blocks of 16 inodes; one group. The image's own files take
    // inodes 12 to 31 (blocks 0 and 1 of the table); those of block 1
    // (17 to 31) are then deleted by debugfs, which leaves them holding
    // their old fields and a deletion time.
    let src = Scratch::new("unread-src");
    for i in 0..20 {
        fs::write(src.path(&format!("old{i:02}")), pattern(i, 100)).unwrap();
    }
    let mut g = Geometry::new(4096, 256, 8 << 20);
    g.inodes = 1024;
    let image = mkfs(Some(&src.0), g);
    let table = u32::from_le_bytes(image[4096 + 8..4096 + 12].try_into().unwrap()) as u64;
    let ino_of = |name: &str| -> u32 {
        let out = String::from_utf8(debugfs(&image, &format!("stat /{name}"))).unwrap();
        out.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let old: Vec<(String, u32)> = (0..20)
        .map(|i| format!("old{i:02}"))
        .map(|n| (n.clone(), ino_of(&n)))
        .collect();
    let removed: Vec<String> = old
        .iter()
        .filter(|(_, ino)| (17..=32).contains(ino))
        .map(|(n, _)| format!("rm /{n}"))
        .collect();
    assert!(removed.len() >= 10, "{old:?}");
    let image = debugfs_write(&image, &removed);
    assert_clean(&image);
    let rec = Recorder {
        mem: MemDevice::new(image),
        uses: Vec::new(),
    };
    let mut fs = FileManager::mount(
        rec,
        MountOptions {
            read_only: false,
            time: NOW,
        },
    )
    .unwrap();
    fs.set_time(NOW);
    fs.inodes().device().uses.clear();
    let root = fs.root().unwrap();
    let mut made = Vec::new();
    for i in 0..60u64 {
        let h = fs.create(root, format!("new{i:02}").as_bytes(), 0o644, ROOT).unwrap();
        fs.write(h, 0, &pattern(100 + i, 5000)).unwrap();
        made.push(h);
    }
    let inos: Vec<u32> = made.iter().map(|h| h.ino).collect();
    // Block 1 is refilled from inode 17; blocks 2 to 4 were never used.
    assert!(inos.contains(&17) && inos.iter().any(|&i| i > 64), "{inos:?}");
    let dev = fs.inodes().device();
    for b in 1..=4 {
        let uses: Vec<_> = dev.uses.iter().filter(|u| u.0 == table + b).collect();
        assert_eq!(dev.first_use(table + b), Some(Use::Fill), "table block {b}: {uses:?}");
    }
    // Block 0 holds the reserved inodes and the image's first files: read.
    if inos.iter().any(|&i| i <= 16) {
        assert_eq!(dev.first_use(table), Some(Use::Read));
    }
    // An inode freed since mount makes its block one to read again, so a
    // handle to the freed inode stays stale: the slot's generation goes on.
    let victim = *made.last().unwrap();
    let name = format!("new{:02}", made.len() - 1);
    fs.unlink(root, name.as_bytes()).unwrap();
    fs.sync().unwrap();
    fs.inodes().device().uses.clear();
    let again = fs.create(root, b"again", 0o644, ROOT).unwrap();
    assert_eq!(again.ino, victim.ino);
    assert_ne!(again.generation, victim.generation);
    assert_eq!(fs.stat(victim), Err(Errno::ESTALE));
    let block = table + (victim.ino as u64 - 1) / 16;
    assert_eq!(fs.inodes().device().first_use(block), Some(Use::Read));
    let image = fs.unmount().unwrap().mem.into_inner();
    assert_clean(&image);
    // Everything reads back, the image's remaining files included.
    let mut fs = mount(image);
    let root = fs.root().unwrap();
    for (i, h) in made.iter().enumerate().take(made.len() - 1) {
        let got = fs.lookup(root, format!("new{i:02}").as_bytes()).unwrap();
        assert_eq!(got, *h);
        assert_eq!(read_all(&mut fs, got).unwrap(), pattern(100 + i as u64, 5000));
    }
    for (name, ino) in &old {
        if *ino < 17 {
            let h = fs.lookup(root, name.as_bytes()).unwrap();
            assert_eq!(h.ino, *ino);
        }
    }
}

/// Every change of a file's attributes lists its inode in `changed` (a
/// server's copies of them elsewhere go stale there), whatever made it;
/// a read once the access time is past the other times changes nothing.
#[test]
fn attribute_changes_list_their_inode() {
    let image = mkfs(None, Geometry::new(1024, 256, 4 << 20));
    let mut fs = mount(image);
    let root = fs.root().unwrap();
    let h = fs.create(root, b"f", 0o644, ROOT).unwrap();
    let changed = |fs: &mut Fs| {
        let (list, all) = fs.inodes().changed();
        let hit = all || list.contains(&h.ino);
        fs.inodes().forget_changed();
        hit
    };
    changed(&mut fs);
    assert!(!changed(&mut fs), "forgetting kept them");
    let later = |s: i64| Timestamp::new(2_000_000_000 + s, 0);
    fs.inodes().set_time(later(0));
    fs.write(h, 0, b"data").unwrap();
    assert!(changed(&mut fs), "a write");
    fs.inodes().set_time(later(1));
    let mut b = [0u8; 4];
    fs.read(h, 0, &mut b).unwrap();
    assert!(changed(&mut fs), "the first read's access time");
    fs.read(h, 0, &mut b).unwrap();
    assert!(!changed(&mut fs), "a read that changes nothing");
    let set = |a: SetAttr| move |fs: &mut Fs| fs.setattr(h, &a).map(|_| ());
    type Step = Box<dyn Fn(&mut Fs) -> Result<(), Errno>>;
    let steps: [(&str, Step); 7] = [
        (
            "a chmod",
            Box::new(set(SetAttr {
                perm: Some(0o600),
                ..SetAttr::default()
            })),
        ),
        (
            "a chown",
            Box::new(set(SetAttr {
                uid: Some(5),
                ..SetAttr::default()
            })),
        ),
        (
            "a truncate",
            Box::new(set(SetAttr {
                size: Some(1),
                ..SetAttr::default()
            })),
        ),
        (
            "utimensat",
            Box::new(set(SetAttr {
                mtime: Some(Timestamp::new(7, 7)),
                ..SetAttr::default()
            })),
        ),
        ("a link", Box::new(move |fs: &mut Fs| fs.link(h, root, b"g"))),
        ("an unlink", Box::new(move |fs: &mut Fs| fs.unlink(root, b"g"))),
        (
            "an extended attribute",
            Box::new(move |fs: &mut Fs| fs.inodes().xattr_set(h.ino, b"user.k", Some(b"v"), 0)),
        ),
    ];
    for (what, step) in steps {
        step(&mut fs).unwrap();
        assert!(changed(&mut fs), "{what}");
    }
}
