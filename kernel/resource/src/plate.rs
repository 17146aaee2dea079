//! Plate (Tender's プレート): persistent content held in memory, Tender's
//! equivalent of a file. Today the plates are the files of the initial
//! archive, made at boot and never deleted.

use super::mediator::{NO_IDS, invoke};
use super::{Kind, ResId, ResTable, Resource, table};
use abi::{Error, ResInfo, ResOp};
use alloc::string::String;
use kcore::sync::IrqMutex;

pub struct Plate {
    pub name: String,
    pub data: &'static [u8],
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
        if super::insert(&mut t, super::KERNEL, Plate { name, data: entry.data }).is_err() {
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
