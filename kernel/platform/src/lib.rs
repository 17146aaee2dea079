//! Boot-time platform description, parsed without trusting the input.
//!
//! Everything here reads tables the firmware or QEMU left in physical memory
//! through the [`PhysMemory`] trait, so it runs unchanged in host tests over
//! synthetic memory. Malformed tables give an error, never a panic.
#![cfg_attr(not(any(test, feature = "std")), no_std)]

pub mod acpi;
pub mod cmdline;
pub mod cpio;
pub mod memmap;
pub mod pci;
pub mod pvh;

/// Read-only access to physical memory.
pub trait PhysMemory {
    /// Fills `buf` from physical address `addr`; false if the range cannot be read.
    fn read(&self, addr: u64, buf: &mut [u8]) -> bool;

    fn read_u8(&self, addr: u64) -> Option<u8> {
        let mut b = [0u8; 1];
        self.read(addr, &mut b).then_some(b[0])
    }
    fn read_u16(&self, addr: u64) -> Option<u16> {
        let mut b = [0u8; 2];
        self.read(addr, &mut b).then_some(u16::from_le_bytes(b))
    }
    fn read_u32(&self, addr: u64) -> Option<u32> {
        let mut b = [0u8; 4];
        self.read(addr, &mut b).then_some(u32::from_le_bytes(b))
    }
    fn read_u64(&self, addr: u64) -> Option<u64> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b).then_some(u64::from_le_bytes(b))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// A structure lies outside readable memory.
    Unreadable(u64),
    /// A magic number or signature did not match.
    BadSignature(u64),
    /// A checksum did not add up to zero.
    BadChecksum(u64),
    /// A length or count field is impossible.
    BadLength(u64),
}

#[cfg(test)]
pub(crate) mod testmem {
    use super::PhysMemory;

    /// Sparse synthetic physical memory for tests.
    pub struct TestMem {
        pub base: u64,
        pub bytes: Vec<u8>,
    }

    impl TestMem {
        pub fn new(base: u64, size: usize) -> Self {
            TestMem {
                base,
                bytes: vec![0; size],
            }
        }
        pub fn put(&mut self, addr: u64, data: &[u8]) {
            let off = (addr - self.base) as usize;
            self.bytes[off..off + data.len()].copy_from_slice(data);
        }
    }

    impl PhysMemory for TestMem {
        fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
            let Some(off) = addr.checked_sub(self.base) else {
                return false;
            };
            let off = off as usize;
            match self.bytes.get(off..off + buf.len()) {
                Some(src) => {
                    buf.copy_from_slice(src);
                    true
                }
                None => false,
            }
        }
    }
}
