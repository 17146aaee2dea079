//! Running a program kept on the file system (seed 001 §3.2, fig. 3): exec
//! reads what the kernel needs of the file through the file server and
//! hands it over as a plate (`plate_create`), then spawns the plate.
//!
//! - **ELF**: the whole file. Tessera has no region backed by storage, so
//!   the text travels with the plate; the paper's ELF exec reads the first
//!   64 KiB and the rest of the text at page faults, each fault a disk read.
//! - **OFF2F**: file 1's header page alone (4 KiB: step (2') of fig. 3),
//!   made a paged plate (`plate_paged`) whose pager is the file server:
//!   the data pages are read from file 1 at their faults (or, eager, at
//!   creation), each a message from the kernel to the file server. The
//!   text stays in the NVM store; the kernel maps its pages at faults
//!   (steps X, Y) or at creation (eager loading).
//!
//! A plate is named after the file (`fs` + its path, apart from the
//! initial archive's `bin/...`) and tagged with the file's identity (inode,
//! size, modification and change times): an unchanged file is not read
//! again, as a page cache would keep it. `Fresh` reads it anyway, into a new
//! plate version: a cold exec for the experiments.
//!
//! This is the interface a Linux personality's `execve` uses too: `load`
//! with the path, then `spawn` of `Exec::plate` with `SpawnOptions` naming
//! the supervisor (`personality: LINUX`).

use alloc::format;
use alloc::string::String;
use alloc::vec;
use tessera_api::fs::client::{self, File};
use tessera_api::fs::{Errno, O_RDONLY};
use tessera_rt::abi::{self, Error, ProcInfo, SpawnOptions};
use tessera_rt::sys;

/// What exec reads of an OFF2F file first, and ELF's unit of comparison.
pub const HEADER_PAGE: usize = off2f::HEADER_PAGE;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Elf,
    Off2f,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Elf => "elf",
            Format::Off2f => "off2f",
        }
    }
}

/// Whether to use a plate already made from the unchanged file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cache {
    Use,
    Fresh,
}

/// A program loaded for exec.
#[derive(Debug, Clone)]
pub struct Exec {
    /// The plate's name, what `spawn` takes.
    pub plate: String,
    pub format: Format,
    /// Bytes read from the file for this exec (0: the plate was there).
    pub bytes_read: u64,
    /// Of those, the first read (the header page of OFF2F).
    pub first_read: u64,
    /// Reads issued to the file server.
    pub reads: u64,
}

/// Why a program could not be loaded or run.
#[derive(Debug)]
pub enum Failure {
    File(Errno),
    Kernel(Error),
    /// Neither ELF nor OFF2F, or an OFF2F header that does not parse.
    NotProgram(String),
}

impl core::fmt::Display for Failure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Failure::File(e) => write!(f, "{e}"),
            Failure::Kernel(Error::BadProgram) => f.write_str("not a program this kernel runs"),
            Failure::Kernel(Error::NotFound) => {
                f.write_str("not found (for OFF2F: is its text file in the NVM store?)")
            }
            Failure::Kernel(e) => write!(f, "{e:?}"),
            Failure::NotProgram(why) => f.write_str(why),
        }
    }
}

impl From<Errno> for Failure {
    fn from(e: Errno) -> Failure {
        Failure::File(e)
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Kernel(e)
    }
}

