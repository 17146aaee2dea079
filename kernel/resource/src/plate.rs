//! Plate (Tender's プレート): persistent content held in memory, Tender's
//! equivalent of a file: the files of the initial archive, made at boot,
//! and the programs a supervisor brings in from the file system
//! (`plate_create`). A newer version of a name replaces the older: the
//! older's entry goes (its identifier turns stale, its maker's account
//! gets its cost back) and its bytes are freed once no program or region
//! made from them is left.

use super::mediator::{NO_IDS, invoke};
use super::{Kind, ResId, ResTable, Resource, table};
use abi::{Error, ResInfo, ResOp};
use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};
use kcore::bytes::Bytes;
use kcore::mm::quota::{Account, Charge};
use kcore::sync::IrqMutex;

pub struct Plate {
    pub name: String,
    pub data: Bytes,
    /// Its creator's mark of the content (0: the archive's).
    pub tag: u64,
    /// A paged plate's (`create_paged`): where its bytes past `data` are.
    pub pager: Option<abi::PagerSource>,
    /// Who pays for the pages of the file the kernel caches (a paged
    /// plate's creator).
    payer: Option<Arc<Account>>,
}

/// The plate `name` of version `tag`, made from `content` if there is none
/// (`plate_create`).
pub fn create(caller: u64, name: &str, tag: u64, content: &[u8]) -> Result<ResId, Error> {
    make(caller, name, tag, content, None, None)
}

/// A paged plate (`plate_paged`): `head` held, the rest of the `size`
/// bytes of the file in `source`, read by its pager at faults. The pager
/// must be a live process; the file holds the head at least.
pub fn create_paged(caller: u64, name: &str, tag: u64, head: &[u8], source: abi::PagerSource) -> Result<ResId, Error> {
    if ipc::process::get(source.pager).is_none() {
        return Err(Error::NotFound);
    }
    if (head.len() as u64) > source.size || head.is_empty() {
        return Err(Error::Invalid);
    }
    // Its creator pays for the file's pages the kernel will cache: it
    // asked for the file to be paged and named it. (Not the pager, whom
    // any client could run out of its limit; not the program's owner, the
    // kernel for every program a spawn makes.)
    let payer = super::charge(caller, 0)?.account().cloned();
    make(caller, name, tag, head, Some(source), payer)
}

/// The pager of a paged plate, and an empty charge on the account of who
/// pays for the file's cached pages.
pub fn pager_of(id: ResId) -> Option<(abi::PagerSource, Charge)> {
    let t = TABLE.lock();
    let p = &t.get(id).ok()?.value;
    Some((p.pager?, Charge::on(p.payer.as_ref())))
}

/// Who pays for what the kernel keeps of the plate's content beyond the
/// plate itself (its program's shared text, a paged file's cached
/// pages): whoever made it, None for the archive's (the kernel's).
pub fn payer(id: ResId) -> Option<Arc<Account>> {
    let t = TABLE.lock();
    let e = t.get(id).ok()?;
    e.value.payer.clone().or_else(|| e.charge.account().cloned())
}

fn make(
    caller: u64,
    name: &str,
    tag: u64,
    content: &[u8],
    pager: Option<abi::PagerSource>,
    payer: Option<Arc<Account>>,
) -> Result<ResId, Error> {
    invoke(caller, ResOp::CreatePlate, NO_IDS, || {
        let want = name.trim_start_matches("./").trim_start_matches('/');
        if want.is_empty() || want.len() > 255 {
            return Err(Error::Invalid);
        }
        let found = named(&TABLE.lock(), want).filter(|&(_, t)| t == tag);
        if let Some((id, _)) = found {
            return Ok(id);
        }
        if content.is_empty() {
            return Err(Error::NotFound);
        }
        // Its maker pays for it while the entry lasts.
        let cost = super::cost::<Plate>((content.len() + want.len()) as u64);
        let charge = super::charge(caller, cost)?;
        let mut data = alloc::vec::Vec::new();
        data.try_reserve_exact(content.len()).map_err(|_| Error::NoMemory)?;
        data.extend_from_slice(content);
        let data = Bytes::Shared(kcore::mm::heap::try_arc(data).map_err(|_| Error::NoMemory)?);
        let mut name = String::new();
        name.try_reserve_exact(want.len()).map_err(|_| Error::NoMemory)?;
        name.push_str(want);
        let mut t = TABLE.lock();
        // An older version made at run time goes (what runs from it keeps
        // its bytes); the archive's stay, without the name. Each found in
        // place: either way it no longer has the name.
        while let Some(id) = t.find_from(0, |e| e.value.name == want) {
            let made = t.get(id).is_ok_and(|e| matches!(e.value.data, Bytes::Shared(_)));
            if made {
                drop(t.remove(id));
            } else if let Ok(e) = t.get_mut(id) {
                e.value.name.clear();
            }
        }
        super::insert_charged(
            &mut t,
            super::KERNEL,
            charge,
            Plate {
                name,
                data,
                tag,
                pager,
                payer,
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
                data: Bytes::Static(entry.data),
                tag: 0,
                pager: None,
                payer: None,
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

/// The plate of a name if it is of version `tag` (`SpawnOptions::tag`).
pub fn find_tagged(caller: u64, name: &str, tag: u64) -> Result<ResId, Error> {
    invoke(caller, ResOp::FindPlate, NO_IDS, || {
        let want = name.trim_start_matches("./").trim_start_matches('/');
        named(&TABLE.lock(), want)
            .filter(|&(_, t)| t == tag)
            .map(|(id, _)| id)
            .ok_or(Error::NotFound)
    })
}

/// The plate of a name, for the kernel's own use (the pool's settings).
pub fn lookup(name: &str) -> Result<ResId, Error> {
    let want = name.trim_start_matches("./").trim_start_matches('/');
    named(&TABLE.lock(), want).map(|(id, _)| id).ok_or(Error::NotFound)
}

/// The plate last found by name (raw; 0, never an identifier, before
/// any): a program is run again and again, and the table holds every
/// file of the initial archive, so that the walk through them all was
/// most of a spawn's look-up (two of them at each exec).
static LAST_FOUND: AtomicU64 = AtomicU64::new(0);

/// The first plate named `want`, and its tag. The one last found is that
/// plate while it still has the name: after the archive's at boot, a
/// name is only ever given by `make`, which takes it from every other
/// plate first, so no plate before it can have come to hold it.
fn named(t: &ResTable<Plate>, want: &str) -> Option<(ResId, u64)> {
    let last = ResId::from_raw(LAST_FOUND.load(Ordering::Relaxed));
    if let Ok(e) = t.get(last)
        && e.value.name == want
    {
        return Some((last, e.value.tag));
    }
    let (id, e) = t.iter().find(|(_, e)| e.value.name == want)?;
    LAST_FOUND.store(id.raw(), Ordering::Relaxed);
    Some((id, e.value.tag))
}

/// The plate's content and name.
pub fn get(id: ResId) -> Result<(Bytes, String), Error> {
    let t = TABLE.lock();
    let e = t.get(id).map_err(super::id_error)?;
    Ok((e.value.data.clone(), e.value.name.clone()))
}

/// The plate's content.
pub fn content(id: ResId) -> Result<Bytes, Error> {
    TABLE
        .lock()
        .get(id)
        .map(|e| e.value.data.clone())
        .map_err(super::id_error)
}

/// Plates are read by anyone; only a newer version replaces one.
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
