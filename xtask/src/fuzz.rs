//! The cargo-fuzz targets of `fuzz/`: `cargo xtask fuzz [target] [--seconds N]` runs them one
//! after the other, each for N seconds (default 600) in one process (no `-jobs`) at a low
//! priority; the `fuzz` step of `cargo xtask ci` builds them all and runs each briefly (see
//! [`ci`]).
//!
//! cargo-fuzz needs nightly-only compiler flags; with only a stable toolchain installed, the
//! build sets `RUSTC_BOOTSTRAP=1` so that stable rustc accepts them. Panics are what the targets
//! look for, so no sanitizer is used (`-s none`); debug assertions are on.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The targets, in the order they run.
const TARGETS: &[&str] = &[
    "label_selector",
    "field_selector",
    "continue_token",
    "request_body",
    "watch_body",
    "list_body",
];

/// Inputs each target runs in CI, from libFuzzer's fixed seed [`CI_SEED`]: a bounded count
/// rather than a time, so that a CI run tries the same inputs on any machine.
const CI_RUNS: u32 = 20_000;

/// libFuzzer's random seed in CI.
const CI_SEED: u32 = 1;

/// Parses `[target] [--seconds N]` and runs the chosen targets.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut seconds = 600u64;
    let mut chosen = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--seconds" {
            seconds = args
                .next()
                .and_then(|n| n.parse().ok())
                .ok_or("--seconds needs a number")?;
        } else if TARGETS.contains(&arg.as_str()) {
            chosen.push(arg.as_str());
        } else {
            return Err(format!(
                "unknown fuzz target {arg:?}; the targets are {}",
                TARGETS.join(", ")
            ));
        }
    }
    if chosen.is_empty() {
        chosen = TARGETS.to_vec();
    }
    let fuzz = Fuzz {
        target_dir: fuzz_dir().join("target"),
        profile: "-O",
    };
    for target in chosen {
        eprintln!("xtask fuzz: {target} for {seconds}s");
        fuzz.run(target, &[format!("-max_total_time={seconds}")])?;
    }
    Ok(())
}

/// The `fuzz` step of `cargo xtask ci`: builds every target under `<target>/fuzz`, then runs each
/// on its committed seeds and [`CI_RUNS`] generated inputs from a fixed seed, failing on the
/// first target that fails. The build is unoptimised: it takes half the CPU time of an optimised
/// one (5.6 against 14 minutes on the 2-core machine), and the few inputs run do not need speed.
pub(crate) fn ci(target: &Path) -> Result<(), String> {
    let fuzz = Fuzz {
        target_dir: target.join("fuzz"),
        profile: "-D",
    };
    fuzz.command("build").status_ok("cargo fuzz build")?;
    for target in TARGETS {
        fuzz.run(
            target,
            &[format!("-runs={CI_RUNS}"), format!("-seed={CI_SEED}")],
        )?;
    }
    Ok(())
}

/// The `fuzz/` folder, its own cargo workspace.
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// How cargo-fuzz is run: building where, and how (`-O` optimised, `-D` unoptimised).
struct Fuzz {
    target_dir: PathBuf,
    profile: &'static str,
}

impl Fuzz {
    /// `cargo fuzz <verb>` with the options every build here shares: debug assertions, no
    /// sanitizer, at a low priority, stable rustc accepting nightly flags.
    fn command(&self, verb: &str) -> Command {
        let mut command = Command::new("nice");
        command
            .args(["-n", "10"])
            .arg(crate::cargo_program())
            .args(["fuzz", verb, "--fuzz-dir"])
            .arg(fuzz_dir())
            .arg("--target-dir")
            .arg(&self.target_dir)
            .args([self.profile, "-a", "-s", "none", "--codegen-units", "16"])
            .current_dir(fuzz_dir())
            .env("RUSTC_BOOTSTRAP", "1");
        command
    }

    /// Runs `target` with libFuzzer's `options`: new inputs go to a scratch corpus under the
    /// target directory, the committed seeds (fuzz/corpus) are only read.
    fn run(&self, target: &str, options: &[String]) -> Result<(), String> {
        let scratch = self.target_dir.join("corpus").join(target);
        std::fs::create_dir_all(&scratch)
            .map_err(|e| format!("creating {}: {e}", scratch.display()))?;
        let seeds = fuzz_dir().join("corpus").join(target);
        let mut command = self.command("run");
        command
            .arg(target)
            .arg(&scratch)
            .arg(&seeds)
            .arg("--")
            .arg("-max_len=65536")
            .args(options);
        command.status_ok(&format!(
            "fuzz target {target} (a failing input is saved under fuzz/artifacts/{target})"
        ))
    }
}

/// A command run to its end, an error naming `what` when it fails.
trait StatusOk {
    fn status_ok(&mut self, what: &str) -> Result<(), String>;
}

impl StatusOk for Command {
    fn status_ok(&mut self, what: &str) -> Result<(), String> {
        let status = self.status().map_err(|e| {
            format!("{what}: could not run cargo-fuzz (`cargo install cargo-fuzz`): {e}")
        })?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("{what} failed ({status})"))
        }
    }
}
