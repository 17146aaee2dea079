//! A Linux process's life as its supervisor serves it: its start (from a
//! launcher, or as a forked child handed over by its parent's supervisor),
//! fork and vfork (the kernel copies the process; this supervisor hands
//! the descriptors and the rest of the process's state to the child's),
//! execve (the program becomes a plate, the kernel composes a new process
//! from it and the old one ends; the Linux pid stays), exit, and the ids,
//! groups and sessions it asks about.

use super::fdtable::{FdTable, Kind, Ofd, OfdRef};
use super::{Out, Sup, ret};
use crate::proto::{self, ctl, obj, word};
use crate::shared::CpuTimes;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;
use linuxabi::elf;
use linuxabi::errno;
use linuxabi::frame::AltStack;
use linuxabi::signal as sig;
use linuxabi::structs::StatView;
use tessera_rt::abi::{self, SpawnOptions};
use tessera_rt::sys;
use tessera_rt::sys::calls;

pub const CLONE_VM: u64 = 0x100;
pub const CLONE_FS: u64 = 0x200;
pub const CLONE_FILES: u64 = 0x400;
pub const CLONE_SIGHAND: u64 = 0x800;
pub const CLONE_PIDFD: u64 = 0x1000;
pub const CLONE_VFORK: u64 = 0x4000;
pub const CLONE_THREAD: u64 = 0x10000;
pub const CLONE_SETTLS: u64 = 0x80000;
pub const CLONE_PARENT_SETTID: u64 = 0x100000;
pub const CLONE_PARENT: u64 = 0x8000;
pub const CLONE_CHILD_CLEARTID: u64 = 0x200000;
pub const CLONE_CHILD_SETTID: u64 = 0x1000000;

/// Most bytes of arguments and environment a program starts with (the
/// kernel's work area, less its name).
const ARG_MAX: usize = 4000;
/// RLIMIT_STACK's number: the stack an exec'd program gets.
const RLIMIT_STACK: usize = 3;

/// A plate's name for a program file: by inode, so that every path to one
/// file finds one plate (the pool's programs are by plate).
fn plate_name(st: &StatView, path: &str) -> String {
    let base = linuxabi::path::basename(path);
    let mut digits = [0u8; 24];
    let ino = sys::fmt_u64(st.ino, &mut digits);
    let mut name = String::with_capacity(6 + ino.len() + 1 + base.len());
    name.push_str("linux/");
    name.push_str(ino);
    name.push('/');
    name.push_str(base);
    name
}

/// The version of a file's content, as well as the file server can say it
/// without reading it: size and change times.
fn plate_tag(st: &StatView) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in [
        st.ino,
        st.size as u64,
        st.mtime.0 as u64,
        st.mtime.1 as u64,
        st.ctime.0 as u64,
        st.ctime.1 as u64,
    ] {
        for b in v.to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    h | 1
}

/// A word whose bit `i` says whether the `i`th of `set` (at most 64) is.
fn bits(set: impl Iterator<Item = bool>) -> u64 {
    set.take(64).enumerate().fold(0, |w, (i, b)| w | (b as u64) << i)
}

/// The numbers of the bits set in `w`, lowest first.
fn set_bits(mut w: u64) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        (w != 0).then(|| {
            let i = w.trailing_zeros() as usize;
            w &= w - 1;
            i
        })
    })
}

/// Words and strings, one after another (the state a supervisor hands to
/// its child's).
#[derive(Default)]
pub struct Enc(pub Vec<u64>);

impl Enc {
    pub fn w(&mut self, v: u64) -> &mut Self {
        self.0.push(v);
        self
    }
    pub fn s(&mut self, b: &[u8]) -> &mut Self {
        self.0.push(b.len() as u64);
        for c in b.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.0.push(u64::from_le_bytes(w));
        }
        self
    }
}

pub struct Dec<'a> {
    w: &'a [u64],
    at: usize,
}

