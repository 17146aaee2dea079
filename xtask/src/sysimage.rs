//! The system disk: the root file system the Linux personality boots
//! into. It holds `user/root/`, Debian's static busybox as `/bin/busybox`
//! with a link for each of its applets, the scripts that show the kernel's
//! inspector reports (`res`, `pool`, `trace`, ...), a few files of `/etc`,
//! the Linux-ABI test programs (`/linux/abi/`) and the benchmark programs
//! (`/linux/bench/`), both static musl C built here, and the shell scripts
//! of the tests (`/linux/sh/`). Some of those Linux programs are there as
//! OFF2F too (seed 001; [`OFF2F_PROGRAMS`]): file 1 at `/linux/off2f/`, the
//! text in `build/images/off2f/`, for a test boot's NVM store.
//!
//! `build/images/system.img` is made again when any of that is newer than
//! it; `build/root.img`, the disk `make run` boots with, is a copy made
//! afresh when the system image changes (and kept across boots otherwise).

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const IMAGE: &str = "build/images/system.img";
const STAGE: &str = "build/rootfs";
const BUSYBOX: &str = "/bin/busybox";
const ABI_SRC: &str = "user/linux/abi";
const BENCH_SRC: &str = "bench/linux";
const SH_SRC: &str = "user/linux/sh";
/// The image's size: busybox, the programs, and room to work.
const SIZE: &str = "128M";
/// Linux programs of the system disk converted to OFF2F: (name, the ELF
/// file's path on the disk). File 1 goes to `/linux/off2f/<name>`, the
/// text to `OFF2F_TEXTS/<name>.text`, named `linux:<name>` in the store.
pub const OFF2F_PROGRAMS: &[(&str, &str)] = &[("ids", "linux/abi/ids"), ("busybox", "bin/busybox")];
pub const OFF2F_TEXTS: &str = "build/images/off2f";

/// Scripts on the system disk: the inspector's reports from busybox's
/// shell (`/proc/tessera/` is served by the personality).
const SCRIPTS: &[(&str, &str)] = &[
    (
        "usr/bin/res",
        "#!/bin/sh\n# Tender resources: live count per kind, or the list of one kind.\nif [ -n \"$1\" ]; then cat /proc/tessera/res/$1; else cat /proc/tessera/res; fi\n",
    ),
    (
        "usr/bin/pool",
        "#!/bin/sh\n# The resource pool: contents, memory, hits and misses.\ncat /proc/tessera/pool\n",
    ),
    (
        "usr/bin/trace",
        "#!/bin/sh\n# The resource mediator's last operations.\ncat /proc/tessera/trace\n",
    ),
    (
        "usr/bin/counters",
        "#!/bin/sh\n# The mediator's operations per resource kind.\ncat /proc/tessera/counters\n",
    ),
    (
        "usr/bin/servers",
        "#!/bin/sh\n# Registered servers: placement and calls served.\ncat /proc/tessera/servers\n",
    ),
    (
        "usr/bin/cpus",
        "#!/bin/sh\n# Processors: ticks and calls served.\ncat /proc/tessera/cpus\n",
    ),
    (
        "usr/bin/faults",
        "#!/bin/sh\n# Page faults per process and region kind.\ncat /proc/tessera/faults\n",
    ),
];

const ETC: &[(&str, &str)] = &[
    (
        "etc/passwd",
        "root:x:0:0:root:/root:/bin/sh\nbin:x:1:1:bin:/bin:/bin/false\ndaemon:x:2:2:daemon:/:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
    ),
    (
        "etc/group",
        "root:x:0:\nbin:x:1:\ndaemon:x:2:\nusers:x:100:\nnogroup:x:65534:\n",
    ),
    ("etc/hostname", "tessera\n"),
    (
        "etc/profile",
        "export PATH=/bin:/sbin:/usr/bin:/usr/sbin\nexport PS1='tessera:\\w\\$ '\n",
    ),
    ("etc/shells", "/bin/sh\n/bin/ash\n"),
];

