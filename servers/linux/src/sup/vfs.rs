//! The files the supervisor serves itself, without the file server: the
//! devices of `/dev` (null, zero, full, random, urandom, tty, console) and
//! a small `/proc` (the process's own `exe`, `fd`, `cwd`; every process's
//! `stat`, `status`, `cmdline` for `ps`; `meminfo`, `cpuinfo`, `uptime`,
//! `mounts`, `version`, a few read-only settings of `sys`), and `/proc/tessera/`, the kernel's inspector
//! reports (resources, pool, trace, counters, servers, cpus, faults) as
//! text, so that busybox's shell can show them.

use super::Sup;
use super::fdtable::Kind;
use crate::proto::{ctl, obj, sysctl, word};
use alloc::format;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::structs::{S_IFCHR, S_IFDIR, S_IFLNK, S_IFREG, StatView, makedev};
use tessera_rt::sys;
use user_programs::inspect;

/// What a path of `/dev` or `/proc` is.
pub enum VNode {
    Dir(Vec<(String, u8, u64)>),
    Dev(Kind, u64),
    Mem(Vec<u8>),
    Link(String),
    /// A namespace's file of `/proc/<pid>/ns` (its index in `NAMESPACES`).
    Ns(usize),
}

/// The files of `/proc/<pid>/ns`: (name, namespace kind, inode number,
/// CLONE_NEW* flag). Tessera has one namespace of each kind, every
/// process's: one pid numbering, one mount table, one set of names, one
/// SysV IPC, one network stack, one user ids' space, one clock; the inode
/// numbers are those Linux gives its initial ones.
pub const NAMESPACES: [(&str, &str, u64, u64); 10] = [
    ("cgroup", "cgroup", 0xefff_fffb, 0x0200_0000),
    ("ipc", "ipc", 0xefff_ffff, 0x0800_0000),
    ("mnt", "mnt", 0xf000_0001, 0x0002_0000),
    ("net", "net", 0xf000_0000, 0x4000_0000),
    ("pid", "pid", 0xefff_fffc, 0x2000_0000),
    ("pid_for_children", "pid", 0xefff_fffc, 0x2000_0000),
    ("time", "time", 0xefff_fffa, 0x80),
    ("time_for_children", "time", 0xefff_fffa, 0x80),
    ("user", "user", 0xefff_fffd, 0x1000_0000),
    ("uts", "uts", 0xefff_fffe, 0x0400_0000),
];

/// The namespace a path names (`/proc/<pid>/ns/<name>`).
pub fn ns_of(abs: &str) -> Option<usize> {
    let (dir, name) = abs.rsplit_once('/')?;
    if !dir.starts_with("/proc/") || !dir.ends_with("/ns") {
        return None;
    }
    NAMESPACES.iter().position(|n| n.0 == name)
}

/// What readlink shows for namespace `i` ("uts:[4026531838]").
pub fn ns_link(i: usize) -> String {
    let (_, kind, ino, _) = NAMESPACES[i];
    format!("{kind}:[{ino}]")
}

const DT_DIR: u8 = 4;
const DT_REG: u8 = 8;
const DT_LNK: u8 = 10;
const DT_CHR: u8 = 2;

/// Device numbers, as Linux's.
fn dev_of(name: &str) -> Option<(Kind, u64)> {
    Some(match name {
        "null" => (Kind::Null, makedev(1, 3)),
        "zero" => (Kind::Zero, makedev(1, 5)),
        "full" => (Kind::Full, makedev(1, 7)),
        "random" => (Kind::Random, makedev(1, 8)),
        "urandom" => (Kind::Random, makedev(1, 9)),
        "tty" => (
            Kind::Obj {
                id: obj::TTY_ID,
                kind: obj::TTY,
            },
            makedev(5, 0),
        ),
        "console" => (
            Kind::Obj {
                id: obj::TTY_ID,
                kind: obj::TTY,
            },
            makedev(5, 1),
        ),
        _ => return None,
    })
}

/// A stable inode number for a virtual path.
fn ino_of(path: &str) -> u64 {
    let mut h: u64 = 0x811c_9dc5;
    for b in path.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    (h & 0xffff_ffff) | 0x1_0000_0000
}

/// Whether a clean absolute path is one the supervisor serves.
pub fn is_virtual(abs: &str) -> bool {
    linuxabi::path::below(abs, "/dev").is_some()
        || linuxabi::path::below(abs, "/proc").is_some()
        || linuxabi::path::below(abs, "/sys").is_some()
}

