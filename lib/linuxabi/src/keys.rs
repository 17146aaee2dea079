//! The kernel key retention service as Linux keeps it (`security/keys`):
//! keys with serial numbers, owners, permissions and quotas, of the types
//! "user", "logon" and "keyring"; the special keyrings of a thread, a
//! process, a session and a user; add_key, request_key and the keyctl
//! operations. The shared server holds one `Keys` for every Linux process
//! and copies the callers' strings and payloads in and out; this is the
//! logic, tested on the host.
//!
//! A key lives while something holds it: a keyring linking it, or a
//! process, thread or user whose special keyring it is. Keyrings cannot
//! link in a cycle (EDEADLK), so counting holders is enough to free every
//! key nothing reaches.

use crate::errno;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

pub const SPEC_THREAD_KEYRING: i32 = -1;
pub const SPEC_PROCESS_KEYRING: i32 = -2;
pub const SPEC_SESSION_KEYRING: i32 = -3;
pub const SPEC_USER_KEYRING: i32 = -4;
pub const SPEC_USER_SESSION_KEYRING: i32 = -5;
pub const SPEC_GROUP_KEYRING: i32 = -6;
pub const SPEC_REQKEY_AUTH_KEY: i32 = -7;
pub const SPEC_REQUESTOR_KEYRING: i32 = -8;

pub const REQKEY_DEFL_NO_CHANGE: i32 = -1;
pub const REQKEY_DEFL_DEFAULT: i32 = 0;
pub const REQKEY_DEFL_THREAD_KEYRING: i32 = 1;
pub const REQKEY_DEFL_PROCESS_KEYRING: i32 = 2;
pub const REQKEY_DEFL_SESSION_KEYRING: i32 = 3;
pub const REQKEY_DEFL_USER_KEYRING: i32 = 4;
pub const REQKEY_DEFL_USER_SESSION_KEYRING: i32 = 5;
pub const REQKEY_DEFL_GROUP_KEYRING: i32 = 6;
pub const REQKEY_DEFL_REQUESTOR_KEYRING: i32 = 7;

/// keyctl's operations.
pub mod op {
    pub const GET_KEYRING_ID: u64 = 0;
    pub const JOIN_SESSION_KEYRING: u64 = 1;
    pub const UPDATE: u64 = 2;
    pub const REVOKE: u64 = 3;
    pub const CHOWN: u64 = 4;
    pub const SETPERM: u64 = 5;
    pub const DESCRIBE: u64 = 6;
    pub const CLEAR: u64 = 7;
    pub const LINK: u64 = 8;
    pub const UNLINK: u64 = 9;
    pub const SEARCH: u64 = 10;
    pub const READ: u64 = 11;
    pub const SET_REQKEY_KEYRING: u64 = 14;
    pub const SET_TIMEOUT: u64 = 15;
    pub const INVALIDATE: u64 = 21;
    pub const GET_PERSISTENT: u64 = 22;
}

/// One class's permission bits (shifted: possessor 24, user 16, group 8,
/// other 0).
pub const VIEW: u32 = 0x01;
pub const READ: u32 = 0x02;
pub const WRITE: u32 = 0x04;
pub const SEARCH: u32 = 0x08;
pub const LINK: u32 = 0x10;
pub const SETATTR: u32 = 0x20;
pub const ALL: u32 = 0x3f;
const POS: u32 = 24;
const USR: u32 = 16;

/// A user or logon key's payload at most (Linux's user_preparse).
pub const USER_PAYLOAD_MAX: usize = 32767;
/// add_key's payload at most (then the type's own limit applies).
pub const ADD_PAYLOAD_MAX: u64 = 1024 * 1024 - 1;
/// KEYCTL_UPDATE's payload at most (one page, as Linux copies it).
pub const UPDATE_PAYLOAD_MAX: u64 = 4096;
/// A description's length at most (Linux's KEY_MAX_DESC_SIZE less its
/// terminating zero).
pub const DESC_MAX: usize = 4095;
/// Links a keyring holds at most: a keyring's links are the server's
/// memory, which no quota counts.
pub const LINKS_MAX: usize = 65536;
/// Bytes charged to all keys together at most, whatever root sets the
/// quotas to: the payloads are the server's heap.
pub const TOTAL_BYTES_MAX: u64 = 64 << 20;
/// Keys at most, whatever root sets the quotas to.
pub const TOTAL_KEYS_MAX: usize = 1 << 20;

/// The settings of `/proc/sys/kernel/keys`, in this order.
pub const SETTINGS: [&str; 6] = [
    "maxkeys",
    "maxbytes",
    "root_maxkeys",
    "root_maxbytes",
    "gc_delay",
    "persistent_keyring_expiry",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    User,
    Logon,
    Keyring,
}

impl Kind {
    /// The type named `name`: None for one Tessera does not have.
    pub fn of(name: &[u8]) -> Option<Kind> {
        match name {
            b"user" => Some(Kind::User),
            b"logon" => Some(Kind::Logon),
            b"keyring" => Some(Kind::Keyring),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Logon => "logon",
            Kind::Keyring => "keyring",
        }
    }
}

/// Who calls: a thread of a process, with its effective ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caller {
    pub pid: u32,
    pub tid: u32,
    pub uid: u32,
    pub gid: u32,
}

#[derive(Clone, Debug)]
pub struct Key {
    pub serial: i32,
    pub kind: Kind,
    pub desc: Vec<u8>,
    pub uid: u32,
    pub gid: u32,
    pub perm: u32,
    pub payload: Vec<u8>,
    /// A keyring's links, in the order made.
    pub links: Vec<i32>,
    /// Keyrings linking it plus special slots holding it.
    refs: u32,
    pub revoked: bool,
    pub invalid: bool,
    /// A key request_key could not make: found, it answers ENOKEY until
    /// it expires.
    pub negative: bool,
    /// Nanoseconds since boot it expires at (0: never).
    pub expiry: u64,
    /// Bytes charged to its owner's quota.
    charged: u64,
}

