//! SysV IPC as Linux keeps it: keys and ids, permissions, semaphore sets
//! with their undo values, message queues, the limits of `/proc/sys/kernel`
//! and the structures `*ctl` reads and writes (x86_64's `ipc64_perm`,
//! `shmid64_ds`, `semid64_ds`, `msqid64_ds`, the `*info` records). The
//! shared server holds one `Ipc` for every Linux process; the memory of a
//! shared segment is the kernel's (this holds only its record).

use crate::errno;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

pub const IPC_PRIVATE: i32 = 0;
pub const IPC_CREAT: u64 = 0o1000;
pub const IPC_EXCL: u64 = 0o2000;
pub const IPC_NOWAIT: u64 = 0o4000;

pub const IPC_RMID: u64 = 0;
pub const IPC_SET: u64 = 1;
pub const IPC_STAT: u64 = 2;
pub const IPC_INFO: u64 = 3;
/// musl asks for the 64-bit structures with this bit in the command.
pub const IPC_64: u64 = 0x100;

pub const SHM_LOCK: u64 = 11;
pub const SHM_UNLOCK: u64 = 12;
pub const SHM_STAT: u64 = 13;
pub const SHM_INFO: u64 = 14;
pub const SHM_STAT_ANY: u64 = 15;
pub const SHM_RDONLY: u64 = 0o10000;
pub const SHM_RND: u64 = 0o20000;
pub const SHM_REMAP: u64 = 0o40000;
pub const SHM_EXEC: u64 = 0o100000;
pub const SHM_HUGETLB: u64 = 0o4000;
/// A segment's mode bits: IPC_RMID came while it was attached.
pub const SHM_DEST: u32 = 0o1000;
pub const SHM_LOCKED: u32 = 0o2000;
pub const SHMLBA: u64 = 4096;

pub const GETPID: u64 = 11;
pub const GETVAL: u64 = 12;
pub const GETALL: u64 = 13;
pub const GETNCNT: u64 = 14;
pub const GETZCNT: u64 = 15;
pub const SETVAL: u64 = 16;
pub const SETALL: u64 = 17;
pub const SEM_STAT: u64 = 18;
pub const SEM_INFO: u64 = 19;
pub const SEM_STAT_ANY: u64 = 20;
pub const SEM_UNDO: u16 = 0x1000;

pub const MSG_STAT: u64 = 11;
pub const MSG_INFO: u64 = 12;
pub const MSG_STAT_ANY: u64 = 13;
pub const MSG_NOERROR: u64 = 0o10000;
pub const MSG_EXCEPT: u64 = 0o20000;
pub const MSG_COPY: u64 = 0o40000;

/// Ids are an index plus a sequence number times this (Linux's IPCMNI):
/// an id used again after IPC_RMID is a different number.
pub const SEQ_MULTIPLIER: i64 = 32768;
/// Largest semaphore value.
pub const SEMVMX: i32 = 32767;
/// Largest undo value a process may collect.
pub const SEMAEM: i32 = SEMVMX;

/// Seconds of the real-time clock at boot (the kernel's CLOCK_REALTIME
/// counts from it), for the records' times.
pub const EPOCH_AT_BOOT: u64 = 1_704_067_200;

/// Who makes a call: its effective user and group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Who {
    pub uid: u32,
    pub gid: u32,
}

impl Who {
    /// Root has CAP_IPC_OWNER and CAP_SYS_ADMIN.
    pub fn root(self) -> bool {
        self.uid == 0
    }
}

/// `/proc/sys/kernel`'s IPC settings (Linux 6.1's defaults), each one
/// writable by root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub shmmax: u64,
    pub shmall: u64,
    pub shmmni: u64,
    pub msgmax: u64,
    pub msgmnb: u64,
    pub msgmni: u64,
    /// semmsl, semmns, semopm, semmni.
    pub sem: [u64; 4],
    /// The id the next new object of each kind (shm, sem, msg) gets, or
    /// -1: any free one.
    pub next_id: [i64; 3],
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            shmmax: u64::MAX - (1 << 24),
            shmall: u64::MAX - (1 << 24),
            shmmni: 4096,
            msgmax: 8192,
            msgmnb: 16384,
            msgmni: 32000,
            sem: [32000, 1_024_000_000, 500, 32000],
            next_id: [-1; 3],
        }
    }
}

