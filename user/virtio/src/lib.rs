//! What a user-mode driver stands on (seeds 002 and 003: drivers are
//! servers). A driver claims its device from the kernel ([`Device`]):
//! its memory BARs are mapped into the driver's space, its interrupt
//! arrives as an event on a port entry, and the physical addresses of the
//! driver's contiguous memory are its to learn for DMA. This crate then
//! gives the `virtio-drivers` crate what it needs to drive a virtio PCI
//! device from there ([`hal::TesseraHal`], [`config::Config`]), and safe
//! device types over it ([`blk::Blk`], [`net::Net`]) whose requests own their buffers
//! while the device works on them.
//!
//! The crate holds the drivers' unsafe code (the HAL is an unsafe trait,
//! and a request's buffers are lent to the device); the driver servers
//! above it forbid unsafe code.
#![no_std]

extern crate alloc;

pub mod blk;
pub mod config;
pub mod device;
pub mod hal;
pub mod net;
pub mod transport;

pub use device::Device;
