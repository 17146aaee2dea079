//! Plate (Tender's プレート): persistent content held in memory, Tender's
//! equivalent of a file: the files of the initial archive, made at boot,
//! and the programs a supervisor brings in from the file system
//! (`plate_create`). A plate is never deleted (programs made from it hold
//! its bytes), so its maker's account carries its cost for good; a newer
//! version of a name takes the name from the older.

use super::mediator::{NO_IDS, invoke};
use super::{Kind, ResId, ResTable, Resource, table};
use abi::{Error, ResInfo, ResOp};
use alloc::string::String;
use kcore::sync::IrqMutex;

pub struct Plate {
    pub name: String,
    pub data: &'static [u8],
    /// Its creator's mark of the content (0: the archive's).
    pub tag: u64,
}

/// Most bytes of plates made at run time: they are never freed.
const CREATED_LIMIT: usize = 512 << 20;

static CREATED_BYTES: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// The plate `name` of version `tag`, made from `content` if there is none
/// (`plate_create`).
pub fn create(caller: u64, name: &str, tag: u64, content: &[u8]) -> Result<ResId, Error> {
    invoke(caller, ResOp::CreatePlate, NO_IDS, || {
        let want = name.trim_start_matches("./").trim_start_matches('/');
        if want.is_empty() || want.len() > 255 {
            return Err(Error::Invalid);
        }
        let found = TABLE
            .lock()
            .iter()
            .find(|(_, e)| e.value.name == want && e.value.tag == tag)
            .map(|(id, _)| id);
        if let Some(id) = found {
            return Ok(id);
        }
        if content.is_empty() {
            return Err(Error::NotFound);
        }
        use core::sync::atomic::Ordering;
        // Its maker pays for it for good (a plate is never deleted).
        let cost = super::cost::<Plate>((content.len() + want.len()) as u64);
        let charge = super::charge(caller, cost)?;
        if CREATED_BYTES.fetch_add(content.len(), Ordering::Relaxed) + content.len() > CREATED_LIMIT {
            CREATED_BYTES.fetch_sub(content.len(), Ordering::Relaxed);
            return Err(Error::Limit);
        }
        let mut data = alloc::vec::Vec::new();
        if data.try_reserve_exact(content.len()).is_err() {
            CREATED_BYTES.fetch_sub(content.len(), Ordering::Relaxed);
            return Err(Error::NoMemory);
        }
        data.extend_from_slice(content);
        let data: &'static [u8] = alloc::boxed::Box::leak(data.into_boxed_slice());
        let mut t = TABLE.lock();
        // Older versions keep their bytes and identifiers, not the name.
        let old: alloc::vec::Vec<ResId> = t
            .iter()
            .filter(|(_, e)| e.value.name == want)
            .map(|(id, _)| id)
            .collect();
        for id in old {
            if let Ok(e) = t.get_mut(id) {
                e.value.name.clear();
            }
        }
        super::insert_charged(
            &mut t,
            super::KERNEL,
            charge,
            Plate {
                name: String::from(want),
                data,
                tag,
            },
        )
    })
}

static TABLE: IrqMutex<ResTable<Plate>> = IrqMutex::new(table(Kind::Plate));

pub fn init_from_archive() {
    let Some(archive) = kcore::initrd::archive() else {
        return;
    };
    let mut t = TABLE.lock();
    for entry in platform::cpio::entries(archive)
        .map_while(Result::ok)
        .filter(|e| e.is_file())
    {
        let name = String::from(entry.name.trim_start_matches("./").trim_start_matches('/'));
        if super::insert(
            &mut t,
            super::KERNEL,
            Plate {
                name,
                data: entry.data,
                tag: 0,
            },
        )
        .is_err()
        {
            break;
        }
    }
}

/// Finds the plate of a name (`plate_find`).
pub fn find(caller: u64, name: &str) -> Result<ResId, Error> {
    invoke(caller, ResOp::FindPlate, NO_IDS, || lookup(name))
}

/// The plate of a name, for the kernel's own use (the pool's settings).
pub fn lookup(name: &str) -> Result<ResId, Error> {
    let want = name.trim_start_matches("./").trim_start_matches('/');
    TABLE
        .lock()
        .iter()
        .find(|(_, e)| e.value.name == want)
        .map(|(id, _)| id)
        .ok_or(Error::NotFound)
}

/// The plate's content and name.
pub fn get(id: ResId) -> Result<(&'static [u8], String), Error> {
    let t = TABLE.lock();
    let e = t.get(id).map_err(super::id_error)?;
    Ok((e.value.data, e.value.name.clone()))
}

/// The plate's content.
pub fn content(id: ResId) -> Result<&'static [u8], Error> {
    TABLE.lock().get(id).map(|e| e.value.data).map_err(super::id_error)
}

/// Plates are read by anyone, and live as long as the archive.
pub struct Plates;

impl Resource for Plates {
    table_methods!(TABLE);
    fn query(&self, id: ResId) -> Result<ResInfo, Error> {
        super::describe(&TABLE.lock(), id, |p| (p.data.len() as u64, 0, [ResId::NONE; 3]))
    }
    fn delete(&self, _: u64, id: ResId) -> Result<(), Error> {
        TABLE.lock().check(id).map_err(super::id_error)?;
        Err(Error::Denied)
    }
}

pub fn list(f: &mut dyn FnMut(ResId, &str, u64)) {
    for (id, e) in TABLE.lock().iter() {
        f(id, &e.value.name, e.value.data.len() as u64);
    }
}
