//! Composing a process by hand from Tender resources, as Tender allows
//! instead of `spawn`: a region per segment loaded from the program, a
//! stack, and a one-page work area for the arguments. `builder` does it to
//! show the way; `attack` does it to try what the kernel must refuse.
use tessera_rt::abi::{Error, RegionKind, ResKind, prot};
use tessera_rt::sys;

/// Where the stack ends, as `spawn` places it.
pub const STACK_TOP: u64 = 0x0000_7fff_ffff_0000;
/// Pages of a hand-made stack.
pub const STACK_PAGES: u64 = 16;

/// A new, detached virtual region.
pub fn region(pages: u64, kind: RegionKind, protection: u64) -> Result<u64, Error> {
    sys::res_create(ResKind::VirtualRegion, pages, kind as u64, protection, 0)
}

/// A one-page work area (the kernel reads a new process's arguments there).
pub fn work_area() -> Result<u64, Error> {
    let page = region(1, RegionKind::Data, prot::READ | prot::WRITE)?;
    sys::res_create(ResKind::VirtualKernelSpace, page, 0, 0, 0)
}

/// A virtual space holding `program`'s segments (loaded, BSS as the zero
/// tail of the data region, each where the program expects it) and a
/// stack, and a work area: (space, work area).
pub fn image(program: u64) -> Result<(u64, u64), Error> {
    let space = sys::res_create(ResKind::VirtualSpace, 0, 0, 0, 0)?;
    let mut index = 0;
    while let Ok(seg) = sys::program_segment(program, index) {
        let start = seg.vaddr & !0xfff;
        let pages = (seg.vaddr + seg.memsz).div_ceil(4096) - start / 4096;
        let kind = if seg.prot & prot::WRITE != 0 {
            RegionKind::Data
        } else {
            RegionKind::Text
        };
        let region = region(pages, kind, seg.prot)?;
        sys::res_load(region, program, index)?;
        sys::res_create(ResKind::VirtualUserSpace, space, region, start, 0)?;
        index += 1;
    }
    let stack = region(STACK_PAGES, RegionKind::Stack, prot::READ | prot::WRITE)?;
    sys::res_create(
        ResKind::VirtualUserSpace,
        space,
        stack,
        STACK_TOP - STACK_PAGES * 4096,
        0,
    )?;
    Ok((space, work_area()?))
}
