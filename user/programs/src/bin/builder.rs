//! Builds a process step by step from Tender resources through the native
//! API, as Tender allows, instead of calling spawn: find the plate, make a
//! program, a virtual space, one region per segment (loaded), a stack, a
//! work area with the arguments, the process and its computation; start
//! it and wait. Runs `argcheck x yy zzz`, which exits 0 only if its
//! arguments arrived intact. Exits with the child's status.
#![no_std]
#![no_main]
use tessera_rt::abi::{Error, LoadPolicy, RegionKind, ResKind, prot};
use tessera_rt::{println, sys};

const STACK_TOP: u64 = 0x0000_7fff_ffff_0000;
const STACK_PAGES: u64 = 16;

fn build() -> Result<u64, Error> {
    let plate = sys::plate_find("bin/argcheck")?;
    let program = sys::res_create(ResKind::Program, plate, 0, 0, 0)?;
    let space = sys::res_create(ResKind::VirtualSpace, 0, 0, 0, 0)?;
    // One region per segment, loaded with its content (BSS included, as
    // the zero tail of the data region), attached where the program expects it.
    let mut index = 0;
    while let Ok(seg) = sys::program_segment(program, index) {
        let start = seg.vaddr & !0xfff;
        let pages = (seg.vaddr + seg.memsz).div_ceil(4096) - start / 4096;
        let kind = if seg.prot & prot::WRITE != 0 {
            RegionKind::Data
        } else {
            RegionKind::Text
        };
        let region = sys::res_create(ResKind::VirtualRegion, pages, kind as u64, seg.prot, 0)?;
        sys::res_load(region, program, index)?;
        sys::res_create(ResKind::VirtualUserSpace, space, region, start, 0)?;
        index += 1;
    }
    let stack = sys::res_create(
        ResKind::VirtualRegion,
        STACK_PAGES,
        RegionKind::Stack as u64,
        prot::READ | prot::WRITE,
        0,
    )?;
    sys::res_create(
        ResKind::VirtualUserSpace,
        space,
        stack,
        STACK_TOP - STACK_PAGES * 4096,
        0,
    )?;
    let page = sys::res_create(
        ResKind::VirtualRegion,
        1,
        RegionKind::Data as u64,
        prot::READ | prot::WRITE,
        0,
    )?;
    let work_area = sys::res_create(ResKind::VirtualKernelSpace, page, 0, 0, 0)?;
    sys::work_area_write(work_area, b"argcheck\0x\0yy\0zzz\0")?;
    let process = sys::res_create(ResKind::Process, program, space, work_area, LoadPolicy::Eager as u64)?;
    sys::res_create(ResKind::Computation, process, tessera_rt::abi::ANY_CPU, 0, 0)?;
    // Parts in use are refused: the space now belongs to the process.
    if sys::res_delete(space).is_ok() {
        println!("builder: a space in use was deleted");
        return Err(Error::Invalid);
    }
    sys::process_start(process)
}

fn main(_args: &[&str]) -> i32 {
    match build() {
        Ok(pid) => match sys::wait(pid) {
            Ok(status) => status as i32,
            Err(e) => {
                println!("builder: wait: {e:?}");
                3
            }
        },
        Err(e) => {
            println!("builder: {e:?}");
            2
        }
    }
}
tessera_rt::entry!(main);