/// The names of the settings under `/proc/sys/kernel`.
pub const SETTINGS: [&str; 10] = [
    "shmmax",
    "shmall",
    "shmmni",
    "msgmax",
    "msgmnb",
    "msgmni",
    "sem",
    "shm_next_id",
    "sem_next_id",
    "msg_next_id",
];

impl Limits {
    /// A setting's text, as Linux prints it.
    pub fn text(&self, name: &str) -> Option<alloc::string::String> {
        use alloc::format;
        Some(match name {
            "shmmax" => format!("{}\n", self.shmmax),
            "shmall" => format!("{}\n", self.shmall),
            "shmmni" => format!("{}\n", self.shmmni),
            "msgmax" => format!("{}\n", self.msgmax),
            "msgmnb" => format!("{}\n", self.msgmnb),
            "msgmni" => format!("{}\n", self.msgmni),
            "sem" => format!("{}\t{}\t{}\t{}\n", self.sem[0], self.sem[1], self.sem[2], self.sem[3]),
            "shm_next_id" => format!("{}\n", self.next_id[0]),
            "sem_next_id" => format!("{}\n", self.next_id[1]),
            "msg_next_id" => format!("{}\n", self.next_id[2]),
            _ => return None,
        })
    }

    /// Sets a setting from what was written to its file (EINVAL if it is
    /// not numbers, or out of range).
    pub fn set(&mut self, name: &str, text: &[u8]) -> Result<(), i64> {
        let s = core::str::from_utf8(text).map_err(|_| errno::EINVAL)?;
        let mut nums = s.split_ascii_whitespace().map(|w| w.parse::<i64>());
        let mut one = || match nums.next() {
            Some(Ok(v)) => Ok(v),
            _ => Err(errno::EINVAL),
        };
        let ids = |v: i64| {
            if (0..=i32::MAX as i64).contains(&v) {
                Ok(v as u64)
            } else {
                Err(errno::EINVAL)
            }
        };
        match name {
            "shmmax" => self.shmmax = one()? as u64,
            "shmall" => self.shmall = one()? as u64,
            "shmmni" => self.shmmni = ids(one()?)?.min(SEQ_MULTIPLIER as u64),
            "msgmax" => self.msgmax = ids(one()?)?,
            "msgmnb" => self.msgmnb = ids(one()?)?,
            "msgmni" => self.msgmni = ids(one()?)?.min(SEQ_MULTIPLIER as u64),
            "sem" => {
                let mut v = [0u64; 4];
                for x in &mut v {
                    *x = ids(one()?)?;
                }
                v[3] = v[3].min(SEQ_MULTIPLIER as u64);
                self.sem = v;
            }
            "shm_next_id" | "sem_next_id" | "msg_next_id" => {
                let v = one()?;
                if v < -1 || v > i32::MAX as i64 {
                    return Err(errno::EINVAL);
                }
                let i = ["shm_next_id", "sem_next_id", "msg_next_id"]
                    .iter()
                    .position(|n| *n == name)
                    .unwrap_or(0);
                self.next_id[i] = v;
            }
            _ => return Err(errno::ENOENT),
        }
        Ok(())
    }
}

/// An object's owner, creator and mode (`ipc64_perm`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Perm {
    pub key: i32,
    pub uid: u32,
    pub gid: u32,
    pub cuid: u32,
    pub cgid: u32,
    pub mode: u32,
    pub seq: u16,
}

impl Perm {
    fn new(key: i32, who: Who, flags: u64) -> Perm {
        Perm {
            key,
            uid: who.uid,
            gid: who.gid,
            cuid: who.uid,
            cgid: who.gid,
            mode: (flags & 0o777) as u32,
            seq: 0,
        }
    }

    /// Linux's `ipcperms`: may `who` have the access `flag` asks for (its
    /// rwx bits in any of the three places)?
    pub fn allows(&self, who: Who, flag: u64) -> bool {
        let want = ((flag >> 6) | (flag >> 3) | flag) as u32 & 7;
        let granted = if who.uid == self.cuid || who.uid == self.uid {
            self.mode >> 6
        } else if who.gid == self.cgid || who.gid == self.gid {
            self.mode >> 3
        } else {
            self.mode
        };
        want & !granted & 7 == 0 || who.root()
    }

    /// IPC_SET and IPC_RMID: the owner, the creator or root.
    pub fn may_change(&self, who: Who) -> bool {
        who.root() || who.uid == self.uid || who.uid == self.cuid
    }

