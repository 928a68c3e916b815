//! What a pod update may change (`ValidatePodUpdate`), each test named after the
//! TestValidatePodUpdate cases of `pkg/apis/core/validation/validation_test.go` it mirrors.

use serde_json::{Value, json};

use crate::support::{client, invalid, patch, post, start};

const PODS: &str = "/api/v1/namespaces/default/pods";

/// A pod with two containers, an init container, a toleration, an active deadline and a
/// scheduling gate, created through the API.
async fn created(c: &kube_client::Client, name: &str, extra: Value) -> Value {
    let mut pod = json!({"metadata": {"name": name}, "spec": {
        "containers": [{"name": "a", "image": "img:1"}, {"name": "b", "image": "img:1"}],
        "initContainers": [{"name": "i", "image": "init:1"}],
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}],
        "activeDeadlineSeconds": 100,
        "nodeSelector": {"zone": "a"},
    }});
    if let (Some(spec), Some(extra)) = (pod["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    let (code, created) = post(c, PODS, &pod).await;
    assert_eq!(code, 201, "{created}");
    created
}

/// Merge-patches the spec of pod `name`; returns the status code and the causes as
/// (field, message).
async fn change(c: &kube_client::Client, name: &str, spec: Value) -> (u16, Vec<(String, String)>) {
    let path = format!("{PODS}/{name}");
    let (code, body) = patch(
        c,
        &path,
        "application/merge-patch+json",
        &json!({"spec": spec}),
    )
    .await;
    let causes = invalid(&body)
        .1
        .into_iter()
        .map(|(f, _, m)| (f, m))
        .collect();
    (code, causes)
}

fn one(field: &str, message: &str) -> Vec<(String, String)> {
    vec![(field.to_owned(), message.to_owned())]
}

const OTHER_FIELDS: &str = "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

#[tokio::test]
async fn validate_pod_update_image_changes_and_empty_images() {
    let s = start().await;
    let c = client(&s);
    created(&c, "p", json!({})).await;
    // "image change" and "init container image change" pass.
    let images = json!({"containers": [{"name": "a", "image": "img:2"}, {"name": "b", "image": "img:1"}],
                        "initContainers": [{"name": "i", "image": "init:2"}]});
    assert_eq!(change(&c, "p", images).await, (200, vec![]));
    // "image change to empty".
    let empty =
        json!({"containers": [{"name": "a", "image": ""}, {"name": "b", "image": "img:1"}]});
    let (code, causes) = change(&c, "p", empty).await;
    assert_eq!(code, 422);
    assert!(
        causes.contains(&("spec.containers[0].image".into(), "Required value".into())),
        "{causes:?}"
    );
    // "more containers" / "less containers": refused before anything else.
    let fewer = json!({"containers": [{"name": "a", "image": "img:2"}]});
    assert_eq!(
        change(&c, "p", fewer).await,
        (
            422,
            one(
                "spec.containers",
                "Forbidden: pod updates may not add or remove containers"
            )
        )
    );
    // "container name change" is none of the fields that may change.
    let renamed =
        json!({"containers": [{"name": "z", "image": "img:2"}, {"name": "b", "image": "img:1"}]});
    assert_eq!(
        change(&c, "p", renamed).await,
        (422, one("spec", OTHER_FIELDS))
    );
}

#[tokio::test]
async fn validate_pod_update_active_deadline_seconds() {
    let s = start().await;
    let c = client(&s);
    created(&c, "p", json!({})).await;
    // "activeDeadlineSeconds change to larger positive".
    assert_eq!(
        change(&c, "p", json!({"activeDeadlineSeconds": 200})).await,
        (
            422,
            one(
                "spec.activeDeadlineSeconds",
                "Invalid value: 200: must be less than or equal to previous value"
            )
        )
    );
    // "activeDeadlineSeconds change to nil from positive".
    assert_eq!(
        change(&c, "p", json!({"activeDeadlineSeconds": null})).await,
        (
            422,
            one(
                "spec.activeDeadlineSeconds",
                "Invalid value: null: must not update from a positive integer to nil value"
            )
        )
    );
    // "activeDeadlineSeconds change to smaller positive".
    assert_eq!(
        change(&c, "p", json!({"activeDeadlineSeconds": 50})).await,
        (200, vec![])
    );
    // "activeDeadlineSeconds change to positive from nil".
    created(&c, "q", json!({"activeDeadlineSeconds": null})).await;
    assert_eq!(
        change(&c, "q", json!({"activeDeadlineSeconds": 30})).await,
        (200, vec![])
    );
}

#[tokio::test]
async fn validate_pod_update_tolerations() {
    let s = start().await;
    let c = client(&s);
    created(&c, "p", json!({})).await;
    let old =
        json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60});
    // "toleration seconds change" and "added valid new toleration" pass.
    let mut shorter = old.clone();
    shorter["tolerationSeconds"] = json!(10);
    let added = json!({"key": "x", "operator": "Equal", "value": "y", "effect": "NoSchedule"});
    assert_eq!(
        change(&c, "p", json!({"tolerations": [shorter, added]})).await,
        (200, vec![])
    );
    // "removed toleration" and "modified toleration".
    for tolerations in [json!([]), json!([{"key": "other", "operator": "Exists"}])] {
        assert_eq!(
            change(&c, "p", json!({"tolerations": tolerations})).await,
            (
                422,
                one(
                    "spec.tolerations",
                    "Forbidden: existing toleration can not be modified except its tolerationSeconds"
                )
            ),
            "{tolerations}"
        );
    }
    // "added invalid new toleration": the new list is validated.
    let current = json!([{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10},
                         {"key": "x", "operator": "Equal", "value": "y", "effect": "NoSchedule"}]);
    let mut bad = current.clone();
    bad.as_array_mut().unwrap().push(json!({"key": "z", "operator": "Equal", "value": "y", "effect": "NoSchedule", "tolerationSeconds": 1}));
    let (code, causes) = change(&c, "p", json!({"tolerations": bad})).await;
    assert_eq!(code, 422);
    assert_eq!(causes[0].0, "spec.tolerations[2].effect", "{causes:?}");
}