/// A report of the inspector's, printed by the native library's formatter.
fn report(f: impl FnOnce() -> Result<(), tessera_rt::abi::Error>) -> Vec<u8> {
    tessera_rt::io::capture(|| {
        if let Err(e) = f() {
            tessera_rt::println!("not available: {e:?}");
        }
    })
    .into_bytes()
}

impl Sup {
    /// The node at `abs` (clean, absolute, under /dev or /proc).
    pub(super) fn vnode(&self, abs: &str) -> Result<VNode, i64> {
        if let Some(rest) = linuxabi::path::below(abs, "/dev") {
            return self.dev_node(rest);
        }
        if let Some(rest) = linuxabi::path::below(abs, "/sys") {
            return self.sysfs_node(rest);
        }
        let rest = linuxabi::path::below(abs, "/proc").ok_or(errno::ENOENT)?;
        self.proc_node(rest)
    }

    fn dev_node(&self, rest: &str) -> Result<VNode, i64> {
        match rest {
            "" => {
                let mut list: Vec<(String, u8, u64)> = ["null", "zero", "full", "random", "urandom", "tty", "console"]
                    .iter()
                    .map(|n| (n.to_string(), DT_CHR, ino_of(n)))
                    .collect();
                for n in ["stdin", "stdout", "stderr", "fd"] {
                    list.push((n.to_string(), DT_LNK, ino_of(n)));
                }
                list.extend(self.loop_entries());
                Ok(VNode::Dir(list))
            }
            "stdin" => Ok(VNode::Link("/proc/self/fd/0".into())),
            "stdout" => Ok(VNode::Link("/proc/self/fd/1".into())),
            "stderr" => Ok(VNode::Link("/proc/self/fd/2".into())),
            "fd" => Ok(VNode::Link("/proc/self/fd".into())),
            n => dev_of(n)
                .or_else(|| self.loop_dev(n))
                .map(|(k, d)| VNode::Dev(k, d))
                .ok_or(errno::ENOENT),
        }
    }

    fn proc_node(&self, rest: &str) -> Result<VNode, i64> {
        let (first, more) = match rest.split_once('/') {
            Some((a, b)) => (a, b),
            None => (rest, ""),
        };
        match first {
            "" => {
                let mut list: Vec<(String, u8, u64)> = [
                    "meminfo",
                    "cpuinfo",
                    "uptime",
                    "loadavg",
                    "version",
                    "mounts",
                    "filesystems",
                    "stat",
                ]
                .iter()
                .map(|n| (n.to_string(), DT_REG, ino_of(n)))
                .collect();
                list.push(("self".into(), DT_LNK, ino_of("self")));
                list.push(("sys".into(), DT_DIR, ino_of("sys")));
                list.push(("sysvipc".into(), DT_DIR, ino_of("sysvipc")));
                list.push(("tessera".into(), DT_DIR, ino_of("tessera")));
                for w in self.ctl(&[ctl::PIDS]) {
                    list.push((w.to_string(), DT_DIR, w + 2));
                }
                Ok(VNode::Dir(list))
            }
            "self" if more.is_empty() => Ok(VNode::Link(self.pid.to_string())),
            "keys" if more.is_empty() => Ok(VNode::Mem(self.keys_list())),
            "sys" => self.sys_node(more),
            "sysvipc" => match ["shm", "sem", "msg"].iter().position(|n| *n == more) {
                Some(i) => Ok(VNode::Mem(self.sysv_list(i as u64))),
                None if more.is_empty() => Ok(VNode::Dir(
                    ["shm", "sem", "msg"]
                        .iter()
                        .map(|n| (n.to_string(), DT_REG, ino_of(&format!("sysvipc/{n}"))))
                        .collect(),
                )),
                None => Err(errno::ENOENT),
            },
            "self" => self.pid_node(self.pid, more),
            "tessera" => self.tessera_node(more),
            "meminfo" => Ok(VNode::Mem(self.meminfo().into_bytes())),
            "cpuinfo" => Ok(VNode::Mem(cpuinfo().into_bytes())),
            "uptime" => {
                let ns = sys::now_ns();
                Ok(VNode::Mem(
                    format!("{}.{:02} {}.{:02}\n", ns / 1_000_000_000, ns / 10_000_000 % 100, 0, 0).into_bytes(),
                ))
            }
            "loadavg" => Ok(VNode::Mem(b"0.00 0.00 0.00 1/1 1\n".to_vec())),
            "version" => Ok(VNode::Mem(
                format!(
                    "Linux version {} (tessera) {}\n",
                    super::syscalls::RELEASE,
                    super::syscalls::VERSION
                )
                .into_bytes(),
            )),
            "mounts" => Ok(VNode::Mem(self.mounts_text(MOUNTS))),
            "filesystems" => Ok(VNode::Mem(super::fsinfo::filesystems_text())),
            "stat" => {
                let ticks = sys::now_ns() / 10_000_000;
                Ok(VNode::Mem(
                    format!("cpu  {ticks} 0 0 0 0 0 0 0 0 0\nbtime 1704067200\nprocesses 1\n").into_bytes(),
                ))
            }
            n => match n.parse::<u32>() {
                Ok(pid) => self.pid_node(pid, more),
                Err(_) => Err(errno::ENOENT),
            },
        }
    }

