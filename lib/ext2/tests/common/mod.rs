//! Shared by the integration tests: the e2fsprogs tools, scratch
//! directories, images made by `mke2fs -d`, and a walk of a whole tree
//! through the library.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
// Each test file is its own crate and uses part of this module.
#[allow(unused_imports)]
pub use testdata::{Rng, pattern};

use ext2fs::{Errno, FileManager, FileType, Handle, MemDevice, MountOptions, Owner, Timestamp};

/// A fixed, realistic time for everything the tests write (e2fsck reads a
/// deletion time below the inode count as an orphan list).
pub const NOW: Timestamp = Timestamp::new(1_750_000_000, 123_456_789);
pub const ROOT: Owner = Owner { uid: 0, gid: 0 };

/// An e2fsprogs program. They live in /sbin, which is not in every PATH;
/// a machine without them fails the test, it does not skip it.
pub fn tool(name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/sbin", "/usr/sbin"].map(PathBuf::from));
    for d in dirs {
        let p = d.join(name);
        if p.is_file() {
            return p;
        }
    }
    panic!("{name} not found: the ext2 tests need e2fsprogs (tools/setup.sh installs it)");
}

/// A scratch directory, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        // Memory is much faster than most disks for trees of thousands of
        // small files.
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() && fs::metadata(shm).is_ok_and(|m| !m.permissions().readonly()) {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let p = base.join(format!("ext2fs-test-{}-{tag}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// How to make an image.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub block_size: u32,
    pub inode_size: u32,
    pub bytes: u64,
    /// Blocks per group (0: the default).
    pub group_blocks: u32,
    /// Inodes (0: the default).
    pub inodes: u32,
}

impl Geometry {
    pub const fn new(block_size: u32, inode_size: u32, bytes: u64) -> Geometry {
        Geometry {
            block_size,
            inode_size,
            bytes,
            group_blocks: 0,
            inodes: 0,
        }
    }
}

/// The four configurations every image test runs in.
pub const CONFIGS: [(u32, u32); 4] = [(1024, 128), (1024, 256), (4096, 128), (4096, 256)];

fn run(cmd: &mut Command) -> (i32, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// `mke2fs -t ext2 -d src` with the default features.
pub fn mkfs(src: Option<&Path>, g: Geometry) -> Vec<u8> {
    let s = Scratch::new("mkfs");
    let img = s.path("img");
    fs::File::create(&img).unwrap().set_len(g.bytes).unwrap();
    let mut cmd = Command::new(tool("mke2fs"));
    cmd.args([
        "-q",
        "-F",
        "-t",
        "ext2",
        "-b",
        &g.block_size.to_string(),
        "-I",
        &g.inode_size.to_string(),
    ]);
    // Fixed identifiers: images differ only where the tests make them.
    cmd.args([
        "-U",
        "6a1e5d1c-0c1b-4c52-9d2a-5e2d3f4a5b6c",
        "-E",
        "hash_seed=3b1c5f8e-4d2a-4e6b-8c1d-2f3e4a5b6c7d",
    ]);
    if g.group_blocks != 0 {
        cmd.args(["-g", &g.group_blocks.to_string()]);
    }
    if g.inodes != 0 {
        cmd.args(["-N", &g.inodes.to_string()]);
    }
    if let Some(src) = src {
        cmd.arg("-d").arg(src);
    }
    cmd.arg(&img);
    let (code, text) = run(&mut cmd);
    assert_eq!(code, 0, "mke2fs failed: {text}");
    fs::read(&img).unwrap()
}

/// `e2fsck -fn`: the exit code and everything it said.
pub fn fsck(image: &[u8]) -> (i32, String) {
    let s = Scratch::new("fsck");
    let img = s.path("img");
    fs::write(&img, image).unwrap();
    run(Command::new(tool("e2fsck")).arg("-fn").arg(&img))
}

/// e2fsck finds nothing to fix: exit 0 and no question asked.
pub fn assert_clean(image: &[u8]) {
    let (code, text) = fsck(image);
    assert!(
        code == 0 && !text.contains("Fix?") && !text.contains("Clear?"),
        "e2fsck -fn: exit {code}\n{text}"
    );
}

/// `debugfs -R cmd`: its standard output.
pub fn debugfs(image: &[u8], cmd: &str) -> Vec<u8> {
    let s = Scratch::new("debugfs");
    let img = s.path("img");
    fs::write(&img, image).unwrap();
    let out = Command::new(tool("debugfs"))
        .arg("-R")
        .arg(cmd)
        .arg(&img)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "debugfs -R {cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs debugfs commands that write (`-w -f`) and returns the image after.
/// Files named in `write` commands are taken from `files` (host paths).
pub fn debugfs_write(image: &[u8], commands: &[String]) -> Vec<u8> {
    let s = Scratch::new("debugfs-w");
    let img = s.path("img");
    fs::write(&img, image).unwrap();
    let script = s.path("script");
    fs::write(&script, commands.join("\n") + "\n").unwrap();
    let (code, text) = run(Command::new(tool("debugfs")).arg("-w").arg("-f").arg(&script).arg(&img));
    assert_eq!(code, 0, "debugfs -w: {text}");
    assert!(!text.contains("rror") && !text.contains("Usage"), "debugfs -w: {text}");
    fs::read(&img).unwrap()
}

/// `debugfs rdump` of `path` into a host directory.
pub fn rdump(image: &[u8], path: &str, dest: &Path) {
    let s = Scratch::new("rdump");
    let img = s.path("img");
    fs::write(&img, image).unwrap();
    let (code, text) = run(Command::new(tool("debugfs"))
        .arg("-R")
        .arg(format!("rdump {path} {}", dest.display()))
        .arg(&img));
    assert_eq!(code, 0, "rdump: {text}");
}

pub fn mount(image: Vec<u8>) -> FileManager<MemDevice> {
    let mut fs = FileManager::mount(
        MemDevice::new(image),
        MountOptions {
            read_only: false,
            time: NOW,
        },
    )
    .expect("mount");
    fs.set_time(NOW);
    fs
}

pub fn unmount(fs: FileManager<MemDevice>) -> Vec<u8> {
    fs.unmount().expect("unmount").into_inner()
}

/// Resolves an absolute path (not following a final symlink).
pub fn at(fs: &mut FileManager<MemDevice>, path: &str) -> Result<Handle, Errno> {
    let root = fs.root()?;
    fs.resolve(root, path.as_bytes(), false)
}

/// The parent directory of an absolute path and its last name.
pub fn parent(fs: &mut FileManager<MemDevice>, path: &str) -> (Handle, Vec<u8>) {
    let root = fs.root().unwrap();
    fs.resolve_parent(root, path.as_bytes()).unwrap()
}

/// The names in a directory, `.` and `..` left out.
pub fn names(fs: &mut FileManager<MemDevice>, dir: Handle) -> Result<Vec<(Vec<u8>, u32)>, Errno> {
    let mut out = Vec::new();
    fs.read_dir(dir, 0, &mut |e| {
        if e.name != b"." && e.name != b".." {
            out.push((e.name.to_vec(), e.ino));
        }
        true
    })?;
    Ok(out)
}

/// A whole file's bytes, read in pieces.
pub fn read_all(fs: &mut FileManager<MemDevice>, h: Handle) -> Result<Vec<u8>, Errno> {
    let size = fs.stat(h)?.size;
    let mut out = vec![0; size as usize];
    let mut off = 0;
    while off < out.len() {
        let end = (off + (1 << 20)).min(out.len());
        let n = fs.read(h, off as u64, &mut out[off..end])?;
        assert!(n > 0, "short read at {off} of {size}");
        off += n;
    }
    Ok(out)
}

/// What the walk found at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Dir {
        mode: u16,
        uid: u32,
        gid: u32,
    },
    File {
        mode: u16,
        uid: u32,
        gid: u32,
        data: Vec<u8>,
        ino: u32,
    },
    Symlink {
        target: Vec<u8>,
    },
    Special {
        kind: FileType,
        mode: u16,
        rdev: (u32, u32),
    },
    /// The library refused the object (or the directory holding it).
    Error(Errno),
}

/// Walks the tree from the root: every path and what is there. Reads of
/// files stop at `max_file` bytes (a corrupt size must not make the walk
/// read for ever).
pub fn walk(fs: &mut FileManager<MemDevice>, max_file: u64) -> BTreeMap<String, Node> {
    let mut out = BTreeMap::new();
    match fs.root() {
        Ok(root) => walk_dir(fs, root, String::new(), max_file, &mut out, 0),
        Err(e) => {
            out.insert("/".into(), Node::Error(e));
        }
    }
    out
}

fn walk_dir(
    fs: &mut FileManager<MemDevice>,
    dir: Handle,
    path: String,
    max_file: u64,
    out: &mut BTreeMap<String, Node>,
    depth: u32,
) {
    assert!(depth < 200, "walk too deep at {path}");
    let entries = match names(fs, dir) {
        Ok(e) => e,
        Err(e) => {
            out.insert(format!("{path}/"), Node::Error(e));
            return;
        }
    };
    for (name, _) in entries {
        let p = format!("{path}/{}", String::from_utf8_lossy(&name));
        let h = match fs.lookup(dir, &name) {
            Ok(h) => h,
            Err(e) => {
                out.insert(p, Node::Error(e));
                continue;
            }
        };
        let node = node_of(fs, h, max_file);
        let is_dir = matches!(node, Node::Dir { .. });
        out.insert(p.clone(), node);
        if is_dir {
            walk_dir(fs, h, p, max_file, out, depth + 1);
        }
    }
}

fn node_of(fs: &mut FileManager<MemDevice>, h: Handle, max_file: u64) -> Node {
    let st = match fs.stat(h) {
        Ok(st) => st,
        Err(e) => return Node::Error(e),
    };
    let perm = st.mode & 0o7777;
    match st.kind {
        FileType::Directory => Node::Dir {
            mode: perm,
            uid: st.uid,
            gid: st.gid,
        },
        FileType::Regular => {
            let len = st.size.min(max_file) as usize;
            let mut data = vec![0; len];
            let mut off = 0;
            while off < len {
                match fs.read(h, off as u64, &mut data[off..]) {
                    Ok(0) => return Node::Error(Errno::EIO),
                    Ok(n) => off += n,
                    Err(e) => return Node::Error(e),
                }
            }
            Node::File {
                mode: perm,
                uid: st.uid,
                gid: st.gid,
                data,
                ino: h.ino,
            }
        }
        FileType::Symlink => match fs.readlink(h) {
            Ok(target) => Node::Symlink { target },
            Err(e) => Node::Error(e),
        },
        kind => Node::Special {
            kind,
            mode: perm,
            rdev: st.rdev,
        },
    }
}

/// The same walk over a host directory.
pub fn walk_host(root: &Path) -> BTreeMap<String, Node> {
    let mut out = BTreeMap::new();
    walk_host_dir(root, String::new(), &mut out);
    out
}

fn walk_host_dir(dir: &Path, path: String, out: &mut BTreeMap<String, Node>) {
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let p = format!("{path}/{}", e.file_name().to_string_lossy());
        let md = fs::symlink_metadata(e.path()).unwrap();
        let mode = (md.permissions().mode() & 0o7777) as u16;
        let ft = md.file_type();
        if ft.is_dir() {
            out.insert(
                p.clone(),
                Node::Dir {
                    mode,
                    uid: md.uid(),
                    gid: md.gid(),
                },
            );
            walk_host_dir(&e.path(), p, out);
        } else if ft.is_symlink() {
            let t = fs::read_link(e.path()).unwrap();
            out.insert(
                p,
                Node::Symlink {
                    target: t.as_os_str().as_encoded_bytes().to_vec(),
                },
            );
        } else {
            out.insert(
                p,
                Node::File {
                    mode,
                    uid: md.uid(),
                    gid: md.gid(),
                    data: fs::read(e.path()).unwrap(),
                    ino: 0,
                },
            );
        }
    }
}

/// Whether two nodes agree, inode numbers (which differ between the host
/// and the image) aside.
pub fn same_node(a: &Node, b: &Node) -> bool {
    match (a, b) {
        (
            Node::File {
                mode: m1,
                uid: u1,
                gid: g1,
                data: d1,
                ..
            },
            Node::File {
                mode: m2,
                uid: u2,
                gid: g2,
                data: d2,
                ..
            },
        ) => (m1, u1, g1) == (m2, u2, g2) && d1 == d2,
        (a, b) => a == b,
    }
}

/// The library's walk of a mounted image is `want` and mke2fs's own
/// `/lost+found`.
pub fn assert_walk_is(fs: &mut FileManager<MemDevice>, mut want: BTreeMap<String, Node>) {
    want.insert(
        "/lost+found".into(),
        Node::Dir {
            mode: 0o700,
            uid: 0,
            gid: 0,
        },
    );
    assert_same_tree(&walk(fs, u64::MAX), &want);
}

/// Compares two walks.
pub fn assert_same_tree(got: &BTreeMap<String, Node>, want: &BTreeMap<String, Node>) {
    for (k, v) in want {
        match got.get(k) {
            None => panic!("{k} missing"),
            Some(x) if !same_node(x, v) => panic!("{k} differs: got {}, want {}", describe(x), describe(v)),
            _ => {}
        }
    }
    for k in got.keys() {
        assert!(want.contains_key(k), "{k} should not be there");
    }
}

fn describe(n: &Node) -> String {
    match n {
        Node::File {
            mode, uid, gid, data, ..
        } => format!("file {mode:o} {uid}:{gid} {} bytes", data.len()),
        n => format!("{n:?}"),
    }
}

/// File sizes around every boundary of the block map for 1 KiB and 4 KiB
/// blocks: inside the inode, the direct blocks, single and double
/// indirect.
pub const SIZES: [usize; 17] = [
    0,
    1,
    59,
    60,
    1000,
    1023,
    1024,
    1025,
    4095,
    4096,
    4097,
    12 * 1024,
    12 * 1024 + 1,
    13 * 4096,
    270 * 1024,
    1024 * 1024 + 12345,
    5 * 1024 * 1024 + 7,
];

/// Entries in the big directory.
pub const BIG_DIR: usize = 5000;

/// Builds the host tree the read tests give to `mke2fs -d`: files of
/// every size above, sparse files past 64 MiB, a deep tree, symbolic
/// links fast and slow, hard links, odd permissions and owners, and a
/// directory of [`BIG_DIR`] entries.
pub fn source_tree(root: &Path) {
    use std::io::{Seek, SeekFrom, Write};
    use std::os::unix::fs::symlink;
    let files = root.join("files");
    fs::create_dir(&files).unwrap();
    for (i, &n) in SIZES.iter().enumerate() {
        fs::write(files.join(format!("f{n}")), pattern(i as u64 + 1, n)).unwrap();
    }
    // Sparse: holes at the start, in the middle and up to the end; the last
    // reaches the triple indirect block with 1 KiB blocks.
    let mut f = fs::File::create(root.join("sparse-100m")).unwrap();
    f.write_all(&pattern(100, 4096)).unwrap();
    f.seek(SeekFrom::Start(50 << 20)).unwrap();
    f.write_all(b"middle").unwrap();
    f.seek(SeekFrom::Start((100 << 20) - 10)).unwrap();
    f.write_all(b"end of it.").unwrap();
    drop(f);
    let f = fs::File::create(root.join("sparse-70m-hole")).unwrap();
    f.set_len(70 << 20).unwrap();
    drop(f);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .open(root.join("sparse-70m-hole"))
        .unwrap();
    f.seek(SeekFrom::Start(65 << 20)).unwrap();
    f.write_all(&pattern(70, 3000)).unwrap();
    drop(f);
    // A deep tree.
    let mut d = root.join("deep");
    for i in 0..30 {
        d = d.join(format!("level{i}"));
    }
    fs::create_dir_all(&d).unwrap();
    fs::write(d.join("bottom"), b"at the bottom\n").unwrap();
    // Symbolic links.
    let links = root.join("links");
    fs::create_dir(&links).unwrap();
    symlink("../files/f1000", links.join("fast")).unwrap();
    symlink("x".repeat(59), links.join("len59")).unwrap();
    symlink("y".repeat(60), links.join("len60")).unwrap();
    symlink(format!("/{}", "long/".repeat(40)), links.join("slow")).unwrap();
    symlink("../deep", links.join("to-dir")).unwrap();
    symlink("nowhere", links.join("dangling")).unwrap();
    symlink("/files/f4096", links.join("absolute")).unwrap();
    // Hard links.
    fs::write(root.join("hard-a"), pattern(7, 3333)).unwrap();
    fs::hard_link(root.join("hard-a"), root.join("hard-b")).unwrap();
    // Permissions and owners.
    let perms = root.join("perms");
    fs::create_dir(&perms).unwrap();
    for (name, mode) in [("p600", 0o600), ("p755", 0o755), ("suid", 0o4755), ("sticky", 0o1777)] {
        let p = perms.join(name);
        fs::write(&p, name).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
    }
    fs::create_dir(perms.join("private")).unwrap();
    fs::set_permissions(perms.join("private"), fs::Permissions::from_mode(0o700)).unwrap();
    // Owners other than ours need root; without it the files keep ours.
    let _ = std::os::unix::fs::chown(perms.join("p600"), Some(1000), Some(1001));
    let _ = std::os::unix::fs::chown(perms.join("private"), Some(65534), Some(65534));
    // The big directory.
    let big = root.join("big");
    fs::create_dir(&big).unwrap();
    for i in 0..BIG_DIR {
        let name = if i % 7 == 0 {
            format!("entry-{i:05}-with-a-rather-longer-name")
        } else {
            format!("e{i}")
        };
        fs::write(
            big.join(name),
            if i % 100 == 0 { format!("{i}") } else { String::new() },
        )
        .unwrap();
    }
}

/// A scratch directory holding [`source_tree`] in `tree/`.
pub fn source_dir() -> Scratch {
    let s = Scratch::new("src");
    fs::create_dir(s.path("tree")).unwrap();
    source_tree(&s.path("tree"));
    s
}

/// An image of the tree in `source_dir()`, in geometry `g`.
pub fn source_image(src: &Scratch, g: Geometry) -> Vec<u8> {
    let mut g = g;
    g.inodes = 6000;
    mkfs(Some(&src.path("tree")), g)
}

/// `image` after `e2fsck -fyD`, which indexes every directory big enough.
pub fn indexed(image: &[u8]) -> Vec<u8> {
    let s = Scratch::new("index");
    let img = s.path("img");
    std::fs::write(&img, image).unwrap();
    let out = std::process::Command::new(tool("e2fsck"))
        .arg("-fyD")
        .arg(&img)
        .output()
        .unwrap();
    assert!(
        out.status.code().unwrap() <= 1,
        "e2fsck -fyD: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    std::fs::read(&img).unwrap()
}

/// `stat` of an absolute path (not following a final symlink).
pub fn stat_at(fs: &mut FileManager<MemDevice>, path: &str) -> Result<ext2fs::Stat, Errno> {
    let h = at(fs, path)?;
    fs.stat(h)
}
