//! The NVM store, run by the kernel (seed 001 §3.1: memory the OS never
//! uses for anything else, holding the text files of OFF2F programs). The
//! kernel mounts `nvmstore` over the NVM that `kcore::mm::nvm` mapped at
//! boot and is its one user: processes store, delete and list text files
//! through system calls, and exec maps a text file's pages into a process
//! in place.
//!
//! A text file mapped by a process is *held*: its pages stay as they are
//! while any region maps them, even if the file is replaced or deleted
//! meanwhile (the store never reuses held pages, `Store::set_held`), as a
//! running program keeps an unlinked file's text on Unix. Holds are
//! counted per file version (its pages); they end with the last region.
//!
//! Exec never waits for a change: it looks a file up in a copy of the
//! directory taken after each commit, and holds it in the same critical
//! section. A change runs with the store taken out of the lock (a store
//! copies megabytes from the caller's memory), so only one change runs at
//! a time; it first computes what is held, and a file exec can newly hold
//! meanwhile is one the directory names, whose pages no change allocates.

use crate::mediator::{NO_IDS, invoke};
use abi::{Error, NvmRecord, NvmStoreInfo, ResOp};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use kcore::mm::nvm::Window;
use kcore::println;
use kcore::sync::IrqMutex;
use kcore::uaccess::UserRange;
use nvmstore::{Region, RegionError, Store};

/// The NVM as the store's region: reads and writes through the kernel's
/// mapping, flush and fence by cache line.
struct Nvm(&'static Window);

impl Region for Nvm {
    fn size(&self) -> u64 {
        self.0.size()
    }
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), RegionError> {
        let len = buf.len() as u64;
        self.0
            .read(offset, buf)
            .then_some(())
            .ok_or(RegionError { offset, len })
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), RegionError> {
        let len = data.len() as u64;
        self.0
            .write(offset, data)
            .then_some(())
            .ok_or(RegionError { offset, len })
    }
    fn flush(&mut self, offset: u64, len: u64) -> Result<(), RegionError> {
        self.0.flush(offset, len);
        Ok(())
    }
    fn fence(&mut self) -> Result<(), RegionError> {
        self.0.fence();
        Ok(())
    }
}

/// A file as the directory last committed names it.
#[derive(Clone)]
struct File {
    name: String,
    offset: u64,
    len: u64,
    pages: u64,
    crc: u64,
    version: u64,
}

struct State {
    window: &'static Window,
    /// None while a change runs.
    store: Option<Store<Nvm>>,
    /// The directory as of the last commit, sorted by name.
    files: Vec<File>,
    /// Regions mapping each file version, by (offset, pages).
    held: BTreeMap<(u64, u64), usize>,
}

static STATE: IrqMutex<Option<State>> = IrqMutex::new(None);

fn listing(store: &Store<Nvm>) -> Vec<File> {
    store
        .files()
        .map(|f| File {
            name: String::from(f.name),
            offset: f.offset,
            len: f.len,
            pages: f.pages,
            crc: f.crc,
            version: f.version,
        })
        .collect()
}

/// Mounts the store on the NVM, if the machine has one (at boot). A region
/// that holds no store, or a damaged one, is left as it is: never
/// formatted or repaired here (the host's `off2f nvm-format` does that).
pub fn init() {
    let Some(window) = kcore::mm::nvm::window() else {
        return;
    };
    match Store::mount(Nvm(window)) {
        Ok(store) => {
            let s = store.space();
            println!(
                "NVM store: {} files, {} of {} pages free",
                s.files, s.free_pages, s.data_pages
            );
            *STATE.lock() = Some(State {
                window,
                files: listing(&store),
                store: Some(store),
                held: BTreeMap::new(),
            });
        }
        Err(e) => println!("NVM store: not mounted: {e}"),
    }
}

fn store_error(e: nvmstore::Error) -> Error {
    use nvmstore::Error as E;
    match e {
        E::BadName => Error::Invalid,
        E::NotFound => Error::NotFound,
        E::DirectoryFull { .. } | E::NoSpace { .. } => Error::Limit,
        E::Source => Error::Fault,
        E::Region(_) | E::NotFormatted | E::Corrupt(_) | E::TooSmall { .. } => Error::Invalid,
    }
}

/// A hold on a text file version: while it lives, its pages are never
/// given to another file.
pub struct Hold {
    key: (u64, u64),
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some(s) = STATE.lock().as_mut()
            && let Some(n) = s.held.get_mut(&self.key)
        {
            *n -= 1;
            if *n == 0 {
                s.held.remove(&self.key);
            }
        }
    }
}

/// A text file, held, as exec maps it: `pages` pages of NVM from physical
/// address `phys`.
#[derive(Clone)]
pub struct Text {
    pub phys: u64,
    pub pages: usize,
    pub hold: Arc<Hold>,
}

