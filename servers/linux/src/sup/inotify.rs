//! inotify: descriptors of instances the shared server holds
//! (`shared/inotify.rs`), and the events of this process's file calls,
//! which the supervisor reports there only while some watch exists
//! anywhere (`watching`, kept up to date by the shared server's notices).

use super::Sup;
use super::fdtable::{self as fdt, Kind, Ofd};
use crate::proto::{self, ctl, obj};
use alloc::string::String;
use alloc::vec::Vec;
use linuxabi::errno;
use linuxabi::inotify::{self as ino, IN_CLOEXEC, IN_NONBLOCK};
use linuxabi::structs::{S_IFDIR, S_IFMT, StatView};

const AT_FDCWD: u64 = -100i64 as u64;
const AT_SYMLINK_NOFOLLOW: u64 = 0x100;

/// A path as a call names it: relative to a directory's descriptor (or
/// AT_FDCWD), or absolute.
pub type At<'a> = (u64, &'a str);

/// The files of `/proc/sys/fs/inotify`, in the order of
/// `proto::inotify::LIMIT`'s settings.
pub const SETTINGS: [&str; 3] = ["max_user_instances", "max_user_watches", "max_queued_events"];

/// What the supervisor knows of watches: the newest notice's number and
/// whether it said some exist.
#[derive(Default, Clone, Copy)]
pub struct Watching {
    pub generation: u64,
    pub on: bool,
    /// fanotify marks exist: reports carry the process and the path.
    pub fan: bool,
}

impl Sup {
    pub(super) fn inotify_init1(&mut self, flags: u64) -> Result<u64, i64> {
        if flags & !(IN_CLOEXEC | IN_NONBLOCK) != 0 {
            return Err(errno::EINVAL);
        }
        let id = self.ctl1(&[ctl::INOTIFY, proto::inotify::INIT, self.cred.uid as u64])?;
        let nonblock = if flags & IN_NONBLOCK != 0 { fdt::O_NONBLOCK } else { 0 };
        if nonblock != 0 {
            self.ctl(&[ctl::OBJ_SETFL, id, nonblock as u64]);
        }
        let o = Ofd::new(
            Kind::Obj { id, kind: obj::INOTIFY },
            fdt::O_RDONLY | nonblock,
            String::from("anon_inode:inotify"),
        );
        match self.fds.insert(o.clone(), flags & IN_CLOEXEC != 0, self.limit()) {
            Ok(fd) => Ok(fd as u64),
            Err(e) => {
                self.release(&o);
                Err(e)
            }
        }
    }

    /// The instance descriptor `fd` leads to (EBADF: none; EINVAL: not an
    /// instance), as Linux checks it.
    fn instance(&self, fd: u64) -> Result<u64, i64> {
        match self.fds.ofd(fd)?.borrow().kind {
            Kind::Obj { id, kind: obj::INOTIFY } => Ok(id),
            _ => Err(errno::EINVAL),
        }
    }

    pub(super) fn inotify_add_watch(&mut self, rid: u64, fd: u64, path_at: u64, mask: u64) -> Result<u64, i64> {
        let mask = mask as u32;
        if mask & ino::VALID == 0 {
            return Err(errno::EINVAL);
        }
        if mask & ino::IN_MASK_ADD != 0 && mask & ino::IN_MASK_CREATE != 0 {
            return Err(errno::EINVAL);
        }
        let id = self.instance(fd)?;
        let path = self.read_path(rid, path_at)?;
        let nofollow = if mask & ino::IN_DONT_FOLLOW != 0 {
            AT_SYMLINK_NOFOLLOW
        } else {
            0
        };
        let st = self.stat_at(AT_FDCWD, &path, nofollow)?;
        if mask & ino::IN_ONLYDIR != 0 && st.mode & S_IFMT != S_IFDIR {
            return Err(errno::ENOTDIR);
        }
        self.ctl1(&[
            ctl::INOTIFY,
            proto::inotify::ADD,
            id,
            st.dev,
            st.ino,
            (mask & ino::VALID) as u64,
        ])
    }

    pub(super) fn inotify_rm_watch(&mut self, fd: u64, wd: u64) -> Result<u64, i64> {
        let id = self.instance(fd)?;
        self.ctl1(&[ctl::INOTIFY, proto::inotify::RM, id, wd as u32 as i32 as i64 as u64])
    }