impl<'a> Dec<'a> {
    pub fn new(w: &'a [u64]) -> Dec<'a> {
        Dec { w, at: 0 }
    }
    pub fn w(&mut self) -> u64 {
        let v = word(self.w, self.at);
        self.at += 1;
        v
    }
    pub fn s(&mut self) -> Vec<u8> {
        let n = (self.w() as usize).min(1 << 20);
        let words = n.div_ceil(8);
        // Room for the whole last word, cut to `n` after: sized to `n`, a
        // string whose length is no multiple of 8 moved at its last word.
        let mut out = Vec::with_capacity(words * 8);
        for i in 0..words {
            out.extend_from_slice(&word(self.w, self.at + i).to_le_bytes());
        }
        self.at += words;
        out.truncate(n);
        out
    }

    /// A string `Enc::s` wrote of a `String`'s bytes: its bytes kept as
    /// they are (a lossy copy only of bytes that are no UTF-8).
    pub fn text(&mut self) -> String {
        String::from_utf8(self.s()).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

impl Sup {
    /// `INIT`: a process to serve, from a launcher (mode 1) or from the
    /// supervisor of its parent, which forked it (mode 2).
    pub(super) fn init(&mut self, rid: u64, info: &tessera_rt::abi::AccInfo) {
        let mut buf = vec![0u8; info.len as usize];
        if info.len as usize <= info.inline.len() {
            buf.copy_from_slice(&info.inline[..info.len as usize]);
        } else if sys::rv_read(rid, 0, &mut buf).is_err() {
            let _ = sys::endr(rid, &proto::bytes(&[errno::fail(errno::EFAULT)]));
            return;
        }
        if self.active {
            let _ = sys::endr(rid, &proto::bytes(&[errno::fail(errno::EBUSY)]));
            return;
        }
        let w = proto::words(&buf);
        let early = core::mem::take(&mut self.early);
        match word(&w, 0) {
            1 => self.init_launch(rid, &buf),
            2 => {
                self.init_fork(&w);
                let _ = sys::endr(rid, &proto::bytes(&[0]));
                // What was sent to the child before its state came.
                let me = self.pid as u64;
                for s in early.into_iter().filter(|s| s.target == me) {
                    self.signal_posted(s);
                }
            }
            _ => {
                // A fork that failed after it was given this supervisor:
                // back to the pool (or gone), not idle outside it for good.
                let _ = sys::endr(rid, &proto::bytes(&[0]));
                self.ended = true;
            }
        }
    }

    fn init_launch(&mut self, rid: u64, buf: &[u8]) {
        let pid = word(&proto::words(&buf[..16.min(buf.len())]), 1) as u32;
        let mut strings = buf.get(16..).unwrap_or(&[]).split(|&b| b == 0);
        let path = String::from_utf8_lossy(strings.next().unwrap_or(b"")).into_owned();
        let mut argv = Vec::new();
        let mut env = super::argmem::Env::default();
        let mut in_env = false;
        for s in strings {
            if s.is_empty() && !in_env {
                in_env = true;
                continue;
            }
            if s.is_empty() {
                continue;
            }
            if in_env {
                env.push(s);
            } else {
                argv.push(s.to_vec());
            }
        }
        self.reset();
        self.serving_since = super::cputime::own_cpu_ns();
        self.active = true;
        self.pid = pid;
        let tty = || {
            Ofd::new(
                Kind::Obj {
                    id: obj::TTY_ID,
                    kind: obj::TTY,
                },
                super::fdtable::O_RDWR,
                String::from("/dev/console"),
            )
        };
        let t = tty();
        for fd in 0..3 {
            self.fds.set(fd, t.clone(), false);
        }
        match self.exec_file(None, &path, argv, env) {
            Ok(()) => {
                let _ = sys::endr(rid, &proto::bytes(&[0]));
            }
            Err(e) => {
                let _ = sys::endr(rid, &proto::bytes(&[errno::fail(e)]));
                self.report_end(sig::exit_status(127), 0);
            }
        }
    }

    /// Forgets the last process's state (a supervisor from the pool).
    /// (The time it serves from is set as it takes the next.)
    pub(super) fn reset(&mut self) {
        self.fds = FdTable::default();
        self.leave_root();
        self.cwd = String::from("/");
        self.cwd_fd = None;
        self.exe_hold = None;
        self.umask = 0o022;
        self.cred = super::Creds::default();
        self.sig = super::signals::Signals::default();
        self.limits = super::DEFAULT_LIMITS;
        self.exe.clear();
        self.argv.clear();
        self.held = None;
        self.waiting_set = None;
        self.passed = None;
        self.clear_tid = 0;
        self.threads_end();
        self.tpid = 0;
        self.persona = 0;
        self.pdeath = 0;
        self.timerslack = super::TIMERSLACK;
        self.timerslack_default = super::TIMERSLACK;
        self.prctl_flags = 0;
        self.membarrier = 0;
        self.robust.clear();
        self.has_locks = false;
        self.locked = Default::default();
        self.fs.cred = Default::default();
        self.net.reset();
    }

    /// Whether its process has ended and it is free again.
    pub(super) fn done_with_process(&mut self) -> bool {
        core::mem::take(&mut self.ended)
    }

    // ---- fork ----

    pub(super) fn clone(&mut self, rid: u64, a: [u64; 6]) -> Out {
        let (flags, newsp, ptid, ctid, tls) = (a[0], a[1], a[2], a[3], a[4]);
        if flags & CLONE_THREAD != 0 && flags & CLONE_SIGHAND == 0 {
            return ret(Err(errno::EINVAL));
        }
        if flags & CLONE_SIGHAND != 0 && flags & CLONE_VM == 0 {
            return ret(Err(errno::EINVAL));
        }
        if flags & CLONE_PIDFD != 0 {
            // The pidfd goes where the parent's tid would (clone's
            // parent_tid), and a thread or detached child has none.
            const CLONE_DETACHED: u64 = 0x40_0000;
            if flags & (CLONE_THREAD | CLONE_PARENT_SETTID | CLONE_DETACHED) != 0 {
                return ret(Err(errno::EINVAL));
            }
            // Room for it before the child exists.
            if let Err(e) = self.fds.free_from(0, self.limit()) {
                return ret(Err(e));
            }
        }
        if flags & CLONE_THREAD != 0 {
            return self.clone_thread(rid, a);
        }
        if flags & (CLONE_SIGHAND | CLONE_FS | CLONE_FILES) != 0 && flags & CLONE_VM == 0 {
            // Sharing a table between processes: not yet.
            return ret(Err(errno::EINVAL));
        }
        let vfork = flags & CLONE_VFORK != 0;
        self.fork(rid, vfork, newsp, flags, ptid, ctid, tls)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn fork(
        &mut self,
        rid: u64,
        vfork: bool,
        newsp: u64,
        flags: u64,
        ptid: u64,
        ctid: u64,
        tls: u64,
    ) -> Out {
        // Every description goes to the child too: a file's position is
        // shared from now on.
        let ofds = self.fds.distinct();
        let mut objs = Vec::new();
        for o in &ofds {
            let mut d = o.borrow_mut();
            if matches!(d.kind, Kind::File { .. }) && d.shared.is_none() {
                match self.ctl1(&[ctl::SHARE_FILE, d.pos, d.flags as u64]) {
                    Ok(id) => d.shared = Some(id),
                    Err(e) => return ret(Err(e)),
                }
            }
            objs.extend(d.objects());
        }
        // The exit signal (clone's low byte) rides with the vfork flag.
        let mut how = (flags & 0xff) << 8;
        if vfork {
            how |= proto::fork_flags::VFORK;
        }
        if flags & CLONE_PARENT != 0 {
            how |= proto::fork_flags::SIBLING;
        }
        // Sized once: grown from three words it was moved again.
        let mut req = Vec::with_capacity(3 + objs.len());
        req.extend_from_slice(&[ctl::FORK, self.pid as u64, how]);
        req.extend_from_slice(&objs);
        let r = self.ctl(&req);
        if let Some(e) = errno::of(word(&r, 0)) {
            // The references the child would have held.
            self.release_objects(&objs);
            return ret(Err(e));
        }
        let (child, child_sup) = (word(&r, 0) as u32, word(&r, 1));
        // The child starts from the parent's registers, with its own stack
        // and thread pointer if clone gave them, and its tid already in its
        // memory: set in the waiting parent for the copy, then put back.
        // A plain fork changes none, and the kernel reads them itself.
        let before = if newsp != 0 || flags & CLONE_SETTLS != 0 {
            let Some(before) = self.regs(rid) else {
                self.release_objects(&objs);
                let _ = sys::call(child_sup, proto::sup::INIT, &proto::bytes(&[0]), &mut [0u8; 8]);
                self.ctl(&[ctl::EXIT, child as u64, 0, 0, 0, 0]);
                return ret(Err(errno::EAGAIN));
            };
            let mut regs = before;
            if newsp != 0 {
                regs.rsp = newsp;
            }
            if flags & CLONE_SETTLS != 0 {
                regs.fs_base = tls;
            }
            (regs != before).then_some((before, regs))
        } else {
            None
        };
        if let Some((_, regs)) = &before {
            let _ = super::signals::patiently(|| calls::caller_set_regs(rid, regs));
        }
        // In memory the child shares, the parent's tid word is there before
        // the child runs, as on Linux.
        let settid_first = flags & (CLONE_VM | CLONE_PARENT_SETTID) == CLONE_VM | CLONE_PARENT_SETTID;
        if settid_first {
            let _ = self.write_u32(rid, ptid, child);
        }
        let old_tid = if flags & CLONE_CHILD_SETTID != 0 {
            let mut b = [0u8; 4];
            let ok = calls::caller_read(rid, ctid, &mut b).is_ok();
            let _ = self.write_u32(rid, ctid, child);
            ok.then_some(b)
        } else {
            None
        };
        // A child of CLONE_VM (vfork's) runs in the parent's space itself,
        // lent to it until it execs or ends (a vfork parent waits
        // meanwhile); a space lent to as many as it may be is copied.
        let lent = if flags & CLONE_VM != 0 {
            calls::linux_vfork(rid, child_sup, child as u64)
        } else {
            Err(abi::Error::Busy)
        };
        let shares = lent.is_ok();
        let forked = match lent {
            Err(abi::Error::Busy) => super::signals::patiently(|| calls::linux_fork(rid, child_sup, child as u64)),
            r => r,
        };
        // The child's tid stays where the child's memory is the parent's.
        if let Some(b) = old_tid
            && !shares
        {
            let _ = self.write_mem(rid, ctid, &b);
        }
        if let Some((before, _)) = &before {
            let _ = super::signals::patiently(|| calls::caller_set_regs(rid, before));
        }
        let tpid = match forked {
            Ok(t) => t,
            Err(_) => {
                self.release_objects(&objs);
                let _ = sys::call(child_sup, proto::sup::INIT, &proto::bytes(&[0]), &mut [0u8; 8]);
                self.ctl(&[ctl::EXIT, child as u64, 0, 0, 0, 0]);
                return ret(Err(errno::ENOMEM));
            }
        };
        let state = self.child_state(child, tpid, child_sup, &ofds, flags, ctid);
        let _ = sys::call(child_sup, proto::sup::INIT, &proto::bytes(&state), &mut [0u8; 8]);
        if flags & CLONE_PARENT_SETTID != 0 && !settid_first {
            let _ = self.write_u32(rid, ptid, child);
        }
        if flags & CLONE_PIDFD != 0
            && let Ok(fd) = self.pidfd_open(child as u64, 0)
        {
            let _ = self.write_u32(rid, ptid, fd as u32);
        }
        if vfork {
            return self.pass(
                rid,
                58,
                [0; 6],
                &[proto::pass::VFORK_WAIT, self.pid as u64, child as u64],
            );
        }
        Out::Ret(child as u64)
    }

    fn release_objects(&self, objs: &[u64]) {
        if !objs.is_empty() {
            let mut m = vec![ctl::RELEASE];
            m.extend_from_slice(objs);
            self.ctl(&m);
        }
    }

    /// The state the child's supervisor starts from: the parent's, with
    /// the file server's numbers of the child's supervisor.
    fn child_state(&mut self, pid: u32, tpid: u64, child_sup: u64, ofds: &[OfdRef], flags: u64, ctid: u64) -> Vec<u64> {
        // Room for the fixed part, a few changed limits and signal actions
        // and a few descriptors, so that it grows seldom.
        let mut e = Enc(Vec::with_capacity(512));
        e.w(2).w(pid as u64).w(tpid).w(self.umask as u64);
        let c = &self.cred;
        for v in [c.uid, c.euid, c.suid, c.gid, c.egid, c.sgid] {
            e.w(v as u64);
        }
        e.w(c.groups.len() as u64);
        for &g in &c.groups {
            e.w(g as u64);
        }
        for v in [c.caps.effective, c.caps.permitted, c.caps.inheritable, c.caps.bounding] {
            e.w(v);
        }
        e.w(self.sig.mask);
        let st = self.sig.altstack;
        e.w(st.sp).w(st.flags as u64).w(st.size);
        e.w(if flags & CLONE_CHILD_CLEARTID != 0 { ctid } else { 0 });
        e.w(self.persona);
        e.w(self.timerslack);
        e.w(self.prctl_flags);
        e.w(self.membarrier);
        // Only the limits and signal actions that differ from a new
        // process's (which the child's supervisor starts from): most
        // programs change few, and the 64 actions alone were 256 words
        // to write, copy twice and read back at every fork.
        // Each set looked at once: comparing the 64 actions twice was
        // 1,300 instructions of every fork. A default action is all zeros.
        let limits = bits(super::DEFAULT_LIMITS.iter().zip(&self.limits).map(|(d, l)| d != l));
        e.w(limits);
        for i in set_bits(limits) {
            let l = self.limits[i];
            e.w(l[0]).w(l[1]);
        }
        let actions = if self.sig.actions_set {
            bits(
                self.sig
                    .actions
                    .iter()
                    .map(|a| a.handler | a.flags | a.restorer | a.mask != 0),
            )
        } else {
            0
        };
        e.w(actions);
        for i in set_bits(actions) {
            let a = &self.sig.actions[i];
            e.w(a.handler).w(a.flags).w(a.restorer).w(a.mask);
        }
        e.s(self.cwd.as_bytes());
        e.w(self
            .cwd_fd
            .and_then(|fd| self.fs.share(fd, child_sup).ok())
            .map_or(u64::MAX, |f| f as u64));
        let (root, root_fd) = self.root_for_child(child_sup);
        e.s(root.as_bytes());
        e.w(root_fd);
        e.s(self.exe.as_bytes());
        e.w(self.argv.len() as u64);
        for a in &self.argv {
            e.s(a);
        }
        e.w(ofds.len() as u64);
        for o in ofds {
            let d = o.borrow();
            let (tag, a, b) = match &d.kind {
                // The cache id goes too: the kernel copied the child's
                // bindings, and its supervisor must unbind them as it
                // closes their numbers (SHARE grants it the cache).
                Kind::File { fd, dir } => (
                    1,
                    self.fs.share(*fd, child_sup).map_or(u64::MAX, |f| f as u64),
                    *dir as u64 | d.cache << 1,
                ),
                Kind::Obj { id, kind } => (2, *id, *kind),
                Kind::Null => (3, 0, 0),
                Kind::Zero => (4, 0, 0),
                Kind::Full => (5, 0, 0),
                Kind::Random => (6, 0, 0),
                Kind::Mem(_) => (7, 0, 0),
                Kind::VDir(_) => (8, 0, 0),
                Kind::Socket { id, stream } => {
                    self.net_share(*id, child_sup);
                    (9, *id as u64, *stream as u64)
                }
                Kind::Unix { rx, tx, ty } => (10, *rx, *tx | (*ty as u64) << 56),
                Kind::UnixSock { ty, obj, listening } => (15, *obj, *ty as u64 | (*listening as u64) << 8),
                Kind::Epoll(_) => (11, 0, 0),
                Kind::KPipe { id, write } => (12, *id, *write as u64),
                Kind::KUnix { id } => (16, *id, 0),
                Kind::Loop(node) => (13, node.word(), 0),
                Kind::SignalFd(mask) => (14, *mask, 0),
            };
            e.w(tag).w(a).w(b).w(d.flags as u64).w(d.pos).w(d.shared.unwrap_or(0));
            e.s(d.path.as_bytes());
            let node = d.node.and_then(|n| self.fs.share(n, child_sup).ok());
            e.w(node.map_or(u64::MAX, |n| n as u64));
            if matches!(d.kind, Kind::Unix { .. } | Kind::UnixSock { .. } | Kind::KUnix { .. }) {
                for w in d.unix.encode() {
                    e.w(w);
                }
            }
            if let Kind::Mem(m) = &d.kind {
                e.s(m);
            }
            if let Kind::VDir(list) = &d.kind {
                e.w(list.len() as u64);
                for (name, t, ino) in list.iter() {
                    e.s(name.as_bytes()).w(*t as u64).w(*ino);
                }
            }
            if let Kind::Epoll(ep) = &d.kind {
                let list = super::epoll::encode(&ep.borrow(), ofds);
                e.w(list.len() as u64);
                for w in list {
                    e.w(w);
                }
            }
        }
        let slots: Vec<(usize, usize, bool)> = self
            .fds
            .slots
            .iter()
            .enumerate()
            .filter_map(|(fd, s)| {
                let s = s.as_ref()?;
                let i = ofds.iter().position(|o| Rc::ptr_eq(o, &s.ofd))?;
                Some((fd, i, s.cloexec))
            })
            .collect();
        e.w(slots.len() as u64);
        for (fd, i, cloexec) in slots {
            e.w(fd as u64).w(i as u64).w(cloexec as u64);
        }
        // The kernel copied the mappings with their files' ends: the
        // child's writes must move them as the parent's would.
        e.w(self.mapped_files.len() as u64);
        for &tag in &self.mapped_files {
            e.w(tag);
        }
        e.0
    }

    fn init_fork(&mut self, w: &[u64]) {
        // An idle supervisor is as `reset` left it at its last process's
        // end (or new): resetting it again here was a thousand
        // instructions of every fork.
        self.serving_since = super::cputime::own_cpu_ns();
        let mut d = Dec::new(w);
        d.w();
        self.active = true;
        self.pid = d.w() as u32;
        self.tpid = d.w();
        self.tpid_told = false;
        self.umask = d.w() as u32;
        let c = &mut self.cred;
        c.uid = d.w() as u32;
        c.euid = d.w() as u32;
        c.suid = d.w() as u32;
        c.gid = d.w() as u32;
        c.egid = d.w() as u32;
        c.sgid = d.w() as u32;
        let ng = (d.w() as usize).min(65536);
        c.groups = (0..ng).map(|_| d.w() as u32).collect();
        let (ce, cp, ci, cb) = (d.w(), d.w(), d.w(), d.w());
        c.caps = linuxabi::caps::Caps::with(ce, cp, ci, cb, [c.uid, c.euid, c.suid]);
        self.fs.cred.uid = self.cred.euid;
        self.fs.cred.gid = self.cred.egid;
        // The kernel started the child with the forking thread's mask
        // and nothing pending, as Linux's fork.
        self.sig.mask = d.w();
        self.sig.kernel_mask = self.sig.mask;
        self.sig.published = 0;
        self.sig.altstack = AltStack {
            sp: d.w(),
            flags: d.w() as u32,
            size: d.w(),
        };
        self.clear_tid = d.w();
        self.persona = d.w();
        self.timerslack = d.w();
        self.timerslack_default = self.timerslack;
        self.prctl_flags = d.w();
        self.membarrier = d.w();
        self.robust.clear();
        // (An idle supervisor holds the defaults: only the others came.)
        for i in set_bits(d.w()) {
            let l = [d.w(), d.w()];
            if let Some(at) = self.limits.get_mut(i) {
                *at = l;
            }
        }
        // A CPU limit goes on in the child, whose CPU time starts at 0.
        if self.limits[super::syscalls::RLIMIT_CPU] != [u64::MAX; 2] {
            self.watch_cpu_limit();
        }
        let actions = d.w();
        self.sig.actions_set |= actions != 0;
        for i in set_bits(actions) {
            self.sig.actions[i] = sig::SigAction {
                handler: d.w(),
                flags: d.w(),
                restorer: d.w(),
                mask: d.w(),
            };
        }
        self.cwd = d.text();
        let cwd_fd = d.w();
        self.cwd_fd = (cwd_fd != u64::MAX).then_some(cwd_fd as u32);
        let root = d.text();
        let root_fd = d.w();
        self.adopt_root(root, root_fd);
        self.exe = d.text();
        let argc = (d.w() as usize).min(65536);
        self.argv = (0..argc).map(|_| d.s()).collect();
        let n = (d.w() as usize).min(65536);
        let mut ofds = Vec::with_capacity(n);
        let mut epolls = Vec::new();
        for _ in 0..n {
            let (tag, a, b, flags, pos, shared) = (d.w(), d.w(), d.w(), d.w() as u32, d.w(), d.w());
            let path = d.text();
            let node = d.w();
            let kind = match tag {
                1 => Kind::File {
                    fd: a as u32,
                    dir: b & 1 != 0,
                },
                2 => Kind::Obj { id: a, kind: b },
                3 => Kind::Null,
                4 => Kind::Zero,
                5 => Kind::Full,
                6 => Kind::Random,
                7 => Kind::Mem(Rc::new(d.s())),
                9 => Kind::Socket {
                    id: a as u32,
                    stream: b != 0,
                },
                10 => Kind::Unix {
                    rx: a,
                    tx: b & ((1 << 56) - 1),
                    ty: (b >> 56) as u8,
                },
                12 => Kind::KPipe { id: a, write: b != 0 },
                16 => Kind::KUnix { id: a },
                15 => Kind::UnixSock {
                    ty: b as u8,
                    obj: a,
                    listening: b & 1 << 8 != 0,
                },
                11 => {
                    let m = (d.w() as usize).min(1 << 20);
                    let words: Vec<u64> = (0..m).map(|_| d.w()).collect();
                    let ep = Rc::new(RefCell::new(super::epoll::Epoll::default()));
                    epolls.push((ep.clone(), words));
                    Kind::Epoll(ep)
                }
                14 => Kind::SignalFd(a),
                13 => {
                    let node = super::loopdev::Node::from_word(a);
                    self.loop_reopen(node);
                    Kind::Loop(node)
                }
                _ => {
                    let m = (d.w() as usize).min(1 << 16);
                    let list = (0..m)
                        .map(|_| {
                            let name = d.text();
                            (name, d.w() as u8, d.w())
                        })
                        .collect();
                    Kind::VDir(Rc::new(list))
                }
            };
            let cache = if matches!(kind, Kind::File { .. }) { b >> 1 } else { 0 };
            let unix = if matches!(kind, Kind::Unix { .. } | Kind::UnixSock { .. } | Kind::KUnix { .. }) {
                super::unix_named::Names::decode(|| d.w())
            } else {
                super::unix_named::Names::default()
            };
            ofds.push(Rc::new(RefCell::new(Ofd {
                kind,
                flags,
                pos,
                shared: (shared != 0).then_some(shared),
                path,
                lease: None,
                cache,
                unix,
                node: (node != u64::MAX).then_some(node as u32),
                // (Not carried to a forked child yet: its copy has none.)
                owner: Default::default(),
                quiet: false,
            })));
        }
        for (ep, words) in epolls {
            super::epoll::decode(&mut ep.borrow_mut(), &words, &ofds);
        }
        let m = (d.w() as usize).min(65536);
        for _ in 0..m {
            let (fd, i, cloexec) = (d.w() as usize, d.w() as usize, d.w() != 0);
            if let Some(o) = ofds.get(i) {
                self.fds.set(fd, o.clone(), cloexec);
            }
        }
        let m = (d.w() as usize).min(1 << 20);
        self.mapped_files = (0..m).map(|_| d.w()).filter(|&t| t != 0).collect();
    }

    // ---- exec ----

    pub(super) fn execve(&mut self, rid: u64, a: [u64; 6], at: Option<(u64, u64)>) -> Out {
        let read = match super::argmem::quick(rid, (a[0], a[1], a[2]), &mut self.arg_pages) {
            Some(q) => Ok((String::from_utf8_lossy(&q.path).into_owned(), q.argv, q.env)),
            None => {
                let mut mem = super::argmem::ArgMem::new(rid, &mut self.arg_pages);
                let read = mem
                    .cstr(a[0], linuxabi::path::PATH_MAX - 1)
                    .map(|p| String::from_utf8_lossy(&p).into_owned())
                    .and_then(|path| Ok((path, Self::read_strings(&mut mem, a[1])?)))
                    .and_then(|(path, argv)| Ok((path, argv, Self::read_strings(&mut mem, a[2])?)))
                    .map(|(path, argv, strings)| {
                        let mut env = super::argmem::Env::default();
                        for e in &strings {
                            env.push(e);
                        }
                        (path, argv, env)
                    });
                mem.done(&mut self.arg_pages);
                read
            }
        };
        let (path, argv, env) = match read {
            Ok(r) => r,
            Err(e) => return ret(Err(e)),
        };
        const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
        const AT_EMPTY_PATH: u64 = 0x1000;
        let path = match at {
            Some((_, flags)) if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 => {
                return ret(Err(errno::EINVAL));
            }
            // The system path as the process names it (from its root).
            Some((dirfd, flags)) => match self
                .at_path(dirfd, &path, flags & AT_EMPTY_PATH != 0)
                .and_then(|p| self.seen(&p).ok_or(errno::ENOENT))
            {
                // execveat's AT_SYMLINK_NOFOLLOW: a link named last is
                // not followed but refused.
                Ok(p) if flags & AT_SYMLINK_NOFOLLOW != 0 && self.is_symlink(&p) => return ret(Err(errno::ELOOP)),
                Ok(p) => p,
                Err(e) => return ret(Err(e)),
            },
            None if path.is_empty() => return ret(Err(errno::ENOENT)),
            None => path,
        };
        match self.exec_file(Some(rid), &path, argv, env) {
            Ok(()) => Out::Done,
            Err(e) => ret(Err(e)),
        }
    }

    fn is_symlink(&self, path: &str) -> bool {
        self.fs_path(fdtable_at_fdcwd(), path)
            .and_then(|(dirfd, rel)| self.fs.stat(dirfd, rel.as_bytes(), 0x100))
            .is_ok_and(|st| StatView::parse(&st).kind() == linuxabi::structs::S_IFLNK)
    }

    /// A NULL-terminated array of string pointers (NULL itself: empty).
    fn read_strings(mem: &mut super::argmem::ArgMem, at: u64) -> Result<Vec<Vec<u8>>, i64> {
        let mut out = Vec::new();
        if at == 0 {
            return Ok(out);
        }
        let mut total = 0;
        for i in 0..(1u64 << 17) {
            let p = mem.u64(at + i * 8)?;
            if p == 0 {
                return Ok(out);
            }
            let s = mem
                .cstr(p, 128 * 1024)
                .map_err(|e| if e == errno::ENAMETOOLONG { errno::E2BIG } else { e })?;
            total += s.len() + 1;
            if total > 2 * 1024 * 1024 {
                return Err(errno::E2BIG);
            }
            out.push(s);
        }
        Err(errno::E2BIG)
    }

    /// Runs the program at `path` in place of the process waiting in `rid`
    /// (none: the first program of a launched process).
    pub(super) fn exec_file(
        &mut self,
        rid: Option<u64>,
        path: &str,
        mut argv: Vec<Vec<u8>>,
        env: super::argmem::Env,
    ) -> Result<(), i64> {
        let execfn = path;
        let mut path = String::from(path);
        // `#!` scripts name their interpreter (four levels, as Linux).
        for _ in 0..5 {
            let (st, fd) = self.open_program(&path)?;
            // Linux's open_exec is an open that says so (FAN_OPEN_EXEC).
            self.note_path(
                (fdtable_at_fdcwd(), &path),
                &st,
                linuxabi::inotify::IN_OPEN | linuxabi::fanotify::FAN_OPEN_EXEC as u32,
            );
            // Formatted once: asked for below, then named to the kernel.
            let name = plate_name(&st, &path);
            // Run before, at this version: the kernel holds its image, and
            // nothing of the file need be read (one open is all exec asks
            // of the file server); the spawn itself says whether it is so.
            if self.may(&st, 0o4)
                && self.exec_held(
                    fd,
                    rid,
                    (&path, execfn, &name),
                    &st,
                    (Vec::new(), None),
                    &mut argv,
                    &env,
                )?
            {
                return Ok(());
            }
            // The first page: all that exec reads of an OFF2F file 1.
            let mut head = vec![0u8; off2f::HEADER_PAGE];
            let n = match self.fs.read_own(fd, 0, &mut head) {
                Ok(n) => n,
                Err(e) => {
                    self.fs.close(fd);
                    return Err(e);
                }
            };
            if super::off2f::is_off2f(&head[..n]) {
                head.truncate(n);
                let source = match super::off2f::source(&head, &st, self.fs.pid) {
                    Ok(s) => s,
                    Err(e) => {
                        self.fs.close(fd);
                        return Err(e);
                    }
                };
                return self
                    .exec_held(
                        fd,
                        rid,
                        (&path, execfn, &name),
                        &st,
                        (head, Some(source)),
                        &mut argv,
                        &env,
                    )
                    .map(drop);
            }
            let head = &head[..n.min(elf::HEAD)];
            let n = head.len();
            let mut image = Vec::new();
            let kind = match elf::classify(&head[..n], &head[..n]) {
                elf::Kind::Elf { .. } | elf::Kind::Dynamic => {
                    // The program headers may lie past the first bytes.
                    image = vec![0u8; st.size.max(0) as usize];
                    match self.fs.read_own(fd, 0, &mut image) {
                        Ok(m) => image.truncate(m),
                        Err(e) => {
                            self.fs.close(fd);
                            return Err(e);
                        }
                    }
                    elf::classify(&head[..n], &image)
                }
                k => k,
            };
            match kind {
                elf::Kind::Script { interpreter, argument } => {
                    // The interpreter is what runs (and is held), not the
                    // script.
                    self.fs.close(fd);
                    if argv.is_empty() {
                        argv.push(path.as_bytes().to_vec());
                    }
                    argv = elf::script_argv(&interpreter, argument.as_deref(), &path, &argv);
                    path = interpreter;
                    continue;
                }
                elf::Kind::Elf { .. } => {
                    return self
                        .exec_held(fd, rid, (&path, execfn, &name), &st, (image, None), &mut argv, &env)
                        .map(drop);
                }
                elf::Kind::Dynamic | elf::Kind::Unknown => {
                    self.fs.close(fd);
                    return Err(errno::ENOEXEC);
                }
            }
        }
        Err(errno::ELOOP)
    }

    /// `exec_image` of the program file open as `fd` (`OPEN_EXEC`): kept
    /// open while the program runs, in place of the last program's. False
    /// (and `fd` still open): no image given, and no plate of this version.
    #[allow(clippy::too_many_arguments)]
    fn exec_held(
        &mut self,
        fd: u32,
        rid: Option<u64>,
        paths: (&str, &str, &str),
        st: &StatView,
        image: (Vec<u8>, Option<abi::PagerSource>),
        argv: &mut Vec<Vec<u8>>,
        env: &super::argmem::Env,
    ) -> Result<bool, i64> {
        match self.exec_image(rid, paths, st, image, argv, env) {
            Ok(false) => Ok(false),
            Ok(true) => {
                if let Some(old) = self.exe_hold.replace(fd) {
                    self.fs.close(old);
                }
                Ok(true)
            }
            Err(e) => {
                self.fs.close(fd);
                Err(e)
            }
        }
    }

    /// Whether the process's credentials give access `bits` (0o4 read,
    /// 0o1 execute) to the file `st`; root may read anything and run what
    /// anyone may run.
    fn may(&self, st: &StatView, bits: u32) -> bool {
        let mode = st.mode;
        if self.cred.euid == 0 {
            bits == 0o4 || mode & 0o111 != 0
        } else if st.uid == self.cred.euid {
            mode & (bits << 6) != 0
        } else if self.in_group(st.gid) {
            mode & (bits << 3) != 0
        } else {
            mode & bits != 0
        }
    }

    /// Opens `path` to run it: a regular file the process may execute,
    /// which no one has open for writing (ETXTBSY).
    fn open_program(&mut self, path: &str) -> Result<(StatView, u32), i64> {
        let (dirfd, rel) = self.fs_path(fdtable_at_fdcwd(), path)?;
        // A FIFO's or device file's open for exec is refused at the file
        // server: no regular file, so no program (Linux's may_open).
        let (fd, st) = self.fs.open_exec(dirfd, rel.as_bytes())?;
        let st = StatView::parse(&st);
        let may_run = !self.fs.mounted_with(dirfd, super::mounts::MS_NOEXEC) && self.may(&st, 0o1);
        if !may_run {
            self.fs.close(fd);
            return Err(errno::EACCES);
        }
        Ok((st, fd))
    }

    pub(super) fn in_group(&self, gid: u32) -> bool {
        self.cred.egid == gid || self.cred.groups.contains(&gid)
    }

    /// `path` is the program's file, `execfn` the path execve was given
    /// (a script's, when `path` is its interpreter), `name` its plate's
    /// (`plate_name`). With no image, the plate the kernel holds of this
    /// version runs: false if it holds none (nothing changed then).
    fn exec_image(
        &mut self,
        rid: Option<u64>,
        (path, execfn, name): (&str, &str, &str),
        st: &StatView,
        (image, paged): (Vec<u8>, Option<abi::PagerSource>),
        argv: &mut Vec<Vec<u8>>,
        env: &super::argmem::Env,
    ) -> Result<bool, i64> {
        let tag = plate_tag(st);
        let held = image.is_empty() && paged.is_none();
        let made_before = held || calls::plate_create(name, tag, &[]).is_ok();
        if !made_before {
            // An OFF2F file 1's plate holds the header page read; its
            // data is read at faults by the file server.
            let made = match &paged {
                Some(source) => calls::plate_paged(name, tag, &image, source),
                None => calls::plate_create(name, tag, &image),
            };
            made.map_err(|e| exec_errno(path, "plate", e))?;
        }
        drop(image);
        // execve with argv NULL runs the program with argc 1, argv[0] ""
        // (put in argv once it runs: a stale plate leaves argv as it was).
        let argc = argv.len().max(1);
        // The kernel's layout: argc, the path, argv, the environment, in
        // one allocation (grown piece by piece it was moved four times).
        let strings = |v: &[Vec<u8>]| v.iter().map(|s| s.len() + 1).sum::<usize>();
        let mut args = Vec::with_capacity(21 + execfn.len() + 1 + argc + strings(argv) + env.bytes.len());
        args.extend_from_slice(sys::fmt_u64(argc as u64, &mut [0; 24]).as_bytes());
        args.push(0);
        args.extend_from_slice(execfn.as_bytes());
        args.push(0);
        if argv.is_empty() {
            args.push(0);
        }
        for a in argv.iter() {
            args.extend_from_slice(a);
            args.push(0);
        }
        args.extend_from_slice(&env.bytes);
        if args.len() > ARG_MAX {
            return Err(errno::E2BIG);
        }
        let options = SpawnOptions {
            policy: if crate::EAGER.load(core::sync::atomic::Ordering::Relaxed) {
                abi::LoadPolicy::Eager
            } else {
                abi::LoadPolicy::Demand
            } as u64,
            personality: abi::linux::LINUX,
            supervisor: self.me,
            linux_pid: self.pid as u64,
            // The new program's stack is as large as RLIMIT_STACK says
            // (its soft limit at exec, as Linux reads it).
            stack: self.limits[RLIMIT_STACK][0].max(1),
            // Exec keeps the mask and what is pending (other threads'
            // own too, until the next publication: more is only slower).
            sigmask: self.sig.mask,
            sigpending: self.pending_union(),
            // Run only at this version, which the kernel compares as it
            // finds the plate (no look-up of its own before).
            tag: if held { tag } else { 0 },
            ..SpawnOptions::DEFAULT
        };
        let tpid = match calls::spawn(name, &args, Some(&options)) {
            Ok(t) => t,
            Err(abi::Error::NotFound) if held => return Ok(false),
            Err(e) => return Err(exec_errno(path, "spawn", e)),
        };
        if argv.is_empty() {
            argv.push(Vec::new());
        }
        // The process goes on in the new program. exec_done's EXEC tells
        // the shared server so before the old program ends: the new one
        // may already run on another CPU, and until then /proc showed the
        // old program, in its execve (running), not the new one, which
        // could be waiting already under the old name.
        let old = core::mem::replace(&mut self.tpid, tpid);
        self.sig.kernel_mask = options.sigmask;
        self.sig.published = options.sigpending;
        self.fds.tpid = tpid;
        self.tpid_told = true;
        self.exec_done(path, core::mem::take(argv), env.count);
        if let Some(rid) = rid {
            let _ = calls::caller_exit(rid, 0);
            let _ = sys::wait(old);
        }
        Ok(true)
    }

    /// What exec changes besides the program: descriptors marked
    /// close-on-exec close, handlers become the default action, the
    /// alternate stack goes; the shared server learns the new program.
    fn exec_done(&mut self, path: &str, argv: Vec<Vec<u8>>, env_len: usize) {
        self.sig.exec_reset();
        self.held = None;
        self.passed = None;
        self.clear_tid = 0;
        self.threads_end();
        // A new address space: nothing of it is locked (Linux's exec).
        self.locked = Default::default();
        self.exe = String::from(path);
        self.argv = argv;
        self.env_len = env_len;
        let comm = self.comm_words();
        let mut line = Vec::new();
        for a in &self.argv {
            if line.len() + a.len() + 1 > 256 {
                break;
            }
            line.extend_from_slice(a);
            line.push(0);
        }
        let ids = [self.cred.uid, self.cred.euid, self.cred.suid];
        self.cred.caps.exec(ids);
        let mut m = vec![ctl::EXEC, self.pid as u64, self.tpid, comm[0], comm[1]];
        m.extend(proto::words(&{
            let mut b = line;
            b.resize(b.len().div_ceil(8) * 8, 0);
            b
        }));
        self.ctl(&m);
        // The old program's memory went, and its file mappings with it,
        // with its membarrier registrations and robust lists.
        self.fmap_forget();
        self.membarrier = 0;
        self.robust.clear();
        // Only then close-on-exec descriptors close, as Linux orders them: a
        // parent that sees such a pipe's end close may count on the exec
        // having happened (setpgid of the child is EACCES from then on).
        let close: Vec<u64> = self
            .fds
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.as_ref().is_some_and(|s| s.cloexec))
            .map(|(fd, _)| fd as u64)
            .collect();
        for fd in close {
            let _ = self.close_fd(fd);
        }
    }

    /// The command name (at most 15 bytes of the program's file name) as
    /// two words.
    pub(super) fn comm_words(&self) -> [u64; 2] {
        let mut b = [0u8; 16];
        let base = linuxabi::path::basename(&self.exe).as_bytes();
        let n = base.len().min(15);
        b[..n].copy_from_slice(&base[..n]);
        [
            u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8])),
            u64::from_le_bytes(b[8..].try_into().unwrap_or([0; 8])),
        ]
    }

