//! The kernel command line: space-separated `key=value` words and flags.

/// Value of `key` in `line`, or None. A bare word `key` gives `Some("")`.
pub fn get<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_ascii_whitespace()
        .find_map(|word| match word.split_once('=') {
            Some((k, v)) if k == key => Some(v),
            None if word == key => Some(""),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::get;

    #[test]
    fn finds_keys_and_flags() {
        let line = "console=ttyS0  test=smp_ipi expect_cpus=4 quiet";
        assert_eq!(get(line, "test"), Some("smp_ipi"));
        assert_eq!(get(line, "expect_cpus"), Some("4"));
        assert_eq!(get(line, "quiet"), Some(""));
        assert_eq!(get(line, "tes"), None);
        assert_eq!(get("", "x"), None);
    }
}