/// Compiles one-file Rust program `src` into `exe`, a static executable
/// for `x86_64-unknown-linux-musl` (tools/setup.sh adds the target), as
/// tools/bench/linuxabi.py builds it for Linux.
fn compile_rust(src: &Path, exe: &Path) -> Result<(), String> {
    if let Some(d) = exe.parent() {
        fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let r = Command::new("rustc")
        .args(RUSTC_FLAGS)
        .arg("-o")
        .arg(exe)
        .arg(src)
        .output()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    if !r.status.success() {
        return Err(format!(
            "rustc {}: {}",
            src.display(),
            String::from_utf8_lossy(&r.stderr).trim()
        ));
    }
    Ok(())
}

/// How the Linux-ABI Rust programs are compiled (linuxabi.py has the same).
const RUSTC_FLAGS: &[&str] = &[
    "--edition",
    "2024",
    "--target",
    "x86_64-unknown-linux-musl",
    "-C",
    "opt-level=2",
    "-C",
    "relocation-model=static",
    "-C",
    "target-feature=+crt-static",
    "-C",
    "strip=debuginfo",
];

fn newest_in(dir: &Path, newest: &mut std::time::SystemTime) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if let Ok(m) = fs::symlink_metadata(&p) {
            if let Ok(t) = m.modified() {
                *newest = (*newest).max(t);
            }
            if m.is_dir() {
                newest_in(&p, newest);
            }
        }
    }
}

/// Whether the image is older than what it is made from.
fn stale() -> bool {
    let Ok(made) = fs::metadata(IMAGE).and_then(|m| m.modified()) else {
        return true;
    };
    let mut newest = std::time::UNIX_EPOCH;
    for d in [crate::disk::ROOT_DIR, ABI_SRC, BENCH_SRC, SH_SRC] {
        newest_in(Path::new(d), &mut newest);
    }
    for f in [BUSYBOX, file!()] {
        if let Ok(t) = fs::metadata(f).and_then(|m| m.modified()) {
            newest = newest.max(t);
        }
    }
    newest > made
}

/// Makes the image if it is missing or stale; true if it was made.
pub fn ensure(rebuild: bool) -> Result<bool, String> {
    if !rebuild && !stale() {
        return Ok(false);
    }
    stage()?;
    crate::disk::make_from(Path::new(STAGE), IMAGE, 4096, SIZE, 0)?;
    println!("made {IMAGE} (the system disk: busybox, the Linux programs) from {STAGE}/");
    Ok(true)
}

fn write_file(root: &Path, rel: &str, text: &str, mode: u32) -> Result<(), String> {
    let p = root.join(rel);
    if let Some(d) = p.parent() {
        fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
    fs::set_permissions(&p, fs::Permissions::from_mode(mode)).map_err(|e| format!("{}: {e}", p.display()))
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for e in fs::read_dir(from)
        .map_err(|e| format!("{}: {e}", from.display()))?
        .flatten()
    {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let m = fs::symlink_metadata(&src).map_err(|e| format!("{}: {e}", src.display()))?;
        if m.is_dir() {
            copy_tree(&src, &dst)?;
        } else if m.file_type().is_symlink() {
            let t = fs::read_link(&src).map_err(|e| format!("{}: {e}", src.display()))?;
            symlink(&t, &dst).map_err(|e| format!("{}: {e}", dst.display()))?;
        } else {
            fs::copy(&src, &dst).map_err(|e| format!("{}: {e}", src.display()))?;
        }
    }
    Ok(())
}

/// Compiles static musl C program `src` with `flags` into `exe`; false
/// if there is no musl-gcc (said once).
fn compile(src: &Path, flags: &[&str], exe: &Path) -> Result<bool, String> {
    let Some(cc) = crate::which("musl-gcc") else {
        return Ok(false);
    };
    if let Some(d) = exe.parent() {
        fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let r = Command::new(&cc)
        .args(["-static", "-O2", "-Wno-format-truncation"])
        .args(flags)
        .arg("-o")
        .arg(exe)
        .arg(src)
        .output()
        .map_err(|e| format!("cannot run musl-gcc: {e}"))?;
    if !r.status.success() {
        return Err(format!(
            "musl-gcc {}: {}",
            src.display(),
            String::from_utf8_lossy(&r.stderr).trim()
        ));
    }
    Ok(true)
}

/// The Linux-ABI test programs: every `.c` of their folder, and every
/// `.rs` (one-file Rust programs using std, static for musl).
fn abi_programs(out: &Path) -> Result<(), String> {
    let mut sources: Vec<PathBuf> = fs::read_dir(ABI_SRC)
        .map_err(|e| format!("{ABI_SRC}: {e}"))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "c" || x == "rs"))
        .collect();
    sources.sort();
    for src in sources {
        let stem = src.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
        if src.extension().is_some_and(|x| x == "rs") {
            compile_rust(&src, &out.join(stem))?;
            continue;
        }
        if !compile(&src, &[], &out.join(stem))? {
            println!("note: musl-gcc is missing (tools/setup.sh installs it): no Linux programs on the system disk");
            return Ok(());
        }
    }
    Ok(())
}

/// The busybox shell scripts the tests run (`linuxtest.rs`).
fn shell_scripts(out: &Path) -> Result<(), String> {
    fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for e in fs::read_dir(SH_SRC).map_err(|e| format!("{SH_SRC}: {e}"))?.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "sh") {
            fs::copy(&p, out.join(e.file_name())).map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    Ok(())
}