    // ---- exit ----

    /// The process ends with wait status `status`: its call `rid` is the
    /// last; its descriptors close; its parent hears of it.
    pub(super) fn exit(&mut self, rid: u64, status: u32) -> Out {
        // Read before the process is gone with its counts.
        let (cpu, faults) = self.usage();
        let objs = self.close_all();
        let _ = calls::caller_exit(rid, abi::KILLED_STATUS * (status & 0x7f != 0) as u64);
        let _ = sys::wait(self.tpid);
        self.report_end_with(status, faults, cpu, &objs);
        Out::Done
    }

    /// Its end, told to the shared server, which gets its references back.
    pub(super) fn report_end(&mut self, status: u32, faults: u64) {
        let objs = self.close_all();
        let cpu = self.cpu_times();
        self.report_end_with(status, faults, cpu, &objs);
    }

    fn report_end_with(&mut self, status: u32, faults: u64, cpu: CpuTimes, objs: &[u64]) {
        let mut m = vec![
            ctl::EXIT_IDLE,
            self.pid as u64,
            status as u64,
            faults,
            cpu.user,
            cpu.system,
        ];
        m.extend_from_slice(objs);
        self.idle_answer = Some(self.ctl(&m).first() == Some(&1));
        self.active = false;
        self.ended = true;
        self.reset();
    }