    fn tessera_node(&self, rest: &str) -> Result<VNode, i64> {
        let names = [
            "res", "pool", "trace", "counters", "servers", "cpus", "cpu", "faults", "mem", "net", "calls",
        ];
        Ok(match rest {
            "" => VNode::Dir(names.iter().map(|n| (n.to_string(), DT_REG, ino_of(n))).collect()),
            "res" => VNode::Mem(report(inspect::resources)),
            "pool" => VNode::Mem(report(inspect::pool)),
            "trace" => VNode::Mem(report(|| inspect::trace(30))),
            "counters" => VNode::Mem(report(inspect::counters)),
            "servers" => VNode::Mem(report(inspect::servers)),
            "cpus" => VNode::Mem(report(inspect::cpus)),
            "cpu" => VNode::Mem(report(inspect::cpu_times)),
            "faults" => VNode::Mem(faults_report().into_bytes()),
            // The kernel's running counts of calls (seed 003's), one
            // `name value` a line.
            "calls" => VNode::Mem({
                let i = sys::sys_info().unwrap_or_default();
                format!(
                    "syscalls {}\nlinux_calls {}\ncommunications {}\ncontext_switches {}\nresource_ops {}\n\
                     bytes_copied {}\nheap_allocations {}\nipis {}\n",
                    i.syscalls,
                    i.linux_calls,
                    i.communications,
                    i.context_switches,
                    i.resource_ops,
                    i.bytes_copied,
                    i.heap_allocations,
                    i.ipis
                )
                .into_bytes()
            }),
            "mem" => VNode::Mem(self.meminfo().into_bytes()),
            // The TCP/IP server's counters (its STATS).
            "net" => VNode::Mem(match tessera_api::net::client::stats() {
                Ok(text) => text.into_bytes(),
                Err(e) => alloc::format!("not available: {e:?}\n").into_bytes(),
            }),
            r => match r.strip_prefix("res/").and_then(inspect::kind_named) {
                Some(kind) => VNode::Mem(report(|| inspect::resources_of(kind))),
                None => return Err(errno::ENOENT),
            },
        })
    }

    /// [parent, pgid, sid, state, tessera pid, uid, fg, start, comm0, comm1,
    /// child faults, tty session] of `pid`.
    pub(super) fn proc_record(&self, pid: u32) -> Result<Vec<u64>, i64> {
        let r = self.ctl(&[ctl::PROC, pid as u64]);
        if let Some(e) = errno::of(word(&r, 0)) {
            return Err(e);
        }
        Ok(r)
    }

    /// The name /proc shows for this process (`prctl(PR_GET_NAME)`): the
    /// shared server's, which `PR_SET_NAME` and exec change.
    pub(super) fn comm_now(&self) -> Result<[u64; 2], i64> {
        let r = self.proc_record(self.pid)?;
        Ok([word(&r, 9), word(&r, 10)])
    }

