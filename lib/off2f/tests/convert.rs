//! The converter, writer and parser on ELF files built here, with layouts
//! real linkers make and ones they should not: accepted files must come back
//! byte for byte, refused ones must say why, and no input may panic.

use off2f::{CRC64, Header, PAGE, PageSource, Place, convert, reconstruct};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const PT_LOAD: u32 = 1;
const PT_INTERP: u32 = 3;
const PT_TLS: u32 = 7;
const PT_GNU_STACK: u32 = 0x6474_e551;

/// (type, flags, offset, vaddr, filesz, memsz, align)
type Ph = (u32, u32, u64, u64, u64, u64, u64);

/// An ELF file of `size` random bytes with the given header fields and
/// program headers (at offset 64).
fn elf(etype: u16, entry: u64, phdrs: &[Ph], size: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut f: Vec<u8> = (0..size).map(|_| rng.next() as u8).collect();
    f[..16].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    f[16..18].copy_from_slice(&etype.to_le_bytes());
    f[18..20].copy_from_slice(&62u16.to_le_bytes());
    f[20..24].copy_from_slice(&1u32.to_le_bytes());
    f[24..32].copy_from_slice(&entry.to_le_bytes());
    f[32..40].copy_from_slice(&64u64.to_le_bytes());
    f[40..48].copy_from_slice(&0u64.to_le_bytes());
    f[48..52].copy_from_slice(&0u32.to_le_bytes());
    f[52..54].copy_from_slice(&64u16.to_le_bytes());
    f[54..56].copy_from_slice(&56u16.to_le_bytes());
    f[56..58].copy_from_slice(&(phdrs.len() as u16).to_le_bytes());
    f[58..64].fill(0);
    for (i, &(t, fl, off, va, fs, ms, al)) in phdrs.iter().enumerate() {
        let p = &mut f[64 + i * 56..64 + (i + 1) * 56];
        p[0..4].copy_from_slice(&t.to_le_bytes());
        p[4..8].copy_from_slice(&fl.to_le_bytes());
        for (j, v) in [off, va, va, fs, ms, al].iter().enumerate() {
            p[8 + j * 8..16 + j * 8].copy_from_slice(&v.to_le_bytes());
        }
    }
    f
}

/// A static executable as GNU ld lays it out: headers, text, read-only
/// data, and data + BSS starting mid-page; a TLS template in the data.
fn static_exec() -> Vec<u8> {
    elf(
        2,
        0x401010,
        &[
            (PT_LOAD, 4, 0, 0x400000, 0x1e8, 0x1e8, 0x1000),
            (PT_LOAD, 5, 0x1000, 0x401000, 0x2345, 0x2345, 0x1000),
            (PT_LOAD, 4, 0x4000, 0x404000, 0x800, 0x800, 0x1000),
            (PT_LOAD, 6, 0x4e10, 0x405e10, 0x300, 0x5000, 0x1000),
            (PT_TLS, 4, 0x4e10, 0x405e10, 0x10, 0x20, 8),
            (PT_GNU_STACK, 6, 0, 0, 0, 0, 16),
        ],
        0x6000,
        1,
    )
}

fn roundtrip(data: &[u8]) -> off2f::Files {
    let files = convert(data, "prog.text").unwrap_or_else(|e| panic!("refused: {e}"));
    assert_eq!(reconstruct::elf_file(&files.file1, &files.text).unwrap(), data);
    assert_eq!(convert(data, "prog.text").unwrap(), files, "idempotent");
    files
}

#[test]
fn static_executable_pages_come_from_nvm_disk_or_zero() {
    let data = static_exec();
    let files = roundtrip(&data);
    let h = Header::parse(&files.file1[..4096]).unwrap();
    assert_eq!(h.kind(), off2f::Kind::StaticExec);
    assert_eq!(h.phdr_vaddr(), Some(0x400040));
    assert_eq!(h.tls().map(|t| (t.vaddr, t.memsz)), Some((0x405e10, 0x20)));
    assert!(!h.exec_stack());
    assert_eq!(
        files.text.len() as u64,
        5 * PAGE,
        "1 + 3 + 1 pages of read-only segments"
    );
    assert_eq!(h.page_source(0x400000).unwrap().1, PageSource::Text { page: 0 });
    assert_eq!(h.page_source(0x403fff).unwrap().1, PageSource::Text { page: 3 });
    assert_eq!(h.page_source(0x404000).unwrap().1, PageSource::Text { page: 4 });
    assert_eq!(h.page_source(0x405e10).unwrap().1, PageSource::Data { offset: 4096 });
    assert_eq!(h.page_source(0x407000).unwrap().1, PageSource::Zero);
    assert_eq!(h.page_source(0x40b000), None);
    assert_eq!(h.page_source(0x3ff000), None);
    // The data page: file bytes, then zeros where BSS starts.
    let page = reconstruct::page(&h, &files.file1, &files.text, 0x405000).unwrap();
    assert_eq!(&page[0xe10..0x1000], &data[0x4e10..0x5000]);
    let page = reconstruct::page(&h, &files.file1, &files.text, 0x406000).unwrap();
    assert_eq!(&page[..0x110], &data[0x5000..0x5110]);
    assert!(page[0x110..].iter().all(|&b| b == 0));
    let segs: Vec<_> = h.segments().map(|s| s.place).collect();
    assert_eq!(segs, [Place::Text, Place::Text, Place::Text, Place::Data]);
}

