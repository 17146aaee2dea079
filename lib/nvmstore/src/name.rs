//! File names: what the directory accepts.

/// Longest name, in bytes (a directory entry keeps 64 with a terminating NUL).
pub const NAME_MAX: usize = 63;

/// 1 to 63 printable ASCII characters, no space and no `/`: a name is a key,
/// not a path, and must survive being printed and typed.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= NAME_MAX && name.bytes().all(|c| c.is_ascii_graphic() && c != b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_name("ls.text"));
        assert!(valid_name(&"x".repeat(NAME_MAX)));
        for bad in ["", "a/b", "a b", "tab\t", "é", &"x".repeat(NAME_MAX + 1)] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }
}