    fn pid_node(&self, pid: u32, rest: &str) -> Result<VNode, i64> {
        // A pid with no process is a name not in /proc.
        let r = self
            .proc_record(pid)
            .map_err(|e| if e == errno::ESRCH { errno::ENOENT } else { e })?;
        let mine = pid == self.pid;
        // The virtual init runs no Tessera process (0).
        let info = || match word(&r, 5) {
            0 => Err(errno::ESRCH),
            t => sys::proc_info(t).map_err(|_| errno::ESRCH),
        };
        let comm = {
            let mut b = Vec::new();
            b.extend_from_slice(&word(&r, 9).to_le_bytes());
            b.extend_from_slice(&word(&r, 10).to_le_bytes());
            let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            String::from_utf8_lossy(&b[..n]).into_owned()
        };
        let cmdline = if mine {
            let mut c = Vec::new();
            for a in &self.argv {
                c.extend_from_slice(a);
                c.push(0);
            }
            c
        } else {
            let mut c = self.ctl_cmdline(pid);
            if c.is_empty() {
                c = comm.clone().into_bytes();
                c.push(0);
            }
            c
        };
        match rest {
            "" => {
                let mut list: Vec<(String, u8, u64)> = ["stat", "status", "cmdline", "comm", "statm", "mounts"]
                    .iter()
                    .map(|n| (n.to_string(), DT_REG, ino_of(n) + pid as u64))
                    .collect();
                list.push(("exe".into(), DT_LNK, ino_of("exe") + pid as u64));
                list.push(("ns".into(), DT_DIR, ino_of("ns") + pid as u64));
                if mine {
                    list.push(("maps".into(), DT_REG, ino_of("maps")));
                    list.push(("smaps".into(), DT_REG, ino_of("smaps")));
                    list.push(("timerslack_ns".into(), DT_REG, ino_of("timerslack_ns")));
                    list.push(("cwd".into(), DT_LNK, ino_of("cwd")));
                    list.push(("fd".into(), DT_DIR, ino_of("fd")));
                    list.push(("fdinfo".into(), DT_DIR, ino_of("fdinfo")));
                }
                Ok(VNode::Dir(list))
            }
            "exe" if mine => Ok(VNode::Link(self.exe.clone())),
            "exe" => Err(errno::EACCES),
            "cwd" if mine => Ok(VNode::Link(self.cwd.clone())),
            "fd" if mine => Ok(VNode::Dir(
                self.fds
                    .slots
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.is_some())
                    .map(|(i, _)| (i.to_string(), DT_LNK, 1000 + i as u64))
                    .collect(),
            )),
            "fdinfo" if mine => Ok(VNode::Dir(
                self.fds
                    .slots
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.is_some())
                    .map(|(i, _)| (i.to_string(), DT_REG, 2000 + i as u64))
                    .collect(),
            )),
            f if mine && f.starts_with("fdinfo/") => {
                let n: u64 = f[7..].parse().map_err(|_| errno::ENOENT)?;
                Ok(VNode::Mem(self.fdinfo(n)?.into_bytes()))
            }
            f if mine && f.starts_with("fd/") => {
                let n: u64 = f[3..].parse().map_err(|_| errno::ENOENT)?;
                let o = self.fds.ofd(n).map_err(|_| errno::ENOENT)?;
                let d = o.borrow();
                Ok(VNode::Link(match &d.kind {
                    Kind::Obj { kind, .. } if *kind == obj::INOTIFY || *kind == obj::FANOTIFY => d.path.clone(),
                    Kind::Obj { id, kind } if *kind != obj::TTY => format!("pipe:[{id}]"),
                    Kind::KPipe { id, .. } => format!("pipe:[{}]", id & 0xffff_ffff),
                    _ => d.path.clone(),
                }))
            }
            "ns" => Ok(VNode::Dir(
                NAMESPACES
                    .iter()
                    .map(|n| (n.0.to_string(), DT_LNK, ino_of(n.0) + pid as u64))
                    .collect(),
            )),
            f if f.starts_with("ns/") => NAMESPACES
                .iter()
                .position(|n| n.0 == &f[3..])
                .map(VNode::Ns)
                .ok_or(errno::ENOENT),
            "cmdline" => Ok(VNode::Mem(cmdline)),
            // Another process's mappings are its supervisor's to tell.
            "maps" if mine => self.maps_text().map(VNode::Mem),
            "smaps" if mine => self.smaps_text().map(VNode::Mem),
            "timerslack_ns" if mine => Ok(VNode::Mem(format!("{}\n", self.timerslack).into_bytes())),
            // One name space of mounts for every process.
            "mounts" => Ok(VNode::Mem(self.mounts_text(MOUNTS))),
            "comm" => Ok(VNode::Mem(format!("{comm}\n").into_bytes())),
            // Its threads (one name for all: the process's).
            "task" if mine => Ok(VNode::Dir(
                self.tids()
                    .into_iter()
                    .map(|t| (format!("{t}"), DT_DIR, ino_of("task") + t as u64))
                    .collect(),
            )),
            t if mine && t.starts_with("task/") => {
                let mut parts = t["task/".len()..].splitn(2, '/');
                let tid = parts.next().and_then(|n| n.parse::<u32>().ok());
                match (tid.filter(|t| self.tids().contains(t)), parts.next()) {
                    (Some(t), None | Some("")) => Ok(VNode::Dir(alloc::vec![(
                        "comm".into(),
                        DT_REG,
                        ino_of("comm") + t as u64
                    )])),
                    (Some(_), Some("comm")) => Ok(VNode::Mem(format!("{comm}\n").into_bytes())),
                    _ => Err(errno::ENOENT),
                }
            }
            "stat" => {
                // A process reading its own is running (its call waits
                // for the answer, blocked).
                let state = if mine { 'R' } else { word(&r, 4) as u8 as char };
                let (utime, rss, vsz) = match info() {
                    Ok(p) => (p.cpu_ns / 10_000_000, p.resident_pages, p.resident_pages * 4096),
                    Err(_) => (0, 0, 0),
                };
                let tty = if word(&r, 12) == word(&r, 3) && word(&r, 12) != 0 {
                    makedev(4, 64)
                } else {
                    0
                };
                let start = word(&r, 8) / 10_000_000;
                Ok(VNode::Mem(
                    format!(
                        "{pid} ({comm}) {state} {} {} {} {tty} {} 4194304 0 {} 0 0 {utime} 0 0 0 20 0 1 0 {start} {vsz} {rss} 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
                        word(&r, 1),
                        word(&r, 2),
                        word(&r, 3),
                        word(&r, 7) as u32 as i32,
                        word(&r, 11),
                    )
                    .into_bytes(),
                ))
            }
            "statm" => {
                let rss = info().map_or(0, |p| p.resident_pages);
                Ok(VNode::Mem(format!("{rss} {rss} 0 0 0 0 0\n").into_bytes()))
            }
            "status" => {
                let state = match if mine { b'R' } else { word(&r, 4) as u8 } {
                    b'R' => "R (running)",
                    b'S' => "S (sleeping)",
                    b'T' => "T (stopped)",
                    _ => "Z (zombie)",
                };
                let rss = info().map_or(0, |p| p.resident_pages * 4);
                let uid = word(&r, 6);
                // Another process's locks are its supervisor's.
                let lck = if mine { self.locked_bytes() / 1024 } else { 0 };
                // Another process's prctl flags are its supervisor's too.
                let nnp = mine && self.prctl_flags & super::PRCTL_NO_NEW_PRIVS != 0;
                Ok(VNode::Mem(
                    format!(
                        "Name:\t{comm}\nState:\t{state}\nTgid:\t{pid}\nPid:\t{pid}\nPPid:\t{}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t0\t0\t0\t0\nVmLck:\t{lck:8} kB\nVmRSS:\t{rss:8} kB\nThreads:\t1\nNoNewPrivs:\t{}\n",
                        word(&r, 1),
                        nnp as u8
                    )
                    .into_bytes(),
                ))
            }
            _ => Err(errno::ENOENT),
        }
    }

    fn ctl_cmdline(&self, pid: u32) -> Vec<u8> {
        let r = self.ctl(&[ctl::PROC, pid as u64]);
        let mut b = Vec::new();
        for &w in r.get(13..).unwrap_or(&[]) {
            b.extend_from_slice(&w.to_le_bytes());
        }
        while b.last() == Some(&0) && b.len() > 1 && b[b.len() - 2] == 0 {
            b.pop();
        }
        b
    }

    fn meminfo(&self) -> String {
        let i = sys::sys_info().unwrap_or_default();
        let total = i.frames_total * 4;
        let free = i.frames_free * 4;
        format!(
            "MemTotal:       {total:8} kB\nMemFree:        {free:8} kB\nMemAvailable:   {free:8} kB\nBuffers:               0 kB\nCached:                0 kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\n"
        )
    }

    /// `stat` of a virtual node.
    pub(super) fn vstat(&self, abs: &str, node: &VNode) -> StatView {
        let (mode, rdev, size) = match node {
            VNode::Dir(_) => (S_IFDIR | 0o555, 0, 0),
            VNode::Dev(_, d) => (S_IFCHR | 0o666, *d, 0),
            VNode::Mem(_) if abs == DROP_CACHES => (S_IFREG | 0o200, 0, 0),
            VNode::Mem(m) if writable(abs) => (S_IFREG | 0o644, 0, m.len() as i64),
            VNode::Mem(m) => (S_IFREG | 0o444, 0, m.len() as i64),
            VNode::Link(t) => (S_IFLNK | 0o777, 0, t.len() as i64),
            VNode::Ns(_) => (S_IFREG | 0o444, 0, 0),
        };
        let secs = (sys::now_ns() / 1_000_000_000) as i64 + 1_704_067_200;
        let s = StatView {
            dev: makedev(0, 5),
            ino: ino_of(abs),
            nlink: 1,
            mode,
            uid: 0,
            gid: 0,
            rdev,
            size,
            blksize: 4096,
            blocks: 0,
            atime: (secs, 0),
            mtime: (secs, 0),
            ctime: (secs, 0),
        };
        match node {
            VNode::Dev(Kind::Loop(n), _) => self.loop_stat(*n, s),
            // The namespace itself (nsfs's inode), as stat finds it
            // through the link.
            VNode::Ns(i) => StatView {
                dev: makedev(0, 4),
                ino: NAMESPACES[*i].2,
                ..s
            },
            _ => s,
        }
    }

    /// Follows the virtual links of `abs` (at most 8).
    pub(super) fn vresolve(&self, abs: &str) -> Result<(String, VNode), i64> {
        let mut p = String::from(abs);
        for _ in 0..8 {
            let node = self.vnode(&p)?;
            match node {
                VNode::Link(t) => {
                    let base = p
                        .rsplit_once('/')
                        .map_or("/", |(b, _)| if b.is_empty() { "/" } else { b });
                    p = linuxabi::path::absolute(base, &t);
                    if !is_virtual(&p) {
                        return Ok((p.clone(), VNode::Link(p)));
                    }
                }
                n => return Ok((p, n)),
            }
        }
        Err(errno::ELOOP)
    }

    /// The descriptor kind for an open of virtual node `node`.
    pub(super) fn vkind(&self, node: VNode) -> Kind {
        match node {
            VNode::Dir(list) => Kind::VDir(Rc::new(list)),
            VNode::Dev(k, _) => k,
            VNode::Mem(m) => Kind::Mem(Rc::new(m)),
            VNode::Link(_) => Kind::Null,
            // Nothing to read: its calls are the NS_GET_* ioctls, which
            // know it by its path.
            VNode::Ns(_) => Kind::Mem(Rc::new(Vec::new())),
        }
    }
}

