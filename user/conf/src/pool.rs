//! The resource pool's settings language (seed 000 §2.3–2.4): one setting a
//! line, as in `etc/pool.conf` and the shell's `pool <setting>`.
//!
//! ```text
//! mode basic|reuse|add|reduce   the paper's four configurations
//! reuse on|off                  keep an ended process's resources for the next one
//! reduce on|off                 delete resources that stay unused
//! unused <ms>                   T: how long unused before reduce deletes
//! interval <ms>                 how often reduce runs (at least 1)
//! add workarea|space <n>        pre-create always-usable resources
//! add region <pages> <n>        pre-create regions of a size (1 to 2^18 pages)
//! add program|text|full <program> <n>
//! add clear                     forget the add rules
//! flush                         delete everything in the pool
//! ```
//!
//! A line parses into a `Line`, which `PoolConfig::apply` applies to the
//! settings and rules the kernel takes (`pool_set`); `flush` is an action,
//! not a setting, and is handed back to the caller to perform.

use abi::{Error, MAX_POOL_REGION_PAGES, MAX_POOL_RULES, PoolKind, PoolRule, PoolSettings};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

const MS: u64 = 1_000_000;

/// The paper's four configurations (seed 000 §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// No pool: nothing kept, nothing made ahead.
    Basic,
    /// Reuse only.
    Reuse,
    /// Reuse, and the add rules (kept as they are).
    Add,
    /// Reuse, reduce, and the add rules.
    Reduce,
}

/// One line of the language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    /// Blank, or a comment.
    Nothing,
    Reuse(bool),
    Reduce(bool),
    /// T, in milliseconds.
    Unused(u64),
    /// In milliseconds, at least 1.
    Interval(u64),
    /// An add rule: `program` names the program of the kinds that depend on
    /// one, `pages` a region's size.
    Add {
        kind: PoolKind,
        program: &'a str,
        pages: u64,
        count: u64,
    },
    AddClear,
    Mode(Mode),
    Flush,
}

pub fn parse(line: &str) -> Result<Line<'_>, Error> {
    let words: Vec<&str> = line.split('#').next().unwrap_or("").split_ascii_whitespace().collect();
    let num = |s: &str| s.parse::<u64>().map_err(|_| Error::Invalid);
    let on = |s: &str| match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(Error::Invalid),
    };
    let add = |kind, program, pages, count| Line::Add {
        kind,
        program,
        pages,
        count,
    };
    Ok(match words.as_slice() {
        [] => Line::Nothing,
        ["reuse", v] => Line::Reuse(on(v)?),
        ["reduce", v] => Line::Reduce(on(v)?),
        ["unused", ms] => Line::Unused(num(ms)?),
        ["interval", ms] => Line::Interval(num(ms)?.max(1)),
        ["add", "clear"] => Line::AddClear,
        ["add", "workarea", n] => add(PoolKind::WorkArea, "", 0, num(n)?),
        ["add", "space", n] => add(PoolKind::Space, "", 0, num(n)?),
        ["add", "region", pages, n] => add(
            PoolKind::Region,
            "",
            num(pages)?.clamp(1, MAX_POOL_REGION_PAGES),
            num(n)?,
        ),
        ["add", "program", name, n] => add(PoolKind::Program, name, 0, num(n)?),
        ["add", "text", name, n] => add(PoolKind::Text, name, 0, num(n)?),
        ["add", "full", name, n] => add(PoolKind::Full, name, 0, num(n)?),
        ["mode", "basic"] => Line::Mode(Mode::Basic),
        ["mode", "reuse"] => Line::Mode(Mode::Reuse),
        ["mode", "add"] => Line::Mode(Mode::Add),
        ["mode", "reduce"] => Line::Mode(Mode::Reduce),
        ["flush"] => Line::Flush,
        _ => return Err(Error::Invalid),
    })
}

/// The file a program name stands for: `name` alone is `bin/name`.
pub fn program_file(name: &str) -> String {
    if name.contains('/') {
        String::from(name)
    } else {
        format!("bin/{name}")
    }
}

/// The settings and add rules the kernel takes, as a line leaves them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    pub settings: PoolSettings,
    pub rules: Vec<PoolRule>,
}

/// What a line asks of the kernel besides its settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Nothing changed.
    None,
    /// The settings or rules changed: `pool_set` them.
    Changed,
    /// Delete everything in the pool (`pool_flush`).
    Flush,
}

