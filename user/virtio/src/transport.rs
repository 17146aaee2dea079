//! Finding a virtio PCI device of a kind, claiming it from the kernel, and
//! the `virtio-drivers` transport over it: the part every driver shares.
use crate::config::Config;
use crate::device::Device;
use crate::hal::TesseraHal;
use tessera_rt::abi::Error;
use virtio_drivers::transport::pci::PciTransport;
use virtio_drivers::transport::pci::bus::{DeviceFunction, PciRoot};

/// Red Hat's PCI vendor id, which virtio devices carry.
const VIRTIO_VENDOR: u16 = 0x1af4;

/// Claims the `index`-th device with one of the PCI device `ids` (modern
/// and transitional) and opens its transport. `NotFound`: there is none;
/// another error: one was there but could not be claimed (`Denied`
/// without the device right, `Busy` if another driver holds it).
pub fn open(ids: &[u16], index: u64) -> Result<(Device, PciTransport), Error> {
    let mut why = Error::NotFound;
    let device = ids
        .iter()
        .find_map(|&id| match Device::claim(VIRTIO_VENDOR, id, index) {
            Ok(d) => Some(d),
            Err(Error::NotFound) => None,
            Err(e) => {
                why = e;
                None
            }
        })
        .ok_or(why)?;
    let (bus, dev, function) = device.location();
    let mut root = PciRoot::new(Config::new(&device));
    let transport = PciTransport::new::<TesseraHal, Config>(
        &mut root,
        DeviceFunction {
            bus,
            device: dev,
            function,
        },
    )
    .map_err(|_| Error::NoSys)?;
    Ok((device, transport))
}

/// The device's or the crate's failure as Tessera's error.
pub fn error(e: virtio_drivers::Error) -> Error {
    match e {
        virtio_drivers::Error::QueueFull => Error::Limit,
        virtio_drivers::Error::DmaError => Error::NoMemory,
        virtio_drivers::Error::InvalidParam => Error::Invalid,
        // The device failed the request (I/O error, unsupported, ...).
        _ => Error::Busy,
    }
}