/// What is mounted where (`/proc/mounts`, each process's `mounts`).
const MOUNTS: &[u8] = b"/dev/root / ext2 rw,relatime 0 0\nproc /proc proc rw 0 0\ndevtmpfs /dev devtmpfs rw 0 0\n";

impl Sup {
    /// `/proc/sys`: the settings programs read (LTP's library reads
    /// `pid_max` before a test that makes processes).
    fn sys_node(&self, rest: &str) -> Result<VNode, i64> {
        let files = |dir: &str, names: &[&str]| {
            VNode::Dir(
                names
                    .iter()
                    .map(|n| (n.to_string(), DT_REG, ino_of(&format!("sys/{dir}/{n}"))))
                    .collect(),
            )
        };
        Ok(match rest {
            "" => VNode::Dir(vec![
                ("kernel".into(), DT_DIR, ino_of("sys/kernel")),
                ("fs".into(), DT_DIR, ino_of("sys/fs")),
                ("vm".into(), DT_DIR, ino_of("sys/vm")),
            ]),
            "vm" => files("vm", &["drop_caches"]),
            // Write-only (Linux's mode 0200): an open for reading is
            // refused, so its content is never read.
            "vm/drop_caches" => VNode::Mem(Vec::new()),
            "kernel" => {
                // The SysV limits are listed once, where they are kept.
                let own = [
                    "pid_max",
                    "hostname",
                    "domainname",
                    "ostype",
                    "osrelease",
                    "version",
                    "tainted",
                ];
                let names: Vec<&str> = own.into_iter().chain(linuxabi::sysv::SETTINGS).collect();
                let mut d = files("kernel", &names);
                if let VNode::Dir(l) = &mut d {
                    l.push(("keys".into(), DT_DIR, ino_of("sys/kernel/keys")));
                }
                d
            }
            "kernel/pid_max" => VNode::Mem(format!("{}\n", self.sysctl(sysctl::PID_MAX, None)?).into_bytes()),
            // What uname reports.
            "kernel/hostname" => VNode::Mem(format!("{}\n", self.uts_name(0, None)).into_bytes()),
            "kernel/domainname" => VNode::Mem(format!("{}\n", self.uts_name(1, None)).into_bytes()),
            "kernel/ostype" => VNode::Mem(b"Linux\n".to_vec()),
            "kernel/osrelease" => VNode::Mem(format!("{}\n", super::syscalls::RELEASE).into_bytes()),
            "kernel/version" => VNode::Mem(format!("{}\n", super::syscalls::VERSION).into_bytes()),
            // No taint flags: Tessera's kernel stops on a fault of its own
            // rather than going on marked.
            "kernel/tainted" => VNode::Mem(b"0\n".to_vec()),
            k if super::sysv::setting_of(&format!("/proc/sys/{k}")).is_some() => {
                let index = super::sysv::setting_of(&format!("/proc/sys/{k}")).unwrap_or(0);
                VNode::Mem(self.sysv_setting(index, None)?)
            }
            "kernel/keys" => files("kernel/keys", &linuxabi::keys::SETTINGS),
            k if super::keys::setting_of(&format!("/proc/sys/{k}")).is_some() => {
                let index = super::keys::setting_of(&format!("/proc/sys/{k}")).unwrap_or(0);
                VNode::Mem(format!("{}\n", self.keys_setting(index, None)?).into_bytes())
            }
            "fs" => {
                let mut d = files("fs", &["pipe-max-size"]);
                if let VNode::Dir(v) = &mut d {
                    v.push(("inotify".into(), DT_DIR, ino_of("sys/fs/inotify")));
                    v.push(("mqueue".into(), DT_DIR, ino_of("sys/fs/mqueue")));
                }
                d
            }
            "fs/inotify" => files("fs/inotify", &super::inotify::SETTINGS),
            "fs/mqueue" => files("fs/mqueue", &linuxabi::mqueue::SETTINGS),
            k if super::mqueue::setting_of(&format!("/proc/sys/{k}")).is_some() => {
                let index = super::mqueue::setting_of(&format!("/proc/sys/{k}")).unwrap_or(0);
                VNode::Mem(self.mq_setting_text(index)?)
            }
            k if k.starts_with("fs/inotify/") => {
                let v = self.inotify_limit(&format!("/proc/sys/{k}"), None)?;
                VNode::Mem(format!("{v}\n").into_bytes())
            }
            "fs/pipe-max-size" => VNode::Mem(format!("{}\n", self.sysctl(sysctl::PIPE_MAX_SIZE, None)?).into_bytes()),
            _ => return Err(errno::ENOENT),
        })
    }
}

