//! Devices as resources: each PCI function found at boot is one, held by
//! the kernel until a driver claims it. A driver is an ordinary process
//! (seeds 002 and 003: OS functions are servers); what the kernel gives
//! it, through the mediator and to it alone, is:
//!
//! - its memory BARs, mapped uncached into the driver's space (regions
//!   over the device's addresses, held by the device: the driver can
//!   neither delete nor move them);
//! - its interrupt, turned into communication (seed 003): an event on an
//!   entry of the driver's port, which `acc` reports like a call. A PCI
//!   line is level-triggered and may be shared, so it stays masked from
//!   each interrupt until every driver on it has said it served its
//!   device (`device_irq_done`);
//! - the physical addresses of its own contiguous memory, for DMA
//!   (`dma_address`);
//! - its configuration space, where the kernel's parts (BARs, interrupt
//!   line, MSI and MSI-X) are refused (`platform::pci::driver_may_write`).
//!
//! When the driver ends or gives the device up, the device is quiesced
//! (bus mastering, memory and I/O decoding off: no DMA, no register
//! access), its line unbound, its mappings taken out of the space, and it
//! is the kernel's again for the next driver, whose initialisation resets
//! it (a virtio driver writes 0 to its status first).
//!
//! There is no IOMMU: a claimed device can be told to write anywhere in
//! memory, so `rights::DEVICE` is the whole of the kernel's trust in a
//! driver. QEMU's `intel-iommu` (on `q35`) is where DMA remapping would go.

use super::mediator::{Need, invoke, only};
use super::vspace::{self, SpaceRef};
use super::{KERNEL, Kind, ResId, ResTable, Resource, table};
use abi::{BarRecord, DeviceRecord, Error, ResInfo, ResOp};
use alloc::sync::Arc;
use alloc::vec::Vec;
use arrayvec::ArrayVec;
use core::sync::atomic::{AtomicU64, Ordering};
use ipc::process::Process;
use kcore::arch::x86_64::{irq, pci};
use kcore::computation::Computation;
use kcore::sync::IrqMutex;
use kcore::vm::region::Region;
use platform::pci::{Bar, Function, command, reg};

const PAGE: u64 = 4096;

pub struct Device {
    function: Function,
    /// The BARs mapped in the holder's space.
    maps: Vec<Mapping>,
    /// Interrupts delivered since boot (counted by the interrupt handler,
    /// which takes no table lock).
    interrupts: Arc<AtomicU64>,
}

/// A BAR attached to the holder's space, held by the device.
struct Mapping {
    bar: u8,
    link: ResId,
    region: ResId,
    space: SpaceRef,
}

static TABLE: IrqMutex<ResTable<Device>> = IrqMutex::new(table(Kind::Device));

/// An I/O APIC line with the drivers bound to it (PCI lines are shared).
struct Line {
    gsi: u32,
    vector: u8,
    /// Drivers that have not yet served the last interrupt: the line stays
    /// masked until none is left.
    outstanding: usize,
    bound: ArrayVec<Bound, MAX_SHARING>,
}

/// Most devices sharing one line (the `pc` machine routes its PCI slots
/// to four).
const MAX_SHARING: usize = 8;

struct Bound {
    device: ResId,
    interrupts: Arc<AtomicU64>,
    holder: Arc<Process>,
    entry: u64,
    /// An interrupt it has not yet said it served.
    pending: bool,
}

/// The lines in use. Taken in the interrupt handler: an `IrqMutex`, and
/// nothing under it allocates.
static LINES: IrqMutex<Vec<Line>> = IrqMutex::new(Vec::new());

/// Creates a device resource for every PCI function found at boot.
pub fn init() {
    let mut t = TABLE.lock();
    for f in pci::functions() {
        let d = Device {
            function: *f,
            maps: Vec::new(),
            interrupts: Arc::new(AtomicU64::new(0)),
        };
        if super::insert(&mut t, KERNEL, d).is_err() {
            break;
        }
    }
}

/// The `index`-th device with this vendor and device id (`device_find`).
pub fn find(vendor: u64, device: u64, index: u64) -> Result<ResId, Error> {
    TABLE
        .lock()
        .iter()
        .filter(|(_, e)| e.value.function.vendor as u64 == vendor && e.value.function.device as u64 == device)
        .nth(index as usize)
        .map(|(id, _)| id)
        .ok_or(Error::NotFound)
}

/// The device's record (`device_info`, the inspector).
pub fn info(id: ResId) -> Result<DeviceRecord, Error> {
    let t = TABLE.lock();
    let e = t.get(id).map_err(super::id_error)?;
    Ok(record(id, e.owner, &e.value))
}

