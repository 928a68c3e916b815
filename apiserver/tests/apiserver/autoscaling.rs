//! HorizontalPodAutoscalers served as `autoscaling/v2` (stored) and `autoscaling/v1`, one
//! resource converted between its versions as Kubernetes' `pkg/apis/autoscaling/v1/conversion.go`.

use serde_json::{Value, json};

use crate::kubectl::{kubectl, session};
use crate::support::*;

const V1: &str = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
const V2: &str = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";

fn target() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"})
}

async fn a_v1_autoscaler_is_a_v2_autoscaler_with_a_cpu_metric(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": target(), "maxReplicas": 4, "targetCPUUtilizationPercentage": 50}});
    let (code, created) = post(&c, V1, &v1).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "autoscaling/v1");
    assert_eq!(created["spec"]["targetCPUUtilizationPercentage"], 50);
    assert_eq!(created["spec"]["minReplicas"], 1, "v1's default");
    let (code, got) = get(&c, &format!("{V2}/web")).await;
    assert_eq!(code, 200, "{got}");
    assert_eq!(got["apiVersion"], "autoscaling/v2");
    assert_eq!(
        got["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}])
    );
    let (code, list) = get(&c, V1).await;
    assert_eq!(
        (code, &list["items"][0]["apiVersion"]),
        (200, &json!("autoscaling/v1"))
    );
    assert_eq!(
        list["items"][0]["spec"]["targetCPUUtilizationPercentage"],
        50
    );
}