impl Sup {
    /// The ioctls of a namespace's file (Linux's ns_ioctl) over Tessera's
    /// one namespace of each kind: none has a parent or an owner outside
    /// the initial user namespace, which owns every other.
    pub(super) fn ns_ioctl(&mut self, rid: u64, i: usize, req: u64, arg: u64) -> Result<u64, i64> {
        const NS_GET_USERNS: u64 = 0xb701;
        const NS_GET_PARENT: u64 = 0xb702;
        const NS_GET_NSTYPE: u64 = 0xb703;
        const NS_GET_OWNER_UID: u64 = 0xb704;
        let kind = NAMESPACES[i].1;
        match req {
            // The initial user namespace's owner and parent, and the
            // initial pid namespace's parent, are outside what a process
            // may see.
            NS_GET_USERNS | NS_GET_PARENT if kind == "user" => Err(errno::EPERM),
            NS_GET_PARENT if kind == "pid" => Err(errno::EPERM),
            NS_GET_PARENT => Err(errno::EINVAL),
            NS_GET_USERNS => {
                let user = NAMESPACES.iter().position(|n| n.0 == "user").unwrap_or(0);
                let o = super::fdtable::Ofd::new(
                    self.vkind(VNode::Ns(user)),
                    super::fdtable::O_RDONLY,
                    format!("/proc/{}/ns/user", self.pid),
                );
                let limit = self.limits[7][0].min(1 << 20) as usize;
                self.fds.insert(o, true, limit).map(|fd| fd as u64)
            }
            NS_GET_NSTYPE => Ok(NAMESPACES[i].3),
            // Root owns the initial user namespace.
            NS_GET_OWNER_UID if kind == "user" => self.write_mem(rid, arg, &0u32.to_le_bytes()).map(|_| 0),
            NS_GET_OWNER_UID => Err(errno::EINVAL),
            _ => Err(errno::ENOTTY),
        }
    }
}

