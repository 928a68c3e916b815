//! `kubectl apply --server-side` against the binary (skipped without kubectl): pruning, the
//! conflict kubectl prints, `--force-conflicts` and `--show-managed-fields`.

use std::process::Command;

use serde_json::Value;

use crate::binary::Binary;
use crate::kubectl::{kubectl, session};

const SETTINGS: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: LABELS
data: DATA
";

fn manifest(dir: &std::path::Path, labels: &str, data: &str) -> String {
    let path = dir.join("settings.yaml");
    let text = SETTINGS.replace("LABELS", labels).replace("DATA", data);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// kubectl's exit code and standard error.
fn kubectl_err(kc: &std::path::Path, server: &Binary, args: &[&str]) -> (i32, String) {
    let out = Command::new(kc)
        .env("KUBECONFIG", &server.kubeconfig)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn settings(kc: &std::path::Path, server: &Binary) -> Value {
    let json = kubectl(kc, server, &["get", "configmap", "settings", "-o", "json"]);
    serde_json::from_str(&json).unwrap()
}

#[test]
fn kubectl_apply_server_side_twice_removes_a_dropped_field_and_label() {
    let Some((kc, server, dir)) = session("ssa-prune") else {
        return;
    };
    let first = manifest(&dir, "{a: '1', b: '2'}", "{k1: v1, k2: v2}");
    let out = kubectl(&kc, &server, &["apply", "--server-side", "-f", &first]);
    assert!(
        out.contains("configmap/settings serverside-applied"),
        "{out}"
    );
    let second = manifest(&dir, "{a: '1'}", "{k1: v1}");
    kubectl(&kc, &server, &["apply", "--server-side", "-f", &second]);
    let cm = settings(&kc, &server);
    assert_eq!(cm["data"], serde_json::json!({"k1": "v1"}));
    assert_eq!(cm["metadata"]["labels"], serde_json::json!({"a": "1"}));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kubectl_apply_server_side_conflict_prints_the_409_then_force_conflicts_takes_over() {
    let Some((kc, server, dir)) = session("ssa-conflict") else {
        return;
    };
    let mine = manifest(&dir, "{a: '1'}", "{k1: v1}");
    kubectl(&kc, &server, &["apply", "--server-side", "-f", &mine]);
    let theirs = manifest(&dir, "{a: '1'}", "{k1: changed}");
    let args = [
        "apply",
        "--server-side",
        "--field-manager=other",
        "-f",
        &theirs,
    ];
    let (code, stderr) = kubectl_err(&kc, &server, &args);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(r#"Apply failed with 1 conflict: conflict with "kubectl": .data.k1"#),
        "{stderr}"
    );
    let forced = [&args[..], &["--force-conflicts"]].concat();
    assert!(kubectl(&kc, &server, &forced).contains("serverside-applied"));
    assert_eq!(settings(&kc, &server)["data"]["k1"], "changed");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kubectl_get_show_managed_fields_prints_apply_and_update_entries() {
    let Some((kc, server, dir)) = session("ssa-show") else {
        return;
    };
    let path = manifest(&dir, "{a: '1'}", "{k1: v1}");
    kubectl(&kc, &server, &["apply", "--server-side", "-f", &path]);
    kubectl(&kc, &server, &["label", "configmap", "settings", "b=2"]);
    let yaml = kubectl(
        &kc,
        &server,
        &[
            "get",
            "configmap",
            "settings",
            "--show-managed-fields",
            "-o",
            "yaml",
        ],
    );
    for line in [
        "  managedFields:",
        "  - apiVersion: v1",
        "    fieldsType: FieldsV1",
        "        f:k1: {}",
        "    manager: kubectl",
        "    operation: Apply",
        "    manager: kubectl-label",
        "    operation: Update",
        "          f:b: {}",
    ] {
        assert!(yaml.lines().any(|l| l == line), "no {line:?} in:\n{yaml}");
    }
    let plain = kubectl(
        &kc,
        &server,
        &["get", "configmap", "settings", "-o", "yaml"],
    );
    assert!(!plain.contains("managedFields"), "{plain}");
    let _ = std::fs::remove_dir_all(&dir);
}