    /// Closes every descriptor and the working directory; the shared
    /// server's objects they held, to give back.
    fn close_all(&mut self) -> Vec<u64> {
        self.fmap_forget();
        let mut objs = Vec::new();
        // A FIFO's end still waiting for its open counts as open.
        let waiting = self.fifo_wait.take().map(|w| w.ofd);
        for o in self.fds.distinct().into_iter().chain(waiting) {
            let d = o.borrow();
            if let Kind::File { fd, .. } = d.kind {
                self.fs.close(fd);
            }
            if let Some(fd) = d.node {
                self.fs.close(fd);
            }
            if let Kind::Socket { id, .. } = d.kind {
                self.net_close(id);
            }
            if let Kind::Loop(node) = d.kind {
                self.loop_release(node);
            }
            objs.extend(d.objects());
        }
        self.fds = FdTable::default();
        if let Some(fd) = self.cwd_fd.take() {
            self.fs.close(fd);
        }
        self.leave_root();
        if let Some(fd) = self.exe_hold.take() {
            self.fs.close(fd);
        }
        objs
    }

    pub(super) fn exit_group(&mut self, rid: u64, code: u64) -> Out {
        self.exit(rid, sig::exit_status(code as u32))
    }

    // ---- waiting for children ----

    pub(super) fn wait4(&mut self, rid: u64, a: [u64; 6]) -> Out {
        const KNOWN: u64 = 1 | 2 | 8 | 0x2000_0000 | 0x4000_0000 | 0x8000_0000;
        if a[2] & !KNOWN != 0 {
            return ret(Err(errno::EINVAL));
        }
        // -INT_MIN names no process group.
        if a[0] as i32 == i32::MIN {
            return ret(Err(errno::ESRCH));
        }
        let which = a[0] as i32 as i64;
        self.pass(
            rid,
            61,
            a,
            &[proto::pass::WAIT4, self.pid as u64, which as u64, a[2], a[1], a[3]],
        )
    }