    /// IPC_SET: the new owner and mode bits from a `*_ds` record.
    pub fn set_from(&mut self, ds: &[u8]) {
        self.uid = u32_at(ds, 4);
        self.gid = u32_at(ds, 8);
        self.mode = (self.mode & !0o777) | (u32_at(ds, 20) & 0o777);
    }

    /// `ipc64_perm`'s 48 bytes.
    pub fn write(&self, out: &mut [u8]) {
        put(out, 0, &self.key.to_le_bytes());
        put(out, 4, &self.uid.to_le_bytes());
        put(out, 8, &self.gid.to_le_bytes());
        put(out, 12, &self.cuid.to_le_bytes());
        put(out, 16, &self.cgid.to_le_bytes());
        put(out, 20, &self.mode.to_le_bytes());
        put(out, 24, &self.seq.to_le_bytes());
    }
}

fn put(out: &mut [u8], at: usize, b: &[u8]) {
    if let Some(d) = out.get_mut(at..at + b.len()) {
        d.copy_from_slice(b);
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap_or([0; 4])))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
}

/// The objects of one kind by id.
pub struct Table<T> {
    slots: Vec<Option<(Perm, T)>>,
    seq: u16,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table {
            slots: Vec::new(),
            seq: 0,
        }
    }
}

impl<T> Table<T> {
    fn id_of(index: usize, seq: u16) -> i64 {
        seq as i64 * SEQ_MULTIPLIER + index as i64
    }

    /// How many there are.
    pub fn count(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    /// The highest index in use (`*_INFO`'s return value), 0 if none.
    pub fn max_index(&self) -> usize {
        self.slots.iter().rposition(|s| s.is_some()).unwrap_or(0)
    }

    /// The object `id` names (EINVAL: none, or one removed since).
    pub fn get(&self, id: i64) -> Result<&(Perm, T), i64> {
        if id < 0 {
            return Err(errno::EINVAL);
        }
        match self.slots.get((id % SEQ_MULTIPLIER) as usize) {
            Some(Some(e)) if e.0.seq as i64 == id / SEQ_MULTIPLIER => Ok(e),
            _ => Err(errno::EINVAL),
        }
    }

    pub fn get_mut(&mut self, id: i64) -> Result<&mut (Perm, T), i64> {
        if id < 0 {
            return Err(errno::EINVAL);
        }
        match self.slots.get_mut((id % SEQ_MULTIPLIER) as usize) {
            Some(Some(e)) if e.0.seq as i64 == id / SEQ_MULTIPLIER => Ok(e),
            _ => Err(errno::EINVAL),
        }
    }

    /// The object at `index` and its id (`*_STAT`, which takes an index;
    /// of an id, Linux takes the index part).
    pub fn at_index(&self, index: i64) -> Result<(i64, &(Perm, T)), i64> {
        if index < 0 {
            return Err(errno::EINVAL);
        }
        let i = (index % SEQ_MULTIPLIER) as usize;
        let e = self.slots.get(i).and_then(|s| s.as_ref()).ok_or(errno::EINVAL)?;
        Ok((Self::id_of(i, e.0.seq), e))
    }

    fn by_key(&self, key: i32) -> Option<i64> {
        self.slots.iter().enumerate().find_map(|(i, s)| match s {
            Some((p, _)) if p.key == key => Some(Self::id_of(i, p.seq)),
            _ => None,
        })
    }

    /// A new object, at index `next_id`'s if that is set (and taken from
    /// it), else the lowest free one. ENOSPC past `max` objects.
    fn insert(&mut self, mut perm: Perm, value: T, max: u64, next_id: &mut i64) -> Result<i64, i64> {
        if self.count() as u64 >= max {
            return Err(errno::ENOSPC);
        }
        let (index, seq) = if *next_id >= 0 {
            // As Linux: that index or the first free one above it, with
            // that sequence number.
            let want = *next_id;
            let from = (want % SEQ_MULTIPLIER) as usize;
            let index = (from..SEQ_MULTIPLIER as usize)
                .find(|&i| self.slots.get(i).is_none_or(|s| s.is_none()))
                .ok_or(errno::ENOSPC)?;
            *next_id = -1;
            (index, (want / SEQ_MULTIPLIER) as u16)
        } else {
            let index = self.slots.iter().position(|s| s.is_none()).unwrap_or(self.slots.len());
            self.seq = self.seq.wrapping_add(1) % (i32::MAX as i64 / SEQ_MULTIPLIER) as u16;
            (index, self.seq)
        };
        if index >= self.slots.len() {
            self.slots
                .try_reserve(index + 1 - self.slots.len())
                .map_err(|_| errno::ENOMEM)?;
            self.slots.resize_with(index + 1, || None);
        }
        perm.seq = seq;
        self.slots[index] = Some((perm, value));
        Ok(Self::id_of(index, seq))
    }

    /// Takes object `id` out.
    pub fn remove(&mut self, id: i64) -> Option<(Perm, T)> {
        self.get(id).ok()?;
        let s = self.slots.get_mut((id % SEQ_MULTIPLIER) as usize)?.take();
        while self.slots.last().is_some_and(|s| s.is_none()) {
            self.slots.pop();
        }
        s
    }

    /// Every object with its id.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &(Perm, T))> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|e| (Self::id_of(i, e.0.seq), e)))
    }

