//! Runs the quick start example for a few seconds against the embedded API server and checks
//! what it prints.

use std::path::PathBuf;
use std::process::Command;

/// The example binary, which `cargo test` builds next to the test binaries.
fn quickstart() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    profile_dir
        .join("examples")
        .join(format!("quickstart{}", std::env::consts::EXE_SUFFIX))
}

#[test]
fn quickstart_syncs_summarises_and_shuts_down_cleanly() {
    let bin = quickstart();
    assert!(
        bin.exists(),
        "{} is missing: `cargo test -p kcache-factory` builds it",
        bin.display()
    );
    let out = Command::new(&bin)
        .args([
            "--duration",
            "6",
            "--pods",
            "300",
            "--nodes",
            "5",
            "--namespaces",
            "10",
            "--churn",
            "50",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "quickstart failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("embedded API server at http://127.0.0.1:"),
        "{stdout}"
    );
    assert!(stdout.contains("caches synced in"), "{stdout}");
    assert!(stdout.contains("5 nodes"), "{stdout}");
    let summaries: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("running pods per node (top 5): node-"))
        .collect();
    assert!(!summaries.is_empty(), "no summary line: {stdout}");
    assert!(
        summaries
            .iter()
            .all(|l| l.contains("queue depth") && l.contains("events/s: pods")),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("shut down cleanly"), "{stdout}");
}
