//! kcache's automation. `cargo xtask ci` runs every check CI runs, in order, stopping at the
//! first failure, with a one-line summary and the duration of each step. Before the steps it
//! finds what the checks need from outside Rust (protoc, kubectl, etcd, the Python and
//! JavaScript clients; see [`tools`]), and it closes with the list of checks it had to skip,
//! each with the command that enables it, and of every test that skipped itself. `cargo xtask ci --strict` (what `.ci/run` runs) fails
//! instead when anything would be skipped, and makes the tests fail rather than skip.
//!
//! Other commands: `cargo xtask layering` (only the dependency layering check);
//! `cargo xtask fuzz [target] [--seconds N]` (the cargo-fuzz targets of `fuzz/`, for long runs;
//! CI's `fuzz` step runs each briefly);
//! `cargo xtask bench-e2e [--pods N] [--quick] [--mimalloc]` (the whole-process benchmarks against kube-runtime, built
//! in release; they update BENCHMARKS.md at the repository's root).

mod fuzz;
#[cfg(test)]
mod imports;
mod layering;
mod metadata;
mod publish;
#[cfg(test)]
mod tidy;
mod tools;

use std::ffi::OsString;
use std::process::{Command, ExitCode};
use std::time::Instant;

use tools::{Host, Tools};

/// One CI step: a name and what it runs, with the variables [`Tools`] hands to cargo.
struct Step {
    name: &'static str,
    run: fn(&Tools) -> Result<(), String>,
}

const STEPS: &[Step] = &[
    Step {
        name: "fmt",
        run: |_| cargo(&["fmt", "--all", "--", "--check"], &[]),
    },
    Step {
        name: "clippy",
        run: |tools| {
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
                &tools.envs,
            )
        },
    },
    Step {
        name: "layering",
        run: |_| layering::check(),
    },
    // Plain `cargo test`: cargo-nextest (not on a fresh machine anyway) ran the same 459 tests
    // no faster on the 2-core machine (57.7 s against 49.9 s, both under load), and misses doctests.
    Step {
        name: "test",
        run: |tools| cargo(&["test", "--workspace", "--all-features"], &tools.envs),
    },
    Step {
        name: "doc",
        run: |tools| {
            let mut envs = tools.envs.clone();
            envs.push(("RUSTDOCFLAGS", "-D warnings".into()));
            cargo(
                &["doc", "--workspace", "--no-deps", "--all-features"],
                &envs,
            )
        },
    },
    // Benches are compiled (not run) with the dev profile, reusing the test build: this checks
    // that they build in a fraction of the time of an optimised build. `cargo bench` runs them.
    Step {
        name: "bench (compile)",
        run: |tools| {
            cargo(
                &[
                    "bench",
                    "--workspace",
                    "--all-features",
                    "--no-run",
                    "--profile",
                    "dev",
                ],
                &tools.envs,
            )
        },
    },
    // The cargo-fuzz targets (fuzz/, its own workspace): built, and each run on its seeds and a
    // bounded number of generated inputs. Without cargo-fuzz this is a listed skip.
    Step {
        name: "fuzz",
        run: |tools| {
            if tools.has("CARGO_FUZZ") {
                fuzz::ci(&tools.target)
            } else {
                Ok(())
            }
        },
    },
    Step {
        name: "publish (dry run)",
        run: publish::dry_run,
    },
];

/// The cargo that runs xtask (`$CARGO`), else `cargo`.
pub(crate) fn cargo_program() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// Runs `cargo` with `args` and extra environment variables; an error says how it failed.
pub(crate) fn cargo(args: &[&str], envs: &[(&str, OsString)]) -> Result<(), String> {
    let cargo = cargo_program();
    let status = Command::new(&cargo)
        .args(args)
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .status()
        .map_err(|e| format!("could not run {cargo}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

/// Finds the tools (see [`tools`]), says what it found and what is skipped, then runs the steps.
fn ci(args: &[String]) -> ExitCode {
    let strict = match args {
        [] => false,
        [flag] if flag == "--strict" => true,
        _ => {
            eprintln!("usage: cargo xtask ci [--strict]");
            return ExitCode::FAILURE;
        }
    };
    let tools = match metadata::target_directory()
        .and_then(|target| Tools::find(&Host::from_env(&target), strict))
    {
        Ok(tools) => tools,
        Err(e) => {
            eprintln!("xtask ci: FAIL {e}");
            return ExitCode::FAILURE;
        }
    };
    for (var, value) in &tools.envs {
        eprintln!("xtask ci: {var}={}", value.to_string_lossy());
    }
    if let Err(e) = tools
        .check_strict(strict)
        .and_then(|()| tools.clear_skip_log())
    {
        eprintln!("xtask ci: FAIL {e}");
        return ExitCode::FAILURE;
    }
    eprint!("{}", tools.summary());
    let start = Instant::now();
    for step in STEPS {
        let began = Instant::now();
        eprintln!("xtask ci: {} ...", step.name);
        let result = (step.run)(&tools);
        let secs = began.elapsed().as_secs_f64();
        match result {
            Ok(()) => eprintln!("xtask ci: ok   {:<18} {secs:>7.1}s", step.name),
            Err(e) => {
                eprintln!("xtask ci: FAIL {:<18} {secs:>7.1}s  {e}", step.name);
                eprint!("{}", tools.summary());
                return ExitCode::FAILURE;
            }
        }
    }
    eprintln!(
        "xtask ci: all {} steps passed in {:.1}s",
        STEPS.len(),
        start.elapsed().as_secs_f64()
    );
    eprint!("{}", tools.summary());
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
    ];
    // Every process of the run under mimalloc rather than the system allocator.
    let mimalloc = args.iter().any(|a| a == "--mimalloc");
    if mimalloc {
        run.extend(["--features", "mimalloc"]);
    }
    run.extend(["--", "--out", &report]);
    run.extend(
        args.iter()
            .map(String::as_str)
            .filter(|a| *a != "--mimalloc"),
    );
    // protoc for etcd-client's build script (the server section runs etcd).
    let protoc = metadata::target_directory()
        .and_then(|target| tools::protoc(&Host::from_env(&target)))
        .map_err(|e| format!("xtask bench-e2e: {e}"))?;
    cargo(&run, &[("PROTOC", protoc)]).map_err(|e| format!("xtask bench-e2e: {e}"))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("ci") => ci(rest),
        Some("layering") => exit_code(layering::check()),
        Some("fuzz") => exit_code(fuzz::run(rest)),
        Some("bench-e2e") => exit_code(bench_e2e(rest)),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci [--strict]|layering|fuzz [target] [--seconds N]|bench-e2e [--pods N] [--quick] [--mimalloc]>"
            );
            ExitCode::FAILURE
        }
    }
}