    /// `*get`: the id for `key`, made anew if the flags ask and allow it
    /// (at most `max` objects, `next_id` as the setting says); `fits`
    /// says whether an existing object suits the request (EINVAL if too
    /// small), `make` makes a new one's value.
    pub fn lookup_or_make(
        &mut self,
        key: i32,
        flags: u64,
        who: Who,
        (max, next_id): (u64, &mut i64),
        fits: impl FnOnce(&T) -> Result<(), i64>,
        make: impl FnOnce() -> Result<T, i64>,
    ) -> Result<i64, i64> {
        if key != IPC_PRIVATE
            && let Some(id) = self.by_key(key)
        {
            if flags & (IPC_CREAT | IPC_EXCL) == IPC_CREAT | IPC_EXCL {
                return Err(errno::EEXIST);
            }
            let (perm, value) = self.get(id)?;
            if !perm.allows(who, flags) {
                return Err(errno::EACCES);
            }
            fits(value)?;
            return Ok(id);
        }
        if key != IPC_PRIVATE && flags & IPC_CREAT == 0 {
            return Err(errno::ENOENT);
        }
        if self.count() as u64 >= max {
            return Err(errno::ENOSPC);
        }
        let value = make()?;
        self.insert(Perm::new(key, who, flags), value, max, next_id)
    }
}

/// Seconds of the real-time clock from nanoseconds since boot.
pub fn seconds(now_ns: u64) -> i64 {
    (now_ns / 1_000_000_000 + EPOCH_AT_BOOT) as i64
}

// ---- shared memory ----

/// A segment's record; its memory is the server's mapping at `at`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Segment {
    pub size: u64,
    pub at: u64,
    pub atime: i64,
    pub dtime: i64,
    pub ctime: i64,
    pub cpid: u32,
    pub lpid: u32,
    /// Its pages are all present: the kernel fills a segment's memory
    /// when it is first attached (until then none is).
    pub present: bool,
}

impl Segment {
    /// `shmid64_ds` (112 bytes) with `nattch` attachments.
    pub fn ds(&self, perm: &Perm, nattch: u64) -> [u8; 112] {
        let mut b = [0u8; 112];
        perm.write(&mut b);
        put(&mut b, 48, &self.size.to_le_bytes());
        put(&mut b, 56, &self.atime.to_le_bytes());
        put(&mut b, 64, &self.dtime.to_le_bytes());
        put(&mut b, 72, &self.ctime.to_le_bytes());
        put(&mut b, 80, &self.cpid.to_le_bytes());
        put(&mut b, 84, &self.lpid.to_le_bytes());
        put(&mut b, 88, &nattch.to_le_bytes());
        b
    }
}

/// `shminfo64` (IPC_INFO).
pub fn shminfo(l: &Limits) -> [u8; 72] {
    let mut b = [0u8; 72];
    for (i, v) in [l.shmmax, 1, l.shmmni, l.shmmni, l.shmall].iter().enumerate() {
        put(&mut b, i * 8, &v.to_le_bytes());
    }
    b
}

/// `shm_info` (SHM_INFO): segments in use, pages allocated and resident.
pub fn shm_info(used: u32, pages: u64, resident: u64) -> [u8; 48] {
    let mut b = [0u8; 48];
    put(&mut b, 0, &used.to_le_bytes());
    put(&mut b, 8, &pages.to_le_bytes());
    put(&mut b, 16, &resident.to_le_bytes());
    b
}

// ---- semaphores ----

/// One `struct sembuf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemOp {
    pub num: u16,
    pub op: i16,
    pub flags: u16,
}

