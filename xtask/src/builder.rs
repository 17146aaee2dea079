//! Building everything a boot needs into `build/`.
//!
//! The build is a list of steps run in order; user programs, disk images and
//! the like become further entries in `STEPS`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const BUILD_DIR: &str = "build";
pub const KERNEL_ELF: &str = "build/tessera.elf";
/// The same kernel with the in-kernel tests built in (feature `ktest`):
/// what `make test` boots. The image users boot carries none of them.
pub const TEST_KERNEL_ELF: &str = "build/tessera-test.elf";
pub const KERNEL_TARGET: &str = "x86_64-unknown-none";
/// The initial archive (cpio newc) QEMU loads beside the kernel.
pub const INITRD: &str = "build/initrd.cpio";

/// The QEMU arguments that load Tessera: kernel and initial archive.
pub fn boot_args() -> [&'static str; 4] {
    ["-kernel", KERNEL_ELF, "-initrd", INITRD]
}

/// The QEMU arguments that load the test kernel and the initial archive.
pub fn test_boot_args() -> [&'static str; 4] {
    ["-kernel", TEST_KERNEL_ELF, "-initrd", INITRD]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Release,
    Debug,
}

impl Profile {
    fn dir(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Debug => "debug",
        }
    }
}

struct Step {
    what: &'static str,
    run: fn(Profile) -> Result<(), String>,
}

const STEPS: &[Step] = &[
    Step {
        what: "kernel",
        run: kernel,
    },
    Step {
        what: "disk images",
        run: |_| crate::disk::ensure(false),
    },
    Step {
        what: "user programs and initial archive",
        run: programs,
    },
];

pub fn build(profile: Profile) -> Result<(), String> {
    fs::create_dir_all(BUILD_DIR).map_err(|e| format!("creating {BUILD_DIR}/: {e}"))?;
    for step in STEPS {
        (step.run)(profile).map_err(|e| format!("building the {}: {e}", step.what))?;
    }
    Ok(())
}

/// The cargo that runs xtask, so nested builds use the pinned toolchain.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn target_dir() -> PathBuf {
    ["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR"]
        .iter()
        .find_map(|k| std::env::var_os(k).filter(|v| !v.is_empty()))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target"))
}

/// The kernel users boot, then the test kernel (`--features ktest,cputime`:
/// the in-kernel tests and the kernel-time accounting websplit.py reads): cargo
/// keeps one binary per feature set under the same name, so each is
/// installed before the next build replaces it.
fn kernel(profile: Profile) -> Result<(), String> {
    for (features, out) in [(None, KERNEL_ELF), (Some("ktest,cputime"), TEST_KERNEL_ELF)] {
        let mut cmd = cargo();
        cmd.args(["build", "-p", "tessera-kernel", "--target", KERNEL_TARGET]);
        if let Some(f) = features {
            cmd.args(["--features", f]);
        }
        if profile == Profile::Release {
            cmd.arg("--release");
        }
        run_status(&mut cmd)?;
        let elf = target_dir().join(KERNEL_TARGET).join(profile.dir()).join("tessera");
        install(&elf, Path::new(out))?;
    }
    Ok(())
}

/// Native programs (user/programs), packed into the initial archive as
/// `bin/<name>`.
fn programs(profile: Profile) -> Result<(), String> {
    // Servers are servers/<name>/ with a binary <name> (servers/api is the
    // interfaces' library).
    let mut servers: Vec<String> = fs::read_dir("servers")
        .map_err(|e| format!("reading servers/: {e}"))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").is_file() && e.file_name() != "api")
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .collect();
    servers.sort();
    let mut cmd = cargo();
    cmd.args(["build", "-p", "user-programs", "--target", KERNEL_TARGET]);
    for s in &servers {
        cmd.args(["-p", &format!("{s}-server")]);
    }
    if profile == Profile::Release {
        cmd.arg("--release");
    }
    // The RAM disk carries the disk images (servers/ramdisk/build.rs).
    cmd.env("TESSERA_DISK_IMAGES", crate::disk::packed_list()?);
    run_status(&mut cmd)?;
    let bin_dir = target_dir().join(KERNEL_TARGET).join(profile.dir());
    let src = Path::new("user/programs/src/bin");
    let mut names: Vec<String> = fs::read_dir(src)
        .map_err(|e| format!("reading {}: {e}", src.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".rs"))
                .map(String::from)
        })
        .collect();
    names.extend(servers);
    names.sort();
    let mut files = Vec::new();
    for name in &names {
        let path = bin_dir.join(name);
        let data = fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        files.push((format!("bin/{name}"), data));
    }
    // Configuration files (user/etc/*) go to etc/.
    let etc = Path::new("user/etc");
    let mut conf: Vec<_> = fs::read_dir(etc)
        .map_err(|e| format!("reading {}: {e}", etc.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    conf.sort();
    for path in conf {
        let data = fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        files.push((format!("etc/{name}"), data));
    }
    let refs: Vec<(&str, &[u8])> = files.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect();
    let archive = platform::cpio::write(&refs);
    let tmp = Path::new(INITRD).with_extension("tmp");
    fs::write(&tmp, archive).map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    fs::rename(&tmp, INITRD).map_err(|e| format!("renaming to {INITRD}: {e}"))
}

fn run_status(cmd: &mut Command) -> Result<(), String> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let status = cmd.status().map_err(|e| format!("cannot run {program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{program} failed ({status})"))
    }
}

/// Copy then rename, so that a QEMU starting meanwhile never reads half a file.
fn install(from: &Path, to: &Path) -> Result<(), String> {
    let tmp = to.with_extension("tmp");
    fs::copy(from, &tmp).map_err(|e| format!("copying {}: {e}", from.display()))?;
    fs::rename(&tmp, to).map_err(|e| format!("renaming to {}: {e}", to.display()))
}