/// Whether `/proc/sys` file `abs` takes a write (root's: open checks):
/// the settings the system honours.
pub fn writable(abs: &str) -> bool {
    super::sysv::setting_of(abs).is_some()
        || super::keys::setting_of(abs).is_some()
        || super::mqueue::setting_of(abs).is_some()
        || matches!(
            abs,
            "/proc/sys/kernel/pid_max"
                | DROP_CACHES
                | "/proc/sys/fs/pipe-max-size"
                | "/proc/sys/kernel/hostname"
                | "/proc/sys/kernel/domainname"
        )
        || abs
            .strip_prefix("/proc/sys/fs/inotify/")
            .is_some_and(|n| super::inotify::SETTINGS.contains(&n))
}

/// Linux's drop_caches: 1 the page cache, 2 dentries and inodes, 3
/// both, 4 only silences the kernel's message (Linux 6.1 takes 1 to 4).
pub const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// A number written to a file of `/proc/sys`, as Linux's proc_dointvec
/// reads one: blanks around it, nothing else.
fn number_of(text: &[u8]) -> Result<u64, i64> {
    let t = core::str::from_utf8(text).map_err(|_| errno::EINVAL)?;
    t.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\0')
        .parse::<u64>()
        .map_err(|_| errno::EINVAL)
}