impl SemOp {
    /// From `nsops` records of 6 bytes.
    pub fn parse(b: &[u8]) -> Vec<SemOp> {
        b.chunks_exact(6)
            .map(|c| SemOp {
                num: u16::from_le_bytes([c[0], c[1]]),
                op: i16::from_le_bytes([c[2], c[3]]),
                flags: u16::from_le_bytes([c[4], c[5]]),
            })
            .collect()
    }
}

#[derive(Clone, Debug, Default)]
pub struct SemSet {
    pub vals: Vec<i32>,
    /// The pid of the last process to change each one.
    pub pids: Vec<u32>,
    pub otime: i64,
    pub ctime: i64,
}

/// What a semop does now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SemStep {
    /// Applied.
    Done,
    /// It must wait for semaphore `num` to grow (false) or be zero (true).
    Wait { num: u16, zero: bool },
}

impl SemSet {
    pub fn new(n: usize) -> Result<SemSet, i64> {
        let mut vals = Vec::new();
        vals.try_reserve(n).map_err(|_| errno::ENOMEM)?;
        vals.resize(n, 0);
        let mut pids = Vec::new();
        pids.try_reserve(n).map_err(|_| errno::ENOMEM)?;
        pids.resize(n, 0);
        Ok(SemSet {
            vals,
            pids,
            otime: 0,
            ctime: 0,
        })
    }

    /// `semid64_ds` (104 bytes).
    pub fn ds(&self, perm: &Perm) -> [u8; 104] {
        let mut b = [0u8; 104];
        perm.write(&mut b);
        put(&mut b, 48, &self.otime.to_le_bytes());
        put(&mut b, 64, &self.ctime.to_le_bytes());
        put(&mut b, 80, &(self.vals.len() as u64).to_le_bytes());
        b
    }

    /// The operations all at once or none: ERANGE past SEMVMX (or an undo
    /// value past SEMAEM), or where the first one that cannot go on now
    /// waits. `undo` is the caller's undo values for this set.
    pub fn apply(&mut self, ops: &[SemOp], pid: u32, undo: &mut Vec<i32>) -> Result<SemStep, i64> {
        let mut vals = self.vals.clone();
        for o in ops {
            let v = vals.get_mut(o.num as usize).ok_or(errno::EFBIG)?;
            let op = o.op as i32;
            if op == 0 {
                if *v != 0 {
                    return Ok(SemStep::Wait { num: o.num, zero: true });
                }
            } else if *v + op < 0 {
                return Ok(SemStep::Wait {
                    num: o.num,
                    zero: false,
                });
            } else if *v + op > SEMVMX {
                return Err(errno::ERANGE);
            } else {
                *v += op;
            }
        }
        if undo.len() < vals.len() {
            undo.resize(vals.len(), 0);
        }
        let mut new_undo = undo.clone();
        for o in ops.iter().filter(|o| o.flags & SEM_UNDO != 0) {
            let u = &mut new_undo[o.num as usize];
            *u -= o.op as i32;
            if !(-SEMAEM - 1..=SEMAEM).contains(u) {
                return Err(errno::ERANGE);
            }
        }
        *undo = new_undo;
        // Linux records the pid of a wait-for-zero too.
        for o in ops {
            self.pids[o.num as usize] = pid;
        }
        self.vals = vals;
        Ok(SemStep::Done)
    }

    /// A process's undo values applied as it ends (clamped, as Linux does).
    pub fn undo(&mut self, adj: &[i32], pid: u32) {
        for (i, &a) in adj.iter().enumerate().filter(|(_, a)| **a != 0) {
            if let Some(v) = self.vals.get_mut(i) {
                *v = (*v + a).clamp(0, SEMVMX);
                self.pids[i] = pid;
            }
        }
    }
}

/// `seminfo` (IPC_INFO, SEM_INFO): with SEM_INFO, `semusz` is the number
/// of sets and `semaem` of semaphores.
pub fn seminfo(l: &Limits, info: Option<(u32, u32)>) -> [u8; 40] {
    let [msl, mns, opm, mni] = l.sem.map(|v| v.min(i32::MAX as u64) as i32);
    let (usz, aem) = match info {
        Some((sets, sems)) => (sets as i32, sems as i32),
        None => (20, SEMAEM),
    };
    let v = [mni, mni, mns, mns, msl, opm, opm, usz, SEMVMX, aem];
    let mut b = [0u8; 40];
    for (i, x) in v.iter().enumerate() {
        put(&mut b, i * 4, &x.to_le_bytes());
    }
    b
}