    /// The shared server's notice of whether watches exist; an older one
    /// than the last taken (notices may pass each other) is dropped.
    pub(super) fn watching_notice(&mut self, s: &proto::Signal) {
        if s.value > self.watching.generation {
            self.watching = Watching {
                generation: s.value,
                on: s.status != 0,
                fan: s.status & 2 != 0,
            };
        }
    }

    /// A limit of `/proc/sys/fs/inotify` (file `abs`), set first to `new`
    /// if there is one.
    pub(super) fn inotify_limit(&self, abs: &str, new: Option<u64>) -> Result<u64, i64> {
        let name = abs.rsplit('/').next().unwrap_or("");
        let which = SETTINGS.iter().position(|s| *s == name).ok_or(errno::ENOENT)?;
        self.ctl1(&[
            ctl::INOTIFY,
            proto::inotify::LIMIT,
            which as u64,
            new.unwrap_or(u64::MAX),
        ])
    }

    /// `/proc/PID/fdinfo/N`: the description's position and flags, and
    /// an instance's watches as Linux lists them.
    pub(super) fn fdinfo(&self, n: u64) -> Result<String, i64> {
        let o = self.fds.ofd(n).map_err(|_| errno::ENOENT)?;
        let d = o.borrow();
        let cloexec = self.fds.get(n).is_ok_and(|s| s.cloexec);
        let flags = self.flags_of(&d) | if cloexec { fdt::O_CLOEXEC } else { 0 };
        let mut s = alloc::format!("pos:\t{}\nflags:\t{:07o}\nmnt_id:\t0\n", self.pos(&d), flags);
        if let Kind::Obj { id, kind: obj::INOTIFY } = d.kind {
            let r = self.ctl(&[ctl::INOTIFY, proto::inotify::LIST, id]);
            for i in 0..proto::word(&r, 0) as usize {
                let g = |k: usize| proto::word(&r, 1 + 4 * i + k);
                s.push_str(&alloc::format!(
                    "inotify wd:{:x} ino:{:x} sdev:{:x} mask:{:x} ignored_mask:0\n",
                    g(0),
                    g(2),
                    g(1),
                    g(3)
                ));
            }
        }
        Ok(s)
    }

    // ---- events of this process's file calls ----

    /// `mask` happened to the file of description `d` (read, write,
    /// close, a change of its attributes through it).
    pub(super) fn note_ofd(&self, d: &Ofd, mask: u32) {
        if !self.watching.on || d.quiet || !matches!(d.kind, Kind::File { .. }) {
            return;
        }
        let Ok(st) = self.fstat_ofd(d) else { return };
        // A file with no name left is no event of its directory's
        // watches that ask so (IN_EXCL_UNLINK).
        let gone = if st.nlink == 0 { ino::IN_EXCL_UNLINK } else { 0 };
        self.report((AT_FDCWD, &d.path), &st, mask | gone);
    }

    /// The stat of the file at `at` (not followed), when watches exist:
    /// taken before a call that removes, moves or makes it.
    pub(super) fn note_stat(&self, at: At) -> Option<StatView> {
        if !self.watching.on {
            return None;
        }
        self.stat_at(at.0, at.1, AT_SYMLINK_NOFOLLOW).ok()
    }

    /// `mask` happened to the file at `at` whose stat is `st`.
    pub(super) fn note_path(&self, at: At, st: &StatView, mask: u32) {
        if self.watching.on {
            self.report(at, st, mask);
        }
    }

    /// `mask` happened to the entry `at` of its directory only (created,
    /// deleted, moved: `dir` says whether the entry is a directory).
    pub(super) fn note_entry(&self, at: At, dir: bool, mask: u32) {
        if !self.watching.on {
            return;
        }
        let mask = mask | if dir { ino::IN_ISDIR } else { 0 };
        let mut w = Vec::new();
        self.parent_record(at, mask, &mut w);
        self.send_events(w);
    }

    /// The file whose stat was `st` lost its name `at`: its directory
    /// hears of it, and the file of its end if that was its last name
    /// (Linux waits for the last descriptor's close too).
    pub(super) fn note_unlinked(&self, at: At, st: &StatView) {
        if !self.watching.on {
            return;
        }
        let dir = st.mode & S_IFMT == S_IFDIR;
        let isdir = if dir { ino::IN_ISDIR } else { 0 };
        let mut w = Vec::new();
        if !dir {
            record(&mut w, (st.dev, st.ino), ino::IN_ATTRIB, b"");
        }
        // The file's end comes before its directory's event, as on Linux.
        if dir || st.nlink <= 1 {
            record(&mut w, (st.dev, st.ino), ino::IN_DELETE_SELF, b"");
        }
        self.parent_record(at, ino::IN_DELETE | isdir, &mut w);
        self.send_events(w);
    }