/// Every device's record, in bus order.
pub fn records() -> Vec<DeviceRecord> {
    super::try_collect(TABLE.lock().iter().map(|(id, e)| record(id, e.owner, &e.value))).unwrap_or_default()
}

fn record(id: ResId, holder: u64, d: &Device) -> DeviceRecord {
    let f = &d.function;
    let mut bars = [BarRecord::default(); 6];
    for (out, bar) in bars.iter_mut().zip(f.bars.iter()) {
        *out = match *bar {
            Bar::None => BarRecord::default(),
            Bar::Memory {
                addr,
                size,
                prefetchable,
                wide,
            } => BarRecord {
                base: addr,
                size,
                flags: if wide { abi::BAR_64 } else { 0 } | if prefetchable { abi::BAR_PREFETCH } else { 0 },
            },
            Bar::Io { port, size } => BarRecord {
                base: port as u64,
                size: size as u64,
                flags: abi::BAR_IO,
            },
        };
    }
    DeviceRecord {
        id: id.raw(),
        bdf: (f.bdf.bus as u64) << 8 | (f.bdf.device as u64) << 3 | f.bdf.function as u64,
        vendor: f.vendor as u64,
        device: f.device as u64,
        class: (f.class as u64) << 16 | (f.subclass as u64) << 8 | f.prog_if as u64,
        pin: f.pin as u64,
        line: f.line as u64,
        msix: f.msix.map_or(0, |m| m.entries as u64),
        holder,
        interrupts: d.interrupts.load(Ordering::Relaxed),
        bars,
    }
}

/// PCI class of bridges: they hold the machine together (the host bridge
/// decodes memory for everyone, the ISA bridge the legacy devices), so no
/// driver ever claims one.
const CLASS_BRIDGE: u8 = 0x06;

/// Makes the device `caller`'s (`device_claim`). The right is checked by
/// the system call; here, that nobody holds it.
pub fn claim(caller: u64, id: ResId) -> Result<(), Error> {
    invoke(caller, ResOp::ClaimDevice, only(id, Need::Live(Kind::Device)), || {
        let mut t = TABLE.lock();
        let e = t.get_mut(id).map_err(super::id_error)?;
        // The NVM's memory is the kernel's (its store, programs' text).
        let nvm = kcore::mm::nvm::window().is_some_and(|w| w.bdf() == e.value.function.bdf);
        if e.value.function.class == CLASS_BRIDGE || nvm {
            return Err(Error::Denied);
        }
        if e.owner != KERNEL {
            return Err(if e.owner == caller { Error::Invalid } else { Error::Busy });
        }
        e.owner = caller;
        Ok(())
    })
}

/// The function of a device `caller` holds.
fn held(caller: u64, id: ResId) -> Result<Function, Error> {
    Ok(super::owned(&TABLE.lock(), id, caller)?.value.function)
}

/// Its interrupt counter, for a device `caller` holds.
fn counter(caller: u64, id: ResId) -> Result<Arc<AtomicU64>, Error> {
    Ok(super::owned(&TABLE.lock(), id, caller)?.value.interrupts.clone())
}

/// Maps memory BAR `bar` of the device uncached into `me`'s space
/// (`device_map`); gives the address of the BAR's first byte. A BAR is
/// mapped once (what a holder can make the kernel keep is bounded).
pub fn map(me: &Process, id: ResId, bar: u64) -> Result<u64, Error> {
    invoke(me.pid(), ResOp::MapDevice, only(id, Need::Owned(Kind::Device)), || {
        let f = held(me.pid(), id)?;
        let mapped = super::owned(&TABLE.lock(), id, me.pid())?
            .value
            .maps
            .iter()
            .any(|m| m.bar as u64 == bar);
        if mapped {
            return Err(Error::Busy);
        }
        let Some(Bar::Memory { addr, size, .. }) = f.bars.get(bar as usize).copied() else {
            return Err(Error::Invalid);
        };
        if addr == 0 || size == 0 {
            return Err(Error::Invalid);
        }
        let first = addr & !(PAGE - 1);
        let pages = (addr + size - first).div_ceil(PAGE) as usize;
        let space = me.space().ok_or(Error::NotFound)?;
        let memory = Region::device(first, pages, true).map_err(|_| Error::NoMemory)?;
        let (region, link, _slot, base) =
            vspace::attach_memory(me.space_id(), memory, me.free_place(), id, me.pid()).map_err(|(e, _)| e)?;
        let mapping = Mapping {
            bar: bar as u8,
            link,
            region,
            space: space.clone(),
        };
        let kept = match super::owned_mut(&mut TABLE.lock(), id, me.pid()) {
            Ok(e) => match e.value.maps.try_reserve(1) {
                Ok(()) => {
                    e.value.maps.push(mapping);
                    Ok(())
                }
                Err(_) => Err(Error::NoMemory),
            },
            Err(e) => Err(e),
        };
        if let Err(e) = kept {
            unmap(link, region, &space);
            return Err(e);
        }
        Ok(base + (addr - first))
    })
}