async fn v2_metrics_v1_cannot_hold_round_trip_through_annotations(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let memory = json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}});
    let v2 = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "mem"},
        "spec": {"scaleTargetRef": target(), "minReplicas": 1, "maxReplicas": 4, "metrics": [memory]}});
    let (code, created) = post(&c, V2, &v2).await;
    assert_eq!(code, 201, "{created}");
    let (code, as_v1) = get(&c, &format!("{V1}/mem")).await;
    assert_eq!(code, 200);
    assert_eq!(as_v1["spec"].get("targetCPUUtilizationPercentage"), None);
    let annotation = as_v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
        .as_str()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(annotation).unwrap(),
        json!([{"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "500Mi"}}]),
        "v1's MetricSpec form"
    );
    let mut update = as_v1.clone();
    update["spec"]["maxReplicas"] = json!(6);
    let (code, updated) = put(&c, &format!("{V1}/mem"), &update).await;
    assert_eq!(code, 200, "{updated}");
    let (_, got) = get(&c, &format!("{V2}/mem")).await;
    assert_eq!(got["spec"]["maxReplicas"], 6);
    assert_eq!(got["spec"]["metrics"], json!([memory]), "{got}");
    assert_eq!(got["metadata"].get("annotations"), None);
}

async fn a_v1_write_keeps_the_stored_status_and_a_v1_status_write_replaces_it(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let memory = json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}});
    let v2 = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "st"},
        "spec": {"scaleTargetRef": target(), "maxReplicas": 4, "metrics": [memory]}});
    assert_eq!(post(&c, V2, &v2).await.0, 201);
    let current = json!([{"type": "Resource", "resource": {"name": "memory", "current": {"averageValue": "300Mi"}}}]);
    let conditions = json!([{"type": "AbleToScale", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]);
    let status = json!({"status": {"currentReplicas": 2, "desiredReplicas": 2, "currentMetrics": current, "conditions": conditions}});
    let (code, body) = patch(
        &c,
        &format!("{V2}/st/status"),
        "application/merge-patch+json",
        &status,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    // A v1 client that drops the annotations: the stored status stays.
    let (_, mut as_v1) = get(&c, &format!("{V1}/st")).await;
    as_v1["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("annotations");
    as_v1["spec"]["maxReplicas"] = json!(6);
    let (code, body) = put(&c, &format!("{V1}/st"), &as_v1).await;
    assert_eq!(code, 200, "{body}");
    let (_, got) = get(&c, &format!("{V2}/st")).await;
    assert_eq!(got["spec"]["maxReplicas"], 6);
    assert_eq!(
        (
            &got["status"]["currentMetrics"],
            &got["status"]["conditions"]
        ),
        (&current, &conditions),
        "{got}"
    );
    // A v1 /status write sets the status it sends.
    let (_, mut as_v1) = get(&c, &format!("{V1}/st")).await;
    as_v1["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("annotations");
    as_v1["status"]["currentCPUUtilizationPercentage"] = json!(40);
    let (code, body) = put(&c, &format!("{V1}/st/status"), &as_v1).await;
    assert_eq!(code, 200, "{body}");
    let (_, got) = get(&c, &format!("{V2}/st")).await;
    assert_eq!(
        got["status"]["currentMetrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}]),
        "{got}"
    );
    assert_eq!(got["status"].get("conditions"), None);
    // Round-trip annotations sent through v2 are dropped, as v2's conversion drops them.
    let mut with_annotation = got.clone();
    with_annotation["metadata"]["annotations"] =
        json!({"autoscaling.alpha.kubernetes.io/conditions": "[]", "keep": "me"});
    let (code, body) = put(&c, &format!("{V2}/st"), &with_annotation).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["metadata"]["annotations"], json!({"keep": "me"}));
}

on_every_backend!(
    a_v1_autoscaler_is_a_v2_autoscaler_with_a_cpu_metric,
    v2_metrics_v1_cannot_hold_round_trip_through_annotations,
    a_v1_write_keeps_the_stored_status_and_a_v1_status_write_replaces_it,
);

#[tokio::test]
async fn discovery_lists_autoscaling_v2_and_v1() {
    let s = start().await;
    let c = client(&s);
    let (code, group) = get(&c, "/apis/autoscaling").await;
    assert_eq!(code, 200);
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v2", "v1"]);
    assert_eq!(group["preferredVersion"]["version"], "v2");
    for version in ["v1", "v2"] {
        let (code, list) = get(&c, &format!("/apis/autoscaling/{version}")).await;
        assert_eq!(code, 200);
        assert!(
            list["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["name"] == "horizontalpodautoscalers"
                    && r["shortNames"] == json!(["hpa"])),
            "{list}"
        );
    }
}

#[test]
fn kubectl_autoscale_get_hpa_and_apply_of_a_v1_manifest_work() {
    let Some((kc, server, dir)) = session("autoscale") else {
        return;
    };
    kubectl(
        &kc,
        &server,
        &["create", "deployment", "web", "--image=nginx"],
    );
    let out = kubectl(
        &kc,
        &server,
        &[
            "autoscale",
            "deployment",
            "web",
            "--min=2",
            "--max=5",
            "--cpu-percent=60",
        ],
    );
    assert!(
        out.contains("horizontalpodautoscaler.autoscaling/web autoscaled"),
        "{out}"
    );
    let table = kubectl(&kc, &server, &["get", "hpa"]);
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        [
            "NAME",
            "REFERENCE",
            "TARGETS",
            "MINPODS",
            "MAXPODS",
            "REPLICAS",
            "AGE"
        ],
        "{table}"
    );
    assert_eq!(
        lines[1][..7],
        [
            "web",
            "Deployment/web",
            "cpu:",
            "<unknown>/60%",
            "2",
            "5",
            "0"
        ],
        "{table}"
    );
    let metric = kubectl(
        &kc,
        &server,
        &[
            "get",
            "hpa.v2.autoscaling",
            "web",
            "-o",
            "jsonpath={.spec.metrics[0].resource.target.averageUtilization}",
        ],
    );
    assert_eq!(metric, "60");
    let v1 = kubectl(
        &kc,
        &server,
        &[
            "get",
            "horizontalpodautoscalers.v1.autoscaling",
            "web",
            "-o",
            "jsonpath={.spec.targetCPUUtilizationPercentage}",
        ],
    );
    assert_eq!(v1, "60");
    // kubectl apply of a v1 manifest: created, then configured by a strategic merge patch
    // through v1.
    let file = dir.join("hpa.yaml");
    let manifest = |max: u32| {
        format!(
            "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: api\nspec:\n  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}\n  maxReplicas: {max}\n  targetCPUUtilizationPercentage: 70\n"
        )
    };
    std::fs::write(&file, manifest(3)).unwrap();
    let path = file.to_str().unwrap();
    let out = kubectl(&kc, &server, &["apply", "-f", path]);
    assert!(
        out.contains("horizontalpodautoscaler.autoscaling/api created"),
        "{out}"
    );
    std::fs::write(&file, manifest(8)).unwrap();
    let out = kubectl(&kc, &server, &["apply", "-f", path]);
    assert!(
        out.contains("horizontalpodautoscaler.autoscaling/api configured"),
        "{out}"
    );
    let max = kubectl(
        &kc,
        &server,
        &[
            "get",
            "hpa",
            "api",
            "-o",
            "jsonpath={.spec.maxReplicas} {.spec.metrics[0].resource.target.averageUtilization}",
        ],
    );
    assert_eq!(max, "8 70");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