/// The benchmark programs, named as tools/bench/progs.py names them (the
/// drivers find their helpers beside themselves by these names).
fn bench_programs(out: &Path) -> Result<(), String> {
    let mut targets: Vec<(String, &str, Vec<String>)> =
        ["syscall", "spawn", "pageaccess", "pagefault", "ipc", "transfer"]
            .iter()
            .map(|n| (n.to_string(), *n, Vec::new()))
            .collect();
    targets.push(("fs".into(), "fsbench", Vec::new()));
    targets.push(("tiny".into(), "tiny", Vec::new()));
    targets.push(("webload".into(), "webload", Vec::new()));
    for n in [0, 200, 400, 800] {
        targets.push((format!("pageprog{n}"), "pageprog", vec![format!("-DPAGES={n}")]));
    }
    for (name, src, flags) in targets {
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let src = Path::new(BENCH_SRC).join(format!("{src}.c"));
        if !compile(&src, &flags, &out.join(&name))? {
            return Ok(());
        }
    }
    // The experiments' shell scripts beside them (`init.sh` is the
    // reference VM's own /init).
    for e in fs::read_dir(BENCH_SRC)
        .map_err(|e| format!("{BENCH_SRC}: {e}"))?
        .flatten()
    {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "sh") && e.file_name() != "init.sh" {
            let to = out.join(e.file_name());
            fs::copy(&p, &to).map_err(|e| format!("{}: {e}", p.display()))?;
            fs::set_permissions(&to, fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn stage() -> Result<(), String> {
    let root = Path::new(STAGE);
    let _ = fs::remove_dir_all(root);
    copy_tree(Path::new(crate::disk::ROOT_DIR), root)?;
    for d in [
        "bin", "sbin", "usr/bin", "usr/sbin", "dev", "proc", "tmp", "root", "home", "etc",
    ] {
        fs::create_dir_all(root.join(d)).map_err(|e| format!("{d}: {e}"))?;
    }
    fs::set_permissions(root.join("tmp"), fs::Permissions::from_mode(0o1777)).map_err(|e| e.to_string())?;
    if Path::new(BUSYBOX).is_file() {
        fs::copy(BUSYBOX, root.join("bin/busybox")).map_err(|e| format!("{BUSYBOX}: {e}"))?;
        let list = Command::new(BUSYBOX)
            .arg("--list-full")
            .output()
            .map_err(|e| format!("{BUSYBOX} --list-full: {e}"))?;
        for applet in String::from_utf8_lossy(&list.stdout).lines() {
            let applet = applet.trim();
            if applet.is_empty() || applet == "bin/busybox" || root.join(applet).exists() {
                continue;
            }
            let _ = symlink("/bin/busybox", root.join(applet));
        }
    } else {
        println!("note: {BUSYBOX} is missing (Debian package busybox-static): the system disk has no shell");
    }
    for (rel, text) in SCRIPTS {
        write_file(root, rel, text, 0o755)?;
    }
    for (rel, text) in ETC {
        write_file(root, rel, text, 0o644)?;
    }
    abi_programs(&root.join("linux/abi"))?;
    shell_scripts(&root.join("linux/sh"))?;
    bench_programs(&root.join("linux/bench"))?;
    off2f_programs(root)
}

/// The text file's name in the NVM store of a converted Linux program.
pub fn off2f_text_name(name: &str) -> String {
    format!("linux:{name}")
}

/// Converts `OFF2F_PROGRAMS` (those the disk has: busybox and the C
/// programs may be missing, said above).
fn off2f_programs(root: &Path) -> Result<(), String> {
    let texts = Path::new(OFF2F_TEXTS);
    fs::create_dir_all(texts).map_err(|e| format!("{OFF2F_TEXTS}: {e}"))?;
    fs::create_dir_all(root.join("linux/off2f")).map_err(|e| format!("linux/off2f: {e}"))?;
    for (name, elf) in OFF2F_PROGRAMS {
        let Ok(image) = fs::read(root.join(elf)) else {
            continue;
        };
        let files = off2f::convert(&image, &off2f_text_name(name)).map_err(|e| format!("{elf}: {e}"))?;
        let file1 = root.join("linux/off2f").join(name);
        fs::write(&file1, &files.file1).map_err(|e| format!("{}: {e}", file1.display()))?;
        fs::set_permissions(&file1, fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())?;
        let text = texts.join(format!("{name}.text"));
        fs::write(&text, &files.text).map_err(|e| format!("{}: {e}", text.display()))?;
    }
    Ok(())
}
