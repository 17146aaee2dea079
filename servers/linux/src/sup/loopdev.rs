//! The loop block devices as a process sees them: `/dev/loop-control`
//! and `/dev/loopN` (block devices 7:N), their ioctls (Linux's loop
//! driver and the generic block ones: sizes, sector sizes), and reads,
//! writes and fsyncs of a bound device, which are the backing file's at
//! the device's offset. The devices themselves are the shared server's
//! (`shared/loopdev.rs`); for each call on a bound device the supervisor
//! takes its own number for the backing file from it (`ATTACH`) and
//! reads or writes through the file server as for a file of its own, the
//! data going straight between the cache and the program's buffer.

use super::Sup;
use super::fdtable::{self as fdt, Kind, Ofd};
use super::vfs::VNode;
use crate::proto::ctl;
use crate::shared::loopdev as op;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::loopdev::{self as lo, Config, Status, StatusRequest};
use linuxabi::structs::{S_IFBLK, S_IFCHR, S_IFREG, StatView, makedev};

/// Which loop node a description is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    Control,
    Dev(u32),
}

impl Node {
    /// As one word (a forked child's description).
    pub fn word(self) -> u64 {
        match self {
            Node::Control => u64::MAX,
            Node::Dev(n) => n as u64,
        }
    }

    pub fn from_word(w: u64) -> Node {
        if w == u64::MAX {
            Node::Control
        } else {
            Node::Dev(w as u32)
        }
    }
}

/// The group `disk`, which owns block devices on Debian.
const DISK_GID: u32 = 6;

/// A bound device for one call: this supervisor's number for the backing
/// file, the device's offset in it, its size and flags.
struct Attached {
    file: u32,
    offset: u64,
    size: u64,
    flags: u32,
}

impl Sup {
    fn loop_op(&self, op: u64, args: &[u64]) -> Vec<u64> {
        let mut m = alloc::vec![ctl::LOOP, op];
        m.extend_from_slice(args);
        self.ctl(&m)
    }

    fn loop_op1(&self, op: u64, args: &[u64]) -> Result<u64, i64> {
        let v = crate::proto::word(&self.loop_op(op, args), 0);
        match errno::of(v) {
            Some(e) => Err(e),
            None => Ok(v),
        }
    }

    /// `/dev`'s loop entries: (name, type, inode).
    pub(super) fn loop_entries(&self) -> Vec<(String, u8, u64)> {
        const DT_CHR: u8 = 2;
        const DT_BLK: u8 = 6;
        let mut list = alloc::vec![(String::from("loop-control"), DT_CHR, 0x2_0000_0000 | 237)];
        for n in self.loop_op(op::LIST, &[]) {
            list.push((format!("loop{n}"), DT_BLK, 0x2_0000_0000 | 1 << 20 | n));
        }
        list
    }

    /// The loop node `/dev/<name>` and its device number, if there is one.
    pub(super) fn loop_dev(&self, name: &str) -> Option<(Kind, u64)> {
        if name == "loop-control" {
            return Some((Kind::Loop(Node::Control), makedev(lo::MISC_MAJOR, lo::LOOP_CTRL_MINOR)));
        }
        let n: u32 = name.strip_prefix("loop")?.parse().ok()?;
        // "loop01" is no device name.
        if format!("loop{n}") != name || !self.loop_op(op::LIST, &[]).contains(&(n as u64)) {
            return None;
        }
        Some((Kind::Loop(Node::Dev(n)), makedev(lo::LOOP_MAJOR, n)))
    }