#[tokio::test]
async fn validate_pod_update_scheduling_gates() {
    let s = start().await;
    let c = client(&s);
    created(
        &c,
        "p",
        json!({"schedulingGates": [{"name": "g1"}, {"name": "g2"}]}),
    )
    .await;
    // "add new scheduling gate".
    let gates = json!([{"name": "g1"}, {"name": "g2"}, {"name": "g3"}]);
    assert_eq!(
        change(&c, "p", json!({"schedulingGates": gates})).await,
        (
            422,
            one(
                "spec.schedulingGates[2].name",
                "Forbidden: only deletion is allowed, but found new scheduling gate 'g3'"
            )
        )
    );
    // A gated pod may add to its node selector, not change an entry.
    assert_eq!(
        change(&c, "p", json!({"nodeSelector": {"zone": "b"}})).await,
        (
            422,
            one(
                "spec.nodeSelector",
                "Invalid value: {\"zone\":\"b\"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"
            )
        )
    );
    assert_eq!(
        change(&c, "p", json!({"nodeSelector": {"disk": "ssd"}})).await,
        (200, vec![])
    );
    // "remove scheduling gates": removal passes; the pod is no longer gated.
    assert_eq!(
        change(&c, "p", json!({"schedulingGates": [{"name": "g2"}]})).await,
        (200, vec![])
    );
    assert_eq!(
        change(&c, "p", json!({"schedulingGates": null})).await,
        (200, vec![])
    );
    assert_eq!(
        change(&c, "p", json!({"nodeSelector": {"more": "x"}})).await,
        (422, one("spec", OTHER_FIELDS))
    );
}

#[tokio::test]
async fn validate_pod_update_node_name_and_other_fields() {
    let s = start().await;
    let c = client(&s);
    created(&c, "p", json!({})).await;
    // "node name change": only through pods/binding.
    for spec in [
        json!({"nodeName": "n1"}),
        json!({"restartPolicy": "Never"}),
        json!({"hostname": "h"}),
    ] {
        assert_eq!(
            change(&c, "p", spec.clone()).await,
            (422, one("spec", OTHER_FIELDS)),
            "{spec}"
        );
    }
    // A field given as its zero value is no change.
    assert_eq!(
        change(&c, "p", json!({"hostNetwork": false})).await,
        (200, vec![])
    );
}

/// A required node affinity of one term with requirement `key` Exists.
fn required_affinity(keys: &[&str]) -> Value {
    let expressions: Vec<Value> = keys
        .iter()
        .map(|k| json!({"key": k, "operator": "Exists"}))
        .collect();
    json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": expressions}]}}})
}

#[tokio::test]
async fn validate_pod_update_gated_pod_node_affinity() {
    let s = start().await;
    let c = client(&s);
    let gated = json!({"schedulingGates": [{"name": "g"}], "affinity": required_affinity(&["a"])});
    created(&c, "p", gated).await;
    // "addition to nodeAffinity is allowed for gated pods".
    let added = json!({"affinity": required_affinity(&["a", "b"])});
    assert_eq!(change(&c, "p", added).await, (200, vec![]));
    // "old RequiredDuringSchedulingIgnoredDuringExecution is non-nil, new ... mutated".
    let replaced = json!({"affinity": required_affinity(&["b"])});
    assert_eq!(
        change(&c, "p", replaced).await,
        (
            422,
            one(
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]",
                "Invalid value: {\"MatchExpressions\":[{\"Key\":\"b\",\"Operator\":\"Exists\",\"Values\":null}],\"MatchFields\":null}: only additions are allowed (no mutations or deletions)"
            )
        )
    );
    let two_terms = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]},
                              {"matchExpressions": [{"key": "c", "operator": "Exists"}]}]}}}});
    let (code, causes) = change(&c, "p", two_terms).await;
    assert_eq!(code, 422);
    assert!(
        causes[0]
            .1
            .ends_with("no additions/deletions to non-empty NodeSelectorTerms list are allowed"),
        "{causes:?}"
    );
}

#[tokio::test]
async fn validate_pod_update_mirror_pod_annotation() {
    let s = start().await;
    let c = client(&s);
    created(&c, "p", json!({})).await;
    let path = format!("{PODS}/p");
    let mirror = json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}});
    let (code, status) = patch(&c, &path, "application/merge-patch+json", &mirror).await;
    assert_eq!(code, 422, "{status}");
    let causes: Vec<(String, String)> = invalid(&status)
        .1
        .into_iter()
        .map(|(f, _, m)| (f, m))
        .collect();
    assert_eq!(
        causes,
        one(
            "metadata.annotations[kubernetes.io/config.mirror]",
            "Forbidden: may not add mirror pod annotation"
        )
    );
}
