//! The build run of OFF2F's experiments (seed 001 §3.7, fig. 5, tables
//! 3–5): many programs executed again and again, as `make` runs a build.
//! Tessera has no compiler and no `make`, so this is a stand-in that
//! executes, from the file system, the programs a build of nine sources
//! would run, in a build's order and in about the numbers of the paper's
//! table 3(A) (92 execs of 11 programs; the paper's `make` of `ls`: 85 of
//! 11). The programs are real ones doing real work on the file system
//! (`mkdir`, `write`, `cp`, `mv`, `cat`, `ls`, `rm`), the text-size
//! programs of fig. 4 in the parts of the big ones (`text16m` for `cc`,
//! 24 execs; `text128k` for `sh`, 36), and `tiny` and `hello` for the
//! small ones (`chmod`, `echo`). What no stand-in has is the compiler's
//! own work: its run time is mostly exec and faults, as the paper's `make`
//! (whose processor time was 0.45 s of 2.11–4.69 s, table 4).
//!
//! The first exec of each program reads it from the file system through
//! `fsexec` (cold: the block cache is emptied before the run, and the plate
//! is made anew), later ones spawn the plate it made, as a page cache keeps
//! a program's pages (they skip the file's lookup too).

use crate::fsstack::{Stack, value};
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use tessera_rt::abi::{LoadPolicy, ProcInfo};
use tessera_rt::sys;
use user_programs::fsexec::{self, Cache};

/// The programs, each with the program of the paper's table 3(A) whose
/// part it plays ("": one the paper's build does not run).
pub const PROGRAMS: [(&str, &str); 11] = [
    ("text16m", "cc"),
    ("text128k", "sh"),
    ("mkdir", ""),
    ("write", "sed"),
    ("cp", "objcopy"),
    ("mv", "mv"),
    ("cat", "cat"),
    ("ls", ""),
    ("rm", ""),
    ("tiny", "chmod"),
    ("hello", ""),
];

/// The sources the build compiles.
const SOURCES: usize = 9;

/// One exec of the build: the program and its arguments.
type Step = (&'static str, Vec<String>);

fn step(program: &'static str, args: &[&str]) -> Step {
    (program, args.iter().map(|a| String::from(*a)).collect())
}

/// The build, in order: for each source the shell's lines, its writing
/// and its compilation into an object; then the link, the install and the
/// clean-up.
pub fn steps() -> Vec<Step> {
    let mut s = vec![step("mkdir", &["-p", "/build/src", "/build/obj"])];
    for i in 0..SOURCES {
        let src = format!("/build/src/m{i}.c");
        let obj = format!("/build/obj/m{i}.o");
        for _ in 0..4 {
            s.push(step("text128k", &[]));
        }
        s.push(step(
            "write",
            &[
                &src,
                "int",
                &format!("f{i}(void)"),
                "{",
                "return",
                &format!("{i};"),
                "}",
            ],
        ));
        s.push(step("text16m", &[]));
        s.push(step("text16m", &[]));
        s.push(step("cp", &[&src, &obj]));
    }
    for _ in 0..6 {
        s.push(step("text16m", &[]));
    }
    s.push(step("tiny", &[]));
    s.push(step("mv", &["/build/obj/m0.o", "/build/ls"]));
    s.push(step("mv", &["/build/obj/m1.o", "/build/ls.1"]));
    s.push(step("cat", &["/build/src/m0.c"]));
    s.push(step("ls", &["/build/obj"]));
    s.push(step("hello", &["built", "ls"]));
    s.push(step("mv", &["/build/ls", "/build/obj/m0.o"]));
    s.push(step("mv", &["/build/ls.1", "/build/obj/m1.o"]));
    s.push(step("tiny", &[]));
    s.push(step("cat", &["/build/src/m8.c"]));
    s.push(step("ls", &["/build"]));
    s.push(step("hello", &["done"]));
    s.push(step("rm", &["-r", "/build"]));
    s
}

/// What one program did over the run.
#[derive(Default, Clone, Copy)]
pub struct ProgramTotals {
    pub execs: u64,
    pub bytes_read: u64,
    pub faults_text: u64,
    pub faults_nvm_text: u64,
    pub faults_other: u64,
    /// Pages read from file 1 at faults (OFF2F's data, by the file server).
    pub pages_read_faults: u64,
}

/// One run of the build.
pub struct Run {
    pub ns: u64,
    /// Of it, the guest time the disk model made requests wait.
    pub model_wait_ns: u64,
    pub disk_bytes: u64,
    pub programs: BTreeMap<&'static str, ProgramTotals>,
}

/// Runs the build with the programs under `dir` (as ELF or as OFF2F), the
/// block cache emptied first. Any exec that fails, or program that does
/// not exit 0, fails the run.
pub fn run(stack: &Stack, dir: &str) -> Result<Run, String> {
    let steps = steps();
    if !stack.drop_cache() {
        return Err(String::from("the block cache cannot be emptied"));
    }
    let disk = |name| value(&stack.disk_stats(), name);
    let (bytes0, wait0) = (disk("device_bytes"), disk("model_wait_ns"));
    let mut programs: BTreeMap<&'static str, ProgramTotals> = BTreeMap::new();
    let mut plates: BTreeMap<&'static str, String> = BTreeMap::new();
    let options = fsexec::options(LoadPolicy::Demand);
    let t0 = sys::rdtsc();
    for (program, args) in &steps {
        let path = format!("{dir}/{program}");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let t = programs.entry(program).or_default();
        let (status, info) = match plates.get(program) {
            Some(plate) => {
                let pid = sys::spawn(plate, &args, &options).map_err(|e| format!("{path}: {e:?}"))?;
                let mut info = ProcInfo::default();
                let status = sys::wait_info(pid, &mut info).map_err(|e| format!("{path}: {e:?}"))?;
                (status, info)
            }
            None => {
                let (status, e, info) =
                    fsexec::run(&path, &args, &options, Cache::Fresh).map_err(|e| format!("{path}: {e}"))?;
                t.bytes_read += e.bytes_read;
                plates.insert(program, e.plate);
                (status, info)
            }
        };
        if status != 0 {
            return Err(format!("{path} {args:?}: exit status {status}"));
        }
        let (text, nvm, other) = fsexec::faults(&info);
        t.execs += 1;
        t.faults_text += text;
        t.faults_nvm_text += nvm;
        t.faults_other += other;
        t.pages_read_faults += info.faults.paged;
    }
    let ns = sys::tsc_to_ns(sys::rdtsc() - t0);
    Ok(Run {
        ns,
        model_wait_ns: disk("model_wait_ns").saturating_sub(wait0),
        disk_bytes: disk("device_bytes").saturating_sub(bytes0),
        programs,
    })
}