/// Every process's undo values: (pid, set id) → value per semaphore.
#[derive(Default)]
pub struct Undo(pub BTreeMap<(u32, i64), Vec<i32>>);

impl Undo {
    /// SETVAL and SETALL clear the set's undo values for every process.
    pub fn clear(&mut self, id: i64, num: Option<usize>) {
        for ((_, set), adj) in self.0.iter_mut() {
            if *set == id {
                match num {
                    Some(n) => {
                        if let Some(a) = adj.get_mut(n) {
                            *a = 0;
                        }
                    }
                    None => adj.iter_mut().for_each(|a| *a = 0),
                }
            }
        }
    }
}

// ---- message queues ----

#[derive(Clone, Debug, Default)]
pub struct Queue {
    pub msgs: VecDeque<(i64, Vec<u8>)>,
    pub bytes: u64,
    pub qbytes: u64,
    pub stime: i64,
    pub rtime: i64,
    pub ctime: i64,
    pub lspid: u32,
    pub lrpid: u32,
}

impl Queue {
    pub fn new(qbytes: u64) -> Queue {
        Queue {
            qbytes,
            ..Queue::default()
        }
    }

    /// `msqid64_ds` (120 bytes).
    pub fn ds(&self, perm: &Perm) -> [u8; 120] {
        let mut b = [0u8; 120];
        perm.write(&mut b);
        put(&mut b, 48, &self.stime.to_le_bytes());
        put(&mut b, 56, &self.rtime.to_le_bytes());
        put(&mut b, 64, &self.ctime.to_le_bytes());
        put(&mut b, 72, &self.bytes.to_le_bytes());
        put(&mut b, 80, &(self.msgs.len() as u64).to_le_bytes());
        put(&mut b, 88, &self.qbytes.to_le_bytes());
        put(&mut b, 96, &self.lspid.to_le_bytes());
        put(&mut b, 100, &self.lrpid.to_le_bytes());
        b
    }

    /// Whether a message of `len` bytes fits now (Linux counts messages
    /// against the byte limit too).
    pub fn has_room(&self, len: u64) -> bool {
        self.bytes + len <= self.qbytes && (self.msgs.len() as u64) < self.qbytes.max(1)
    }

    /// The message msgrcv with `typ` and `flags` takes, if there is one.
    pub fn find(&self, typ: i64, flags: u64) -> Option<usize> {
        if typ == 0 {
            return (!self.msgs.is_empty()).then_some(0);
        }
        if typ > 0 {
            let except = flags & MSG_EXCEPT != 0;
            return self.msgs.iter().position(|(t, _)| (*t == typ) != except);
        }
        let limit = typ.checked_neg().unwrap_or(i64::MAX);
        let mut best: Option<(usize, i64)> = None;
        for (i, (t, _)) in self.msgs.iter().enumerate() {
            if *t <= limit && best.is_none_or(|(_, b)| *t < b) {
                best = Some((i, *t));
            }
        }
        best.map(|(i, _)| i)
    }

    pub fn push(&mut self, typ: i64, data: Vec<u8>) {
        self.bytes += data.len() as u64;
        self.msgs.push_back((typ, data));
    }

    pub fn take(&mut self, i: usize) -> Option<(i64, Vec<u8>)> {
        let m = self.msgs.remove(i)?;
        self.bytes -= m.1.len() as u64;
        Some(m)
    }
}

/// `msginfo` (IPC_INFO, MSG_INFO): with MSG_INFO, `msgpool` is the number
/// of queues, `msgmap` of messages and `msgtql` of bytes queued.
pub fn msginfo(l: &Limits, info: Option<(u32, u32, u32)>) -> [u8; 32] {
    let c = |v: u64| v.min(i32::MAX as u64) as i32;
    let (pool, map, tql) = match info {
        Some((q, m, b)) => (q as i32, m as i32, b as i32),
        None => (c(l.msgmni * l.msgmnb / 1024), c(l.msgmnb), c(l.msgmnb)),
    };
    let v = [pool, map, c(l.msgmax), c(l.msgmnb), c(l.msgmni), 16, tql];
    let mut b = [0u8; 32];
    for (i, x) in v.iter().enumerate() {
        put(&mut b, i * 4, &x.to_le_bytes());
    }
    put(&mut b, 28, &0x0ffe_u16.to_le_bytes());
    b
}

