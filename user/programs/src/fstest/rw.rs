//! Files written read back identically, from the cache and cold from the
//! disk; every operation of the protocol and its errors; permissions; the
//! copies of file data counted.

use super::*;
use tessera_api::fs::client::{self, File};
use tessera_api::fs::{self, Cred, Errno, O_APPEND, O_CREAT, O_DIRECTORY, O_EXCL, O_RDONLY, O_RDWR, O_WRONLY, SetAttr};

/// File sizes around every boundary (the host checks the files `keep` leaves).
use testdata::FILE_SIZES as SIZES;

fn name(size: usize) -> String {
    format!("/t/f{size}")
}

/// Reads back every file of SIZES whole and in odd pieces.
fn read_back(c: &mut Checks, when: &str) {
    for (i, &size) in SIZES.iter().enumerate() {
        let want = pattern(size as u64, size);
        let got = read_file(&name(size));
        c.check(
            got.as_deref() == Ok(&want[..]),
            &format!("{when}: {} reads back", name(size)),
        );
        if size > 10 {
            let f = File::open(&name(size), O_RDONLY, 0);
            let (off, len) = (size / 3, 777 + i * 131);
            let mut buf = alloc::vec![0u8; len];
            let n = f.and_then(|f| f.read_at(off as u64, &mut buf));
            let end = (off + len).min(size);
            c.check(
                n == Ok(end - off) && buf[..end - off] == want[off..end],
                &format!("{when}: {} at {off} for {len}", name(size)),
            );
        }
    }
}