impl Sup {
    /// A numeric setting the shared server keeps (`ctl::SYSCTL`), after
    /// setting it to `new` if there is one.
    pub(super) fn sysctl(&self, which: u64, new: Option<u64>) -> Result<u64, i64> {
        let r = self.ctl(&[ctl::SYSCTL, which, new.unwrap_or(u64::MAX)]);
        match errno::of(word(&r, 0)) {
            Some(e) => Err(e),
            None => Ok(word(&r, 0)),
        }
    }

    /// A write to a `writable` file of `/proc/sys` other than the IPC
    /// settings: the whole value in one write, as Linux takes it.
    pub(super) fn sysctl_write(&self, rid: u64, abs: &str, buf: u64, len: u64) -> Result<u64, i64> {
        if len > 4096 {
            return Err(errno::EINVAL);
        }
        let text = self.read_mem(rid, buf, len as usize)?;
        self.sysctl_apply(abs, &text)
    }

    /// A `/proc/sys` file's new value, `text` (a write's, or a splice's).
    pub(super) fn sysctl_apply(&self, abs: &str, text: &[u8]) -> Result<u64, i64> {
        let len = text.len() as u64;
        if len > 4096 {
            return Err(errno::EINVAL);
        }
        match abs {
            "/proc/sys/kernel/pid_max" => {
                self.sysctl(sysctl::PID_MAX, Some(number_of(text)?))?;
            }
            // Tessera's caches do not tell the page cache from inodes:
            // the block cache holds file and metadata pages alike, so 1,
            // 2 and 3 all drop the kernel's file caches and the block
            // caches' pages, dirty ones written back first (Linux leaves
            // dirty pages; nothing is lost either way). The file server's
            // own mirror of metadata blocks and its name cache stay.
            DROP_CACHES => match number_of(text)? {
                1..=3 => self.fs.drop_caches()?,
                4 => {}
                _ => return Err(errno::EINVAL),
            },
            "/proc/sys/fs/pipe-max-size" => {
                self.sysctl(sysctl::PIPE_MAX_SIZE, Some(number_of(text)?))?;
            }
            k if super::keys::setting_of(k).is_some() => {
                let index = super::keys::setting_of(k).unwrap_or(0);
                self.keys_setting(index, Some(number_of(text)?))?;
            }
            k if super::mqueue::setting_of(k).is_some() => {
                let index = super::mqueue::setting_of(k).unwrap_or(0);
                self.mq_setting(index, Some(number_of(text)?))?;
            }
            a if a.starts_with("/proc/sys/fs/inotify/") => {
                self.inotify_limit(a, Some(number_of(text)?))?;
            }
            // Linux's proc_dostring: up to the first newline, at most
            // the name's 64 bytes; what follows is dropped.
            _ => {
                let which = u64::from(abs.ends_with("domainname"));
                let end = text.iter().position(|&c| c == b'\n' || c == 0).unwrap_or(text.len());
                self.uts_name(which, Some(&text[..end.min(64)]));
            }
        }
        Ok(len)
    }
}

/// Linux's `/proc/cpuinfo` for each processor.
fn cpuinfo() -> String {
    let n = sys::sys_info().map_or(1, |i| i.cpus.max(1));
    let mut s = String::new();
    for i in 0..n {
        s += &format!(
            "processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: QEMU Virtual CPU\ncpu MHz\t\t: 1000.000\nflags\t\t: fpu sse sse2\n\n"
        );
    }
    s
}

/// Page faults per process and region kind (the native shell's `ps`).
fn faults_report() -> String {
    let mut pids = vec![0u64; 256];
    let n = sys::proc_list(&mut pids).unwrap_or(0).min(pids.len());
    let mut s = String::from("  PID PARENT   TEXT   DATA    BSS  STACK   HEAP  RSS(KiB) NAME\n");
    for &pid in &pids[..n] {
        let Ok(p) = sys::proc_info(pid) else { continue };
        let name = core::str::from_utf8(&p.name).unwrap_or("?").trim_end_matches('\0');
        let parent = if p.parent == u64::MAX { -1 } else { p.parent as i64 };
        let f = p.faults;
        s += &format!(
            "{:5} {:6} {:6} {:6} {:6} {:6} {:6} {:9} {}\n",
            p.pid,
            parent,
            f.text,
            f.data,
            f.bss,
            f.stack,
            f.heap,
            p.resident_pages * 4,
            name
        );
    }
    s
}