    /// `/sys`, as far as it is the loop driver's: `block/loopN/` with
    /// `size` (in sectors), `ro`, `dev`, and while bound `loop/` with
    /// `backing_file`, `offset`, `sizelimit`, `autoclear`, `partscan`,
    /// `dio`.
    pub(super) fn sysfs_node(&self, rest: &str) -> Result<VNode, i64> {
        const DT_DIR: u8 = 4;
        const DT_REG: u8 = 8;
        let dir = |names: &[&str], t: u8| VNode::Dir(names.iter().map(|n| (String::from(*n), t, 0)).collect());
        let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
        let Some(&"block") = parts.first() else {
            return if parts.is_empty() {
                Ok(dir(&["block"], DT_DIR))
            } else {
                Err(errno::ENOENT)
            };
        };
        let Some(name) = parts.get(1) else {
            let names: Vec<String> = self.loop_op(op::LIST, &[]).iter().map(|n| format!("loop{n}")).collect();
            return Ok(VNode::Dir(names.into_iter().map(|n| (n, DT_DIR, 0)).collect()));
        };
        let Some((Kind::Loop(Node::Dev(n)), _)) = self.loop_dev(name) else {
            return Err(errno::ENOENT);
        };
        let r = self.loop_op(op::STATUS, &[n as u64]);
        let bound = (r.len() > 1).then(|| (r[1], op::status_from(&r[2..])));
        let flag = |b: bool| VNode::Mem(if b { b"1\n".to_vec() } else { b"0\n".to_vec() });
        let num = |v: u64| VNode::Mem(format!("{v}\n").into_bytes());
        match (parts.get(2).copied(), parts.get(3).copied(), &bound) {
            (None, _, b) => {
                let mut l = alloc::vec![("size", DT_REG), ("ro", DT_REG), ("dev", DT_REG)];
                if b.is_some() {
                    l.push(("loop", DT_DIR));
                }
                Ok(VNode::Dir(
                    l.into_iter().map(|(n, t)| (String::from(n), t, 0)).collect(),
                ))
            }
            (Some("size"), None, b) => Ok(num(b.as_ref().map_or(0, |(z, _)| z >> 9))),
            (Some("ro"), None, b) => Ok(flag(
                b.as_ref().is_some_and(|(_, s)| s.flags & lo::LO_FLAGS_READ_ONLY != 0),
            )),
            (Some("dev"), None, _) => Ok(VNode::Mem(format!("{}:{n}\n", lo::LOOP_MAJOR).into_bytes())),
            (Some("loop"), None, Some(_)) => Ok(dir(
                &["backing_file", "offset", "sizelimit", "autoclear", "partscan", "dio"],
                DT_REG,
            )),
            (Some("loop"), Some(f), Some((_, s))) => match f {
                "backing_file" => {
                    let mut p = s.backing_path.clone();
                    p.push(b'\n');
                    Ok(VNode::Mem(p))
                }
                "offset" => Ok(num(s.offset)),
                "sizelimit" => Ok(num(s.sizelimit)),
                "autoclear" => Ok(flag(s.flags & lo::LO_FLAGS_AUTOCLEAR != 0)),
                "partscan" => Ok(flag(s.flags & lo::LO_FLAGS_PARTSCAN != 0)),
                "dio" => Ok(flag(s.flags & lo::LO_FLAGS_DIRECT_IO != 0)),
                _ => Err(errno::ENOENT),
            },
            _ => Err(errno::ENOENT),
        }
    }

    /// stat of a loop node: Debian's owner, group and modes.
    pub(super) fn loop_stat(&self, node: Node, mut s: StatView) -> StatView {
        let (mode, rdev) = match node {
            Node::Control => (S_IFCHR | 0o660, makedev(lo::MISC_MAJOR, lo::LOOP_CTRL_MINOR)),
            Node::Dev(n) => (S_IFBLK | 0o660, makedev(lo::LOOP_MAJOR, n)),
        };
        s.mode = mode;
        s.rdev = rdev;
        s.gid = DISK_GID;
        s.size = 0;
        s
    }

    /// An open of a loop node: root or the group `disk` only; a device
    /// counts its open descriptions.
    pub(super) fn loop_open(&mut self, node: Node) -> Result<(), i64> {
        if self.cred.euid != 0 && !self.in_group(DISK_GID) {
            return Err(errno::EACCES);
        }
        match node {
            Node::Control => Ok(()),
            Node::Dev(n) => self.loop_op1(op::OPEN, &[n as u64]).map(|_| ()),
        }
    }

    /// A forked child holds the description too.
    pub(super) fn loop_reopen(&mut self, node: Node) {
        if let Node::Dev(n) = node {
            let _ = self.loop_op1(op::OPEN, &[n as u64]);
        }
    }

    pub(super) fn loop_release(&mut self, node: Node) {
        if let Node::Dev(n) = node {
            let _ = self.loop_op1(op::CLOSE, &[n as u64]);
        }
    }