/// FNV-1a over the words that identify a file's content.
fn identity(words: &[u64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        for b in w.to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h | 1
}

/// The most one read asks of the file server.
pub const READ_PIECE: usize = 1 << 20;

/// Reads `buf.len()` bytes at `offset`, counting the reads.
fn read_exact(f: &File, offset: u64, buf: &mut [u8], reads: &mut u64) -> Result<(), Failure> {
    for (i, piece) in buf.chunks_mut(READ_PIECE).enumerate() {
        *reads += 1;
        let at = offset + (i * READ_PIECE) as u64;
        // An image is read once: its plate keeps it.
        let n = f.read_at_once(at, piece)?;
        if n != piece.len() {
            return Err(Failure::NotProgram(format!("the file ends at {} bytes", at + n as u64)));
        }
    }
    Ok(())
}

/// Makes (or finds) the plate of the program at `path`.
pub fn load(path: &str, cache: Cache) -> Result<Exec, Failure> {
    let st = client::stat(path)?;
    if st.is_dir() {
        return Err(Failure::File(Errno::EISDIR));
    }
    let mut tag = identity(&[
        st.dev,
        st.ino,
        st.size as u64,
        st.mtime.0 as u64,
        st.mtime.1 as u64,
        st.ctime.0 as u64,
        st.ctime.1 as u64,
    ]);
    if cache == Cache::Fresh {
        tag = identity(&[tag, sys::clock().cycles]);
    }
    let plate = format!("fs{}", if path.starts_with('/') { "" } else { "/" }) + path;
    let mut exec = Exec {
        plate,
        format: Format::Elf,
        bytes_read: 0,
        first_read: 0,
        reads: 0,
    };
    // Made before from the same file: nothing to read.
    if cache == Cache::Use && sys::plate_create(&exec.plate, tag, &[]).is_ok() {
        let mut head = [0u8; 3];
        let plate = sys::plate_find(&exec.plate)?;
        sys::plate_read(plate, 0, &mut head)?;
        exec.format = if &head == b"OFF" { Format::Off2f } else { Format::Elf };
        return Ok(exec);
    }
    let f = File::open(path, O_RDONLY, 0)?;
    let size = st.size as u64;
    let mut content = vec![0u8; HEADER_PAGE.min(size as usize)];
    read_exact(&f, 0, &mut content, &mut exec.reads)?;
    exec.first_read = content.len() as u64;
    if content.starts_with(b"OFF") {
        exec.format = Format::Off2f;
        let h = off2f::Header::parse(&content).map_err(|e| Failure::NotProgram(format!("a bad OFF2F header: {e}")))?;
        let (at, len) = h.data_area();
        let data_end = at.saturating_add(len);
        if data_end > size {
            return Err(Failure::NotProgram(format!(
                "file 1 has {size} bytes, its header names {data_end}"
            )));
        }
        exec.bytes_read = content.len() as u64;
        let source = abi::PagerSource {
            pager: client::server()?,
            object: tessera_api::fs::pager_object(st.ino, size, st.mtime),
            size,
        };
        sys::plate_paged(&exec.plate, tag, &content, &source)?;
        return Ok(exec);
    } else if content.starts_with(b"\x7fELF") {
        let first = content.len();
        content.resize(size as usize, 0);
        if size as usize > first {
            read_exact(&f, first as u64, &mut content[first..], &mut exec.reads)?;
        }
    } else {
        return Err(Failure::NotProgram("neither ELF nor OFF2F".into()));
    }
    exec.bytes_read = content.len() as u64;
    sys::plate_create(&exec.plate, tag, &content)?;
    Ok(exec)
}

/// Loads and runs `path` with `args` (NUL-free, without the program's
/// name), waits for it; its exit status and what it was at its end.
pub fn run(path: &str, args: &[&str], options: &SpawnOptions, cache: Cache) -> Result<(u64, Exec, ProcInfo), Failure> {
    let exec = load(path, cache)?;
    let pid = sys::spawn(&exec.plate, args, options)?;
    let mut info = ProcInfo::default();
    let status = sys::wait_info(pid, &mut info)?;
    Ok((status, exec, info))
}

/// The page faults of a process in the paper's categories (table 2):
/// program text, library text (none: Tessera's programs are static), and
/// everything else; program text split into pages copied from an image
/// and NVM pages mapped in place.
pub fn faults(info: &ProcInfo) -> (u64, u64, u64) {
    let f = &info.faults;
    (f.text, f.nvm_text, f.data + f.bss + f.stack + f.heap)
}

/// The default spawn options with a loading policy.
pub fn options(policy: abi::LoadPolicy) -> SpawnOptions {
    SpawnOptions {
        policy: policy as u64,
        ..SpawnOptions::DEFAULT
    }
}