/// The text file `name`, which must be `len` bytes with checksum `crc`
/// (what the OFF2F header says of it: file 1 and file 2 belong together),
/// held for mapping. NotFound if the machine has no NVM store or no such
/// file; BadProgram if it is another version than the header's.
pub fn open_text(name: &str, len: u64, crc: u64) -> Result<Text, Error> {
    let (text, f) = hold(name)?;
    if f.len != len || f.crc != crc {
        return Err(Error::BadProgram);
    }
    Ok(text)
}

/// Where a file version lies and what it holds (a `File` but its name).
#[derive(Clone, Copy)]
struct Version {
    offset: u64,
    len: u64,
    crc: u64,
}

/// Room for a new entry of the count of holders (a B-tree node or two).
const HELD_NODE: core::alloc::Layout = core::alloc::Layout::new::<[u64; 256]>();

/// Text file `name` as the directory names it now, held.
fn hold(name: &str) -> Result<(Text, Version), Error> {
    use kcore::mm::heap::room_for;
    let mut guard = STATE.lock();
    let s = guard.as_mut().ok_or(Error::NotFound)?;
    let i = s
        .files
        .binary_search_by(|f| f.name.as_str().cmp(name))
        .map_err(|_| Error::NotFound)?;
    let f = &s.files[i];
    let (v, pages) = (
        Version {
            offset: f.offset,
            len: f.len,
            crc: f.crc,
        },
        f.pages,
    );
    let key = (v.offset, pages);
    // Both allocations are made sure of before either is made: a `Hold`
    // dropped here would take this lock again, and a count raised for a
    // hold never made would keep the pages held for ever.
    let new_key = !s.held.contains_key(&key);
    if !room_for(core::alloc::Layout::new::<(usize, usize, Hold)>()) || (new_key && !room_for(HELD_NODE)) {
        return Err(Error::NoMemory);
    }
    let hold = Arc::new(Hold { key });
    *s.held.entry(key).or_insert(0) += 1;
    let text = Text {
        phys: s.window.base() + v.offset,
        pages: pages as usize,
        hold,
    };
    Ok((text, v))
}

/// Takes the store out for a change (Busy if another runs), telling it
/// what is held.
fn take_store() -> Result<Store<Nvm>, Error> {
    let mut guard = STATE.lock();
    let s = guard.as_mut().ok_or(Error::NotFound)?;
    let mut store = s.store.take().ok_or(Error::Busy)?;
    store.set_held(s.held.keys().copied());
    Ok(store)
}

/// Puts the store back after a change, with the directory it committed.
fn put_store(store: Store<Nvm>) {
    if let Some(s) = STATE.lock().as_mut() {
        s.files = listing(&store);
        s.store = Some(store);
    }
}

const CHUNK: usize = 64 << 10;

/// A caller's bytes of any length (a huge program's text is megabytes; a
/// `UserRange` is at most `uaccess::MAX_COPY`), taken in pieces, each
/// checked where it is used: a bad piece fails the change before it
/// commits.
#[derive(Debug, Clone, Copy)]
pub struct UserBytes {
    addr: u64,
    len: usize,
}

