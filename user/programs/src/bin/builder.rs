//! Builds a process step by step from Tender resources through the native
//! API, as Tender allows, instead of calling spawn: find the plate, make a
//! program, a virtual space, one region per segment (loaded), a stack, a
//! work area with the arguments, the process and its computation; start
//! it and wait. Runs `argcheck x yy zzz`, which exits 0 only if its
//! arguments arrived intact. Exits with the child's status.
#![no_std]
#![no_main]
use tessera_rt::abi::{Error, LoadPolicy, ResKind};
use tessera_rt::{println, sys};
use user_programs::compose;

fn build() -> Result<u64, Error> {
    let plate = sys::plate_find("bin/argcheck")?;
    let program = sys::res_create(ResKind::Program, plate, 0, 0, 0)?;
    let (space, work_area) = compose::image(program)?;
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