impl Key {
    /// Its state as a lookup sees it (`now`: nanoseconds since boot).
    fn valid(&self, now: u64) -> Result<(), i64> {
        if self.invalid {
            Err(errno::ENOKEY)
        } else if self.revoked {
            Err(errno::EKEYREVOKED)
        } else if self.expiry != 0 && now >= self.expiry {
            Err(errno::EKEYEXPIRED)
        } else if self.negative {
            Err(errno::ENOKEY)
        } else {
            Ok(())
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct ThreadRings {
    ring: Option<i32>,
    reqkey: i32,
}

#[derive(Clone, Debug, Default)]
struct ProcRings {
    process: Option<i32>,
    session: Option<i32>,
    threads: BTreeMap<u32, ThreadRings>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Usage {
    keys: u64,
    bytes: u64,
}

pub struct Keys {
    keys: BTreeMap<i32, Key>,
    next: u32,
    /// Each user's keyring and user-session keyring.
    users: BTreeMap<u32, (i32, i32)>,
    procs: BTreeMap<u32, ProcRings>,
    usage: BTreeMap<u32, Usage>,
    total_bytes: u64,
    /// `SETTINGS`' values.
    pub settings: [u64; 6],
}

impl Default for Keys {
    fn default() -> Keys {
        Keys::new()
    }
}

/// Linux's default quotas and delays.
const DEFAULTS: [u64; 6] = [200, 20000, 1_000_000, 25_000_000, 300, 259_200];

/// The group of a key that has none (a user's keyrings).
pub const NO_GID: u32 = u32::MAX;
/// How a key without a group shows its group (Linux's overflow gid).
const OVERFLOW_GID: u32 = 65534;
/// How long a key request_key could not make stays (Linux's
/// key_negative_timeout: 60 s).
const NEGATIVE_NS: u64 = 60_000_000_000;
/// `search`: nothing matched at all (a negative key matched: ENOKEY).
const NOT_FOUND: i64 = -1;

fn shown_gid(gid: u32) -> u32 {
    if gid == NO_GID { OVERFLOW_GID } else { gid }
}

/// Whether `perm` only names bits a key has.
fn perm_ok(perm: u32) -> bool {
    perm & !0x3f3f_3f3f == 0
}

impl Keys {
    pub fn new() -> Keys {
        Keys {
            keys: BTreeMap::new(),
            next: 0x1000_0000,
            users: BTreeMap::new(),
            procs: BTreeMap::new(),
            usage: BTreeMap::new(),
            total_bytes: 0,
            settings: DEFAULTS,
        }
    }

    pub fn get(&self, serial: i32) -> Option<&Key> {
        self.keys.get(&serial)
    }

    /// Keys alive (for tests of leaks).
    pub fn count(&self) -> usize {
        self.keys.len()
    }

    /// Setting `index` after writing `value` (root's; the caller checks).
    pub fn setting(&mut self, index: usize, value: Option<u64>) -> Result<u64, i64> {
        let slot = self.settings.get_mut(index).ok_or(errno::EINVAL)?;
        if let Some(v) = value {
            // Linux keeps these in ints and refuses what does not fit.
            if v > i32::MAX as u64 {
                return Err(errno::EINVAL);
            }
            *slot = v;
        }
        Ok(*slot)
    }

    fn quota(&self, uid: u32) -> (u64, u64) {
        if uid == 0 {
            (self.settings[2], self.settings[3])
        } else {
            (self.settings[0], self.settings[1])
        }
    }

    /// Charges `keys` keys and `bytes` bytes to `uid` (EDQUOT past its
    /// quota or the server's bound).
    fn charge(&mut self, uid: u32, keys: u64, bytes: i64) -> Result<(), i64> {
        let (max_keys, max_bytes) = self.quota(uid);
        let u = self.usage.get(&uid).copied().unwrap_or_default();
        let nb = u.bytes as i64 + bytes;
        let total = self.total_bytes as i64 + bytes;
        if (keys > 0 && (u.keys + keys > max_keys || self.keys.len() >= TOTAL_KEYS_MAX))
            || (bytes > 0 && (nb as u64 > max_bytes || total as u64 > TOTAL_BYTES_MAX))
        {
            return Err(errno::EDQUOT);
        }
        let e = self.usage.entry(uid).or_default();
        e.keys += keys;
        e.bytes = nb.max(0) as u64;
        self.total_bytes = total.max(0) as u64;
        Ok(())
    }

    fn uncharge(&mut self, uid: u32, bytes: u64) {
        if let Some(u) = self.usage.get_mut(&uid) {
            u.keys = u.keys.saturating_sub(1);
            u.bytes = u.bytes.saturating_sub(bytes);
            if u.keys == 0 && u.bytes == 0 {
                self.usage.remove(&uid);
            }
        }
        self.total_bytes = self.total_bytes.saturating_sub(bytes);
    }

    fn new_serial(&mut self) -> i32 {
        loop {
            // A step coprime with 2^31 visits every positive serial before
            // one comes back, so a freed serial is not soon reused.
            self.next = (self.next.wrapping_add(0x2f6b_1c49)) & 0x7fff_ffff;
            let s = self.next as i32;
            if s >= 3 && !self.keys.contains_key(&s) {
                return s;
            }
        }
    }

    /// A new key, charged to `owner`, with no holder yet.
    fn alloc(&mut self, kind: Kind, desc: &[u8], payload: &[u8], owner: (u32, u32), perm: u32) -> Result<i32, i64> {
        let bytes = (desc.len() + 1 + payload.len()) as u64;
        self.charge(owner.0, 1, bytes as i64)?;
        let serial = self.new_serial();
        self.keys.insert(
            serial,
            Key {
                serial,
                kind,
                desc: desc.to_vec(),
                uid: owner.0,
                gid: owner.1,
                perm,
                payload: payload.to_vec(),
                links: Vec::new(),
                refs: 0,
                revoked: false,
                invalid: false,
                negative: false,
                expiry: 0,
                charged: bytes,
            },
        );
        Ok(serial)
    }

    fn hold(&mut self, serial: i32) {
        if let Some(k) = self.keys.get_mut(&serial) {
            k.refs += 1;
        }
    }

    /// One holder fewer; a key nothing holds goes, and its links with it.
    fn put(&mut self, serial: i32) {
        let mut work = alloc::vec![serial];
        while let Some(s) = work.pop() {
            let Some(k) = self.keys.get_mut(&s) else { continue };
            k.refs = k.refs.saturating_sub(1);
            if k.refs > 0 {
                continue;
            }
            if let Some(k) = self.keys.remove(&s) {
                self.uncharge(k.uid, k.charged);
                work.extend(k.links);
            }
        }
    }

    /// An anonymous special keyring of `c`'s, held by its slot.
    fn special(&mut self, c: &Caller, name: &[u8]) -> Result<i32, i64> {
        let s = self.alloc(Kind::Keyring, name, &[], (c.uid, c.gid), (ALL << POS) | (VIEW << USR))?;
        self.hold(s);
        Ok(s)
    }

    fn user_rings(&mut self, c: &Caller) -> Result<(i32, i32), i64> {
        if let Some(&r) = self.users.get(&c.uid) {
            return Ok(r);
        }
        // Linux's: no group (shown as the overflow gid), and the possessor
        // may not change their attributes.
        let perm = ((ALL & !SETATTR) << POS) | (ALL << USR);
        let owner = (c.uid, NO_GID);
        let user = self.alloc(Kind::Keyring, format!("_uid.{}", c.uid).as_bytes(), &[], owner, perm)?;
        self.hold(user);
        let session = match self.alloc(
            Kind::Keyring,
            format!("_uid_ses.{}", c.uid).as_bytes(),
            &[],
            owner,
            perm,
        ) {
            Ok(s) => s,
            Err(e) => {
                self.put(user);
                return Err(e);
            }
        };
        self.hold(session);
        // The user-session keyring links the user keyring, as Linux's.
        let _ = self.link_raw(session, user);
        self.users.insert(c.uid, (user, session));
        Ok((user, session))
    }

    fn proc_mut(&mut self, pid: u32) -> &mut ProcRings {
        self.procs.entry(pid).or_default()
    }

    fn thread(&self, c: &Caller) -> ThreadRings {
        self.procs
            .get(&c.pid)
            .and_then(|p| p.threads.get(&c.tid))
            .copied()
            .unwrap_or_default()
    }

    /// A slot's keyring, unless it was invalidated (then it is dropped).
    fn live_slot(&mut self, slot: Option<i32>) -> Option<i32> {
        slot.filter(|s| self.keys.get(s).is_some_and(|k| !k.invalid))
    }

    fn thread_ring(&mut self, c: &Caller, create: bool) -> Result<Option<i32>, i64> {
        let t = self.thread(c);
        if let Some(r) = self.live_slot(t.ring) {
            return Ok(Some(r));
        }
        if !create {
            return Ok(None);
        }
        let r = self.special(c, b"_tid")?;
        let old = self.proc_mut(c.pid).threads.entry(c.tid).or_default().ring.replace(r);
        if let Some(o) = old {
            self.put(o);
        }
        Ok(Some(r))
    }

    fn process_ring(&mut self, c: &Caller, create: bool) -> Result<Option<i32>, i64> {
        let slot = self.procs.get(&c.pid).and_then(|p| p.process);
        if let Some(r) = self.live_slot(slot) {
            return Ok(Some(r));
        }
        if !create {
            return Ok(None);
        }
        let r = self.special(c, b"_pid")?;
        if let Some(o) = self.proc_mut(c.pid).process.replace(r) {
            self.put(o);
        }
        Ok(Some(r))
    }

    fn session_ring(&self, c: &Caller) -> Option<i32> {
        let s = self.procs.get(&c.pid).and_then(|p| p.session)?;
        self.keys.get(&s).filter(|k| !k.invalid).map(|k| k.serial)
    }

    /// Makes `ring` (held once more) `c`'s session keyring.
    fn install_session(&mut self, c: &Caller, ring: i32) {
        self.hold(ring);
        if let Some(o) = self.proc_mut(c.pid).session.replace(ring) {
            self.put(o);
        }
    }

    /// The keyrings a search of `c`'s starts from: thread, process,
    /// session (or user-session when it has none).
    fn roots(&mut self, c: &Caller) -> Vec<i32> {
        let mut r = Vec::new();
        let t = self.thread(c).ring;
        r.extend(self.live_slot(t));
        let p = self.procs.get(&c.pid).and_then(|p| p.process);
        r.extend(self.live_slot(p));
        match self.session_ring(c) {
            Some(s) => r.push(s),
            None => r.extend(self.users.get(&c.uid).map(|u| u.1)),
        }
        r
    }

    /// The permission bits `c` has on `k`.
    fn perm_of(&self, c: &Caller, k: &Key, possessed: bool) -> u32 {
        let mut p = if k.uid == c.uid {
            k.perm >> USR
        } else if k.gid != NO_GID && k.gid == c.gid {
            k.perm >> 8
        } else {
            k.perm
        } & ALL;
        if possessed {
            p |= (k.perm >> POS) & ALL;
        }
        p
    }

    /// Every key `c` possesses: what a search from its special keyrings
    /// finds, through keyrings it may search, of the keys it may search
    /// (Linux decides possession by such a search).
    fn possessed(&mut self, c: &Caller, now: u64) -> BTreeSet<i32> {
        let mut seen = BTreeSet::new();
        let mut found = BTreeSet::new();
        let mut work = self.roots(c);
        while let Some(s) = work.pop() {
            if !seen.insert(s) {
                continue;
            }
            let Some(k) = self.keys.get(&s) else { continue };
            if self.perm_of(c, k, true) & SEARCH == 0 {
                continue;
            }
            found.insert(s);
            if k.kind == Kind::Keyring && k.valid(now).is_ok() {
                work.extend(k.links.iter().copied());
            }
        }
        found
    }

    /// Linux's lookup_user_key: `id` (a serial or a KEY_SPEC_*) as `c`
    /// sees it, made if `create` and it is a special keyring not there
    /// yet; `need` the permission wanted (0: none, and no check of the
    /// key's state either).
    pub fn lookup(&mut self, c: &Caller, id: i32, create: bool, need: u32, now: u64) -> Result<i32, i64> {
        let serial = match id {
            SPEC_THREAD_KEYRING => self.thread_ring(c, create)?.ok_or(errno::ENOKEY)?,
            SPEC_PROCESS_KEYRING => self.process_ring(c, create)?.ok_or(errno::ENOKEY)?,
            SPEC_SESSION_KEYRING => match self.session_ring(c) {
                Some(s) => s,
                // A process with no session keyring gets one on first use:
                // a new one if asked to create, else its user's session.
                None if create => self.join(c, None)?,
                None => {
                    let (_, us) = self.user_rings(c)?;
                    self.install_session(c, us);
                    us
                }
            },
            SPEC_USER_KEYRING => self.user_rings(c)?.0,
            SPEC_USER_SESSION_KEYRING => self.user_rings(c)?.1,
            SPEC_REQKEY_AUTH_KEY | SPEC_REQUESTOR_KEYRING => return Err(errno::ENOKEY),
            i if i < 1 => return Err(errno::EINVAL),
            i => i,
        };
        let k = self.keys.get(&serial).ok_or(errno::ENOKEY)?;
        if k.invalid {
            return Err(errno::ENOKEY);
        }
        if need == 0 {
            return Ok(serial);
        }
        k.valid(now)?;
        // A special keyring named by its id is the caller's own: possessed.
        if id < 0 {
            self.check_possessed(c, serial, need)?;
        } else {
            self.check(c, serial, need, now)?;
        }
        Ok(serial)
    }

    /// EACCES unless `c` has `need` on key `serial`.
    fn check(&mut self, c: &Caller, serial: i32, need: u32, now: u64) -> Result<(), i64> {
        let Some(k) = self.keys.get(&serial) else {
            return Err(errno::ENOKEY);
        };
        if self.perm_of(c, k, false) & need == need {
            return Ok(());
        }
        let possessed = self.possessed(c, now).contains(&serial);
        let k = self.keys.get(&serial).ok_or(errno::ENOKEY)?;
        if self.perm_of(c, k, possessed) & need == need {
            Ok(())
        } else {
            Err(errno::EACCES)
        }
    }

    /// EACCES unless `c`, as the possessor of `serial`, has `need`.
    fn check_possessed(&self, c: &Caller, serial: i32, need: u32) -> Result<(), i64> {
        let k = self.keys.get(&serial).ok_or(errno::ENOKEY)?;
        if self.perm_of(c, k, true) & need == need {
            Ok(())
        } else {
            Err(errno::EACCES)
        }
    }

    fn is_keyring(&self, serial: i32) -> Result<(), i64> {
        match self.keys.get(&serial) {
            Some(k) if k.kind == Kind::Keyring => Ok(()),
            Some(_) => Err(errno::ENOTDIR),
            None => Err(errno::ENOKEY),
        }
    }

    /// Whether `target` is `ring` or reachable from it.
    fn reaches(&self, ring: i32, target: i32) -> bool {
        let mut seen = BTreeSet::new();
        let mut work = alloc::vec![ring];
        while let Some(s) = work.pop() {
            if s == target {
                return true;
            }
            if seen.insert(s)
                && let Some(k) = self.keys.get(&s)
            {
                work.extend(k.links.iter().copied());
            }
        }
        false
    }

    /// Links `key` into `ring`, displacing a key of the same type and
    /// description.
    fn link_raw(&mut self, ring: i32, key: i32) -> Result<(), i64> {
        self.is_keyring(ring)?;
        let (kind, desc) = {
            let k = self.keys.get(&key).ok_or(errno::ENOKEY)?;
            (k.kind, k.desc.clone())
        };
        if kind == Kind::Keyring && self.reaches(key, ring) {
            return Err(errno::EDEADLK);
        }
        let links = self.keys.get(&ring).map(|r| r.links.clone()).unwrap_or_default();
        if links.contains(&key) {
            return Ok(());
        }
        let same = links
            .iter()
            .copied()
            .find(|l| self.keys.get(l).is_some_and(|k| k.kind == kind && k.desc == desc));
        if same.is_none() && links.len() >= LINKS_MAX {
            return Err(errno::ENFILE);
        }
        self.hold(key);
        if let Some(r) = self.keys.get_mut(&ring) {
            match same.and_then(|s| r.links.iter().position(|&l| l == s)) {
                Some(i) => r.links[i] = key,
                None => r.links.push(key),
            }
        }
        if let Some(s) = same {
            self.put(s);
        }
        Ok(())
    }

    fn unlink_raw(&mut self, ring: i32, key: i32) -> Result<(), i64> {
        let r = self.keys.get_mut(&ring).ok_or(errno::ENOKEY)?;
        let i = r.links.iter().position(|&l| l == key).ok_or(errno::ENOENT)?;
        r.links.remove(i);
        self.put(key);
        Ok(())
    }

    /// Checks a payload for a key of `kind` (Linux's preparse).
    fn check_payload(kind: Kind, desc: &[u8], payload: Option<&[u8]>) -> Result<(), i64> {
        match kind {
            Kind::Keyring if payload.is_some_and(|p| !p.is_empty()) => Err(errno::EINVAL),
            Kind::Keyring => Ok(()),
            Kind::User | Kind::Logon => {
                let p = payload.ok_or(errno::EINVAL)?;
                if p.is_empty() || p.len() > USER_PAYLOAD_MAX {
                    return Err(errno::EINVAL);
                }
                // A logon key's description names a service: "svc:name".
                if kind == Kind::Logon && desc.iter().position(|&b| b == b':').is_none_or(|i| i == 0) {
                    return Err(errno::EINVAL);
                }
                Ok(())
            }
        }
    }

    /// add_key(2), its strings and payload copied (`payload` None: a null
    /// pointer with no length).
    pub fn add(
        &mut self,
        c: &Caller,
        ty: &[u8],
        desc: Option<&[u8]>,
        payload: Option<&[u8]>,
        ring: i32,
        now: u64,
    ) -> Result<i32, i64> {
        if ty.first() == Some(&b'.') {
            return Err(errno::EPERM);
        }
        let desc = desc.filter(|d| !d.is_empty());
        if ty == b"keyring" && desc.is_some_and(|d| d[0] == b'.') {
            return Err(errno::EPERM);
        }
        let ring = self.lookup(c, ring, true, WRITE, now)?;
        let kind = Kind::of(ty).ok_or(errno::ENODEV)?;
        self.is_keyring(ring)?;
        let desc = match desc {
            Some(d) => d,
            None if kind == Kind::Keyring => &[][..],
            None => return Err(errno::EINVAL),
        };
        Self::check_payload(kind, desc, payload)?;
        let payload = payload.unwrap_or(&[]);
        if kind != Kind::Keyring {
            // An existing key of the name in that keyring is updated.
            let found = self.keys[&ring].links.iter().copied().find(|l| {
                self.keys
                    .get(l)
                    .is_some_and(|k| k.kind == kind && k.desc == desc && !k.revoked && !k.invalid && !k.negative)
            });
            if let Some(k) = found {
                self.check(c, k, WRITE, now)?;
                self.set_payload(k, payload)?;
                return Ok(k);
            }
        }
        let read = if kind == Kind::Logon { 0 } else { READ };
        let perm = ((VIEW | SEARCH | LINK | SETATTR | WRITE | read) << POS) | (VIEW << USR);
        let key = self.alloc(kind, desc, payload, (c.uid, c.gid), perm)?;
        // Held for the moment of the link, so a failed link frees it.
        self.hold(key);
        let r = self.link_raw(ring, key);
        self.put(key);
        r.map(|()| key)
    }

    fn set_payload(&mut self, serial: i32, payload: &[u8]) -> Result<(), i64> {
        let (uid, old) = {
            let k = &self.keys[&serial];
            (k.uid, k.payload.len())
        };
        let delta = payload.len() as i64 - old as i64;
        self.charge(uid, 0, delta)?;
        if let Some(k) = self.keys.get_mut(&serial) {
            k.payload = payload.to_vec();
            k.charged = (k.charged as i64 + delta) as u64;
        }
        Ok(())
    }

    /// Searches `roots` (possessed by `c` if `possessed`) for a key of
    /// `kind` and `desc` that `c` may search: its serial, or the error of
    /// the best match that was revoked or expired, else ENOKEY.
    #[allow(clippy::too_many_arguments)]
    fn search(
        &mut self,
        c: &Caller,
        roots: &[i32],
        kind: Kind,
        desc: &[u8],
        possessed: bool,
        skip_expired: bool,
        now: u64,
    ) -> Result<i32, i64> {
        let mut seen = BTreeSet::new();
        let mut work: Vec<i32> = roots.iter().rev().copied().collect();
        let mut err = NOT_FOUND;
        while let Some(s) = work.pop() {
            if !seen.insert(s) {
                continue;
            }
            let Some(ring) = self.keys.get(&s) else { continue };
            if ring.valid(now).is_err() || self.perm_of(c, ring, possessed) & SEARCH == 0 {
                continue;
            }
            let mut nested = Vec::new();
            for &l in &ring.links {
                let Some(k) = self.keys.get(&l) else { continue };
                if k.kind == kind && k.desc == desc && self.perm_of(c, k, possessed) & SEARCH != 0 {
                    match k.valid(now) {
                        Ok(()) => return Ok(l),
                        Err(errno::EKEYEXPIRED) if skip_expired => {}
                        Err(errno::ENOKEY) if !k.negative => {}
                        Err(e) => err = e,
                    }
                }
                if k.kind == Kind::Keyring {
                    nested.push(l);
                }
            }
            work.extend(nested.into_iter().rev());
        }
        Err(err)
    }

    /// request_key(2), its strings copied (`callout` None: a null one).
    pub fn request(
        &mut self,
        c: &Caller,
        ty: &[u8],
        desc: &[u8],
        callout: Option<&[u8]>,
        dest: i32,
        now: u64,
    ) -> Result<i32, i64> {
        if ty.first() == Some(&b'.') {
            return Err(errno::EPERM);
        }
        let dest = if dest != 0 {
            Some(self.lookup(c, dest, true, WRITE, now)?)
        } else {
            None
        };
        let kind = Kind::of(ty).ok_or(errno::ENOKEY)?;
        let roots = self.roots(c);
        // request_key passes over expired keys; keyctl's search reports them.
        match self.search(c, &roots, kind, desc, true, true, now) {
            Ok(k) => {
                if let Some(d) = dest {
                    self.check(c, k, LINK, now)?;
                    self.link_raw(d, k)?;
                }
                Ok(k)
            }
            Err(NOT_FOUND) => {
                if callout.is_none() {
                    return Err(errno::ENOKEY);
                }
                if kind == Kind::Keyring {
                    return Err(errno::EPERM);
                }
                // Linux would start /sbin/request-key to make the key in
                // this keyring. There is no such program: as Linux without
                // one, the key is made negative there (a request within
                // its minute finds it: ENOKEY) and this one fails ENOENT.
                let d = match dest {
                    Some(d) => d,
                    None => self.default_dest(c)?,
                };
                self.check_possessed(c, d, WRITE)?;
                let perm = ((VIEW | SEARCH | LINK | SETATTR | WRITE | READ) << POS) | (VIEW << USR);
                let key = self.alloc(kind, desc, &[], (c.uid, c.gid), perm)?;
                if let Some(k) = self.keys.get_mut(&key) {
                    k.negative = true;
                    k.expiry = now.saturating_add(NEGATIVE_NS);
                }
                self.hold(key);
                let r = self.link_raw(d, key);
                self.put(key);
                r?;
                Err(errno::ENOENT)
            }
            Err(e) => Err(e),
        }
    }

    /// Where request_key would put a key it makes (SET_REQKEY_KEYRING).
    fn default_dest(&mut self, c: &Caller) -> Result<i32, i64> {
        let t = self.thread(c);
        let thread = self.live_slot(t.ring);
        let p = self.procs.get(&c.pid).and_then(|p| p.process);
        let process = self.live_slot(p);
        let session = self.session_ring(c);
        let found = match t.reqkey {
            REQKEY_DEFL_THREAD_KEYRING => thread.or(process).or(session),
            REQKEY_DEFL_PROCESS_KEYRING => process.or(session),
            REQKEY_DEFL_SESSION_KEYRING => session,
            REQKEY_DEFL_USER_KEYRING => return Ok(self.user_rings(c)?.0),
            REQKEY_DEFL_USER_SESSION_KEYRING => None,
            _ => thread.or(process).or(session),
        };
        match found {
            Some(r) => Ok(r),
            None => Ok(self.user_rings(c)?.1),
        }
    }

    /// KEYCTL_JOIN_SESSION_KEYRING: a new anonymous session keyring, or
    /// the one of that name `c` may search (made if there is none).
    pub fn join(&mut self, c: &Caller, name: Option<&[u8]>) -> Result<i32, i64> {
        let ring = match name {
            None => self.alloc(
                Kind::Keyring,
                b"_ses",
                &[],
                (c.uid, c.gid),
                (ALL << POS) | ((VIEW | READ) << USR),
            )?,
            Some(n) if n.first() == Some(&b'.') => return Err(errno::EPERM),
            Some(n) => {
                // Only a keyring the caller may search without possessing it
                // is joined: a named session keyring is not one by default,
                // so joining its name again makes another.
                let found = self
                    .keys
                    .values()
                    .find(|k| {
                        k.kind == Kind::Keyring
                            && k.desc == n
                            && k.uid == c.uid
                            && !k.invalid
                            && !k.revoked
                            && self.perm_of(c, k, false) & SEARCH != 0
                    })
                    .map(|k| k.serial);
                match found {
                    // Linux answers 0 when it is the session keyring already.
                    Some(r) if self.session_ring(c) == Some(r) => return Ok(0),
                    Some(r) => r,
                    None => self.alloc(
                        Kind::Keyring,
                        n,
                        &[],
                        (c.uid, c.gid),
                        (ALL << POS) | ((VIEW | READ | LINK) << USR),
                    )?,
                }
            }
        };
        self.install_session(c, ring);
        Ok(ring)
    }

    /// KEYCTL_READ's data: a user key's payload, a keyring's serials.
    /// (`buflen`: the caller's buffer, which for a keyring must hold
    /// whole serials.)
    pub fn read(&mut self, c: &Caller, id: i32, buflen: u64, now: u64) -> Result<Vec<u8>, i64> {
        let s = self.lookup(c, id, false, 0, now)?;
        self.keys[&s].valid(now)?;
        if self.check(c, s, READ, now).is_err() && !self.possessed(c, now).contains(&s) {
            return Err(errno::EACCES);
        }
        let k = &self.keys[&s];
        match k.kind {
            Kind::Logon => Err(errno::EOPNOTSUPP),
            Kind::User => Ok(k.payload.clone()),
            Kind::Keyring if !buflen.is_multiple_of(4) => Err(errno::EINVAL),
            Kind::Keyring => Ok(k.links.iter().flat_map(|l| l.to_le_bytes()).collect()),
        }
    }

    /// KEYCTL_DESCRIBE's text, with its terminating zero.
    pub fn describe(&mut self, c: &Caller, id: i32, now: u64) -> Result<Vec<u8>, i64> {
        let s = self.lookup(c, id, true, VIEW, now)?;
        let k = &self.keys[&s];
        let mut t = format!("{};{};{};{:08x};", k.kind.name(), k.uid, shown_gid(k.gid), k.perm).into_bytes();
        t.extend_from_slice(&k.desc);
        t.push(0);
        Ok(t)
    }

    /// The keyctl operations that take only numbers.
    pub fn ctl(&mut self, c: &Caller, op: u64, a: [u64; 4], now: u64) -> Result<i64, i64> {
        let id = a[0] as i32;
        match op {
            op::GET_KEYRING_ID => self.lookup(c, id, a[1] as i32 != 0, 0, now).map(i64::from),
            op::REVOKE => {
                let s = match self.lookup(c, id, false, WRITE, now) {
                    Err(errno::EACCES) => self.lookup(c, id, false, SETATTR, now)?,
                    r => r?,
                };
                if let Some(k) = self.keys.get_mut(&s) {
                    k.revoked = true;
                }
                Ok(0)
            }
            op::CHOWN => {
                let s = self.lookup(c, id, true, SETATTR, now)?;
                let (uid, gid) = (a[1] as i32, a[2] as i32);
                let (old_uid, old_gid, charged) = {
                    let k = &self.keys[&s];
                    (k.uid, k.gid, k.charged)
                };
                let new_uid = if uid == -1 { old_uid } else { uid as u32 };
                let new_gid = if gid == -1 { old_gid } else { gid as u32 };
                if c.uid != 0 && (new_uid != old_uid || old_uid != c.uid || (new_gid != old_gid && new_gid != c.gid)) {
                    return Err(errno::EACCES);
                }
                if new_uid != old_uid {
                    self.charge(new_uid, 1, charged as i64)?;
                    self.uncharge(old_uid, charged);
                }
                if let Some(k) = self.keys.get_mut(&s) {
                    k.uid = new_uid;
                    k.gid = new_gid;
                }
                Ok(0)
            }
            op::SETPERM => {
                let perm = a[1] as u32;
                if !perm_ok(perm) {
                    return Err(errno::EINVAL);
                }
                let s = self.lookup(c, id, true, SETATTR, now)?;
                let k = self.keys.get_mut(&s).ok_or(errno::ENOKEY)?;
                if c.uid != 0 && k.uid != c.uid {
                    return Err(errno::EACCES);
                }
                k.perm = perm;
                Ok(0)
            }
            op::CLEAR => {
                let s = self.lookup(c, id, true, WRITE, now)?;
                self.is_keyring(s)?;
                let links = self
                    .keys
                    .get_mut(&s)
                    .map(|k| core::mem::take(&mut k.links))
                    .unwrap_or_default();
                for l in links {
                    self.put(l);
                }
                Ok(0)
            }
            op::LINK => {
                let ring = self.lookup(c, a[1] as i32, true, WRITE, now)?;
                let key = self.lookup(c, id, true, LINK, now)?;
                self.link_raw(ring, key).map(|()| 0)
            }
            op::UNLINK => {
                let ring = self.lookup(c, a[1] as i32, false, WRITE, now)?;
                self.is_keyring(ring)?;
                // The key is not used, so it is not checked: a revoked or
                // expired one can be taken out.
                let key = match id {
                    i if i > 0 && self.keys.contains_key(&i) => i,
                    i if i > 0 => return Err(errno::ENOKEY),
                    i => self.lookup(c, i, false, 0, now)?,
                };
                self.unlink_raw(ring, key).map(|()| 0)
            }
            op::SET_REQKEY_KEYRING => {
                let old = self.thread(c).reqkey;
                let new = a[0] as i32;
                match new {
                    REQKEY_DEFL_NO_CHANGE => return Ok(old as i64),
                    REQKEY_DEFL_THREAD_KEYRING => {
                        self.thread_ring(c, true)?;
                    }
                    REQKEY_DEFL_PROCESS_KEYRING => {
                        self.process_ring(c, true)?;
                    }
                    REQKEY_DEFL_DEFAULT
                    | REQKEY_DEFL_SESSION_KEYRING
                    | REQKEY_DEFL_USER_KEYRING
                    | REQKEY_DEFL_USER_SESSION_KEYRING
                    | REQKEY_DEFL_REQUESTOR_KEYRING => {}
                    _ => return Err(errno::EINVAL),
                }
                self.proc_mut(c.pid).threads.entry(c.tid).or_default().reqkey = new;
                Ok(old as i64)
            }
            op::SET_TIMEOUT => {
                let s = self.lookup(c, id, true, SETATTR, now)?;
                let secs = a[1] as u32 as u64;
                if let Some(k) = self.keys.get_mut(&s) {
                    k.expiry = if secs == 0 {
                        0
                    } else {
                        now.saturating_add(secs.saturating_mul(1_000_000_000))
                    };
                }
                Ok(0)
            }
            op::INVALIDATE => {
                let s = self.lookup(c, id, false, SEARCH, now)?;
                self.invalidate(s);
                Ok(0)
            }
            _ => Err(errno::EOPNOTSUPP),
        }
    }

    /// Marks `s` invalid and takes it out of every keyring at once (Linux's
    /// collector does it soon after).
    fn invalidate(&mut self, s: i32) {
        if let Some(k) = self.keys.get_mut(&s) {
            k.invalid = true;
        }
        let rings: Vec<i32> = self
            .keys
            .values()
            .filter(|k| k.links.contains(&s))
            .map(|k| k.serial)
            .collect();
        for r in rings {
            let _ = self.unlink_raw(r, s);
        }
    }

    /// KEYCTL_UPDATE, the payload copied.
    pub fn update(&mut self, c: &Caller, id: i32, payload: Option<&[u8]>, now: u64) -> Result<i64, i64> {
        let s = self.lookup(c, id, true, WRITE, now)?;
        let (kind, desc) = {
            let k = &self.keys[&s];
            (k.kind, k.desc.clone())
        };
        if kind == Kind::Keyring {
            return Err(errno::EOPNOTSUPP);
        }
        Self::check_payload(kind, &desc, payload)?;
        self.set_payload(s, payload.unwrap_or(&[]))?;
        Ok(0)
    }

    /// KEYCTL_SEARCH, its strings copied.
    pub fn search_op(
        &mut self,
        c: &Caller,
        ring: i32,
        ty: &[u8],
        desc: &[u8],
        dest: i32,
        now: u64,
    ) -> Result<i32, i64> {
        if ty.first() == Some(&b'.') {
            return Err(errno::EPERM);
        }
        let ring = self.lookup(c, ring, false, SEARCH, now)?;
        let dest = if dest != 0 {
            Some(self.lookup(c, dest, true, WRITE, now)?)
        } else {
            None
        };
        let kind = Kind::of(ty).ok_or(errno::ENOKEY)?;
        self.is_keyring(ring)?;
        let possessed = self.possessed(c, now).contains(&ring);
        let k = self
            .search(c, &[ring], kind, desc, possessed, false, now)
            .map_err(|e| if e == NOT_FOUND { errno::ENOKEY } else { e })?;
        if let Some(d) = dest {
            self.check(c, k, LINK, now)?;
            self.link_raw(d, k)?;
        }
        Ok(k)
    }

    /// A fork: the child shares its parent's session keyring and keeps
    /// the request-key default of the parent's first thread.
    pub fn fork(&mut self, parent: u32, child: u32) {
        let (session, reqkey) = match self.procs.get(&parent) {
            Some(p) => (p.session, p.threads.get(&parent).map_or(0, |t| t.reqkey)),
            None => return,
        };
        if let Some(s) = session {
            self.hold(s);
        }
        let mut rings = ProcRings {
            session,
            ..Default::default()
        };
        if reqkey != 0 {
            rings.threads.insert(child, ThreadRings { ring: None, reqkey });
        }
        if let Some(old) = self.procs.insert(child, rings) {
            self.drop_rings(old);
        }
    }

    /// An exec: the thread and process keyrings go, the session stays.
    pub fn exec(&mut self, pid: u32) {
        let Some(p) = self.procs.get_mut(&pid) else { return };
        let process = p.process.take();
        let threads = core::mem::take(&mut p.threads);
        let rings = ProcRings {
            process,
            session: None,
            threads,
        };
        self.drop_rings(rings);
    }

    /// A thread ended: its keyring goes.
    pub fn thread_end(&mut self, pid: u32, tid: u32) {
        let t = self.procs.get_mut(&pid).and_then(|p| p.threads.remove(&tid));
        if let Some(r) = t.and_then(|t| t.ring) {
            self.put(r);
        }
    }

    /// A process ended: every keyring it held goes unless held elsewhere.
    pub fn exit(&mut self, pid: u32) {
        if let Some(p) = self.procs.remove(&pid) {
            self.drop_rings(p);
        }
    }

    fn drop_rings(&mut self, p: ProcRings) {
        let held = p
            .process
            .into_iter()
            .chain(p.session)
            .chain(p.threads.values().filter_map(|t| t.ring));
        let held: Vec<i32> = held.collect();
        for r in held {
            self.put(r);
        }
    }

    /// `/proc/keys` as `c` sees it: the keys it may view.
    pub fn list(&mut self, c: &Caller, now: u64) -> String {
        let possessed = self.possessed(c, now);
        let mut out = String::new();
        for k in self.keys.values() {
            let pos = possessed.contains(&k.serial);
            if self.perm_of(c, k, pos) & VIEW == 0 || k.invalid {
                continue;
            }
            let flags = if k.revoked { "IR----" } else { "I-----" };
            let expiry = if k.expiry == 0 {
                String::from("perm")
            } else if now >= k.expiry {
                String::from("expd")
            } else {
                format!("{}s", (k.expiry - now) / 1_000_000_000)
            };
            let what = match k.kind {
                Kind::Keyring if k.links.is_empty() => String::from("empty"),
                Kind::Keyring => format!("{}", k.links.len()),
                _ => format!("{}", k.payload.len()),
            };
            out += &format!(
                "{:08x} {} {:>5} {:>4} {:08x} {:>5} {:>5} {:<9.9} {}: {}\n",
                k.serial,
                flags,
                k.refs,
                expiry,
                k.perm,
                k.uid,
                shown_gid(k.gid),
                k.kind.name(),
                String::from_utf8_lossy(&k.desc),
                what
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: Caller = Caller {
        pid: 10,
        tid: 10,
        uid: 0,
        gid: 0,
    };

    fn user(pid: u32, uid: u32) -> Caller {
        Caller {
            pid,
            tid: pid,
            uid,
            gid: uid,
        }
    }

    #[test]
    fn payload_limits_and_types() {
        let mut k = Keys::new();
        let big = alloc::vec![1u8; USER_PAYLOAD_MAX + 1];
        assert!(
            k.add(&ROOT, b"keyring", Some(b"abc"), None, SPEC_THREAD_KEYRING, 0)
                .is_ok()
        );
        assert_eq!(
            k.add(&ROOT, b"keyring", Some(b"b"), Some(b"x"), -1, 0),
            Err(errno::EINVAL)
        );
        assert!(k.add(&ROOT, b"user", Some(b"c"), Some(&big[1..]), -1, 0).is_ok());
        assert_eq!(k.add(&ROOT, b"user", Some(b"d"), Some(&big), -1, 0), Err(errno::EINVAL));
        assert_eq!(
            k.add(&ROOT, b"logon", Some(b"nocolon"), Some(b"x"), -1, 0),
            Err(errno::EINVAL)
        );
        assert!(k.add(&ROOT, b"logon", Some(b"a:b"), Some(b"x"), -1, 0).is_ok());
        assert_eq!(
            k.add(&ROOT, b"big_key", Some(b"a"), Some(b"x"), -1, 0),
            Err(errno::ENODEV)
        );
        assert_eq!(k.add(&ROOT, b".x", Some(b"a"), Some(b"x"), -1, 0), Err(errno::EPERM));
        assert_eq!(k.add(&ROOT, b"keyring", Some(b".a"), None, -1, 0), Err(errno::EPERM));
    }

    #[test]
    fn update_in_place_and_read() {
        let mut k = Keys::new();
        let a = k.add(&ROOT, b"user", Some(b"k"), Some(b"one"), -2, 0).unwrap();
        let b = k.add(&ROOT, b"user", Some(b"k"), Some(b"two!"), -2, 0).unwrap();
        assert_eq!(a, b);
        assert_eq!(k.read(&ROOT, a, 64, 0).unwrap(), b"two!");
        let ring = k.lookup(&ROOT, -2, false, 0, 0).unwrap();
        assert_eq!(k.read(&ROOT, ring, 64, 0).unwrap(), a.to_le_bytes());
        k.ctl(&ROOT, op::REVOKE, [a as u64, 0, 0, 0], 0).unwrap();
        assert_eq!(k.read(&ROOT, a, 64, 0), Err(errno::EKEYREVOKED));
        assert_eq!(
            k.ctl(&ROOT, op::REVOKE, [a as u64, 0, 0, 0], 0),
            Err(errno::EKEYREVOKED)
        );
        assert_eq!(k.ctl(&ROOT, op::UNLINK, [a as u64, -2i64 as u64, 0, 0], 0), Ok(0));
        assert!(k.get(a).is_none(), "nothing holds it any more");
    }

    #[test]
    fn process_end_frees_its_keys() {
        let mut k = Keys::new();
        let c = user(20, 1000);
        k.add(&c, b"user", Some(b"a"), Some(b"x"), -1, 0).unwrap();
        k.add(&c, b"keyring", Some(b"r"), None, -2, 0).unwrap();
        k.join(&c, None).unwrap();
        let before = k.count();
        k.exit(20);
        // The user keyrings stay (none were made); everything else goes.
        assert!(k.count() < before);
        assert_eq!(k.count(), 0);
        assert!(k.usage.is_empty());
        assert_eq!(k.total_bytes, 0);
    }

    #[test]
    fn quota_is_charged_and_freed() {
        let mut k = Keys::new();
        let c = user(30, 1000);
        let payload = alloc::vec![7u8; 5000];
        let mut made = 0;
        let err = loop {
            let d = format!("k{made}");
            match k.add(&c, b"user", Some(d.as_bytes()), Some(&payload), -2, 0) {
                Ok(_) => made += 1,
                Err(e) => break e,
            }
        };
        assert_eq!(err, errno::EDQUOT);
        assert_eq!(made, 3, "a process keyring, then 20000 bytes");
        k.ctl(&c, op::CLEAR, [-2i64 as u64, 0, 0, 0], 0).unwrap();
        assert!(k.add(&c, b"user", Some(b"again"), Some(&payload), -2, 0).is_ok());
    }

    #[test]
    fn cycles_and_foreign_keys() {
        let mut k = Keys::new();
        let a = k.add(&ROOT, b"keyring", Some(b"a"), None, -2, 0).unwrap();
        let b = k.add(&ROOT, b"keyring", Some(b"b"), None, a, 0).unwrap();
        assert_eq!(
            k.ctl(&ROOT, op::LINK, [a as u64, b as u64, 0, 0], 0),
            Err(errno::EDEADLK)
        );
        assert_eq!(
            k.ctl(&ROOT, op::LINK, [a as u64, a as u64, 0, 0], 0),
            Err(errno::EDEADLK)
        );
        // Another user's process possesses none of them.
        let other = user(40, 1000);
        assert_eq!(k.read(&other, a, 64, 0), Err(errno::EACCES));
        assert_eq!(k.ctl(&other, op::REVOKE, [a as u64, 0, 0, 0], 0), Err(errno::EACCES));
        assert_eq!(k.ctl(&other, op::GET_KEYRING_ID, [0, 0, 0, 0], 0), Err(errno::EINVAL));
        assert_eq!(
            k.ctl(&other, op::GET_KEYRING_ID, [-9i64 as u64, 0, 0, 0], 0),
            Err(errno::EINVAL)
        );
        assert_eq!(
            k.ctl(&other, op::GET_KEYRING_ID, [i32::MAX as u64, 0, 0, 0], 0),
            Err(errno::ENOKEY)
        );
    }

    #[test]
    fn request_key_paths() {
        let mut k = Keys::new();
        let r = k.add(&ROOT, b"keyring", Some(b"ltp"), None, -1, 0).unwrap();
        assert_eq!(k.request(&ROOT, b"keyring", b"ltp", None, 0, 0), Ok(r));
        assert_eq!(k.request(&ROOT, b"user", b"none", None, 0, 0), Err(errno::ENOKEY));
        assert_eq!(k.request(&ROOT, b"user", b"none", Some(b"x"), 0, 0), Err(errno::ENOENT));
        assert_eq!(k.request(&ROOT, b"user", b"none", Some(b"x"), 0, 0), Err(errno::ENOKEY));
        assert_eq!(k.request(&ROOT, b"user", b"none", None, 0, 0), Err(errno::ENOKEY));
        assert_eq!(
            k.request(&ROOT, b"user", b"none", Some(b"x"), 0, NEGATIVE_NS + 1),
            Err(errno::ENOENT),
            "the negative key expired"
        );
        assert_eq!(k.request(&ROOT, b"dead", b"none", Some(b"x"), 0, 0), Err(errno::ENOKEY));
        let t = k.add(&ROOT, b"keyring", Some(b"t"), None, -1, 0).unwrap();
        k.ctl(&ROOT, op::SET_TIMEOUT, [t as u64, 1, 0, 0], 0).unwrap();
        assert_eq!(
            k.request(&ROOT, b"keyring", b"t", None, t, 2_000_000_000),
            Err(errno::EKEYEXPIRED)
        );
        assert_eq!(
            k.request(&ROOT, b"keyring", b"t", None, 0, 2_000_000_000),
            Err(errno::ENOKEY)
        );
        // A session keyring it may not write: the request is refused.
        let s = k.join(&ROOT, None).unwrap();
        k.ctl(
            &ROOT,
            op::SETPERM,
            [s as u64, ((SEARCH | READ | VIEW) << POS) as u64, 0, 0],
            0,
        )
        .unwrap();
        k.ctl(
            &ROOT,
            op::SET_REQKEY_KEYRING,
            [REQKEY_DEFL_SESSION_KEYRING as u64, 0, 0, 0],
            0,
        )
        .unwrap();
        assert_eq!(k.request(&ROOT, b"user", b"d", Some(b"c"), 0, 0), Err(errno::EACCES));
    }

    /// Random calls with random serials and ids from several processes
    /// and users: nothing panics, and once every process has ended only
    /// the users' keyrings remain, with nothing charged but theirs.
    #[test]
    fn random_calls_never_panic_or_leak() {
        let mut k = Keys::new();
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut serials: Vec<i32> = alloc::vec![0, -1, -2, -3, -4, -5, -6, -7, -8, -9, i32::MAX, i32::MIN];
        for round in 0..20_000u64 {
            let pid = 100 + (rnd() % 6) as u32;
            let c = Caller {
                pid,
                tid: pid + (rnd() % 2) as u32 * 1000,
                uid: [0, 1000, 1001][(rnd() % 3) as usize],
                gid: 0,
            };
            let id = serials[(rnd() % serials.len() as u64) as usize];
            let other = serials[(rnd() % serials.len() as u64) as usize];
            let now = round * 10_000_000;
            let name = [b"a".as_slice(), b"b", b"s:c", b""][(rnd() % 4) as usize];
            let ty = [b"user".as_slice(), b"logon", b"keyring", b"big_key"][(rnd() % 4) as usize];
            let r = match rnd() % 12 {
                0 | 1 => k.add(&c, ty, Some(name), Some(&[1, 2, 3][..(rnd() % 4) as usize]), id, now),
                2 => k.request(&c, ty, name, Some(b"x"), other, now),
                3 => k.search_op(&c, id, ty, name, other, now),
                4 => k.join(&c, if rnd() % 2 == 0 { None } else { Some(name) }),
                5 => k.read(&c, id, rnd() % 9, now).map(|_| 0),
                6 => k.describe(&c, id, now).map(|_| 0),
                7 => k.update(&c, id, Some(b"new"), now).map(|_| 0),
                8 => {
                    let op = [0, 3, 4, 5, 7, 8, 9, 14, 15, 21, 99][(rnd() % 11) as usize];
                    let a = [id as u64, other as u64, rnd() % 3, rnd() % 0x4000_0000];
                    k.ctl(&c, op, a, now).map(|v| v as i32)
                }
                9 => {
                    k.fork(pid, 100 + (rnd() % 6) as u32);
                    Ok(0)
                }
                10 => {
                    k.exec(pid);
                    Ok(0)
                }
                _ => {
                    k.exit(pid);
                    Ok(0)
                }
            };
            if let Ok(s) = r
                && s > 0
            {
                serials.push(s);
            }
        }
        for pid in 100..106 {
            k.exit(pid);
        }
        // What users' keyrings hold stays, as on Linux; nothing else.
        let mut reach = BTreeSet::new();
        let mut work: Vec<i32> = k.users.values().flat_map(|&(a, b)| [a, b]).collect();
        while let Some(s) = work.pop() {
            if reach.insert(s) {
                work.extend(k.keys[&s].links.iter().copied());
            }
        }
        assert_eq!(k.count(), reach.len(), "only what the users' keyrings reach is left");
        let charged: u64 = k.usage.values().map(|u| u.keys).sum();
        assert_eq!(charged as usize, reach.len());
        let bytes: u64 = k.keys.values().map(|x| x.charged).sum();
        assert_eq!(bytes, k.total_bytes);
    }

    #[test]
    fn fork_shares_session_and_exec_drops_process_rings() {
        let mut k = Keys::new();
        let s = k.join(&ROOT, None).unwrap();
        k.lookup(&ROOT, -2, true, 0, 0).unwrap();
        k.fork(10, 11);
        let child = user(11, 0);
        assert_eq!(k.lookup(&child, -3, false, 0, 0), Ok(s));
        assert_eq!(k.lookup(&child, -2, false, 0, 0), Err(errno::ENOKEY));
        k.exit(10);
        assert_eq!(k.lookup(&child, -3, false, 0, 0), Ok(s), "the child holds it still");
        k.exec(11);
        k.exit(11);
        assert_eq!(k.count(), 0);
    }
}