impl PoolConfig {
    /// Applies one line. `plate` finds the plate of a program's file
    /// (`plate_find`); a program that has none is `NotFound`, and the
    /// configuration is left as it was.
    pub fn apply(&mut self, line: &Line, plate: &mut dyn FnMut(&str) -> Result<u64, Error>) -> Result<Effect, Error> {
        let s = &mut self.settings;
        match *line {
            Line::Nothing => return Ok(Effect::None),
            Line::Flush => return Ok(Effect::Flush),
            Line::Reuse(on) => s.reuse = u64::from(on),
            Line::Reduce(on) => s.reduce = u64::from(on),
            Line::Unused(ms) => s.unused_ns = ms.saturating_mul(MS),
            Line::Interval(ms) => s.interval_ns = ms.max(1).saturating_mul(MS),
            Line::AddClear => self.rules.clear(),
            Line::Mode(m) => {
                let (reuse, reduce) = match m {
                    Mode::Basic => (false, false),
                    Mode::Reuse | Mode::Add => (true, false),
                    Mode::Reduce => (true, true),
                };
                s.reuse = u64::from(reuse);
                s.reduce = u64::from(reduce);
                if matches!(m, Mode::Basic | Mode::Reuse) {
                    self.rules.clear();
                }
            }
            Line::Add {
                kind,
                program,
                pages,
                count,
            } => {
                if self.rules.len() as u64 >= MAX_POOL_RULES {
                    return Err(Error::Limit);
                }
                let plate = match kind {
                    PoolKind::Program | PoolKind::Text | PoolKind::Full => plate(&program_file(program))?,
                    _ => 0,
                };
                self.rules.push(PoolRule {
                    kind: kind as u64,
                    plate,
                    pages,
                    count,
                });
            }
        }
        Ok(Effect::Changed)
    }

    /// Applies every line of a settings file, in order. A line that does
    /// not parse or apply goes to `bad` with its error and changes nothing;
    /// the others still apply. Returns whether a line asked for a flush.
    pub fn apply_text(
        &mut self,
        text: &str,
        plate: &mut dyn FnMut(&str) -> Result<u64, Error>,
        bad: &mut dyn FnMut(&str, Error),
    ) -> bool {
        let mut flush = false;
        for line in text.lines() {
            match parse(line).and_then(|l| self.apply(&l, plate)) {
                Ok(Effect::Flush) => flush = true,
                Ok(_) => {}
                Err(e) => bad(line, e),
            }
        }
        flush
    }
}

