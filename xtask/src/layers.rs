//! `cargo xtask layers` (part of `make lint`): the kernel's crates are its
//! layers, and this checks that they stay so. It prints the crate graph,
//! lowest layer first, and fails on a dependency that goes up or sideways,
//! and on `unsafe` code outside the core crate.

use std::fs;
use std::path::Path;
use std::process::ExitCode;

/// The kernel's crates, lowest layer first. A crate may depend on crates of
/// lower layers only; the pure-logic crates at the bottom are host-tested
/// and used by every layer.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "pure logic",
        &["abi", "frames", "platform", "restable", "nvmstore", "linuxabi"],
    ),
    ("formats on pure logic", &["off2f"]),
    ("core", &["kcore"]),
    ("scheduling", &["sched"]),
    ("processes and IPC", &["ipc"]),
    ("resources and the pool", &["resource"]),
    ("system calls", &["syscall"]),
    ("kernel binary", &["tessera-kernel"]),
];

/// Where each crate lives.
fn dir_of(name: &str) -> String {
    match name {
        "tessera-kernel" => "kernel".to_string(),
        "kcore" => "kernel/core".to_string(),
        "nvmstore" | "off2f" | "linuxabi" => format!("lib/{name}"),
        other => format!("kernel/{other}"),
    }
}

/// Crates above the core that may not forbid `unsafe` yet, why, and how
/// many `unsafe` they hold at most (a new one fails the check).
const UNSAFE_EXCEPTIONS: &[(&str, usize, &str)] = &[(
    "tessera-kernel",
    1,
    "the entry the core's boot code calls by name is #[unsafe(no_mangle)]",
)];

fn layer_of(name: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, crates)| crates.contains(&name))
}

/// The path dependencies named in a crate's `[dependencies]` section.
fn path_dependencies(manifest: &str) -> Vec<String> {
    let mut deps = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps
            && line.contains("path")
            && let Some((name, _)) = line.split_once('=')
        {
            deps.push(name.trim().to_string());
        }
    }
    deps
}

/// Lines of Rust source under `dir` that use `unsafe` (comments aside).
fn unsafe_lines(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            unsafe_lines(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = fs::read_to_string(&path).unwrap_or_default();
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if code.contains("unsafe") && !code.contains("unsafe_code") {
                    out.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                }
            }
        }
    }
}

pub fn run() -> Result<ExitCode, String> {
    let mut problems = Vec::new();
    println!("kernel crate graph (lowest layer first):");
    for (layer, (what, crates)) in LAYERS.iter().enumerate() {
        for name in *crates {
            let dir = dir_of(name);
            let manifest = fs::read_to_string(format!("{dir}/Cargo.toml"))
                .map_err(|e| format!("reading {dir}/Cargo.toml: {e}"))?;
            let deps = path_dependencies(&manifest);
            println!("  {layer} {what:<23} {name:<15} -> {}", deps.join(", "));
            for d in &deps {
                match layer_of(d) {
                    Some(l) if l < layer => {}
                    Some(l) => problems.push(format!(
                        "{name} ({what}) depends on {d} ({}): a lower layer may not name a higher one or one beside it",
                        LAYERS[l].0
                    )),
                    None => problems.push(format!(
                        "{name} depends on {d}, which is in no layer (add it to LAYERS)"
                    )),
                }
            }
            if Some(layer) <= layer_of("kcore") {
                continue;
            }
            let src = Path::new(&dir).join("src");
            let root = ["lib.rs", "main.rs"]
                .iter()
                .map(|f| src.join(f))
                .find(|p| p.is_file())
                .ok_or_else(|| format!("{name}: no lib.rs or main.rs"))?;
            let forbids = fs::read_to_string(&root)
                .unwrap_or_default()
                .contains("#![forbid(unsafe_code)]");
            let mut lines = Vec::new();
            unsafe_lines(&src, &mut lines);
            match UNSAFE_EXCEPTIONS.iter().find(|(n, _, _)| n == name) {
                _ if forbids => {}
                Some((_, max, why)) => {
                    if lines.len() > *max {
                        problems.push(format!(
                            "{name} may hold {max} unsafe ({why}), it holds {}:\n    {}",
                            lines.len(),
                            lines.join("\n    ")
                        ));
                    }
                }
                None => problems.push(format!(
                    "{name} is above the core: its root must say #![forbid(unsafe_code)] ({} unsafe found{})",
                    lines.len(),
                    if lines.is_empty() {
                        String::new()
                    } else {
                        format!(":\n    {}", lines.join("\n    "))
                    }
                )),
            }
        }
    }
    println!();
    if problems.is_empty() {
        println!("layers: ok (no upward dependency, no unsafe outside the core)");
        return Ok(ExitCode::SUCCESS);
    }
    for p in &problems {
        eprintln!("layers: {p}");
    }
    Ok(ExitCode::FAILURE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_dependencies_come_from_the_dependencies_section_only() {
        let m = "[package]\nname = \"x\"\n[dependencies]\nkcore = { path = \"../core\" }\nspin = \"0.12\"\n\
                 [features]\nktest = [\"kcore/ktest\"]\n[dev-dependencies]\nfoo = { path = \"f\" }\n";
        assert_eq!(path_dependencies(m), vec!["kcore".to_string()]);
    }

    #[test]
    fn every_layer_crate_has_one_layer() {
        let mut seen = std::collections::HashSet::new();
        for (_, crates) in LAYERS {
            for c in *crates {
                assert!(seen.insert(*c), "{c} is in two layers");
            }
        }
    }
}
