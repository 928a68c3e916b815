//! kcache's automation. `cargo xtask ci` runs every check CI runs, in order, stopping at the
//! first failure, with a one-line summary and the duration of each step.
//!
//! Other commands: `cargo xtask layering` (only the dependency layering check);
//! `cargo xtask fuzz [target] [--seconds N]` (the cargo-fuzz targets of `fuzz/`; not in CI);
//! `cargo xtask bench-e2e [--pods N]` (the whole-process benchmarks against kube-runtime, built
//! in release; they update BENCHMARKS.md at the repository's root).

mod fuzz;
#[cfg(test)]
mod imports;
mod layering;
mod metadata;
mod publish;
#[cfg(test)]
mod tidy;

use std::process::{Command, ExitCode};
use std::time::Instant;

/// One CI step: a name and what it runs.
struct Step {
    name: &'static str,
    run: fn() -> Result<(), String>,
}

const STEPS: &[Step] = &[
    Step {
        name: "fmt",
        run: || cargo(&["fmt", "--all", "--", "--check"], &[]),
    },
    Step {
        name: "clippy",
        run: || {
            cargo(
                &[
                    "clippy",
                    "--workspace",
                    "--all-targets",
                    "--all-features",
                    "--",
                    "-D",
                    "warnings",
                ],
                &[],
            )
        },
    },
    Step {
        name: "layering",
        run: layering::check,
    },
    Step {
        name: "test",
        run: || cargo(&["test", "--workspace", "--all-features"], &[]),
    },
    Step {
        name: "doc",
        run: || {
            cargo(
                &["doc", "--workspace", "--no-deps", "--all-features"],
                &[("RUSTDOCFLAGS", "-D warnings")],
            )
        },
    },
    // Benches are compiled (not run) with the dev profile, reusing the test build: this checks
    // that they build in a fraction of the time of an optimised build. `cargo bench` runs them.
    Step {
        name: "bench (compile)",
        run: || {
            cargo(
                &[
                    "bench",
                    "--workspace",
                    "--all-features",
                    "--no-run",
                    "--profile",
                    "dev",
                ],
                &[],
            )
        },
    },
    Step {
        name: "publish (dry run)",
        run: publish::dry_run,
    },
];

/// Runs `cargo` with `args` and extra environment variables; an error says how it failed.
pub(crate) fn cargo(args: &[&str], envs: &[(&str, &str)]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .args(args)
        .envs(envs.iter().copied())
        .status()
        .map_err(|e| format!("could not run {cargo}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

fn ci() -> ExitCode {
    let start = Instant::now();
    for step in STEPS {
        let began = Instant::now();
        eprintln!("xtask ci: {} ...", step.name);
        let result = (step.run)();
        let secs = began.elapsed().as_secs_f64();
        match result {
            Ok(()) => eprintln!("xtask ci: ok   {:<18} {secs:>7.1}s", step.name),
            Err(e) => {
                eprintln!("xtask ci: FAIL {:<18} {secs:>7.1}s  {e}", step.name);
                return ExitCode::FAILURE;
            }
        }
    }
    eprintln!(
        "xtask ci: all {} steps passed in {:.1}s",
        STEPS.len(),
        start.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

fn exit_code(result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// Builds the whole-process benchmark harness in release and runs it with `args`, writing the
/// report at the workspace root.
fn bench_e2e(args: &[String]) -> Result<(), String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(std::path::Path::new("."));
    let report = root.join("BENCHMARKS.md");
    let report = report.to_string_lossy();
    let mut run = vec![
        "run",
        "--release",
        "--quiet",
        "--package",
        "kcache-benchmarks",
        "--bin",
        "bench-e2e",
        "--",
        "--out",
        &report,
    ];
    run.extend(args.iter().map(String::as_str));
    cargo(&run, &[]).map_err(|e| format!("xtask bench-e2e: {e}"))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("layering") => exit_code(layering::check()),
        Some("fuzz") => exit_code(fuzz::run(rest)),
        Some("bench-e2e") => exit_code(bench_e2e(rest)),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci|layering|fuzz [target] [--seconds N]|bench-e2e [--pods N]>"
            );
            ExitCode::FAILURE
        }
    }
}