    pub(super) fn waitid(&mut self, rid: u64, a: [u64; 6]) -> Out {
        const KNOWN: u64 = 1 | 2 | 4 | 8 | 0x0100_0000 | 0x2000_0000 | 0x4000_0000 | 0x8000_0000;
        if a[3] & !KNOWN != 0 || a[3] & (2 | 4 | 8) == 0 || a[0] > 3 {
            return ret(Err(errno::EINVAL));
        }
        if a[0] == 3 {
            return self.waitid_pidfd(rid, a);
        }
        self.pass(
            rid,
            247,
            a,
            &[
                proto::pass::WAITID,
                self.pid as u64,
                a[0],
                a[1] as i32 as u64,
                a[3],
                a[2],
            ],
        )
    }

    // ---- signals to processes ----

    /// kill, tkill, tgkill, rt_sigqueueinfo: to `target` (a pid, -pgid, 0
    /// or -1).
    pub(super) fn send(&mut self, target: i64, signo: u64, code: i64, value: u64) -> Result<u64, i64> {
        if signo > sig::NSIG as u64 {
            return Err(errno::EINVAL);
        }
        if target == i32::MIN as i64 {
            return Err(errno::ESRCH);
        }
        // To itself alone, a real-time signal past RLIMIT_SIGPENDING is
        // refused before it goes anywhere.
        if target == self.pid as i64 && self.queue_refuses(signo as u32, code as i32) {
            return Err(errno::EAGAIN);
        }
        // To itself by its pid (raise, kill(getpid())): the shared server
        // would find the sender allowed and alive and only answer "post it
        // here" (its tids are threads': `thread_kill`).
        if target == self.pid as i64 {
            return self.sent(&[0, (signo != 0) as u64], signo, code, value);
        }
        let r = self.ctl(&[ctl::KILL, self.pid as u64, target as u64, signo, code as u64, value]);
        self.sent(&r, signo, code, value)
    }

