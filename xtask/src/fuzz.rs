//! `cargo xtask fuzz [target] [--seconds N]`: runs the cargo-fuzz targets of `fuzz/`, one after
//! the other, each for N seconds (default 600) in one process (no `-jobs`) at a low priority. Not part of CI.
//!
//! cargo-fuzz needs nightly-only compiler flags; with only a stable toolchain installed, the
//! build sets `RUSTC_BOOTSTRAP=1` so that stable rustc accepts them. Panics are what the targets
//! look for, so no sanitizer is used (`-s none`); debug assertions are on.

use std::path::Path;
use std::process::Command;

/// The targets, in the order they run.
const TARGETS: &[&str] = &[
    "label_selector",
    "field_selector",
    "continue_token",
    "watch_body",
    "list_body",
];

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
    let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    for target in chosen {
        eprintln!("xtask fuzz: {target} for {seconds}s");
        // New inputs go to the first directory, a scratch one under fuzz/target; the committed
        // seeds (fuzz/corpus) are only read.
        let scratch = fuzz_dir.join("target").join("corpus").join(target);
        std::fs::create_dir_all(&scratch)
            .map_err(|e| format!("creating {}: {e}", scratch.display()))?;
        let seeds = fuzz_dir.join("corpus").join(target);
        let status = Command::new("nice")
            .args(["-n", "10", "cargo", "fuzz", "run", "--fuzz-dir"])
            .arg(&fuzz_dir)
            .args(["-O", "-a", "-s", "none", "--codegen-units", "16", target])
            .arg(&scratch)
            .arg(&seeds)
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .arg("-max_len=65536")
            .current_dir(&fuzz_dir)
            .env("RUSTC_BOOTSTRAP", "1")
            .status()
            .map_err(|e| format!("could not run cargo fuzz (`cargo install cargo-fuzz`): {e}"))?;
        if !status.success() {
            return Err(format!(
                "fuzz target {target} failed ({status}); the input is under fuzz/artifacts/{target}"
            ));
        }
    }
    Ok(())
}
