//! `cargo xtask <command>`: build, run, debug, test and time Tessera.
//! The Makefile is the user-facing entry point; this is what it calls.

mod boottime;
mod builder;
mod disk;
mod disktest;
mod e2fs;
mod ktest;
mod layers;
mod linuxtest;
mod machine;
mod nvm;
mod nvmcrash;
mod proc;
mod progtest;
mod protocol;
mod sysimage;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::ExitCode;

use builder::{KERNEL_ELF, Profile};
use machine::{Machine, Serial};

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  build [--debug]        build the kernel into build/tessera.elf
  run                    build, then boot interactively (Ctrl-A X quits)
  debug                  like run, but QEMU waits for gdb
  test                   the whole test suite; ends with `N passed, N failed`
  boottime               measure boot time, print a Markdown table
  qemu-args              print the machine's QEMU arguments, one per line
  disk                   make the disk images afresh from user/root/ (build/*.img;
                         a build makes only those that do not exist)
  layers                 the kernel's crate graph; fails on an upward edge or unsafe
                         code outside the core crate

machine options (run, debug, test, boottime, qemu-args):
  --mode tcg|icount|kvm  accelerator (env ACCEL; default tcg)
  --smp N                CPUs (env SMP; default 1)
  --mem SIZE             memory (env MEM; default 512M)
  --disk IMAGE|off       a raw disk image on virtio-blk (env DISK; run: build/root.img,
                         others: none)
  env QEMU               QEMU binary (default qemu-system-x86_64)
  env MACHINE            QEMU machine type (default pc)
  env NVM                the pseudo-NVM image (default build/nvm.img; off: none)
  env NVM_SIZE           its size, a power of two (default: the image's, or 256M)
  env NET                1: a virtio-net NIC on QEMU's user network, the host's
                         127.0.0.1:8080 forwarded to the guest's port 80 (default off)

run/debug: env CMDLINE is the kernel command line; env GDBPORT (default 1234).

test options:
  --smp LIST             CPU counts to run the in-QEMU tests under (default 1,4)
  --filter SUBSTR        only tests whose name contains SUBSTR (host and QEMU
                         tiers; the benchmark smoke tier is skipped)
  --jobs N               parallel QEMU boots (default: number of host cores)
  --timeout SECS         per-boot timeout (default 120; should_hang tests: 5)
  --no-build             use the existing build/tessera.elf

boottime options:
  --runs N               number of boots (default 5)
";

/// A minimal argument list: options are taken out by name, and whatever is
/// left at the end is an error, so a typo never passes silently.
pub struct Args {
    items: Vec<String>,
}

impl Args {
    pub fn new(items: Vec<String>) -> Args {
        Args { items }
    }

    pub fn flag(&mut self, name: &str) -> bool {
        let before = self.items.len();
        self.items.retain(|a| a != name);
        self.items.len() != before
    }

    /// Takes `--name VALUE` or `--name=VALUE`; the last one given wins.
    pub fn value(&mut self, name: &str) -> Result<Option<String>, String> {
        let mut found = None;
        let mut i = 0;
        while i < self.items.len() {
            if self.items[i] == name {
                if i + 1 >= self.items.len() {
                    return Err(format!("{name} needs a value"));
                }
                found = Some(self.items.remove(i + 1));
                self.items.remove(i);
            } else if let Some(v) = self.items[i].strip_prefix(name).and_then(|rest| rest.strip_prefix('=')) {
                found = Some(v.to_string());
                self.items.remove(i);
            } else {
                i += 1;
            }
        }
        Ok(found)
    }

    pub fn number<T: std::str::FromStr>(&mut self, name: &str) -> Result<Option<T>, String> {
        match self.value(name)? {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| format!("{name}: not a number: {v:?}")),
        }
    }

    pub fn finish(self) -> Result<(), String> {
        match self.items.first() {
            None => Ok(()),
            Some(extra) => Err(format!("unexpected argument {extra:?} (see `cargo xtask help`)")),
        }
    }
}

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let command = argv.next();
    let args = Args::new(argv.collect());
    // Every path xtask uses is relative to the repository root.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the repository");
    if let Err(e) = std::env::set_current_dir(root) {
        eprintln!("xtask: cannot enter {}: {e}", root.display());
        return ExitCode::FAILURE;
    }
    let result = match command.as_deref() {
        Some("build") => build(args),
        Some("run") => run(args, false),
        Some("debug") => run(args, true),
        Some("test") => ktest::run(args),
        Some("boottime") => boottime::run(args),
        Some("qemu-args") => qemu_args(args),
        Some("disk") => disk::run(args),
        Some("layers") => args.finish().and_then(|_| layers::run()),
        None | Some("help" | "-h" | "--help") => {
            print!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        Some(other) => Err(format!("unknown command {other:?}\n\n{USAGE}")),
    };
    result.unwrap_or_else(|e| {
        eprintln!("xtask: {e}");
        ExitCode::FAILURE
    })
}

fn build(mut args: Args) -> Result<ExitCode, String> {
    let profile = if args.flag("--debug") {
        Profile::Debug
    } else {
        Profile::Release
    };
    args.finish()?;
    builder::build(profile)?;
    Ok(ExitCode::SUCCESS)
}

fn qemu_args(mut args: Args) -> Result<ExitCode, String> {
    let machine = Machine::configure(&mut args)?;
    args.finish()?;
    // Whoever boots with these arguments needs the image to be there.
    machine.prepare()?;
    for arg in machine.args() {
        println!("{arg}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Non-empty environment variable (make exports unset ones as empty).
pub fn env_var(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.trim().is_empty())
}

fn run(mut args: Args, debug: bool) -> Result<ExitCode, String> {
    let mut machine = Machine::configure(&mut args)?;
    args.finish()?;
    machine.serial = Serial::Monitor;
    builder::build(Profile::Release)?;
    // The root file system's disk, unless DISK names another or is off.
    if env_var("DISK").is_none() {
        machine = machine.with_disk(Some(disk::ROOT_IMAGE));
    }
    machine.prepare()?;
    let mut cmd = machine.command();
    cmd.args(builder::boot_args());
    cmd.args(["-append", &env_var("CMDLINE").unwrap_or_default()]);
    if debug {
        let port = env_var("GDBPORT").unwrap_or_else(|| "1234".to_string());
        // Loopback only: a gdbstub is an open door into the guest.
        cmd.args(["-S", "-gdb", &format!("tcp:127.0.0.1:{port}")]);
        eprintln!("QEMU is stopped before the first instruction, waiting for gdb on 127.0.0.1:{port}.");
        eprintln!("In another terminal:");
        eprintln!("  gdb {KERNEL_ELF} -ex 'target remote 127.0.0.1:{port}'");
        if port == "1234" {
            eprintln!("or, with the settings in tools/gdbinit:");
            eprintln!("  gdb -x tools/gdbinit {KERNEL_ELF}");
        }
        if which("gdb").is_none() {
            eprintln!("(gdb is not installed: apt-get install gdb)");
        }
    }
    eprintln!(
        "{} — Ctrl-A X quits, Ctrl-A C switches to the QEMU monitor",
        machine.describe()
    );
    // exec hands the terminal straight to QEMU (raw mode, Ctrl-A escapes).
    let e = cmd.exec();
    Err(format!("cannot run {}: {e}", machine.qemu))
}

pub fn which(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(items: &[&str]) -> Args {
        Args::new(items.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn options_are_taken_by_name() {
        let mut a = args(&["--jobs", "3", "--no-build", "--filter=frame"]);
        assert_eq!(a.number::<usize>("--jobs"), Ok(Some(3)));
        assert!(a.flag("--no-build"));
        assert_eq!(a.value("--filter"), Ok(Some("frame".to_string())));
        assert_eq!(a.value("--smp"), Ok(None));
        assert!(a.finish().is_ok());
    }

    #[test]
    fn leftovers_and_missing_values_are_errors() {
        assert!(args(&["--typo"]).finish().is_err());
        assert!(args(&["--jobs"]).value("--jobs").is_err());
        assert!(args(&["--jobs", "x"]).number::<usize>("--jobs").is_err());
        // `--smpx=1` is not `--smp`.
        let mut a = args(&["--smpx=1"]);
        assert_eq!(a.value("--smp"), Ok(None));
        assert!(a.finish().is_err());
    }
}