    /// The shared server's answer to a signal sent (`KILL`, `PIDFD_KILL`):
    /// its error, or, when the sender was among the targets, the signal
    /// posted here (the shared server does not signal its asker).
    pub(super) fn sent(&mut self, r: &[u64], signo: u64, code: i64, value: u64) -> Result<u64, i64> {
        if let Some(e) = errno::of(word(r, 0)) {
            return Err(e);
        }
        if word(r, 1) != 0 && signo != 0 {
            self.post(linuxabi::frame::SigInfo {
                signo: signo as u32,
                code: code as i32,
                pid: self.pid,
                uid: self.cred.uid,
                value,
                ..Default::default()
            });
        }
        Ok(0)
    }

    // ---- ids ----

    pub(super) fn set_fs_cred(&mut self) {
        let ids = [self.cred.uid, self.cred.euid, self.cred.suid];
        self.cred.caps.follow_ids(ids);
        self.fs.cred.uid = self.cred.euid;
        self.fs.cred.gid = self.cred.egid;
        let c = &self.cred;
        let ids = [c.uid, c.euid, c.suid, c.gid, c.egid, c.sgid].map(u64::from);
        self.ctl(&[&[ctl::CRED, self.pid as u64], &ids[..]].concat());
    }

    /// setresuid (and setuid, setreuid through it): -1 keeps a value.
    pub(super) fn setresuid(&mut self, r: u64, e: u64, s: u64) -> Result<u64, i64> {
        let keep = |v: u64| v as u32 == u32::MAX;
        let c = &self.cred;
        let allowed = |v: u64| keep(v) || [c.uid, c.euid, c.suid].contains(&(v as u32));
        if c.euid != 0 && !(allowed(r) && allowed(e) && allowed(s)) {
            return Err(errno::EPERM);
        }
        let c = &mut self.cred;
        if !keep(r) {
            c.uid = r as u32;
        }
        if !keep(e) {
            c.euid = e as u32;
        }
        if !keep(s) {
            c.suid = s as u32;
        }
        self.set_fs_cred();
        Ok(0)
    }

