//! Reader for the initial archive: a cpio "newc" archive (the format of
//! Linux initramfs images, written by `cpio -H newc` or the build's packer).
//! Every header field is checked; a malformed archive ends iteration with
//! an error instead of reading out of bounds.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    pub name: &'a str,
    pub mode: u32,
    pub data: &'a [u8],
}

impl Entry<'_> {
    pub fn is_file(&self) -> bool {
        self.mode & 0o170000 == 0o100000
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadArchive {
    pub offset: usize,
}

const HEADER: usize = 110;

fn hex(field: &[u8]) -> Option<u32> {
    core::str::from_utf8(field)
        .ok()
        .and_then(|s| u32::from_str_radix(s, 16).ok())
}

fn align4(x: usize) -> usize {
    (x + 3) & !3
}

/// Iterates the entries of `archive` (the trailer ends it).
pub fn entries(archive: &[u8]) -> impl Iterator<Item = Result<Entry<'_>, BadArchive>> {
    let mut at = 0usize;
    let mut done = false;
    core::iter::from_fn(move || {
        if done {
            return None;
        }
        let r = parse_one(archive, at);
        match r {
            Ok(Some((entry, next))) => {
                at = next;
                Some(Ok(entry))
            }
            Ok(None) => {
                done = true;
                None
            }
            Err(e) => {
                done = true;
                Some(Err(e))
            }
        }
    })
}

fn parse_one(archive: &[u8], at: usize) -> Result<Option<(Entry<'_>, usize)>, BadArchive> {
    let bad = BadArchive { offset: at };
    if at >= archive.len() {
        return Ok(None);
    }
    let h = archive.get(at..at + HEADER).ok_or(bad)?;
    if &h[..6] != b"070701" && &h[..6] != b"070702" {
        return Err(bad);
    }
    let field = |i: usize| hex(&h[6 + 8 * i..6 + 8 * (i + 1)]).ok_or(bad);
    let mode = field(1)?;
    let size = field(6)? as usize;
    let namesize = field(11)? as usize;
    if namesize == 0 {
        return Err(bad);
    }
    let name_end = at + HEADER + namesize;
    let name = archive.get(at + HEADER..name_end - 1).ok_or(bad)?;
    let name = core::str::from_utf8(name).map_err(|_| bad)?;
    let data_start = align4(name_end);
    let data_end = data_start.checked_add(size).ok_or(bad)?;
    let data = archive.get(data_start..data_end).ok_or(bad)?;
    if name == "TRAILER!!!" {
        return Ok(None);
    }
    Ok(Some((Entry { name, mode, data }, align4(data_end))))
}

/// The file called `name` (a leading "/" or "./" is ignored on both sides).
pub fn find<'a>(archive: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let clean = |s: &'a str| s.trim_start_matches("./").trim_start_matches('/');
    let want = name.trim_start_matches("./").trim_start_matches('/');
    entries(archive)
        .map_while(Result::ok)
        .find(|e| e.is_file() && clean(e.name) == want)
        .map(|e| e.data)
}

/// Writes a newc archive (used by the build's packer and by tests).
#[cfg(any(test, feature = "std"))]
pub fn write(files: &[(&str, &[u8])]) -> std::vec::Vec<u8> {
    let mut out = std::vec::Vec::new();
    let mut push = |name: &str, mode: u32, data: &[u8], ino: u32| {
        let header = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            ino,
            mode,
            0,
            0,
            1,
            0,
            data.len(),
            0,
            0,
            0,
            0,
            name.len() + 1,
            0
        );
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        while out.len() % 4 != 0 {
            out.push(0);
        }
        out.extend_from_slice(data);
        while out.len() % 4 != 0 {
            out.push(0);
        }
    };
    for (i, (name, data)) in files.iter().enumerate() {
        push(name, 0o100755, data, i as u32 + 1);
    }
    push("TRAILER!!!", 0, &[], 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let a = write(&[("bin/hello", b"ELF..."), ("etc/pool.conf", b"x"), ("empty", b"")]);
        let names: Vec<_> = entries(&a).map(|e| e.unwrap().name).collect();
        assert_eq!(names, ["bin/hello", "etc/pool.conf", "empty"]);
        assert_eq!(find(&a, "/bin/hello"), Some(&b"ELF..."[..]));
        assert_eq!(find(&a, "empty"), Some(&b""[..]));
        assert_eq!(find(&a, "bin/nothing"), None);
    }

    #[test]
    fn truncated_or_corrupt_archives_are_errors() {
        let a = write(&[("bin/hello", b"0123456789")]);
        for cut in [0, 5, 50, 110, 115, 125] {
            let r: Vec<_> = entries(&a[..cut]).collect();
            assert!(r.iter().all(|e| e.is_err()) || r.is_empty(), "cut {cut}: {r:?}");
        }
        let mut b = a.clone();
        b[6 + 8 * 6] = b'z'; // size field
        assert!(entries(&b).next().unwrap().is_err());
        let mut c = a.clone();
        c[6 + 8 * 6..6 + 8 * 7].copy_from_slice(b"ffffffff");
        assert!(entries(&c).next().unwrap().is_err());
        assert_eq!(find(&c, "bin/hello"), None);
    }
}
