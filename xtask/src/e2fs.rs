//! e2fsprogs on the host, the judges of what Tessera leaves on a disk
//! image: `e2fsck` checks and repairs, `debugfs` reads files and writes
//! them in, `dumpe2fs` tells the free blocks. The image must not be in use
//! by a running machine.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// An e2fsprogs tool, which may live in an sbin directory outside a
/// user's PATH.
pub fn tool(name: &str) -> Result<PathBuf, String> {
    crate::which(name)
        .or_else(|| {
            [format!("/usr/sbin/{name}"), format!("/sbin/{name}")]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
        })
        .ok_or_else(|| format!("{name} is missing: run tools/setup.sh (Debian package e2fsprogs)"))
}

/// A damaged image must not hang the suite: each tool gets a minute.
const LIMIT: &str = "60";

/// `name` with `args` under coreutils' `timeout` (status 124 if killed).
fn command(name: &str) -> Result<Command, String> {
    let mut cmd = Command::new("timeout");
    cmd.args(["--kill-after=5", LIMIT]).arg(tool(name)?);
    Ok(cmd)
}

fn output(mut cmd: Command, name: &str) -> Result<Output, String> {
    let out = cmd.output().map_err(|e| format!("cannot run {name}: {e}"))?;
    if out.status.code() == Some(124) {
        return Err(format!("{name} did not finish in {LIMIT} s"));
    }
    Ok(out)
}

fn run(name: &str, args: &[&str], image: &Path) -> Result<Output, String> {
    let mut cmd = command(name)?;
    cmd.args(args).arg(image);
    output(cmd, name)
}

fn text(out: &Output) -> String {
    let mut t = String::from_utf8_lossy(&out.stdout).into_owned();
    t.push_str(&String::from_utf8_lossy(&out.stderr));
    t
}

/// The last lines of a tool's report, for a failure message.
fn tail(report: &str) -> String {
    let lines: Vec<&str> = report.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(4)..].join(" | ")
}

/// `e2fsck -fn`: a full check that changes nothing. Ok if clean.
pub fn check(image: &Path) -> Result<(), String> {
    let out = run("e2fsck", &["-fn"], image)?;
    match out.status.code() {
        Some(0) => Ok(()),
        code => Err(format!("e2fsck -fn: status {code:?}: {}", tail(&text(&out)))),
    }
}

/// `e2fsck -p`: the repair a boot runs, without questions. Its exit status
/// (0 clean, 1 errors corrected, 2 corrected and reboot, 4 and up: left
/// uncorrected or failed) and report.
pub fn repair(image: &Path) -> Result<(i32, String), String> {
    let out = run("e2fsck", &["-fp"], image)?;
    Ok((out.status.code().unwrap_or(-1), text(&out)))
}

/// `debugfs` says everything on stderr after its banner; anything more
/// there is the error of the request.
fn debugfs_error(out: &Output) -> Option<String> {
    let err = String::from_utf8_lossy(&out.stderr);
    let rest: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("debugfs ") && !l.trim().is_empty())
        .collect();
    (!rest.is_empty()).then(|| rest.join(" | "))
}

fn debugfs(request: &str, image: &Path) -> Result<Vec<u8>, String> {
    let out = run("debugfs", &["-R", request], image)?;
    match debugfs_error(&out) {
        Some(e) => Err(format!("debugfs {request:?}: {e}")),
        None => Ok(out.stdout),
    }
}

/// The content of the file at `path` (absolute, in the image).
pub fn cat(image: &Path, path: &str) -> Result<Vec<u8>, String> {
    debugfs(&format!("cat {path}"), image)
}

/// The value of extended attribute `name` of the file at `path`.
pub fn xattr(image: &Path, path: &str, name: &str) -> Result<Vec<u8>, String> {
    // -V: the bytes themselves (and a newline), not quoted.
    let out = debugfs(&format!("ea_get -V {path} {name}"), image)?;
    Ok(out)
}

/// The names in directory `path`, without `.` and `..`.
pub fn list(image: &Path, path: &str) -> Result<Vec<String>, String> {
    let out = debugfs(&format!("ls -p {path}"), image)?;
    // Lines are /inode/mode/uid/gid/name/size/.
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| l.split('/').nth(5).map(str::to_string))
        .filter(|n| !n.is_empty() && n != "." && n != "..")
        .collect())
}

/// Runs debugfs requests that write into the image (`-w`), one a line of
/// `script`, kept beside the image for the record.
pub fn write(image: &Path, script: &str) -> Result<(), String> {
    let file = image.with_extension("debugfs");
    std::fs::write(&file, script).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut cmd = command("debugfs")?;
    cmd.arg("-w").arg("-f").arg(&file).arg(image);
    let out = output(cmd, "debugfs")?;
    // debugfs echoes each request on stdout and its errors on stderr.
    match debugfs_error(&out) {
        Some(e) => Err(format!("debugfs -w -f {}: {e}", file.display())),
        None => Ok(()),
    }
}

/// The superblock's count of free blocks.
pub fn free_blocks(image: &Path) -> Result<u64, String> {
    let out = run("dumpe2fs", &["-h"], image)?;
    let report = text(&out);
    report
        .lines()
        .find_map(|l| l.strip_prefix("Free blocks:")?.trim().parse().ok())
        .ok_or_else(|| format!("dumpe2fs -h: no free block count: {}", tail(&report)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_debugfs_banner_is_not_an_error() {
        let out = |err: &str| Output {
            status: std::process::ExitStatus::default(),
            stdout: Vec::new(),
            stderr: err.as_bytes().to_vec(),
        };
        assert_eq!(debugfs_error(&out("debugfs 1.47.0 (5-Feb-2023)\n")), None);
        assert_eq!(
            debugfs_error(&out(
                "debugfs 1.47.0 (5-Feb-2023)\n/x: File not found by ext2_lookup \n"
            ))
            .as_deref(),
            Some("/x: File not found by ext2_lookup ")
        );
    }
}