#[test]
fn pie_library_interpreter_and_bss_only_segments() {
    // A shared library: vaddr 0 allowed, an interpreter path, a segment of
    // BSS only, a read-only segment longer in memory than in the file.
    let mut data = elf(
        3,
        0,
        &[
            (PT_LOAD, 4, 0, 0, 0x300, 0x300, 0x1000),
            (PT_LOAD, 5, 0x1000, 0x1000, 0x800, 0x1800, 0x1000),
            (PT_LOAD, 6, 0, 0x4000, 0, 0x3000, 0x1000),
            (PT_INTERP, 4, 0x200, 0x200, 6, 6, 1),
        ],
        0x2000,
        2,
    );
    data[0x200..0x206].copy_from_slice(b"/ld.s\0");
    let files = roundtrip(&data);
    let h = Header::parse(&files.file1).unwrap();
    assert_eq!(h.kind(), off2f::Kind::SharedLibrary);
    assert_eq!(h.interp(), Some(&b"/ld.s"[..]));
    assert!(h.exec_stack(), "no PT_GNU_STACK: executable, as Linux has it");
    assert_eq!(h.page_source(0x2000).unwrap().1, PageSource::Zero);
    assert_eq!(h.page_source(0x4000).unwrap().1, PageSource::Zero);
    let page = reconstruct::page(&h, &files.file1, &files.text, 0x1000).unwrap();
    assert_eq!(&page[..0x800], &data[0x1000..0x1800]);
    assert!(page[0x800..].iter().all(|&b| b == 0), "memsz > filesz: zeros");
}