    /// The file whose stat was `st` got a new name `at`: its link count
    /// changed (its own watches only, as Linux's fsnotify_link_count), its
    /// new directory has an entry more.
    pub(super) fn note_link(&self, at: At, st: &StatView) {
        let mut w = Vec::new();
        record(&mut w, (st.dev, st.ino), ino::IN_ATTRIB, b"");
        self.parent_record(at, ino::IN_CREATE, &mut w);
        self.send_events(w);
    }

    /// The file system of device `dev` was unmounted: every watch of its
    /// files ends (IN_UNMOUNT, IN_IGNORED).
    pub(super) fn note_unmount(&self, dev: u64) {
        let mut w = Vec::new();
        record(&mut w, (dev, 0), ino::IN_UNMOUNT, b"");
        self.send_events(w);
    }

    /// A rename from `from` to `to` of the file whose stat was `st`: one
    /// cookie joins the two directories' events.
    pub(super) fn note_move(&self, from: At, to: At, st: &StatView) {
        if !self.watching.on {
            return;
        }
        let dir = if st.mode & S_IFMT == S_IFDIR { ino::IN_ISDIR } else { 0 };
        let mut w = Vec::new();
        self.parent_record(from, ino::IN_MOVED_FROM | dir, &mut w);
        self.parent_record(to, ino::IN_MOVED_TO | dir, &mut w);
        record(&mut w, (st.dev, st.ino), ino::IN_MOVE_SELF, b"");
        self.send_events(w);
    }

    /// The file itself and its directory (with its name) hear of `mask`.
    fn report(&self, at: At, st: &StatView, mask: u32) {
        let mask = mask | if st.mode & S_IFMT == S_IFDIR { ino::IN_ISDIR } else { 0 };
        // The directory hears first, as Linux's fsnotify_parent tells it.
        let mut w = Vec::new();
        if self.watching.fan {
            // fanotify's record: who did it and where the file is, for
            // the reader's descriptor.
            let abs = self.at_path(at.0, at.1, false).unwrap_or_default();
            w.extend([proto::inotify::FAN_INFO, self.pid as u64, 0, abs.len() as u64]);
            w.extend(proto::name_words(abs.as_bytes()));
        }
        self.parent_record(at, mask, &mut w);
        record(&mut w, (st.dev, st.ino), mask & !ino::IN_EXCL_UNLINK, b"");
        self.send_events(w);
    }

    /// The record of `mask` for the directory holding `at`, with the
    /// entry's name. The directory is looked up from the same starting
    /// point as the call's path, not from a path kept as text: a working
    /// directory renamed since still leads to it.
    fn parent_record(&self, at: At, mask: u32, w: &mut Vec<u64>) {
        let t = at.1.trim_end_matches('/');
        let (dir, name) = match t.rfind('/') {
            Some(cut) => (if cut == 0 { "/" } else { &t[..cut] }, &t[cut + 1..]),
            None => (".", t),
        };
        if name.is_empty() {
            return;
        }
        if name == "." || name == ".." {
            // Its name in its directory is only known from its path.
            let abs = self.at_path(at.0, at.1, false).unwrap_or_default();
            if abs.starts_with('/') && !abs.ends_with("/.") && !abs.ends_with("/..") && abs != at.1 {
                self.parent_record((AT_FDCWD, &abs), mask, w);
            }
            return;
        }
        if let Ok(p) = self.stat_at(at.0, dir, 0) {
            record(w, (p.dev, p.ino), mask, name.as_bytes());
        }
    }

    fn send_events(&self, records: Vec<u64>) {
        if records.is_empty() {
            return;
        }
        let mut m = alloc::vec![ctl::INOTIFY, proto::inotify::EVENT];
        m.extend(records);
        self.ctl(&m);
    }
}

fn record(w: &mut Vec<u64>, key: (u64, u64), mask: u32, name: &[u8]) {
    w.extend([key.0, key.1, mask as u64, name.len() as u64]);
    w.extend(proto::name_words(name));
}