impl UserBytes {
    pub fn new(addr: u64, len: u64) -> Result<UserBytes, Error> {
        let len = usize::try_from(len).map_err(|_| Error::Invalid)?;
        addr.checked_add(len as u64).ok_or(Error::Fault)?;
        Ok(UserBytes { addr, len })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `n` bytes from `offset` (`n` at most `uaccess::MAX_COPY`).
    fn part(&self, offset: usize, n: usize) -> Result<UserRange, Error> {
        if offset > self.len || n > self.len - offset {
            return Err(Error::Invalid);
        }
        UserRange::new(self.addr + offset as u64, n)
    }
}

/// CRC-64 of the caller's `data`, read chunk by chunk.
fn user_crc(data: UserBytes, buf: &mut [u8]) -> Result<u64, Error> {
    let mut digest = nvmstore::CRC64.digest();
    let mut done = 0;
    while done < data.len() {
        let n = (data.len() - done).min(buf.len());
        data.part(done, n)?.read(&mut buf[..n])?;
        digest.update(&buf[..n]);
        done += n;
    }
    Ok(digest.finalize())
}

/// Whether file `f` holds exactly the caller's `data`.
fn same_content(window: &Window, f: &File, data: UserBytes, buf: &mut [u8]) -> Result<bool, Error> {
    let mut mine = alloc::vec::Vec::new();
    mine.try_reserve_exact(buf.len()).map_err(|_| Error::NoMemory)?;
    mine.resize(buf.len(), 0);
    let mut done = 0;
    while done < data.len() {
        let n = (data.len() - done).min(buf.len());
        data.part(done, n)?.read(&mut buf[..n])?;
        if !window.read(f.offset + done as u64, &mut mine[..n]) || buf[..n] != mine[..n] {
            return Ok(false);
        }
        done += n;
    }
    Ok(true)
}

/// Stores the caller's `data` as text file `name` (`nvm_store`), replacing
/// any file of that name; the version a process maps stays until it lets
/// go. Returns 1 if it stored, 0 if the file already held exactly this
/// (a converter run twice changes nothing).
pub fn store(caller: u64, name: &str, data: UserBytes) -> Result<u64, Error> {
    invoke(caller, ResOp::StoreText, NO_IDS, || {
        if !nvmstore::valid_name(name) {
            return Err(Error::Invalid);
        }
        let mut buf = Vec::new();
        buf.try_reserve_exact(CHUNK.min(data.len()).max(1))
            .map_err(|_| Error::NoMemory)?;
        buf.resize(CHUNK.min(data.len()).max(1), 0);
        let existing = {
            let guard = STATE.lock();
            let s = guard.as_ref().ok_or(Error::NotFound)?;
            let f = s.files.iter().find(|f| f.name == name).cloned();
            f.map(|f| (s.window, f))
        };
        if let Some((window, f)) = existing
            && f.len == data.len() as u64
            && f.crc == user_crc(data, &mut buf)?
            && same_content(window, &f, data, &mut buf)?
        {
            return Ok(0);
        }
        let mut store = take_store()?;
        let result = store
            .store_from(name, data.len() as u64, |offset, chunk| {
                data.part(offset as usize, chunk.len())
                    .and_then(|r| r.read(chunk))
                    .map_err(|_| ())
            })
            .map(|_| 1)
            .map_err(store_error);
        put_store(store);
        result
    })
}

/// Stores the kernel's own `data` as text file `name` (what `store` does
/// with a caller's bytes; the kernel's tests of holds need a file).
pub fn store_own(name: &str, data: &[u8]) -> Result<(), Error> {
    if !nvmstore::valid_name(name) {
        return Err(Error::Invalid);
    }
    let mut store = take_store()?;
    let result = store
        .store_from(name, data.len() as u64, |offset, chunk| {
            let from = data.get(offset as usize..).ok_or(())?;
            chunk.copy_from_slice(from.get(..chunk.len()).ok_or(())?);
            Ok(())
        })
        .map(drop)
        .map_err(store_error);
    put_store(store);
    result
}

/// Deletes text file `name` (`nvm_delete`); processes that map it keep
/// their pages until they let go.
pub fn delete(caller: u64, name: &str) -> Result<u64, Error> {
    invoke(caller, ResOp::DeleteText, NO_IDS, || {
        let mut store = take_store()?;
        let result = store.delete(name).map(|()| 0).map_err(store_error);
        put_store(store);
        result
    })
}

/// Copies text file `name` from `offset` into the caller's `buf`
/// (`nvm_read`); returns the bytes copied, 0 at the end.
pub fn read(name: &str, offset: u64, buf: UserRange) -> Result<u64, Error> {
    // Held while it is read: no change reuses its pages meanwhile.
    let (_text, f) = hold(name)?;
    let window = kcore::mm::nvm::window().ok_or(Error::NotFound)?;
    let n = f.len.saturating_sub(offset).min(buf.len() as u64) as usize;
    let mut chunk = alloc::vec::Vec::new();
    chunk.try_reserve_exact(n.min(CHUNK)).map_err(|_| Error::NoMemory)?;
    chunk.resize(n.min(CHUNK), 0);
    let mut done = 0;
    while done < n {
        let k = (n - done).min(CHUNK);
        if !window.read(f.offset + offset + done as u64, &mut chunk[..k]) {
            return Err(Error::Invalid);
        }
        buf.part(done, k)?.write(&chunk[..k])?;
        done += k;
    }
    Ok(n as u64)
}

/// Every file of the directory, with the regions that map it.
pub fn files(f: &mut dyn FnMut(NvmRecord)) {
    let guard = STATE.lock();
    let Some(s) = guard.as_ref() else { return };
    for file in &s.files {
        f(NvmRecord {
            offset: file.offset,
            len: file.len,
            pages: file.pages,
            crc: file.crc,
            version: file.version,
            users: s.held.get(&(file.offset, file.pages)).copied().unwrap_or(0) as u64,
            name: abi::name_field(&file.name),
        });
    }
}

/// The store as a whole (None: no NVM store on this machine).
pub fn info() -> Option<NvmStoreInfo> {
    let mut guard = STATE.lock();
    let s = guard.as_mut()?;
    // Pages held by versions the directory no longer names.
    let files = &s.files;
    let orphaned = s
        .held
        .keys()
        .filter(|k| !files.iter().any(|f| (f.offset, f.pages) == **k))
        .map(|k| k.1)
        .sum();
    let (free, largest, data_pages, capacity, sequence) = match &mut s.store {
        Some(store) => {
            store.set_held(s.held.keys().copied());
            let sp = store.space();
            (
                sp.free_pages,
                sp.largest_free_run,
                sp.data_pages,
                sp.capacity,
                store.sequence(),
            )
        }
        None => (0, 0, 0, 0, 0),
    };
    Some(NvmStoreInfo {
        base: s.window.base(),
        size: s.window.size(),
        data_pages,
        free_pages: free,
        largest_free_run: largest,
        files: s.files.len() as u64,
        capacity: capacity as u64,
        sequence,
        orphaned_pages: orphaned,
        busy: s.store.is_none() as u64,
    })
}