/// A rule as a line of the language; `program` names the plate's program.
pub fn rule_line(rule: &PoolRule, program: &str) -> String {
    match PoolKind::from_u64(rule.kind) {
        Some(PoolKind::WorkArea) => format!("add workarea {}", rule.count),
        Some(PoolKind::Space) => format!("add space {}", rule.count),
        Some(PoolKind::Region) => format!("add region {} {}", rule.pages, rule.count),
        Some(PoolKind::Program) => format!("add program {program} {}", rule.count),
        Some(PoolKind::Text) => format!("add text {program} {}", rule.count),
        Some(PoolKind::Full) => format!("add full {program} {}", rule.count),
        None => format!("add ? {}", rule.count),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boot_defaults() -> PoolConfig {
        PoolConfig {
            settings: PoolSettings {
                reuse: 1,
                reduce: 1,
                unused_ns: 50 * MS,
                interval_ns: 50 * MS,
            },
            rules: Vec::new(),
        }
    }

    /// Plates of a pretend archive: bin/pa800 and bin/tiny.
    fn plates(file: &str) -> Result<u64, Error> {
        match file {
            "bin/pa800" => Ok(0x0300_0000_0000_0007),
            "bin/tiny" => Ok(0x0300_0000_0000_0009),
            _ => Err(Error::NotFound),
        }
    }

    fn apply(c: &mut PoolConfig, line: &str) -> Result<Effect, Error> {
        c.apply(&parse(line)?, &mut plates)
    }

    #[test]
    fn every_setting_parses() {
        assert_eq!(parse("reuse off"), Ok(Line::Reuse(false)));
        assert_eq!(parse("  reduce on  # with a comment"), Ok(Line::Reduce(true)));
        assert_eq!(parse("unused 0"), Ok(Line::Unused(0)));
        assert_eq!(parse("interval 0"), Ok(Line::Interval(1)));
        assert_eq!(parse("add clear"), Ok(Line::AddClear));
        assert_eq!(parse("mode add"), Ok(Line::Mode(Mode::Add)));
        assert_eq!(parse("flush"), Ok(Line::Flush));
        assert_eq!(parse("# only a comment"), Ok(Line::Nothing));
        assert_eq!(
            parse("add full pa800 2"),
            Ok(Line::Add {
                kind: PoolKind::Full,
                program: "pa800",
                pages: 0,
                count: 2
            })
        );
    }

    #[test]
    fn region_sizes_are_clamped_as_the_language_says() {
        let pages = |l: &str| match parse(l) {
            Ok(Line::Add { pages, .. }) => pages,
            other => panic!("{other:?}"),
        };
        assert_eq!(pages("add region 0 3"), 1);
        assert_eq!(pages("add region 16 3"), 16);
        assert_eq!(pages("add region 9999999 3"), MAX_POOL_REGION_PAGES);
    }

    #[test]
    fn malformed_lines_are_invalid() {
        for line in [
            "reuse maybe",
            "reuse",
            "unused -1",
            "unused 5 ms",
            "add",
            "add region 4",
            "add full pa800",
            "add full pa800 two",
            "add thing 2",
            "mode fast",
            "flush now",
            "frobnicate",
        ] {
            assert_eq!(parse(line), Err(Error::Invalid), "{line}");
        }
    }

    #[test]
    fn lines_apply_to_settings_and_rules() {
        let mut c = boot_defaults();
        assert_eq!(apply(&mut c, "unused 7"), Ok(Effect::Changed));
        assert_eq!(apply(&mut c, "interval 0"), Ok(Effect::Changed));
        assert_eq!(c.settings.unused_ns, 7 * MS);
        assert_eq!(c.settings.interval_ns, MS);
        apply(&mut c, "add workarea 2").unwrap();
        apply(&mut c, "add region 32 4").unwrap();
        apply(&mut c, "add full pa800 2").unwrap();
        assert_eq!(
            c.rules,
            [
                PoolRule {
                    kind: PoolKind::WorkArea as u64,
                    plate: 0,
                    pages: 0,
                    count: 2
                },
                PoolRule {
                    kind: PoolKind::Region as u64,
                    plate: 0,
                    pages: 32,
                    count: 4
                },
                PoolRule {
                    kind: PoolKind::Full as u64,
                    plate: 0x0300_0000_0000_0007,
                    pages: 0,
                    count: 2
                },
            ]
        );
        assert_eq!(apply(&mut c, "add clear"), Ok(Effect::Changed));
        assert!(c.rules.is_empty());
        assert_eq!(apply(&mut c, "flush"), Ok(Effect::Flush));
        assert_eq!(apply(&mut c, "# nothing"), Ok(Effect::None));
    }

    #[test]
    fn an_unknown_program_is_not_found_and_changes_nothing() {
        let mut c = boot_defaults();
        let before = c.clone();
        assert_eq!(apply(&mut c, "add text nosuch 1"), Err(Error::NotFound));
        assert_eq!(c, before);
    }

    #[test]
    fn a_path_names_the_file_itself() {
        assert_eq!(program_file("tiny"), "bin/tiny");
        assert_eq!(program_file("bin/tiny"), "bin/tiny");
        let mut c = boot_defaults();
        apply(&mut c, "add program bin/tiny 1").unwrap();
        assert_eq!(c.rules[0].plate, 0x0300_0000_0000_0009);
    }

    #[test]
    fn modes_are_the_papers_configurations() {
        let mut c = boot_defaults();
        apply(&mut c, "add space 2").unwrap();
        apply(&mut c, "mode add").unwrap();
        assert_eq!((c.settings.reuse, c.settings.reduce, c.rules.len()), (1, 0, 1));
        apply(&mut c, "mode reduce").unwrap();
        assert_eq!((c.settings.reuse, c.settings.reduce, c.rules.len()), (1, 1, 1));
        apply(&mut c, "mode reuse").unwrap();
        assert_eq!((c.settings.reuse, c.settings.reduce, c.rules.len()), (1, 0, 0));
        apply(&mut c, "add space 2").unwrap();
        apply(&mut c, "mode basic").unwrap();
        assert_eq!((c.settings.reuse, c.settings.reduce, c.rules.len()), (0, 0, 0));
    }

    #[test]
    fn rules_stop_at_the_kernels_limit() {
        let mut c = boot_defaults();
        for _ in 0..MAX_POOL_RULES {
            apply(&mut c, "add space 1").unwrap();
        }
        assert_eq!(apply(&mut c, "add space 1"), Err(Error::Limit));
        assert_eq!(c.rules.len() as u64, MAX_POOL_RULES);
    }

    #[test]
    fn a_file_applies_its_good_lines_and_reports_the_bad() {
        let text = "# boot settings\nreuse on\nreduce off\nbogus line\nadd workarea 2\nadd full nosuch 1\nflush\n";
        let mut c = boot_defaults();
        let mut bad = Vec::new();
        let flush = c.apply_text(text, &mut plates, &mut |line, e| bad.push((String::from(line), e)));
        assert!(flush);
        assert_eq!(c.settings.reduce, 0);
        assert_eq!(c.rules.len(), 1);
        assert_eq!(
            bad,
            [
                (String::from("bogus line"), Error::Invalid),
                (String::from("add full nosuch 1"), Error::NotFound)
            ]
        );
    }

    #[test]
    fn rules_read_back_in_the_language() {
        for line in [
            "add workarea 2",
            "add region 16 3",
            "add full pa800 2",
            "add text tiny 1",
        ] {
            let mut c = PoolConfig {
                settings: PoolSettings::default(),
                rules: Vec::new(),
            };
            apply(&mut c, line).unwrap();
            let program = if line.contains("pa800") { "pa800" } else { "tiny" };
            assert_eq!(rule_line(&c.rules[0], program), line);
        }
    }
}