fn unmap(link: ResId, region: ResId, space: &SpaceRef) {
    let _ = vspace::release_held(link, space);
    let _ = super::vregion::disown(region);
}

/// Binds the device's interrupt to `entry` of its holder's port
/// (`device_irq`).
pub fn bind_interrupt(caller: u64, id: ResId, entry: u64) -> Result<(), Error> {
    invoke(
        caller,
        ResOp::BindInterrupt,
        only(id, Need::Owned(Kind::Device)),
        || {
            if entry >= 61 {
                return Err(Error::Invalid);
            }
            let f = held(caller, id)?;
            let interrupts = counter(caller, id)?;
            let holder = ipc::process::get(caller).ok_or(Error::NotFound)?;
            if f.pin == 0 || f.line == 0 || f.line == 0xff {
                return Err(Error::NoSys);
            }
            let (gsi, flags) = irq::pci_line(f.line);
            let mut lines = LINES.lock();
            if lines.iter().any(|l| l.bound.iter().any(|b| b.device == id)) {
                return Err(Error::Busy);
            }
            let bound = Bound {
                device: id,
                interrupts,
                holder,
                entry,
                pending: false,
            };
            if let Some(line) = lines.iter_mut().find(|l| l.gsi == gsi) {
                return line.bound.try_push(bound).map_err(|_| Error::Limit);
            }
            lines.try_reserve(1).map_err(|_| Error::NoMemory)?;
            let vector = irq::alloc_vector().ok_or(Error::Limit)?;
            if !irq::route_line(gsi, flags, vector) {
                irq::free_vector(vector);
                return Err(Error::NoSys);
            }
            let mut line = Line {
                gsi,
                vector,
                outstanding: 0,
                bound: ArrayVec::new(),
            };
            line.bound.push(bound);
            lines.push(line);
            irq::unmask_line(gsi);
            Ok(())
        },
    )
}

/// The driver has served its device (`device_irq_done`): once every driver
/// on the line has, the line is unmasked.
pub fn interrupt_done(caller: u64, id: ResId) -> Result<(), Error> {
    invoke(
        caller,
        ResOp::InterruptDone,
        only(id, Need::Owned(Kind::Device)),
        || {
            let mut lines = LINES.lock();
            let line = lines
                .iter_mut()
                .find(|l| l.bound.iter().any(|b| b.device == id))
                .ok_or(Error::Invalid)?;
            served(line, id);
            Ok(())
        },
    )
}

/// `device` no longer keeps its line masked.
fn served(line: &mut Line, device: ResId) {
    if let Some(b) = line.bound.iter_mut().find(|b| b.device == device && b.pending) {
        b.pending = false;
        line.outstanding -= 1;
        if line.outstanding == 0 {
            irq::unmask_line(line.gsi);
        }
    }
}

/// A device vector arrived (the core's `device_irq` hook): the line is
/// masked and every driver on it gets an event.
pub fn on_interrupt(vector: u8) {
    let mut woken = ArrayVec::<Arc<Computation>, MAX_SHARING>::new();
    {
        let mut lines = LINES.lock();
        let Some(line) = lines.iter_mut().find(|l| l.vector == vector) else {
            return;
        };
        irq::mask_line(line.gsi);
        for b in line.bound.iter_mut() {
            if !b.pending {
                b.pending = true;
                line.outstanding += 1;
            }
            b.interrupts.fetch_add(1, Ordering::Relaxed);
            if let Some(c) = ipc::port::post_event(&b.holder, b.entry) {
                woken.push(c);
            }
        }
    }
    for c in woken {
        sched::wake(&c);
    }
}

/// Reads `width` bytes of the device's configuration space at `offset`
/// (`device_config_read`).
pub fn read_config(caller: u64, id: ResId, offset: u64, width: u64) -> Result<u64, Error> {
    invoke(caller, ResOp::ReadConfig, only(id, Need::Owned(Kind::Device)), || {
        let f = held(caller, id)?;
        if !platform::pci::valid_access(offset, width) {
            return Err(Error::Invalid);
        }
        Ok(pci::read(f.bdf, offset as u16, width as u8) as u64)
    })
}