/// With `keep`, the files of SIZES and `/t/sparse` stay on the disk at the
/// end, synced, for the host to read back (`xtask/src/disktest.rs`).
pub fn run(image: &str, keep: bool) -> u32 {
    let mut c = Checks::new("fstest");
    // A small cache: the files do not fit, so pages are written back and
    // read again while the test runs.
    let stack = match Stack::start(image, 48, 0, false) {
        Ok(s) => s,
        Err(e) => {
            println!("fstest: {e}");
            return 1;
        }
    };

    // What mke2fs -d put there.
    c.check(
        read_file("/hello.txt").as_deref() == Ok(&b"Hello from the Tessera disk.\n"[..]),
        "/hello.txt from the image",
    );
    c.check(
        client::readlink("/motd").as_deref() == Ok(&b"etc/motd"[..]),
        "readlink /motd",
    );
    c.check(
        read_file("/motd") == read_file("/etc/motd"),
        "a symbolic link is followed",
    );
    let root: Vec<Vec<u8>> = client::read_dir("/")
        .map(|v| v.into_iter().map(|e| e.name).collect())
        .unwrap_or_default();
    for n in [
        &b"."[..],
        b"..",
        b"README",
        b"docs",
        b"etc",
        b"hello.txt",
        b"lost+found",
        b"motd",
    ] {
        c.check(
            root.iter().any(|r| r == n),
            &format!("/ lists {}", String::from_utf8_lossy(n)),
        );
    }
    let free_before = client::statfs().map(|s| s.bfree).unwrap_or(0);

    c.check(client::mkdir("/t", 0o755).is_ok(), "mkdir /t");
    for (i, &size) in SIZES.iter().enumerate() {
        let data = pattern(size as u64, size);
        let chunk = [1000, 4096, 777, 65536][i % 4];
        c.check(
            write_file(&name(size), &data, chunk).is_ok(),
            &format!("write {}", name(size)),
        );
        let st = client::stat(&name(size));
        c.check(
            st.map(|s| s.size) == Ok(size as i64),
            &format!("size of {}", name(size)),
        );
    }
    read_back(&mut c, "cached");
    let free_after = client::statfs().map(|s| s.bfree).unwrap_or(0);
    c.check(free_after < free_before, "statfs: the files took blocks");

    // A sparse file: a hole reads as zeros and holds no blocks.
    let sparse = File::open("/t/sparse", O_RDWR | O_CREAT, 0o644);
    c.check(sparse.is_ok(), "create /t/sparse");
    if let Ok(f) = sparse {
        c.check(f.write_at(1 << 20, b"end") == Ok(3), "write past a hole");
        let st = f.stat().unwrap_or_default();
        c.check(st.size == (1 << 20) + 3 && st.blocks <= 32, "sparse size and blocks");
        let mut buf = alloc::vec![1u8; 8192];
        c.check(
            f.read_at(4096, &mut buf) == Ok(8192) && buf.iter().all(|&b| b == 0),
            "a hole reads as zeros",
        );
        let mut end = [0u8; 3];
        c.check(
            f.read_at(1 << 20, &mut end) == Ok(3) && &end == b"end",
            "after the hole",
        );
    }

    // Overwrite, append, truncate.
    let path = "/t/ow";
    let mut want = pattern(4097, 4097);
    c.check(write_file(path, &want, 4097).is_ok(), "write /t/ow");
    if let Ok(mut f) = File::open(path, O_RDWR, 0) {
        c.check(f.write_at(100, b"XYZ") == Ok(3), "overwrite in the middle");
        want[100..103].copy_from_slice(b"XYZ");
        f.seek(4097);
        c.check(f.write(b"tail") == Ok(4), "write at the end");
        want.extend_from_slice(b"tail");
    }
    if let Ok(mut f) = File::open(path, O_WRONLY | O_APPEND, 0) {
        c.check(f.write(b"+appended") == Ok(9), "append");
        want.extend_from_slice(b"+appended");
    }
    c.check(read_file(path).as_deref() == Ok(&want[..]), "overwritten and appended");
    c.check(client::truncate(path, 10).is_ok(), "truncate to 10");
    c.check(read_file(path).as_deref() == Ok(&want[..10]), "truncated");
    c.check(client::truncate(path, 5000).is_ok(), "truncate up to 5000");
    let grown = read_file(path).unwrap_or_default();
    c.check(
        grown.len() == 5000 && grown[..10] == want[..10] && grown[10..].iter().all(|&b| b == 0),
        "grown by truncate reads as zeros",
    );
    c.check(client::unlink(path).is_ok(), "unlink /t/ow");

    // A directory of many entries, links, renames, removal.
    c.check(client::mkdir("/t/d", 0o755).is_ok(), "mkdir /t/d");
    // As many as the image has inodes for (the small one has 128).
    let n = client::statfs()
        .map_or(0, |s| s.ffree as usize)
        .saturating_sub(16)
        .min(300);
    for i in 0..n {
        let p = format!("/t/d/n{i}");
        c.check(write_file(&p, format!("{i}").as_bytes(), 64).is_ok(), &p);
    }
    let listed = client::read_dir("/t/d").unwrap_or_default();
    c.check(
        listed.len() == n + 2,
        &format!("/t/d lists {} of {}", listed.len(), n + 2),
    );
    for i in (0..n).step_by(37) {
        let want = format!("n{i}");
        c.check(
            listed.iter().any(|e| e.name == want.as_bytes()),
            &format!("{want} listed"),
        );
    }
    c.check(client::rename("/t/d/n0", "/t/d/renamed").is_ok(), "rename");
    c.errno(client::stat("/t/d/n0"), Errno::ENOENT, "the old name is gone");
    c.check(read_file("/t/d/renamed").as_deref() == Ok(&b"0"[..]), "renamed file");
    c.check(client::link("/t/d/n1", "/t/d/l1").is_ok(), "link");
    c.check(client::stat("/t/d/l1").map(|s| s.nlink) == Ok(2), "two links");
    c.check(client::unlink("/t/d/n1").is_ok(), "unlink one name");
    c.check(
        client::stat("/t/d/l1").map(|s| s.nlink) == Ok(1) && read_file("/t/d/l1").as_deref() == Ok(&b"1"[..]),
        "the other name keeps the file",
    );
    c.check(client::symlink("n2", "/t/d/s2").is_ok(), "symlink");
    c.check(client::readlink("/t/d/s2").as_deref() == Ok(&b"n2"[..]), "readlink");
    c.check(
        read_file("/t/d/s2").as_deref() == Ok(&b"2"[..]),
        "read through a symlink",
    );
    c.check(
        client::lstat("/t/d/s2").is_ok_and(|s| s.is_symlink()),
        "lstat sees the link",
    );
    let long = "x".repeat(100);
    c.check(client::symlink(&long, "/t/d/slow").is_ok(), "a slow symlink");
    c.check(
        client::readlink("/t/d/slow").as_deref() == Ok(long.as_bytes()),
        "its target",
    );
    c.errno(client::rmdir("/t/d"), Errno::ENOTEMPTY, "rmdir of a full directory");
    for e in client::read_dir("/t/d").unwrap_or_default() {
        if e.name != b"." && e.name != b".." {
            let p = format!("/t/d/{}", String::from_utf8_lossy(&e.name));
            c.check(client::unlink(&p).is_ok(), &p);
        }
    }
    c.check(client::rmdir("/t/d").is_ok(), "rmdir of the emptied directory");

    // Errors, as Linux's errno values.
    c.errno(
        File::open("/t/missing", O_RDONLY, 0),
        Errno::ENOENT,
        "open a missing file",
    );
    c.errno(
        File::open(&name(1), O_RDWR | O_CREAT | O_EXCL, 0o644),
        Errno::EEXIST,
        "O_EXCL",
    );
    c.errno(File::open("/t", O_WRONLY, 0), Errno::EISDIR, "a directory for writing");
    c.errno(
        File::open(&name(1), O_RDONLY | O_DIRECTORY, 0),
        Errno::ENOTDIR,
        "O_DIRECTORY on a file",
    );
    c.errno(client::mkdir("/t", 0o755), Errno::EEXIST, "mkdir of an existing name");
    c.errno(client::stat("/hello.txt/x"), Errno::ENOTDIR, "a file as a directory");
    c.errno(client::rmdir(&name(1)), Errno::ENOTDIR, "rmdir of a file");
    c.errno(client::unlink("/t"), Errno::EISDIR, "unlink of a directory");
    c.errno(
        client::mkdir(&format!("/t/{}", "n".repeat(300)), 0o755),
        Errno::ENAMETOOLONG,
        "a long name",
    );
    if let Ok(mut d) = File::open("/t", O_RDONLY, 0) {
        c.errno(d.read(&mut [0u8; 16]), Errno::EISDIR, "read of a directory");
    }
    if let Ok(mut f) = File::open(&name(1), O_RDONLY, 0) {
        c.errno(f.write(b"x"), Errno::EBADF, "write to a file open for reading");
    }

    // Buffers the kernel accepts but that are not all there: a reply range
    // nothing backs, and messages whose first 64 bytes are mapped (the
    // kernel reads those at the call) and the rest not. The cache's copy
    // fails part way; the caller gets the error, the servers go on, and no
    // file changes: old blocks keep their bytes, new ones read as zeros.
    let unmapped = 0x6000_0000_0000u64;
    let half = sys::map(4096, tessera_rt::abi::prot::READ | tessera_rt::abi::prot::WRITE).map_or(0, |a| a + 4096 - 64);
    let bad_write = |c: &mut Checks, path: &str, offset: u64, what: &str| {
        let Ok(f) = File::open(path, O_RDWR, 0) else {
            return c.check(false, what);
        };
        let mut to = [0u8; 16];
        to[..4].copy_from_slice(&f.fd().to_le_bytes());
        to[8..].copy_from_slice(&offset.to_le_bytes());
        c.check(sys::call(stack.fs, fs::WRITE_TO, &to, &mut [0u8; 8]).is_ok(), what);
        let mut reply = [0u8; 16];
        // SAFETY: a message that runs off the end of its mapping: the
        // kernel must refuse to read the rest, which is what is tested.
        let w = unsafe { sys::call_raw(stack.fs, fs::WRITE, half, 8192, reply.as_mut_ptr() as u64, 16) };
        let result = i64::from_le_bytes(reply[..8].try_into().unwrap_or([0; 8]));
        c.check(
            w.is_ok() && result == -(Errno::EFAULT.0 as i64),
            &format!("{what}: {w:?} {result}"),
        );
    };
    if let Ok(f) = File::open(&name(4096), O_RDONLY, 0) {
        let mut msg = [0u8; 24];
        msg[..4].copy_from_slice(&f.fd().to_le_bytes());
        msg[16..].copy_from_slice(&4096u64.to_le_bytes());
        // SAFETY: the reply range is nobody's memory; the kernel must refuse
        // to write it, which is what is tested.
        let r = unsafe { sys::call_raw(stack.fs, fs::READ, msg.as_ptr() as u64, 24, unmapped, 4096) };
        c.check(r.is_err(), &format!("a read into unmapped memory fails: {r:?}"));
    }
    bad_write(&mut c, &name(4096), 0, "overwrite from a broken buffer");
    c.check(
        read_file(&name(4096)).as_deref() == Ok(&pattern(4096, 4096)[..]),
        "an overwrite that failed changed nothing",
    );
    bad_write(&mut c, &name(100), 100, "append from a broken buffer");
    c.check(
        read_file(&name(100)).as_deref() == Ok(&pattern(100, 100)[..]),
        "an append that failed changed nothing",
    );
    bad_write(&mut c, "/t/sparse", 8192, "fill a hole from a broken buffer");
    let mut hole = alloc::vec![1u8; 16384];
    let read = File::open("/t/sparse", O_RDONLY, 0).and_then(|f| f.read_at(0, &mut hole));
    c.check(
        read == Ok(16384)
            && hole.iter().all(|&b| b == 0)
            && client::stat("/t/sparse").map(|s| s.size) == Ok((1 << 20) + 3),
        "a hole filled in vain reads as zeros",
    );

    // Extended attributes through XATTR, and messages a hostile client
    // could send: each refused with its errno, the server serving on.
    let xattr = |fields: &[u8], path: &str, hflags: u32, dirfd: u32, reply: &mut [u8]| -> i64 {
        let hdr = fs::PathHeader {
            cred: fs::Cred::default(),
            dirfd,
            flags: hflags,
        };
        let msg = hdr.request(fields, &[path.as_bytes()]);
        match sys::call(stack.fs, fs::XATTR, &msg, reply) {
            Ok(n) if n >= 8 => i64::from_le_bytes(reply[..8].try_into().unwrap_or([0; 8])),
            r => {
                println!("fstest: XATTR: {r:?}");
                i64::MIN
            }
        }
    };
    let fields = |op: u32, flags: u32, name: &[u8], size: u32, value: &[u8]| -> Vec<u8> {
        let mut v = Vec::new();
        for w in [op, flags, name.len() as u32, size] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v.extend_from_slice(name);
        v.extend_from_slice(value);
        v
    };
    let err = |e: Errno| -(e.0 as i64);
    let mut reply = [0u8; 64];
    let p = name(100);
    let set = fields(fs::XATTR_SET, 0, b"user.k", 5, b"value");
    c.check(xattr(&set, &p, 0, fs::AT_FDCWD, &mut reply) == 0, "XATTR set");
    let get = fields(fs::XATTR_GET, 0, b"user.k", 56, b"");
    c.check(
        xattr(&get, &p, 0, fs::AT_FDCWD, &mut reply) == 5 && &reply[8..13] == b"value",
        "XATTR get",
    );
    let short = fields(fs::XATTR_GET, 0, b"user.k", 4, b"");
    c.check(
        xattr(&short, &p, 0, fs::AT_FDCWD, &mut reply) == err(Errno::ERANGE),
        "XATTR get, buffer short",
    );
    let list = fields(fs::XATTR_LIST, 0, b"", 0, b"");
    c.check(xattr(&list, &p, 0, fs::AT_FDCWD, &mut reply) == 7, "XATTR list size");
    let create = fields(fs::XATTR_SET, fs::XATTR_CREATE, b"user.k", 1, b"x");
    c.check(
        xattr(&create, &p, 0, fs::AT_FDCWD, &mut reply) == err(Errno::EEXIST),
        "XATTR create of one there",
    );
    // (Without a path after them, the cut messages end inside the name or
    // the value.)
    for (what, msg, path, want) in [
        ("unknown op", fields(9, 0, b"user.k", 0, b""), &p[..], Errno::EINVAL),
        (
            "unknown flag",
            fields(fs::XATTR_SET, 8, b"user.k", 1, b"x"),
            &p,
            Errno::EINVAL,
        ),
        (
            "a name past the message",
            fields(fs::XATTR_GET, 0, b"user.k", 56, b"")[..18].to_vec(),
            "",
            Errno::EINVAL,
        ),
        (
            "a value past the message",
            fields(fs::XATTR_SET, 0, b"user.k", 4000, b"x"),
            "",
            Errno::EINVAL,
        ),
        ("no fields", Vec::new(), &p, Errno::EINVAL),
        (
            "an unknown namespace",
            fields(fs::XATTR_SET, 0, b"nope.k", 1, b"x"),
            &p,
            Errno::EOPNOTSUPP,
        ),
        (
            "a name with no prefix",
            fields(fs::XATTR_GET, 0, b"", 56, b""),
            &p,
            Errno::EOPNOTSUPP,
        ),
        (
            "a missing file",
            fields(fs::XATTR_GET, 0, b"user.k", 56, b""),
            "/t/missing",
            Errno::ENOENT,
        ),
    ] {
        let r = xattr(&msg, path, 0, fs::AT_FDCWD, &mut reply);
        c.check(r == err(want), &format!("XATTR, {what}: {r}"));
    }
    // A header cut short, and file numbers that are no one's.
    let r = sys::call(stack.fs, fs::XATTR, &[0u8; 7], &mut reply);
    c.check(
        r.is_ok() && i64::from_le_bytes(reply[..8].try_into().unwrap_or([0; 8])) == err(Errno::EINVAL),
        "XATTR, a header cut short",
    );
    for fd in [999, u32::MAX - 1] {
        let r = xattr(&get, "", fs::AT_EMPTY_PATH, fd, &mut reply);
        c.check(r == err(Errno::EBADF), &format!("XATTR of file number {fd}: {r}"));
    }
    let remove = fields(fs::XATTR_REMOVE, 0, b"user.k", 0, b"");
    c.check(xattr(&remove, &p, 0, fs::AT_FDCWD, &mut reply) == 0, "XATTR remove");
    c.check(
        xattr(&remove, &p, 0, fs::AT_FDCWD, &mut reply) == err(Errno::ENODATA),
        "XATTR remove again",
    );
    // Space allocated ahead and holes (FALLOCATE, SEEK), and the messages
    // a hostile client could send them. Nothing kept past a file's end:
    // e2fsck reads this disk afterwards.
    let ask = |entry: u64, msg: &[u8]| -> i64 {
        let mut r = [0u8; 8];
        match sys::call(stack.fs, entry, msg, &mut r) {
            Ok(8) => i64::from_le_bytes(r),
            other => {
                println!("fstest: entry {entry}: {other:?}");
                i64::MIN
            }
        }
    };
    let falloc = |fd: u32, mode: u32, off: u64, len: u64| {
        let mut m = [0u8; 24];
        m[..4].copy_from_slice(&fd.to_le_bytes());
        m[4..8].copy_from_slice(&mode.to_le_bytes());
        m[8..16].copy_from_slice(&off.to_le_bytes());
        m[16..].copy_from_slice(&len.to_le_bytes());
        ask(fs::FALLOCATE, &m)
    };
    let seek = |fd: u32, whence: u32, off: u64| {
        let mut m = [0u8; 16];
        m[..4].copy_from_slice(&fd.to_le_bytes());
        m[4..8].copy_from_slice(&whence.to_le_bytes());
        m[8..].copy_from_slice(&off.to_le_bytes());
        ask(fs::SEEK, &m)
    };
    let punch = fs::FALLOC_FL_PUNCH_HOLE | fs::FALLOC_FL_KEEP_SIZE;
    match (
        File::open("/t/alloc", O_CREAT | O_RDWR, 0o644),
        File::open(&p, O_RDONLY, 0),
        File::open("/t", O_RDONLY | O_DIRECTORY, 0),
    ) {
        (Ok(f), Ok(ro), Ok(dir)) => {
            let fd = f.fd();
            let free = client::statfs().map(|s| s.bfree).unwrap_or(0);
            c.check(falloc(fd, 0, 0, 65536) == 0, "FALLOCATE 64 KiB");
            let st = f.stat();
            c.check(
                st.map(|s| (s.size, s.blocks >= 128)) == Ok((65536, true)),
                "FALLOCATE: the size and the blocks",
            );
            c.check(
                client::statfs().map(|s| s.bfree).unwrap_or(0) < free,
                "FALLOCATE: the free count dropped",
            );
            c.check(
                f.write_at(0, &[7u8; 16384]) == Ok(16384),
                "a write into allocated blocks",
            );
            c.check(falloc(fd, punch, 4096, 8192) == 0, "FALLOCATE punch");
            let mut back = alloc::vec![1u8; 16384];
            c.check(
                f.read_at(0, &mut back) == Ok(16384)
                    && back[..4096].iter().all(|&b| b == 7)
                    && back[4096..12288].iter().all(|&b| b == 0)
                    && back[12288..].iter().all(|&b| b == 7),
                "a punched range reads as zeros, its sides as written",
            );
            c.check(seek(fd, fs::SEEK_DATA, 0) == 0, "SEEK data at 0");
            c.check(seek(fd, fs::SEEK_HOLE, 0) == 4096, "SEEK the punched hole");
            c.check(seek(fd, fs::SEEK_DATA, 4096) == 12288, "SEEK the data after it");
            c.check(seek(fd, fs::SEEK_HOLE, 12288) == 65536, "SEEK the end as a hole");
            c.check(seek(fd, fs::SEEK_DATA, 65536) == err(Errno::ENXIO), "SEEK at the end");
            let falloc_refusals = [
                ("file number 999", falloc(999, 0, 0, 10), Errno::EBADF),
                ("file number u32::MAX - 1", falloc(u32::MAX - 1, 0, 0, 10), Errno::EBADF),
                ("a file open to read", falloc(ro.fd(), 0, 0, 10), Errno::EBADF),
                ("a directory", falloc(dir.fd(), 0, 0, 10), Errno::EBADF),
                (
                    "collapse",
                    falloc(fd, fs::FALLOC_FL_COLLAPSE_RANGE, 0, 4096),
                    Errno::EOPNOTSUPP,
                ),
                (
                    "a punch without KEEP_SIZE",
                    falloc(fd, fs::FALLOC_FL_PUNCH_HOLE, 0, 10),
                    Errno::EOPNOTSUPP,
                ),
                ("an unknown mode", falloc(fd, 0x8000_0000, 0, 10), Errno::EOPNOTSUPP),
                ("length 0", falloc(fd, 0, 0, 0), Errno::EINVAL),
                ("a negative offset", falloc(fd, 0, u64::MAX - 10, 1), Errno::EINVAL),
                ("an end past the largest file", falloc(fd, 0, 1 << 60, 1), Errno::EFBIG),
                ("a cut message", ask(fs::FALLOCATE, &[0u8; 12]), Errno::EINVAL),
                ("SEEK of file number 999", seek(999, fs::SEEK_DATA, 0), Errno::EBADF),
                ("SEEK, whence 7", seek(fd, 7, 0), Errno::EINVAL),
                ("SEEK of a directory", seek(dir.fd(), fs::SEEK_DATA, 0), Errno::EINVAL),
                ("SEEK, a cut message", ask(fs::SEEK, &[0u8; 5]), Errno::EINVAL),
            ];
            for (what, r, want) in falloc_refusals {
                c.check(r == err(want), &format!("FALLOCATE/SEEK, {what}: {r}"));
            }
            c.check(f.stat().map(|s| s.size) == Ok(65536), "the file is as it was");
            drop((f, ro, dir));
            c.check(client::unlink("/t/alloc").is_ok(), "unlink the allocated file");
        }
        _ => c.check(false, "open the files for FALLOCATE"),
    }

    // Left on the disk for e2fsck and debugfs on the host to read.
    let kept = fields(fs::XATTR_SET, 0, b"user.kept", 6, b"on ext");
    c.check(xattr(&kept, &p, 0, fs::AT_FDCWD, &mut reply) == 0, "XATTR set to keep");
    c.check(
        read_file(&p).as_deref() == Ok(&pattern(100, 100)[..]),
        "the file's bytes after XATTR",
    );

    // A client's root (SET_ROOT): names, `..` and absolute links stop at
    // it; hostile numbers are refused and the server serves on.
    let set_root = |fd: u32, msg_len: usize| -> i64 {
        let mut msg = [0u8; 8];
        msg[..4].copy_from_slice(&fd.to_le_bytes());
        let mut r = [0u8; 8];
        match sys::call(stack.fs, fs::SET_ROOT, &msg[..msg_len], &mut r) {
            Ok(8) => i64::from_le_bytes(r),
            _ => i64::MIN,
        }
    };
    c.check(set_root(0, 3) == err(Errno::EINVAL), "SET_ROOT, a message cut short");
    for fd in [999, u32::MAX - 1] {
        c.check(
            set_root(fd, 8) == err(Errno::EBADF),
            &format!("SET_ROOT of file number {fd}"),
        );
    }
    let file = File::open(&p, O_RDONLY, 0);
    c.check(
        file.as_ref().map(|f| set_root(f.fd(), 8)) == Ok(err(Errno::ENOTDIR)),
        "SET_ROOT of a file",
    );
    drop(file);
    c.check(client::mkdir("/t/jail", 0o755).is_ok(), "mkdir /t/jail");
    c.check(client::symlink("/", "/t/jail/abs").is_ok(), "a link to /");
    c.check(client::symlink("../../..", "/t/jail/up").is_ok(), "a link to ../../..");
    let d_ino = client::stat("/t/jail").map(|s| s.ino);
    let jail = File::open("/t/jail", O_RDONLY | O_DIRECTORY, 0);
    c.check(
        jail.as_ref().map(|f| set_root(f.fd(), 8)) == Ok(0),
        "SET_ROOT of /t/jail",
    );
    // The root is the server's to hold: the client's number may go.
    drop(jail);
    let root_ino = client::stat("/").map(|s| s.ino);
    c.check(root_ino.is_ok() && root_ino == d_ino, "/ is the root, /t/jail");
    c.check(client::stat("/..").map(|s| s.ino) == root_ino, "/.. is /");
    c.check(client::stat("/../../..").map(|s| s.ino) == root_ino, "/../../.. is /");
    c.check(
        client::stat("/abs").map(|s| s.ino) == root_ino,
        "a link to / leads to the root",
    );
    c.check(client::stat("/up").map(|s| s.ino) == root_ino, "a link to ../../.. too");
    c.errno(
        client::stat("/abs/t"),
        Errno::ENOENT,
        "a name through it, above the root",
    );
    c.errno(client::stat(&p), Errno::ENOENT, "a name above the root");
    c.check(client::mkdir("/../made", 0o755).is_ok(), "mkdir /../made");
    c.check(
        set_root(fs::AT_FDCWD, 8) == 0,
        "SET_ROOT back to the file system's root",
    );
    c.check(client::stat(&p).is_ok(), "the names from the root again");
    c.check(client::rmdir("/t/jail/made").is_ok(), "made in the root");
    c.check(client::unlink("/t/jail/abs").is_ok(), "the links go");
    c.check(client::unlink("/t/jail/up").is_ok(), "the links go");
    c.check(client::rmdir("/t/jail").is_ok(), "and the directory");

    // Attributes and permissions.
    let p100 = name(100);
    c.check(client::chmod(&p100, 0o600).is_ok(), "chmod");
    c.check(
        client::stat(&p100).map(|s| s.mode & 0o7777) == Ok(0o600),
        "mode changed",
    );
    c.check(client::chown(&p100, 0, 0).is_ok(), "chown");
    let times = SetAttr {
        valid: SetAttr::MTIME | SetAttr::ATIME,
        atime: (1_000_000, 5),
        mtime: (1_234_567, 89),
        ..SetAttr::default()
    };
    c.check(client::setattr(&p100, &times).is_ok(), "utimes");
    c.check(
        client::stat(&p100).map(|s| (s.mtime, s.atime)) == Ok(((1_234_567, 89), (1_000_000, 5))),
        "times set",
    );
    client::set_cred(Cred { uid: 1000, gid: 1000 });
    c.errno(
        File::open(&p100, O_RDONLY, 0),
        Errno::EACCES,
        "another user reads a 0600 file",
    );
    c.errno(
        File::open("/t/mine", O_WRONLY | O_CREAT, 0o644),
        Errno::EACCES,
        "create in a 0755 root directory",
    );
    c.errno(client::chmod(&p100, 0o777), Errno::EPERM, "chmod of another's file");
    c.check(read_file(&name(1)).is_ok(), "a 0644 file is readable by all");
    client::set_cred(Cred { uid: 0, gid: 0 });

    super::coherent::run(&mut c, &stack);

    // The copies: each byte of a file's first read was copied once, by the
    // cache, and none by the file server or the library; read again, the
    // bytes come from the kernel's file cache (its one copy), and the
    // cache copies none.
    let copies = |s: &Stack| value(&s.cache_stats(), "file_read_bytes_copied");
    let big = "/t/copies";
    c.check(
        write_file(big, &pattern(3, 65536 + 123), 65536).is_ok(),
        "write /t/copies",
    );
    let before = copies(&stack);
    let lib_before = value(&stack.fs_stats(), "library_bytes_copied");
    let published = value(&stack.fs_stats(), "pages_published");
    let by_cache = value(&stack.cache_stats(), "published_pages");
    let got = read_file(big).map(|d| d.len()).unwrap_or(0);
    let after = copies(&stack);
    c.check(
        got == 65536 + 123 && after - before == got as u64,
        &format!("{got} bytes read, {} copied by the cache", after - before),
    );
    c.check(
        value(&stack.fs_stats(), "library_bytes_copied") == lib_before,
        "the file server's library copied none of the data",
    );
    // Besides, each page went to the kernel: with blocks of 4 KiB copied
    // once, by the cache from the page it holds (these pages were written,
    // so read before); with blocks of 1 KiB (a page is four pieces) by the
    // file server, which read them from the cache (two copies).
    let pages = value(&stack.fs_stats(), "pages_published") - published;
    let cache_pages = value(&stack.cache_stats(), "published_pages") - by_cache;
    let (by_fs, by_cache) = match client::statfs().map(|s| s.bsize) {
        Ok(4096) => (0, got.div_ceil(4096) as u64),
        _ => (got.div_ceil(4096) as u64, 0),
    };
    c.check(
        pages == by_fs && cache_pages == by_cache,
        &format!("{cache_pages} pages published for the next reads by the cache, {pages} by the file server"),
    );
    let again = read_file(big).map(|d| d.len()).unwrap_or(0);
    c.check(
        again == got && copies(&stack) == after,
        "read again: from the kernel's file cache, no copy by the cache",
    );
    // From the disk: the first read is not published (a reader streaming
    // a file copies each byte once, as on Linux), the second is, the
    // third comes from the kernel's file cache.
    c.check(stack.drop_cache(), "drop the caches");
    let by_cache = value(&stack.cache_stats(), "published_pages");
    let first = read_file(big).map(|d| d.len()).unwrap_or(0);
    c.check(
        first == got && value(&stack.cache_stats(), "published_pages") == by_cache,
        "a first read from the disk: none published by the cache",
    );
    let second = read_file(big).map(|d| d.len()).unwrap_or(0);
    let after = copies(&stack);
    let third = read_file(big).map(|d| d.len()).unwrap_or(0);
    c.check(
        second == got && third == got && copies(&stack) == after,
        "read a third time: from the kernel's file cache",
    );
    c.check(client::unlink(big).is_ok(), "unlink /t/copies");

    // Cold: everything written back and forgotten; the files come from the
    // disk now.
    c.check(client::sync().is_ok(), "sync");
    c.check(stack.drop_cache(), "drop the cache");
    let misses = value(&stack.cache_stats(), "misses");
    read_back(&mut c, "cold");
    let report = stack.cache_stats();
    c.check(value(&report, "misses") > misses, "cold reads missed");
    c.check(value(&report, "read_ahead_used") > 0, "read-ahead was used");
    // Reading changed access times: a sync writes them back.
    c.check(client::sync().is_ok(), "sync after reading");
    c.check(value(&stack.cache_stats(), "dirty") == 0, "nothing dirty after a sync");

    if keep {
        stack.stop();
        println!(
            "fstest rw {image} keep: {} checks passed, {} failed",
            c.passed, c.failed
        );
        return c.failed;
    }

    // Removing the files gives their blocks back (the frees are committed
    // by sync).
    for &size in SIZES {
        c.check(client::unlink(&name(size)).is_ok(), &format!("unlink {}", name(size)));
    }
    c.check(client::unlink("/t/sparse").is_ok(), "unlink /t/sparse");
    c.check(client::rmdir("/t").is_ok(), "rmdir /t");
    c.check(client::sync().is_ok(), "sync");
    let free_end = client::statfs().map(|s| s.bfree).unwrap_or(0);
    c.check(
        free_end == free_before,
        &format!("free blocks {free_before} before, {free_end} after"),
    );
    c.check(value(&stack.cache_stats(), "pages_lost") == 0, "no page lost");
    stack.stop();
    println!("fstest rw {image}: {} checks passed, {} failed", c.passed, c.failed);
    c.failed
}