/// IPC_SET of a message queue: the new byte limit (EPERM above msgmnb
/// for anyone but root).
pub fn msg_set_qbytes(ds: &[u8], l: &Limits, who: Who) -> Result<u64, i64> {
    let q = u64_at(ds, 88);
    if q > l.msgmnb && !who.root() {
        return Err(errno::EPERM);
    }
    Ok(q)
}

/// Every SysV object of the system.
#[derive(Default)]
pub struct Ipc {
    pub limits: Limits,
    pub shm: Table<Segment>,
    pub sem: Table<SemSet>,
    pub msg: Table<Queue>,
    pub undo: Undo,
}

impl Ipc {
    pub fn new() -> Ipc {
        Ipc::default()
    }

    /// semget's checks and set (the record only).
    pub fn semget(&mut self, key: i32, nsems: i64, flags: u64, who: Who, now: i64) -> Result<i64, i64> {
        let l = self.limits;
        if nsems < 0 || nsems as u64 > l.sem[0] {
            return Err(errno::EINVAL);
        }
        let total: usize = self.sem.iter().map(|(_, (_, s))| s.vals.len()).sum();
        self.sem.lookup_or_make(
            key,
            flags,
            who,
            (l.sem[3], &mut self.limits.next_id[1]),
            |s| {
                if nsems as usize > s.vals.len() {
                    Err(errno::EINVAL)
                } else {
                    Ok(())
                }
            },
            || {
                if nsems == 0 {
                    return Err(errno::EINVAL);
                }
                if (total + nsems as usize) as u64 > l.sem[1] {
                    return Err(errno::ENOSPC);
                }
                let mut s = SemSet::new(nsems as usize)?;
                s.ctime = now;
                Ok(s)
            },
        )
    }

    /// msgget (the record only).
    pub fn msgget(&mut self, key: i32, flags: u64, who: Who, now: i64) -> Result<i64, i64> {
        let l = self.limits;
        self.msg.lookup_or_make(
            key,
            flags,
            who,
            (l.msgmni, &mut self.limits.next_id[2]),
            |_| Ok(()),
            || {
                let mut q = Queue::new(l.msgmnb);
                q.ctime = now;
                Ok(q)
            },
        )
    }

    /// The undo values of `pid` for set `id`, made if missing.
    pub fn undo_of(&mut self, pid: u32, id: i64) -> &mut Vec<i32> {
        self.undo.0.entry((pid, id)).or_default()
    }

    /// The process ended: its undo values are applied.
    pub fn exit(&mut self, pid: u32) {
        let mine: Vec<(i64, Vec<i32>)> = self
            .undo
            .0
            .iter()
            .filter(|((p, _), _)| *p == pid)
            .map(|((_, id), a)| (*id, a.clone()))
            .collect();
        for (id, adj) in mine {
            self.undo.0.remove(&(pid, id));
            if let Ok((_, s)) = self.sem.get_mut(id) {
                s.undo(&adj, pid);
            }
        }
    }

