//! Disk images: ext2 file systems made by `mke2fs -d` from `user/root/`,
//! built on first use and kept (a boot that writes to the disk must find
//! its writes at the next one, once the disk is a real device);
//! `cargo xtask disk` (`make disk`) makes them afresh.
//!
//! - `build/images/root.img`: the root file system, 4 KiB blocks (a block
//!   is a page: the block cache's unit, the unit a DMA transfer fills).
//! - `build/images/small.img`: the same tree on 1 MiB with 1 KiB blocks,
//!   for the tests (a disk that fills quickly, blocks smaller than a page,
//!   images small enough to corrupt by the hundred).
//! - `build/root.img`: the disk `make run` boots with, a copy of the system
//!   disk (`sysimage.rs`: the root file system with busybox and the Linux
//!   programs), made again when that changes.
//!
//! The RAM disk carries the pristine images packed in its binary
//! (`TESSERA_DISK_IMAGES`, see servers/ramdisk/build.rs).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory the images are made from.
pub const ROOT_DIR: &str = "user/root";

/// The root file system's disk `make run` boots with: a copy of the
/// pristine root image made on first use, then kept with what was written
/// to it. The pristine images (`IMAGES`) are never written: tests and the
/// RAM disk start from them.
pub const ROOT_IMAGE: &str = "build/root.img";

pub struct Image {
    /// The name the RAM disk knows it by.
    pub name: &'static str,
    pub path: &'static str,
    pub block_size: u32,
    pub size: &'static str,
    /// Inodes (0: mke2fs's default).
    pub inodes: u32,
}

pub const IMAGES: &[Image] = &[
    Image {
        name: "root",
        path: "build/images/root.img",
        block_size: 4096,
        size: "32M",
        inodes: 0,
    },
    Image {
        name: "small",
        path: "build/images/small.img",
        block_size: 1024,
        size: "1M",
        inodes: 128,
    },
];

/// mke2fs, which may live in an sbin directory outside a user's PATH.
fn mke2fs() -> Result<PathBuf, String> {
    crate::which("mke2fs")
        .or_else(|| {
            ["/usr/sbin/mke2fs", "/sbin/mke2fs"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
        })
        .ok_or_else(|| "mke2fs is missing: run tools/setup.sh (Debian package e2fsprogs)".to_string())
}

/// Makes the images that do not exist yet (all of them with `rebuild`,
/// the root disk too).
pub fn ensure(rebuild: bool) -> Result<(), String> {
    fs::create_dir_all("build/images").map_err(|e| format!("creating build/images: {e}"))?;
    for image in IMAGES {
        if rebuild || !Path::new(image.path).is_file() {
            make(image)?;
        }
    }
    let system = crate::sysimage::ensure(rebuild)?;
    if system || !Path::new(ROOT_IMAGE).is_file() {
        fs::copy(crate::sysimage::IMAGE, ROOT_IMAGE).map_err(|e| format!("copying to {ROOT_IMAGE}: {e}"))?;
        println!("made {ROOT_IMAGE}, the root disk, from {}", crate::sysimage::IMAGE);
    }
    Ok(())
}

fn make(image: &Image) -> Result<(), String> {
    make_from(
        Path::new(ROOT_DIR),
        image.path,
        image.block_size,
        image.size,
        image.inodes,
    )
}

/// An ext2 image of `dir` at `path`.
pub fn make_from(dir: &Path, path: &str, block_size: u32, size: &str, inodes: u32) -> Result<(), String> {
    let tmp = Path::new(path).with_extension("tmp");
    let _ = fs::remove_file(&tmp);
    let mut cmd = Command::new(mke2fs()?);
    cmd.args(["-q", "-F", "-t", "ext2", "-b", &block_size.to_string(), "-L", "tessera"])
        .args(["-E", "root_owner=0:0", "-d"])
        .arg(dir);
    if inodes > 0 {
        cmd.args(["-N", &inodes.to_string()]);
    }
    cmd.arg(&tmp).arg(size);
    let out = cmd.output().map_err(|e| format!("cannot run mke2fs: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "mke2fs for {} failed: {}",
            path,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    fs::rename(&tmp, path).map_err(|e| format!("renaming to {path}: {e}"))?;
    println!(
        "made {path} from {}/ ({size}, blocks of {block_size} bytes)",
        dir.display()
    );
    Ok(())
}

/// The images for the RAM disk's build: `name=absolute path,...`.
pub fn packed_list() -> Result<String, String> {
    let mut items = Vec::new();
    for image in IMAGES {
        let abs = fs::canonicalize(image.path).map_err(|e| format!("{}: {e}", image.path))?;
        items.push(format!("{}={}", image.name, abs.display()));
    }
    Ok(items.join(","))
}

/// `cargo xtask disk`: makes every image afresh.
pub fn run(args: crate::Args) -> Result<std::process::ExitCode, String> {
    args.finish()?;
    fs::create_dir_all(crate::builder::BUILD_DIR).map_err(|e| format!("creating build/: {e}"))?;
    ensure(true)?;
    Ok(std::process::ExitCode::SUCCESS)
}
