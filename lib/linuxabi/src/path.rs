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
    // Nearly every path a program names is clean already (and a working
    // directory always is): it is itself the answer, or the two joined,
    // found by one look at its bytes instead of a walk through its parts.
    if let Some(rest) = path.strip_prefix('/') {
        if clean(rest.as_bytes()) {
            return String::from(path);
        }
    } else if !path.is_empty()
        && clean(path.as_bytes())
        && let Some(dir) = cwd.strip_prefix('/')
        && clean(dir.as_bytes())
    {
        let mut out = String::with_capacity(cwd.len() + 1 + path.len());
        out.push_str(cwd);
        if !dir.is_empty() {
            out.push('/');
        }
        out.push_str(path);
        return out;
    }
    walked(cwd, path)
}

/// Whether `b`, a path without its leading slash, is already as
/// `absolute` makes one: parts apart by single slashes, none `.` or `..`,
/// no slash at the end (nothing at all: the root).
fn clean(b: &[u8]) -> bool {
    if b.is_empty() {
        return true;
    }
    let mut start = 0;
    for i in 0..=b.len() {
        if i == b.len() || b[i] == b'/' {
            let part = &b[start..i];
            if part.is_empty() || part == b"." || part == b".." {
                return false;
            }
            start = i + 1;
        }
    }
    true
}

/// `absolute` part by part: any path.
fn walked(cwd: &str, path: &str) -> String {
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
    joined(&parts)
}

/// `absolute` for a process whose root directory is `root` (absolute and
/// clean; Linux's chroot): an absolute `path` starts at the root, and
/// `..` at the root stays there. A `cwd` outside the root walks as it
/// would without one (Linux leaves such a working directory usable).
pub fn absolute_in(root: &str, cwd: &str, path: &str) -> String {
    let top: Vec<&str> = root.split('/').filter(|p| !p.is_empty()).collect();
    let start = if path.starts_with('/') { root } else { cwd };
    let mut parts: Vec<&str> = Vec::new();
    for p in start.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." if parts == top => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    joined(&parts)
}

/// The absolute path of `parts`, the root's when there are none.
fn joined(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len() + 1).sum::<usize>().max(1));
    for p in parts {
        out.push('/');
        out.push_str(p);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// Absolute `path` as a process whose root directory is `root` names it
/// (None: it is outside the root, where Linux's getcwd says
/// "(unreachable)").
pub fn seen_from(root: &str, path: &str) -> Option<String> {
    if root == "/" {
        return Some(String::from(path));
    }
    let rest = below(path, root)?;
    let mut out = String::from("/");
    out.push_str(rest);
    Some(out)
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

    /// A path found clean is given as `walked` gives it, whatever its
    /// dots and slashes.
    #[test]
    fn clean_paths_as_walked() {
        let cwds = [
            "/", "/a", "/a/b", "/a/", "/a//b", "/a/./b", "/a/../b", "/.", "/..", "/.a", "/a..",
        ];
        let paths = [
            "",
            "/",
            "//",
            "a",
            "a/b",
            "/a",
            "/a/b",
            "a/",
            "/a/",
            "./a",
            "a/.",
            "a/..",
            "..",
            ".",
            "/..",
            "/.",
            "/a/./b",
            "/a/../b",
            "a//b",
            "/a//b",
            ".a",
            "..a",
            "a.",
            "a..",
            "/...",
            "...",
            "/a/b/.",
            "/a/b/..",
            "a b/c",
            "/\u{e9}/x",
        ];
        for cwd in cwds {
            for path in paths {
                assert_eq!(absolute(cwd, path), walked(cwd, path), "cwd {cwd:?}, path {path:?}");
            }
        }
        assert!(clean(b"a/b") && clean(b"") && clean(b"...") && clean(b".a/a."));
        assert!(!clean(b"a/") && !clean(b"/a") && !clean(b"a//b") && !clean(b"a/./b") && !clean(b".."));
    }

    #[test]
    fn nothing_walks_above_a_root() {
        assert_eq!(absolute_in("/r", "/r/a", "../../.."), "/r");
        assert_eq!(absolute_in("/r", "/r/a", "/../x"), "/r/x");
        assert_eq!(absolute_in("/r", "/r/a", "../../r/a"), "/r/r/a");
        assert_eq!(absolute_in("/r", "/elsewhere", "../x"), "/x");
        assert_eq!(absolute_in("/r", "/", "r/.."), "/r");
        assert_eq!(absolute_in("/", "/a", "../.."), "/");
        assert_eq!(absolute_in("/r/s", "/", "/"), "/r/s");
        assert_eq!(seen_from("/r", "/r/a"), Some("/a".into()));
        assert_eq!(seen_from("/r", "/r"), Some("/".into()));
        assert_eq!(seen_from("/r", "/rx"), None);
        assert_eq!(seen_from("/r", "/"), None);
        assert_eq!(seen_from("/", "/a"), Some("/a".into()));
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
