//! Client-side `kubectl apply` against the binary (skipped without kubectl): the strategic
//! merge patches it computes carry `$setElementOrder` (the manifest's container order) and
//! `$retainKeys` (a Deployment strategy switched to `Recreate` drops the server-defaulted
//! `rollingUpdate`); neither directive is stored. Direct patches with them too.

use serde_json::Value;

use crate::kubectl::{kubectl, session};

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME}
spec:
  replicas: 1
  selector: {matchLabels: {app: o}}
  STRATEGY
  template:
    metadata: {labels: {app: o}}
    spec:
      containers:
CONTAINERS";

/// A Deployment manifest `name` with a `strategy` line and `containers` (YAML flow maps).
pub(crate) fn deployment_yaml(name: &str, strategy: &str, containers: &[&str]) -> String {
    let containers: String = containers
        .iter()
        .map(|c| format!("      - {c}\n"))
        .collect();
    DEPLOYMENT
        .replace("NAME", name)
        .replace("STRATEGY", strategy)
        .replace("CONTAINERS", &containers)
}

fn manifest(strategy: &str, names: &[&str]) -> String {
    let containers: Vec<String> = names
        .iter()
        .map(|c| format!("{{name: {c}, image: nginx}}"))
        .collect();
    let containers: Vec<&str> = containers.iter().map(String::as_str).collect();
    deployment_yaml("ordered", strategy, &containers)
}

fn container_names(deployment: &Value) -> Vec<&str> {
    deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect()
}

#[test]
fn kubectl_apply_reorders_containers_and_switches_a_strategy_to_recreate() {
    let Some((kc, server, dir)) = session("directives") else {
        return;
    };
    let file = dir.join("deployment.yaml");
    let path = file.to_str().unwrap();
    let get = || -> Value {
        let json = kubectl(
            &kc,
            &server,
            &["get", "deployment", "ordered", "-o", "json"],
        );
        serde_json::from_str(&json).unwrap()
    };
    std::fs::write(&file, manifest("", &["a", "b", "c"])).unwrap();
    kubectl(&kc, &server, &["apply", "-f", path]);
    let live = get();
    assert_eq!(live["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");

    std::fs::write(&file, manifest("", &["c", "a", "b"])).unwrap();
    kubectl(&kc, &server, &["apply", "-f", path]);
    assert_eq!(container_names(&get()), ["c", "a", "b"]);

    let recreate = "strategy: {type: Recreate}";
    std::fs::write(&file, manifest(recreate, &["c", "a", "b"])).unwrap();
    kubectl(&kc, &server, &["apply", "-f", path]);
    let live = get();
    assert_eq!(
        live["spec"]["strategy"],
        serde_json::json!({"type": "Recreate"}),
        "{live}"
    );
    let text = live.to_string();
    assert!(
        !text.contains("$setElementOrder") && !text.contains("$retainKeys"),
        "{text}"
    );

    let patch = r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"c"},{"name":"a"}]}}}}"#;
    kubectl(
        &kc,
        &server,
        &[
            "patch",
            "deployment",
            "ordered",
            "--type=strategic",
            "-p",
            patch,
        ],
    );
    assert_eq!(container_names(&get()), ["b", "c", "a"]);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