    fn attach(&self, n: u32) -> Result<Attached, i64> {
        let r = self.loop_op(op::ATTACH, &[n as u64]);
        if r.len() < 4 {
            return Err(errno::of(crate::proto::word(&r, 0)).unwrap_or(errno::EIO));
        }
        Ok(Attached {
            file: r[0] as u32,
            offset: r[1],
            size: r[2],
            flags: r[3] as u32,
        })
    }

    /// The device's size in bytes (0 while unbound).
    pub(super) fn loop_size(&self, node: Node) -> u64 {
        match node {
            Node::Control => 0,
            Node::Dev(n) => {
                let r = self.loop_op(op::STATUS, &[n as u64]);
                if r.len() > 1 { r[1] } else { 0 }
            }
        }
    }

    /// read / pread (`write` false) or write / pwrite of a loop node, `io`
    /// (the buffer and its length) at the description's position or `at`.
    /// A device reads as empty past its end and where none is bound; a
    /// write there is ENOSPC, and EPERM when the device is read-only.
    pub(super) fn loop_io(
        &mut self,
        rid: u64,
        node: Node,
        d: &mut Ofd,
        (buf, len): (u64, u64),
        at: Option<u64>,
        write: bool,
    ) -> Result<u64, i64> {
        let Node::Dev(n) = node else {
            return Err(errno::EINVAL);
        };
        let a = match self.attach(n) {
            Ok(a) => a,
            Err(errno::ENXIO) if !write || len == 0 => return Ok(0),
            Err(errno::ENXIO) => return Err(errno::ENOSPC),
            Err(e) => return Err(e),
        };
        let pos = self.pos_take(d, at);
        let r = if write && a.flags & lo::LO_FLAGS_READ_ONLY != 0 {
            Err(errno::EPERM)
        } else if len == 0 {
            Ok(0)
        } else if pos >= a.size {
            if write { Err(errno::ENOSPC) } else { Ok(0) }
        } else {
            let (want, to) = (len.min(a.size - pos), a.offset + pos);
            if write {
                self.fs
                    .write_from_caller(rid, a.file, to, false, buf, want)
                    .map(|(k, _)| k)
            } else {
                self.fs.read_to_caller(rid, a.file, to, buf, want, 0)
            }
        };
        self.fs.close(a.file);
        self.pos_put(d, at, r.ok().map(|k| pos + k));
        r
    }

