//! Runs the quick start example for a few seconds against the embedded API server and checks
//! what it prints.

use std::path::PathBuf;
use std::process::Command;

#[path = "support/example.rs"]
mod support;

use support::{Kubeconfig, example};

/// The quick start binary.
fn quickstart() -> PathBuf {
    example("quickstart")
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
            "3",
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

#[test]
fn quickstart_prints_progress_per_listed_page() {
    let out = run_simulated(&["--duration", "3", "--pods", "120", "--churn", "0"]);
    // Without a terminal each listed page is a line (a page reported at the very moment of the
    // sync may be printed after the bar's last update, so only the nodes' page is certain here).
    assert!(
        out.lines()
            .any(|l| l.starts_with("listing v1/Node: 5 listed")),
        "{out}"
    );
    let synced = out.find("caches synced").unwrap_or_else(|| panic!("{out}"));
    let first_page = out.find("listing v1/").unwrap_or_else(|| panic!("{out}"));
    assert!(first_page < synced, "progress comes before the sync: {out}");
}

#[test]
fn quickstart_labels_summaries_with_consecutive_seconds_and_ends_with_a_final_summary() {
    let out = run_simulated(&["--duration", "3", "--pods", "120", "--churn", "20"]);
    let labels: Vec<String> = out
        .lines()
        .filter(|l| l.contains("running pods per node"))
        .map(|l| {
            let label = l.split(']').next().unwrap_or_default();
            label.trim_start_matches('[').trim().to_owned()
        })
        .collect();
    assert!(!labels.is_empty(), "{out}");
    let expected: Vec<String> = (1..=labels.len()).map(|s| format!("{s}s")).collect();
    assert_eq!(labels, expected, "{out}");
    let summary = out
        .lines()
        .find(|l| l.starts_with("summary: ran "))
        .unwrap_or_else(|| panic!("no final summary: {out}"));
    assert!(
        summary.contains("reconciles") && summary.contains("pods and"),
        "{summary}"
    );
}

#[test]
fn quickstart_kubeconfig_without_a_path_uses_the_default_kubeconfig() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime
        .block_on(kcache_apiserver::TestServer::start())
        .unwrap();
    let kubeconfig = Kubeconfig::for_server(&server.url(), "quickstart");
    let out = Command::new(quickstart())
        .args(["--duration", "1", "--kubeconfig"])
        .env("KUBECONFIG", &kubeconfig.0)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);
    assert!(
        stdout.contains(&format!("watching the cluster at {}", server.url())),
        "{stdout}"
    );
    assert!(stdout.contains("caches synced in"), "{stdout}");
    drop(server);
}

#[test]
fn quickstart_errors_print_with_display_and_their_causes() {
    let out = Command::new(quickstart())
        .args(["--kubeconfig", "/nonexistent/kcache/kubeconfig"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    let mut lines = stderr.lines();
    let first = lines.next().unwrap_or_default();
    assert!(first.starts_with("error: "), "{stderr}");
    assert!(first.contains("/nonexistent/kcache/kubeconfig"), "{stderr}");
    assert!(
        lines.any(|l| l.starts_with("  caused by: ")),
        "the cause is printed: {stderr}"
    );
    assert!(!stderr.contains("Os {"), "no Debug output: {stderr}");
}

/// Runs the quick start on the embedded server with `args`; its stdout, after checking success.
fn run_simulated(args: &[&str]) -> String {
    let out = Command::new(quickstart())
        .args(["--nodes", "5", "--namespaces", "10"])
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "quickstart failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn quickstart_serves_the_informer_and_work_queue_metrics_families_on_metrics_addr() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let mut child = Command::new(quickstart())
        .args([
            "--metrics-addr",
            "127.0.0.1:0",
            "--duration",
            "2",
            "--pods",
            "100",
            "--nodes",
            "3",
            "--namespaces",
            "3",
            "--churn",
            "20",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut url = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(at) = line.strip_prefix("metrics at ") {
            url = Some(at.to_owned());
        }
        if line.contains("caches synced in") {
            break;
        }
    }
    let url = url.expect("the metrics address is printed before the caches sync");
    let curl = Command::new("curl").args(["-sf", &url]).output().unwrap();
    let text = String::from_utf8_lossy(&curl.stdout);
    assert!(curl.status.success(), "curl {url} failed");
    for family in [
        "# TYPE workqueue_depth gauge",
        "# TYPE workqueue_adds counter",
        "# TYPE workqueue_queue_duration_seconds histogram",
        "# TYPE workqueue_work_duration_seconds histogram",
        "# TYPE workqueue_longest_running_processor_seconds gauge",
        "# TYPE informer_stored_items gauge",
        "# TYPE informer_queued_items gauge",
        "# TYPE informer_pending_notifications gauge",
        "# TYPE informer_store_resource_version gauge",
        "# TYPE informer_relists counter",
    ] {
        assert!(text.contains(family), "no `{family}` in\n{text}");
    }
    let adds = text
        .lines()
        .find_map(|l| l.strip_prefix("workqueue_adds_total{name=\"nodes\"} "))
        .and_then(|v| v.parse::<u64>().ok());
    assert!(adds.is_some_and(|n| n > 0), "no adds counted:\n{text}");
    // The pod informer holds the synced pods (100, give or take the churn).
    let pods = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "informer_stored_items{name=\"v1/Pod\",group=\"\",version=\"v1\",resource=\"pods\"} ",
            )
        })
        .and_then(|v| v.parse::<u64>().ok());
    assert!(pods.is_some_and(|n| n > 50), "no pods stored:\n{text}");
    for line in lines {
        line.unwrap();
    }
    assert!(child.wait().unwrap().success());
}
