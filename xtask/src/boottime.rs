//! `cargo xtask boottime`: how long from starting QEMU until the kernel
//! reaches its prompt. The kernel prints `BOOT-DONE tsc_cycles=<c> ns=<n>`
//! there and, with the `boottime` command-line flag, exits at once.

use std::process::ExitCode;
use std::time::Duration;

use crate::Args;
use crate::builder::{self, Profile};
use crate::machine::{Machine, Mode};
use crate::proc;
use crate::protocol::{self, BootDone, EXIT_SUCCESS, Ending};

/// Generous: icount runs are several times slower than plain TCG.
const TIMEOUT: Duration = Duration::from_secs(120);

struct Sample {
    wall_ms: f64,
    kernel: BootDone,
}

pub fn run(mut args: Args) -> Result<ExitCode, String> {
    let runs: usize = args.number("--runs")?.unwrap_or(5).max(1);
    let no_build = args.flag("--no-build");
    let machine = Machine::configure(&mut args)?;
    machine.prepare()?;
    args.finish()?;
    if !no_build {
        builder::build(Profile::Release)?;
    }

    let mut samples = Vec::new();
    for i in 1..=runs {
        let mut cmd = machine.command();
        cmd.args(builder::boot_args()).args(["-append", "boottime"]);
        let out = proc::run_captured(&mut cmd, TIMEOUT, false, |_, _| {})
            .map_err(|e| format!("cannot run {}: {e}", machine.qemu))?;
        let done = out
            .lines
            .iter()
            .find_map(|line| protocol::parse_boot_done(&line.text).map(|figures| (line.at, figures)));
        let Some((at, kernel)) = done else {
            let from = out.lines.len().saturating_sub(20);
            let mut tail: Vec<&str> = out.lines[from..].iter().map(|l| l.text.as_str()).collect();
            tail.extend(out.stderr.iter().map(String::as_str));
            if tail.is_empty() {
                tail.push("(no output)");
            }
            return Err(format!(
                "run {i}: no BOOT-DONE line ({}); last output:\n{}",
                out.ending,
                tail.join("\n")
            ));
        };
        if out.ending != Ending::Code(EXIT_SUCCESS) {
            eprintln!("warning: run {i} ended with {}", out.ending);
        }
        eprintln!("run {i}/{runs}: {:.1} ms to BOOT-DONE", at.as_secs_f64() * 1e3);
        samples.push(Sample {
            wall_ms: at.as_secs_f64() * 1e3,
            kernel,
        });
    }
    print!("{}", table(&machine, &samples));
    Ok(ExitCode::SUCCESS)
}

fn table(machine: &Machine, samples: &[Sample]) -> String {
    let mut out = format!(
        "Boot time over {} runs; {}; kernel loaded with `-kernel` (PVH entry).\n\
         Host wall time runs from spawning QEMU until the BOOT-DONE line arrives,\n\
         so it includes QEMU's start-up and the firmware.\n\n\
         | figure | median | min | max |\n|---|---|---|---|\n",
        samples.len(),
        machine.describe()
    );
    let mut row = |label: &str, values: Vec<f64>, decimals: usize| {
        let (median, min, max) = spread(values);
        out += &format!("| {label} | {median:.decimals$} | {min:.decimals$} | {max:.decimals$} |\n");
    };
    row(
        "host wall time, spawn to BOOT-DONE (ms)",
        samples.iter().map(|s| s.wall_ms).collect(),
        1,
    );
    if machine.mode == Mode::Icount {
        // Under icount one virtual nanosecond is one guest instruction.
        row(
            "guest instructions to BOOT-DONE (icount ns)",
            samples.iter().map(|s| s.kernel.ns as f64).collect(),
            0,
        );
    } else {
        row(
            "kernel-reported time to BOOT-DONE (ms)",
            samples.iter().map(|s| s.kernel.ns as f64 / 1e6).collect(),
            1,
        );
    }
    row(
        "kernel-reported TSC cycles to BOOT-DONE",
        samples.iter().map(|s| s.kernel.tsc_cycles as f64).collect(),
        0,
    );
    out
}

/// (median, min, max); the median of an even count is the mean of the middle two.
fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    (median, values[0], values[n - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(spread(vec![3.0, 1.0, 2.0]), (2.0, 1.0, 3.0));
        assert_eq!(spread(vec![4.0, 1.0, 2.0, 3.0]), (2.5, 1.0, 4.0));
        assert_eq!(spread(vec![7.0]), (7.0, 7.0, 7.0));
    }
}