    /// A set went: nobody's undo values for it stay.
    pub fn forget_set(&mut self, id: i64) {
        self.undo.0.retain(|(_, s), _| *s != id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    const ROOT: Who = Who { uid: 0, gid: 0 };
    const NOBODY: Who = Who { uid: 65534, gid: 65534 };

    #[test]
    fn keys_and_ids() {
        let mut ipc = Ipc::new();
        let a = ipc.msgget(42, IPC_CREAT | 0o600, ROOT, 0).unwrap();
        assert_eq!(ipc.msgget(42, 0, ROOT, 0), Ok(a));
        assert_eq!(ipc.msgget(42, IPC_CREAT | IPC_EXCL, ROOT, 0), Err(errno::EEXIST));
        assert_eq!(ipc.msgget(43, 0, ROOT, 0), Err(errno::ENOENT));
        assert_eq!(ipc.msgget(42, 0o400, NOBODY, 0), Err(errno::EACCES));
        let b = ipc.msgget(IPC_PRIVATE, 0, ROOT, 0).unwrap();
        assert_ne!(a, b);
        assert_eq!(ipc.msg.at_index(a).map(|(id, _)| id), Ok(a), "*_STAT of an id");
        ipc.msg.remove(a);
        assert_eq!(ipc.msg.get(a).err(), Some(errno::EINVAL));
        let c = ipc.msgget(42, IPC_CREAT, ROOT, 0).unwrap();
        assert_ne!(a, c, "an id is not used again at once");
    }

    #[test]
    fn next_id_and_limits() {
        let mut ipc = Ipc::new();
        ipc.limits.set("msg_next_id", b"98765\n").unwrap();
        assert_eq!(ipc.msgget(IPC_PRIVATE, 0, ROOT, 0), Ok(98765));
        assert_eq!(ipc.limits.next_id[2], -1);
        ipc.limits.set("msg_next_id", b"98765").unwrap();
        assert_eq!(ipc.msgget(IPC_PRIVATE, 0, ROOT, 0), Ok(98766), "the next free index");
        ipc.limits.set("msgmni", b"3").unwrap();
        ipc.msgget(IPC_PRIVATE, 0, ROOT, 0).unwrap();
        assert_eq!(ipc.msgget(IPC_PRIVATE, 0, ROOT, 0), Err(errno::ENOSPC));
        assert_eq!(ipc.limits.set("sem", b"1 2 x 4"), Err(errno::EINVAL));
        assert_eq!(ipc.limits.text("sem").unwrap(), "32000\t1024000000\t500\t32000\n");
    }

    #[test]
    fn semop_all_or_nothing() {
        let mut s = SemSet::new(2).unwrap();
        let mut undo = Vec::new();
        let up = [SemOp {
            num: 0,
            op: 2,
            flags: SEM_UNDO,
        }];
        assert_eq!(s.apply(&up, 7, &mut undo), Ok(SemStep::Done));
        assert_eq!(undo, [-2, 0]);
        let both = [
            SemOp {
                num: 0,
                op: -1,
                flags: 0,
            },
            SemOp {
                num: 1,
                op: -1,
                flags: 0,
            },
        ];
        assert_eq!(s.apply(&both, 8, &mut undo), Ok(SemStep::Wait { num: 1, zero: false }));
        assert_eq!(s.vals, [2, 0], "nothing applied");
        let zero = [SemOp {
            num: 0,
            op: 0,
            flags: 0,
        }];
        assert_eq!(s.apply(&zero, 8, &mut undo), Ok(SemStep::Wait { num: 0, zero: true }));
        let big = [SemOp {
            num: 0,
            op: i16::MAX,
            flags: 0,
        }];
        assert_eq!(s.apply(&big, 8, &mut undo), Err(errno::ERANGE));
        let bad = [SemOp {
            num: 5,
            op: 1,
            flags: 0,
        }];
        assert_eq!(s.apply(&bad, 8, &mut undo), Err(errno::EFBIG));
        s.undo(&undo, 7);
        assert_eq!(s.vals, [0, 0]);
    }

    #[test]
    fn message_types() {
        let mut q = Queue::new(100);
        q.push(3, vec![1]);
        q.push(1, vec![2, 2]);
        q.push(2, vec![3]);
        assert_eq!(q.find(0, 0), Some(0));
        assert_eq!(q.find(2, 0), Some(2));
        assert_eq!(q.find(3, MSG_EXCEPT), Some(1));
        assert_eq!(q.find(-2, 0), Some(1));
        assert_eq!(q.find(5, 0), None);
        assert_eq!(q.find(i64::MIN, 0), Some(1));
        assert_eq!(q.bytes, 4);
        assert!(q.has_room(96) && !q.has_room(97));
        q.take(1);
        assert_eq!(q.bytes, 2);
    }

    #[test]
    fn permissions() {
        let p = Perm::new(1, ROOT, 0o640);
        assert!(p.allows(ROOT, 0o777));
        assert!(!p.allows(NOBODY, 0o400));
        assert!(p.allows(Who { uid: 5, gid: 0 }, 0o040));
        assert!(!p.allows(Who { uid: 5, gid: 0 }, 0o020));
        assert!(!p.may_change(NOBODY));
    }

    #[test]
    fn records() {
        let p = Perm::new(7, Who { uid: 1, gid: 2 }, 0o600);
        let seg = Segment {
            size: 4096,
            cpid: 9,
            ..Segment::default()
        };
        let b = seg.ds(&p, 3);
        assert_eq!(u32_at(&b, 0), 7);
        assert_eq!(u32_at(&b, 20), 0o600);
        assert_eq!(u64_at(&b, 48), 4096);
        assert_eq!(u32_at(&b, 80), 9);
        assert_eq!(u64_at(&b, 88), 3);
        let s = SemSet::new(3).unwrap();
        assert_eq!(u64_at(&s.ds(&p), 80), 3);
    }
}