    pub(super) fn setresgid(&mut self, r: u64, e: u64, s: u64) -> Result<u64, i64> {
        let keep = |v: u64| v as u32 == u32::MAX;
        let c = &self.cred;
        let allowed = |v: u64| keep(v) || [c.gid, c.egid, c.sgid].contains(&(v as u32));
        if c.euid != 0 && !(allowed(r) && allowed(e) && allowed(s)) {
            return Err(errno::EPERM);
        }
        let c = &mut self.cred;
        if !keep(r) {
            c.gid = r as u32;
        }
        if !keep(e) {
            c.egid = e as u32;
        }
        if !keep(s) {
            c.sgid = s as u32;
        }
        self.set_fs_cred();
        Ok(0)
    }

    pub(super) fn setuid(&mut self, u: u64) -> Result<u64, i64> {
        if u as u32 == u32::MAX {
            return Err(errno::EINVAL);
        }
        if self.cred.euid == 0 {
            self.setresuid(u, u, u)
        } else if u as u32 == self.cred.uid || u as u32 == self.cred.suid {
            self.setresuid(u64::MAX, u, u64::MAX)
        } else {
            Err(errno::EPERM)
        }
    }

    pub(super) fn setgid(&mut self, g: u64) -> Result<u64, i64> {
        if g as u32 == u32::MAX {
            return Err(errno::EINVAL);
        }
        if self.cred.euid == 0 {
            self.setresgid(g, g, g)
        } else if g as u32 == self.cred.gid || g as u32 == self.cred.sgid {
            self.setresgid(u64::MAX, g, u64::MAX)
        } else {
            Err(errno::EPERM)
        }
    }

