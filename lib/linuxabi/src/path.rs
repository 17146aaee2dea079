//! Paths as the personality sees them before the file server does: made
//! absolute from the working directory and cleaned of `.`, `..` and
//! repeated slashes, so that the files it serves itself (`/dev`, `/proc`)
//! are recognised whatever way a program names them. (The file server
//! resolves the paths it gets itself, symbolic links included.)

use alloc::string::String;
use alloc::vec::Vec;

/// Longest path a call takes (Linux's PATH_MAX, its NUL included).
pub const PATH_MAX: usize = 4096;

/// `path` made absolute from `cwd` (itself absolute) and cleaned: no
/// `.`, no `..` (the root's parent is the root), single slashes, no
/// trailing slash.
pub fn absolute(cwd: &str, path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let start = if path.starts_with('/') { "" } else { cwd };
    for p in start.split('/').chain(path.split('/')) {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let mut out = String::with_capacity(path.len() + cwd.len() + 1);
    for p in &parts {
        out.push('/');
        out.push_str(p);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// `path` below directory `dir` (both absolute and clean): the rest, ""
/// for `dir` itself; None if it is not below.
pub fn below<'a>(path: &'a str, dir: &str) -> Option<&'a str> {
    let rest = path.strip_prefix(dir)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

/// The last component of a path ("" for the root).
pub fn basename(path: &str) -> &str {
    path.trim_end_matches('/').rsplit('/').next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_absolute_and_clean() {
        assert_eq!(absolute("/", "a/b"), "/a/b");
        assert_eq!(absolute("/x/y", "../z"), "/x/z");
        assert_eq!(absolute("/x", "/dev//null"), "/dev/null");
        assert_eq!(absolute("/", "../../.."), "/");
        assert_eq!(absolute("/a", "./b/./c/"), "/a/b/c");
        assert_eq!(absolute("/proc", "self/exe"), "/proc/self/exe");
        assert_eq!(absolute("/", ""), "/");
    }

    #[test]
    fn below_and_basename() {
        assert_eq!(below("/dev/null", "/dev"), Some("null"));
        assert_eq!(below("/dev", "/dev"), Some(""));
        assert_eq!(below("/devices", "/dev"), None);
        assert_eq!(below("/proc/1/stat", "/proc"), Some("1/stat"));
        assert_eq!(basename("/bin/busybox"), "busybox");
        assert_eq!(basename("sh"), "sh");
        assert_eq!(basename("/"), "");
    }
}