/// Writes `width` bytes of the device's configuration space at `offset`
/// (`device_config_write`), where a driver may.
pub fn write_config(caller: u64, id: ResId, offset: u64, width: u64, value: u64) -> Result<(), Error> {
    invoke(caller, ResOp::WriteConfig, only(id, Need::Owned(Kind::Device)), || {
        let f = held(caller, id)?;
        if !platform::pci::valid_access(offset, width) || value >> (8 * width) != 0 {
            return Err(Error::Invalid);
        }
        if !platform::pci::driver_may_write(&f, offset, width) {
            return Err(Error::Denied);
        }
        pci::write(f.bdf, offset as u16, width as u8, value as u32);
        Ok(())
    })
}

/// The physical address of `len` bytes of `me`'s memory at `addr`,
/// present and physically contiguous (`dma_address`). Only a process that
/// holds a device learns physical addresses.
pub fn dma_address(me: &Process, addr: u64, len: u64) -> Result<u64, Error> {
    invoke(me.pid(), ResOp::DmaAddress, super::mediator::NO_IDS, || {
        if !TABLE.lock().iter().any(|(_, e)| e.owner == me.pid()) {
            return Err(Error::Denied);
        }
        if len == 0 {
            return Err(Error::Invalid);
        }
        let last = addr.checked_add(len - 1).ok_or(Error::Invalid)?;
        let space = me.space().ok_or(Error::NotFound)?;
        let mut s = space.lock();
        let a = s.region_at(addr).ok_or(Error::Fault)?;
        if last >= a.end() || a.region.is_device() {
            return Err(Error::Invalid);
        }
        let (first_page, last_page) = (((addr - a.base) / PAGE) as usize, ((last - a.base) / PAGE) as usize);
        let start = a.region.frame(first_page).ok_or(Error::Invalid)?;
        for (k, i) in (first_page..=last_page).enumerate() {
            if a.region.frame(i) != Some(start + k as u64 * PAGE) {
                return Err(Error::Invalid);
            }
        }
        // The device may write these pages behind every page table.
        let link = a.link_id;
        if let Some(a) = s.attachment_mut(link, kcore::vm::space::NO_SLOT) {
            a.region.taint();
        }
        Ok(start + addr % PAGE)
    })
}

/// Gives the device back to the kernel: unbound, unmapped, quiesced.
fn release(id: ResId) {
    let maps = {
        let mut t = TABLE.lock();
        let Ok(e) = t.get_mut(id) else { return };
        e.owner = KERNEL;
        core::mem::take(&mut e.value.maps)
    };
    let function = TABLE.lock().get(id).map(|e| e.value.function).ok();
    if let Some(f) = function {
        // No DMA and no register access from here on, whatever the driver
        // left running.
        let cmd = pci::read(f.bdf, reg::COMMAND, 2);
        let off = command::BUS_MASTER | command::MEMORY | command::IO;
        pci::write(f.bdf, reg::COMMAND, 2, (cmd & !off) | command::INTX_DISABLE);
    }
    unbind(id);
    for m in maps {
        unmap(m.link, m.region, &m.space);
    }
}

/// Takes the device off its line; a line nobody is bound to any more is
/// masked and its vector given back.
fn unbind(id: ResId) {
    let mut lines = LINES.lock();
    let Some(i) = lines.iter().position(|l| l.bound.iter().any(|b| b.device == id)) else {
        return;
    };
    let line = &mut lines[i];
    served(line, id);
    line.bound.retain(|b| b.device != id);
    if line.bound.is_empty() {
        irq::mask_line(line.gsi);
        irq::free_vector(line.vector);
        lines.swap_remove(i);
    }
}

pub struct Devices;

impl Resource for Devices {
    table_methods!(TABLE);

    /// A device is never deleted: its holder gives it up, and it is the
    /// kernel's again.
    fn delete(&self, caller: u64, id: ResId) -> Result<(), Error> {
        super::owned(&TABLE.lock(), id, caller)?;
        if caller == KERNEL && TABLE.lock().get(id).is_ok_and(|e| e.owner == KERNEL) {
            return Err(Error::Busy);
        }
        release(id);
        Ok(())
    }

    /// Holder, BARs mapped, vendor << 16 | device id.
    fn query(&self, id: ResId) -> Result<ResInfo, Error> {
        super::describe(&TABLE.lock(), id, |d| {
            let bytes = d
                .maps
                .iter()
                .filter_map(|m| match d.function.bars.get(m.bar as usize) {
                    Some(Bar::Memory { size, .. }) => Some(*size),
                    _ => None,
                })
                .sum();
            (
                bytes,
                (d.function.vendor as u64) << 16 | d.function.device as u64,
                [ResId::NONE; 3],
            )
        })
    }

    fn release_owned_by(&self, pid: u64) {
        super::each_from(|from| self.next_owned_by(pid, from), release);
    }
}