    /// fsync of a loop node: the backing file's.
    pub(super) fn loop_fsync(&mut self, node: Node) -> Result<u64, i64> {
        let Node::Dev(n) = node else {
            return Err(errno::EINVAL);
        };
        match self.attach(n) {
            Ok(a) => {
                let r = self.fs.fsync(a.file);
                self.fs.close(a.file);
                r.map(|_| 0)
            }
            Err(errno::ENXIO) => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// The backing file's size now (for a new size limit or capacity).
    fn backing_size(&mut self, n: u32) -> Result<u64, i64> {
        let a = self.attach(n)?;
        let st = self.fs.fstat(a.file).map(|b| StatView::parse(&b));
        self.fs.close(a.file);
        Ok(st?.size as u64)
    }

    /// A descriptor to bind: a regular file of the file server, its
    /// stat, and whether it is open for writing.
    fn backing_of(&self, fd: u64) -> Result<(u32, StatView, bool, String), i64> {
        let o = self.fds.ofd(fd)?;
        let d = o.borrow();
        match d.kind {
            Kind::File { fd: f, .. } => {
                let st = StatView::parse(&self.fs.fstat(f)?);
                if st.mode & 0o170000 != S_IFREG {
                    return Err(errno::EINVAL);
                }
                Ok((f, st, d.writable(), d.path.clone()))
            }
            _ => Err(errno::EINVAL),
        }
    }

    /// LOOP_SET_FD, LOOP_CONFIGURE, LOOP_CHANGE_FD: device `n` on the file
    /// of descriptor `fd`.
    fn loop_bind(
        &mut self,
        n: u32,
        dev_writable: bool,
        fd: u64,
        req: Option<&StatusRequest>,
        block: u32,
        change: bool,
    ) -> Result<u64, i64> {
        // Linux's order: a bad descriptor, then the device's state, then
        // what the file is.
        self.fds.ofd(fd)?;
        let r = self.loop_op(op::STATUS, &[n as u64]);
        let bound = r.len() > 1;
        if bound && !change {
            return Err(errno::EBUSY);
        }
        if change {
            if !bound {
                return Err(errno::ENXIO);
            }
            if op::status_from(&r[2..]).flags & lo::LO_FLAGS_READ_ONLY == 0 {
                return Err(errno::EINVAL);
            }
        }
        let (f, st, writable, path) = self.backing_of(fd)?;
        let mut status = Status {
            device: st.dev,
            inode: st.ino,
            block_size: block,
            backing_path: path.into_bytes(),
            ..Status::default()
        };
        if let Some(r) = req {
            if r.encrypt_type != 0 || r.encrypt_key_size != 0 {
                return Err(errno::EINVAL);
            }
            status.offset = r.offset;
            status.sizelimit = r.sizelimit;
            status.flags = r.flags & lo::CONFIGURE_SETTABLE;
            status.file_name = r.file_name;
            status.crypt_name = r.crypt_name;
        }
        if !dev_writable || !writable {
            status.flags |= lo::LO_FLAGS_READ_ONLY;
        }
        let mine = self.fs.share(f, self.shared)?;
        let mut m = alloc::vec![n as u64, mine as u64, st.size as u64];
        m.extend(op::status_words(&status));
        let which = if change { op::CHANGE_FD } else { op::BIND };
        self.loop_op1(which, &m).map(|_| 0)
    }

    /// ioctl on a loop node.
    pub(super) fn loop_ioctl(&mut self, rid: u64, node: Node, flags: u32, req: u64, arg: u64) -> Result<u64, i64> {
        // The request is an unsigned int: musl's ioctl sign-extends it.
        let req = req & 0xffff_ffff;
        let n = match node {
            Node::Control => return self.loop_control(req, arg),
            Node::Dev(n) => n,
        };
        let nw = n as u64;
        let writable = flags & fdt::O_ACCMODE != 0;
        let status = |s: &Sup| -> Result<(u64, Status), i64> {
            let r = s.loop_op(op::STATUS, &[nw]);
            if r.len() < 2 {
                return Err(errno::of(crate::proto::word(&r, 0)).unwrap_or(errno::EIO));
            }
            Ok((r[1], op::status_from(&r[2..])))
        };
        match req {
            lo::LOOP_SET_FD => self.loop_bind(n, writable, arg, None, 512, false),
            lo::LOOP_CHANGE_FD => self.loop_bind(n, writable, arg, None, 512, true),
            lo::LOOP_CONFIGURE => {
                let b = self.read_mem(rid, arg, lo::CONFIG_LEN)?;
                let mut raw = [0u8; lo::CONFIG_LEN];
                raw.copy_from_slice(&b);
                let c = Config::parse(&raw)?;
                let block = match c.block_size {
                    0 => 512,
                    s if lo::valid_block_size(s as u64) => s,
                    _ => return Err(errno::EINVAL),
                };
                if c.status.flags & !lo::CONFIGURE_SETTABLE != 0 {
                    return Err(errno::EINVAL);
                }
                self.loop_bind(n, writable, c.fd as u64, Some(&c.status), block, false)
            }
            lo::LOOP_CLR_FD => self.loop_op1(op::CLEAR, &[nw]),
            lo::LOOP_GET_STATUS64 | lo::LOOP_GET_STATUS => {
                if arg == 0 {
                    return Err(errno::EINVAL);
                }
                let (_, s) = status(self)?;
                if req == lo::LOOP_GET_STATUS64 {
                    self.write_mem(rid, arg, &s.to_info64(n))?;
                } else {
                    self.write_mem(rid, arg, &s.to_info(n)?)?;
                }
                Ok(0)
            }
            lo::LOOP_SET_STATUS64 | lo::LOOP_SET_STATUS => {
                if arg == 0 {
                    return Err(errno::EINVAL);
                }
                let r = if req == lo::LOOP_SET_STATUS64 {
                    let b = self.read_mem(rid, arg, lo::INFO64_LEN)?;
                    let mut raw = [0u8; lo::INFO64_LEN];
                    raw.copy_from_slice(&b);
                    StatusRequest::from_info64(&raw)
                } else {
                    let b = self.read_mem(rid, arg, lo::INFO_LEN)?;
                    let mut raw = [0u8; lo::INFO_LEN];
                    raw.copy_from_slice(&b);
                    StatusRequest::from_info(&raw)
                };
                let size = self.backing_size(n)?;
                let mut m = alloc::vec![nw, size];
                m.extend(op::request_words(&r));
                self.loop_op1(op::SET_STATUS, &m).map(|_| 0)
            }
            lo::LOOP_SET_CAPACITY => {
                let size = self.backing_size(n)?;
                self.loop_op1(op::CAPACITY, &[nw, size]).map(|_| 0)
            }
            lo::LOOP_SET_BLOCK_SIZE => self.loop_op1(op::BLOCK_SIZE, &[nw, arg]).map(|_| 0),
            lo::LOOP_SET_DIRECT_IO => self.loop_op1(op::DIRECT_IO, &[nw, arg]).map(|_| 0),
            lo::BLKGETSIZE64 => {
                self.write_mem(rid, arg, &self.loop_size(node).to_le_bytes())?;
                Ok(0)
            }
            lo::BLKGETSIZE => {
                self.write_mem(rid, arg, &(self.loop_size(node) >> 9).to_le_bytes())?;
                Ok(0)
            }
            lo::BLKSSZGET | lo::BLKPBSZGET | lo::BLKIOMIN => {
                let b = status(self).map_or(512, |(_, s)| s.block_size);
                self.write_u32(rid, arg, b)?;
                Ok(0)
            }
            lo::BLKBSZGET => {
                // The largest block up to a page that divides the size (the
                // block layer's start), at least a sector.
                let (size, logical) = status(self).map_or((0, 512), |(z, s)| (z, s.block_size));
                let mut b = 4096u32;
                while b > logical && size % b as u64 != 0 {
                    b /= 2;
                }
                self.write_u32(rid, arg, b)?;
                Ok(0)
            }
            lo::BLKIOOPT | lo::BLKALIGNOFF => {
                self.write_u32(rid, arg, 0)?;
                Ok(0)
            }
            lo::BLKROGET => {
                let own = crate::proto::word(&self.loop_op(op::SETTINGS, &[nw]), 1) != 0;
                let ro = own || status(self).is_ok_and(|(_, s)| s.flags & lo::LO_FLAGS_READ_ONLY != 0);
                self.write_u32(rid, arg, ro as u32)?;
                Ok(0)
            }
            lo::BLKROSET => {
                if self.cred.euid != 0 {
                    return Err(errno::EACCES);
                }
                let b = self.read_mem(rid, arg, 4)?;
                let on = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) != 0;
                self.loop_op1(op::READ_ONLY, &[nw, on as u64]).map(|_| 0)
            }
            lo::BLKRAGET => {
                let ra = crate::proto::word(&self.loop_op(op::SETTINGS, &[nw]), 0);
                self.write_mem(rid, arg, &ra.to_le_bytes())?;
                Ok(0)
            }
            lo::BLKRASET => {
                if self.cred.euid != 0 {
                    return Err(errno::EACCES);
                }
                self.loop_op1(op::READ_AHEAD, &[nw, arg]).map(|_| 0)
            }
            lo::BLKFLSBUF => {
                if self.cred.euid != 0 {
                    return Err(errno::EACCES);
                }
                self.loop_fsync(node)
            }
            // No partition table is read (no LO_FLAGS_PARTSCAN scan).
            lo::BLKRRPART => Err(errno::EINVAL),
            _ => Err(errno::EINVAL),
        }
    }

    /// ioctl on `/dev/loop-control`.
    fn loop_control(&mut self, req: u64, arg: u64) -> Result<u64, i64> {
        match req {
            lo::LOOP_CTL_GET_FREE => self.loop_op1(op::GET_FREE, &[]),
            // Linux takes the number as an int.
            lo::LOOP_CTL_ADD => self.loop_op1(op::ADD, &[arg as i32 as i64 as u64]),
            lo::LOOP_CTL_REMOVE => self.loop_op1(op::REMOVE, &[arg as i32 as i64 as u64]),
            _ => Err(errno::ENOSYS),
        }
    }
}
