//! Label selectors of workloads, jobs and services validated as Kubernetes does
//! (`ValidateLabelSelector`, `ValidateLabels`, `LabelSelectorAsSelector`): 422 with a cause
//! per bad key, value, operator or value count at its field path.

use serde_json::{Value, json};

use crate::support::*;

/// The `field: message` of each cause of a Status.
fn causes(status: &Value) -> Vec<String> {
    status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}: {}",
                c["field"].as_str().unwrap(),
                c["message"].as_str().unwrap()
            )
        })
        .collect()
}

fn workload(kind: &str, selector: &Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"},
        "spec": {
            "selector": selector,
            "template": {"metadata": {"labels": {"app": "a"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        }
    })
}

const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

#[tokio::test]
async fn an_invalid_deployment_selector_is_422_with_each_requirement_at_its_path() {
    let s = start().await;
    let c = client(&s);
    let selector = json!({
        "matchLabels": {"app": "-bad-"},
        "matchExpressions": [
            {"key": "app", "operator": "In", "values": []},
            {"key": "bad key", "operator": "Exists"},
            {"key": "tier", "operator": "Near", "values": ["x"]},
            {"key": "zone", "operator": "DoesNotExist", "values": ["a"]}
        ]
    });
    let (code, status) = post(
        &c,
        "/apis/apps/v1/namespaces/default/deployments",
        &workload("Deployment", &selector),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    let causes = causes(&status);
    assert_eq!(
        causes[..4],
        [
            format!(r#"spec.selector.matchLabels: Invalid value: "-bad-": {LABEL_VALUE}"#),
            "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'".to_owned(),
            r#"spec.selector.matchExpressions[1].key: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#.to_owned(),
            r#"spec.selector.matchExpressions[2].operator: Invalid value: "Near": not a valid selector operator"#.to_owned(),
        ]
    );
    assert_eq!(
        causes[4],
        "spec.selector.matchExpressions[3].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
    );
    // The selector as a whole does not parse, so the template's labels are not matched.
    assert!(
        causes[5].starts_with(
            r#"spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"-bad-"}, "#
        ),
        "{causes:?}"
    );
    assert!(
        causes[5].ends_with(": invalid label selector"),
        "{causes:?}"
    );
    assert_eq!(causes.len(), 6, "{causes:?}");
}

#[tokio::test]
async fn empty_and_invalid_selectors_of_each_workload_kind_have_its_message() {
    let s = start().await;
    let c = client(&s);
    let path = |plural: &str| format!("/apis/apps/v1/namespaces/default/{plural}");
    let (code, status) = post(
        &c,
        &path("replicasets"),
        &workload("ReplicaSet", &json!({})),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        [
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"
        ]
    );
    let (code, status) = post(
        &c,
        &path("statefulsets"),
        &workload("StatefulSet", &json!({})),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert!(
        causes(&status)
            .iter()
            .any(|c| c.ends_with(": empty selector is invalid for statefulset")),
        "{status}"
    );
    let bad = json!({"matchExpressions": [{"key": "app", "operator": "NotIn"}]});
    let (code, status) = post(&c, &path("daemonsets"), &workload("DaemonSet", &bad)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        [
            "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        ]
    );
}

#[tokio::test]
async fn a_service_selector_with_an_invalid_key_or_value_is_422() {
    let s = start().await;
    let c = client(&s);
    let service = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
        "spec": {"selector": {"app": "bad value"}, "ports": [{"port": 80}]}
    });
    let (code, status) = post(&c, "/api/v1/namespaces/default/services", &service).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        [format!(
            r#"spec.selector: Invalid value: "bad value": {LABEL_VALUE}"#
        )]
    );
    assert_eq!(status["details"]["kind"], "Service");
}

#[tokio::test]
async fn a_job_selector_is_validated_when_given() {
    let s = start().await;
    let c = client(&s);
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {
            "manualSelector": true,
            "selector": {"matchExpressions": [{"key": "app", "operator": "Has"}]},
            "template": {"metadata": {"labels": {"app": "a"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
        }
    });
    let (code, status) = post(&c, "/apis/batch/v1/namespaces/default/jobs", &job).await;
    assert_eq!(code, 422, "{status}");
    assert!(
        causes(&status).contains(
            &r#"spec.selector.matchExpressions[0].operator: Invalid value: "Has": not a valid selector operator"#.to_owned()
        ),
        "{status}"
    );
}