    /// setreuid: the saved id follows the new effective one when the real
    /// one changes or the effective one becomes other than the real.
    pub(super) fn setreuid(&mut self, r: u64, e: u64) -> Result<u64, i64> {
        let c = &self.cred;
        let (keep_r, keep_e) = (r as u32 == u32::MAX, e as u32 == u32::MAX);
        if c.euid != 0 {
            if !keep_r && r as u32 != c.uid && r as u32 != c.euid {
                return Err(errno::EPERM);
            }
            if !keep_e && ![c.uid, c.euid, c.suid].contains(&(e as u32)) {
                return Err(errno::EPERM);
            }
        }
        let new_e = if keep_e { c.euid } else { e as u32 };
        let s = if !keep_r || (!keep_e && e as u32 != c.uid) {
            new_e as u64
        } else {
            u64::MAX
        };
        let c = &mut self.cred;
        if !keep_r {
            c.uid = r as u32;
        }
        c.euid = new_e;
        if s != u64::MAX {
            c.suid = s as u32;
        }
        self.set_fs_cred();
        Ok(0)
    }

    pub(super) fn setregid(&mut self, r: u64, e: u64) -> Result<u64, i64> {
        let c = &self.cred;
        let (keep_r, keep_e) = (r as u32 == u32::MAX, e as u32 == u32::MAX);
        if c.euid != 0 {
            if !keep_r && r as u32 != c.gid && r as u32 != c.egid {
                return Err(errno::EPERM);
            }
            if !keep_e && ![c.gid, c.egid, c.sgid].contains(&(e as u32)) {
                return Err(errno::EPERM);
            }
        }
        let new_e = if keep_e { c.egid } else { e as u32 };
        let s = if !keep_r || (!keep_e && e as u32 != c.gid) {
            new_e as u64
        } else {
            u64::MAX
        };
        let c = &mut self.cred;
        if !keep_r {
            c.gid = r as u32;
        }
        c.egid = new_e;
        if s != u64::MAX {
            c.sgid = s as u32;
        }
        self.set_fs_cred();
        Ok(0)
    }
}

/// AT_FDCWD as a call's argument.
pub fn fdtable_at_fdcwd() -> u64 {
    (-100i64) as u64
}

/// execve's error for the kernel's refusal `e` to make `path`'s plate or
/// process (`step`). Any other than a bad program or a shortage is no
/// error Linux's execve has: EIO, and the console says which it was, as
/// the program cannot.
fn exec_errno(path: &str, step: &str, e: abi::Error) -> i64 {
    match e {
        abi::Error::BadProgram => errno::ENOEXEC,
        abi::Error::NoMemory | abi::Error::Limit => errno::ENOMEM,
        _ => {
            tessera_rt::println!("linux: exec of {path}: the kernel's {step} failed: {e:?}");
            errno::EIO
        }
    }
}