fn refused(data: &[u8]) -> String {
    match convert(data, "x") {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn what_cannot_be_mapped_is_refused_with_a_reason() {
    let mis = elf(
        2,
        0x401000,
        &[(PT_LOAD, 5, 0x1010, 0x401000, 0x100, 0x100, 0x10)],
        0x2000,
        3,
    );
    assert!(
        refused(&mis).contains("not page-aligned in the file"),
        "{}",
        refused(&mis)
    );
    let overlap = elf(
        2,
        0x401000,
        &[
            (PT_LOAD, 5, 0x1000, 0x401000, 0x100, 0x2000, 0x1000),
            (PT_LOAD, 6, 0x1800, 0x402800, 0x100, 0x100, 0x1000),
        ],
        0x2000,
        4,
    );
    assert!(refused(&overlap).contains("share the page"), "{}", refused(&overlap));
    let file_overlap = elf(
        2,
        0x401000,
        &[
            (PT_LOAD, 5, 0x1000, 0x401000, 0x900, 0x900, 0x1000),
            (PT_LOAD, 6, 0x1800, 0x405800, 0x100, 0x100, 0x1000),
        ],
        0x2000,
        5,
    );
    assert!(refused(&file_overlap).contains("overlap in the file"));
    let past_end = elf(
        2,
        0x401000,
        &[(PT_LOAD, 5, 0x1000, 0x401000, 0x2000, 0x2000, 0x1000)],
        0x2000,
        6,
    );
    assert!(refused(&past_end).contains("past the end of the file"));
    let kernel_space = elf(
        2,
        0x401000,
        &[(PT_LOAD, 5, 0x1000, 0xffff_8000_0000_0000, 0x10, 0x10, 0x1000)],
        0x2000,
        7,
    );
    assert!(refused(&kernel_space).contains("outside user space"));
    let no_entry = elf(
        2,
        0x500000,
        &[(PT_LOAD, 5, 0x1000, 0x401000, 0x10, 0x10, 0x1000)],
        0x2000,
        8,
    );
    assert!(refused(&no_entry).contains("entry point"));
    let mut object = static_exec();
    object[16] = 1;
    assert!(refused(&object).contains("relocatable"));
    let mut arm = static_exec();
    arm[18] = 183;
    assert!(refused(&arm).contains("not x86_64"));
    let mut elf32 = static_exec();
    elf32[4] = 1;
    assert!(refused(&elf32).contains("64-bit"));
    assert!(refused(b"#!/bin/sh\n").contains("not an ELF"));
    assert!(convert(&static_exec(), "a/b").is_err(), "text names are store names");
    for len in 0..0x200 {
        let _ = convert(&static_exec()[..len], "x");
    }
}

/// Accepted mutants must come back byte for byte; none may panic.
#[test]
fn mutated_elf_files_never_panic_and_accepted_ones_round_trip() {
    let base = static_exec();
    let mut rng = Rng(9);
    let mut accepted = 0;
    for round in 0..4000 {
        let mut data = base.clone();
        for _ in 0..1 + rng.below(4) {
            // Mostly the headers, where the meaning is.
            let at = if round % 5 == 0 {
                rng.below(data.len() as u64)
            } else {
                rng.below(64 + 6 * 56)
            } as usize;
            data[at] = match rng.below(4) {
                0 => rng.next() as u8,
                1 => data[at] ^ (1 << rng.below(8)),
                2 => 0,
                _ => 0xff,
            };
        }
        if round % 7 == 0 {
            data.truncate(rng.below(data.len() as u64) as usize);
        }
        if let Ok(files) = convert(&data, "m") {
            accepted += 1;
            assert_eq!(
                reconstruct::elf_file(&files.file1, &files.text).unwrap(),
                data,
                "round {round}"
            );
        }
    }
    assert!(
        accepted > 400,
        "only {accepted} mutants accepted: the fuzzing did not reach the converter"
    );
}

/// Rewrites the header checksum so that a mutation reaches the checks
/// behind it.
fn reseal(file1: &mut [u8]) {
    let len = u16::from_le_bytes([file1[4], file1[5]]) as usize;
    if (168..=4096).contains(&len) && file1.len() >= len {
        file1[160..168].fill(0);
        let crc = CRC64.checksum(&file1[..len]);
        file1[160..168].copy_from_slice(&crc.to_le_bytes());
    }
}

fn exercise(file1: &[u8], text: &[u8]) {
    let Ok(h) = Header::parse(file1) else {
        return;
    };
    for s in h.segments() {
        for a in [
            s.vaddr,
            s.vaddr + s.memsz - 1,
            s.vaddr.saturating_sub(1),
            s.vaddr + s.memsz,
        ] {
            let _ = h.page_source(a);
            let _ = reconstruct::page(&h, file1, text, a & !(PAGE - 1));
        }
    }
    for off in (0..h.elf_size() + 2).step_by(97) {
        let _ = h.locate(off);
    }
    let _ = (h.interp(), h.tls(), h.text_name(), h.program_headers(), h.elf_header());
    if h.check_files(file1, text).is_ok() {
        let _ = reconstruct::elf_file(file1, text);
    }
}

#[test]
fn hostile_off2f_files_never_panic() {
    let files = convert(&static_exec(), "prog.text").unwrap();
    let mut rng = Rng(10);
    let mut parsed = 0;
    for round in 0..20000 {
        let mut file1 = files.file1.clone();
        let mut text = files.text.clone();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(if round % 10 == 0 { file1.len() } else { 1400 } as u64) as usize;
            file1[at] = match rng.below(4) {
                0 => rng.next() as u8,
                1 => file1[at] ^ (1 << rng.below(8)),
                2 => 0,
                _ => 0xff,
            };
        }
        if round % 2 == 0 {
            reseal(&mut file1);
        }
        if round % 13 == 0 {
            file1.truncate(rng.below(file1.len() as u64) as usize);
        }
        if round % 17 == 0 {
            text.truncate(rng.below(text.len() as u64) as usize);
        }
        if Header::parse(&file1).is_ok() {
            parsed += 1;
        }
        exercise(&file1, &text);
    }
    assert!(parsed > 100, "only {parsed} mutants parsed");
    for len in 0..files.file1.len().min(4200) {
        exercise(&files.file1[..len], &files.text);
    }
}

/// The shared objects this test process runs with (from /proc/self/maps):
/// real libraries as the host's linker made them.
fn mapped_libraries() -> Vec<std::path::PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mut libs: Vec<std::path::PathBuf> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.starts_with('/') && p.contains(".so"))
        .map(std::path::PathBuf::from)
        .collect();
    libs.sort();
    libs.dedup();
    libs
}

#[test]
fn real_dynamic_programs_and_shared_libraries_round_trip() {
    // This test's own executable: a dynamically linked PIE.
    let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    let files = roundtrip(&exe);
    let h = Header::parse(&files.file1).unwrap();
    assert_eq!(h.kind(), off2f::Kind::DynamicPie);
    assert!(h.interp().is_some_and(|i| i.starts_with(b"/")));
    assert!(!files.text.is_empty());
    // The C library and the dynamic linker it runs with: library text is a
    // text file of its own, as the paper counts it apart.
    let libs = mapped_libraries();
    assert!(libs.iter().any(|l| l.to_string_lossy().contains("libc")), "{libs:?}");
    for lib in libs {
        let data = std::fs::read(&lib).unwrap();
        let files = roundtrip(&data);
        let h = Header::parse(&files.file1).unwrap();
        assert!(
            matches!(h.kind(), off2f::Kind::SharedLibrary | off2f::Kind::DynamicPie),
            "{}: {:?}",
            lib.display(),
            h.kind()
        );
        assert!(files.text.len() > 4096, "{}: text", lib.display());
        assert!(
            files.file1.len() < data.len(),
            "{}: file 1 holds no text",
            lib.display()
        );
    }
}
