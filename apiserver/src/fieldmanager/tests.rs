//! Apply and update as the field manager records them. Cases carried over from
//! structured-merge-diff `merge/multiple_appliers_test.go`, `merge/leaf_test.go`,
//! `merge/set_test.go`, `merge/key_test.go` and k8s.io/apiserver
//! `pkg/endpoints/handlers/fieldmanager/fieldmanager_test.go` / apimachinery
//! `util/managedfields/internal/skipnonapplied_test.go` (inputs and expected outcomes).

use serde_json::{Value, json};

use super::*;
use crate::schema::Schema;

const NOW: &str = "2026-01-01T00:00:00Z";

fn writer<'a>(manager: &'a str, kind: (&str, &str, &str), reset: &'a FieldSet) -> Writer<'a> {
    Writer {
        manager,
        api_version: if kind.0.is_empty() { "v1" } else { "apps/v1" },
        subresource: "",
        ty: Schema::builtin().root(kind.0, kind.1, kind.2).unwrap(),
        reset,
        now: NOW,
    }
}

const DEPLOY: (&str, &str, &str) = ("apps", "v1", "Deployment");
const POD: (&str, &str, &str) = ("", "v1", "Pod");

fn managed(obj: &Value) -> Vec<(String, String, Value)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap().to_owned(),
                        e["operation"].as_str().unwrap().to_owned(),
                        e["fieldsV1"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn deploy(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"}, "spec": spec})
}

#[test]
fn apply_create_records_the_applied_fields_without_identity() {
    let none = FieldSet::default();
    let config = deploy(json!({"replicas": 1}));
    let out = apply(None, &config, &writer("kubectl", DEPLOY, &none), false).unwrap();
    assert_eq!(out["spec"]["replicas"], 1);
    assert_eq!(
        managed(&out),
        [(
            "kubectl".into(),
            "Apply".into(),
            json!({"f:spec": {"f:replicas": {}}})
        )]
    );
}

#[test]
fn apply_twice_removes_fields_the_manager_stopped_applying() {
    let none = FieldSet::default();
    let w = writer("kubectl", DEPLOY, &none);
    let mut first = deploy(json!({"replicas": 1, "paused": true}));
    first["metadata"]["labels"] = json!({"a": "1", "b": "2"});
    let live = apply(None, &first, &w, false).unwrap();
    let mut second = deploy(json!({"replicas": 1}));
    second["metadata"]["labels"] = json!({"a": "1"});
    let out = apply(Some(&live), &second, &w, false).unwrap();
    assert_eq!(out["spec"], json!({"replicas": 1}));
    assert_eq!(out["metadata"]["labels"], json!({"a": "1"}));
}

#[test]
fn fields_another_manager_owns_survive_the_appliers_removal() {
    let none = FieldSet::default();
    let live = apply(
        None,
        &deploy(json!({"replicas": 1, "paused": true})),
        &writer("a", DEPLOY, &none),
        false,
    )
    .unwrap();
    let live = apply(
        Some(&live),
        &deploy(json!({"paused": true})),
        &writer("b", DEPLOY, &none),
        false,
    )
    .unwrap();
    let out = apply(
        Some(&live),
        &deploy(json!({})),
        &writer("a", DEPLOY, &none),
        false,
    )
    .unwrap();
    assert_eq!(out["spec"], json!({"paused": true}));
}

#[test]
fn applying_another_managers_field_with_a_new_value_conflicts() {
    let none = FieldSet::default();
    let mut live = apply(
        None,
        &deploy(json!({"replicas": 1})),
        &writer("kubectl", DEPLOY, &none),
        false,
    )
    .unwrap();
    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = json!(3);
    update(
        Some(&live),
        &mut scaled,
        &writer("kube-controller-manager", DEPLOY, &none),
    );
    live = scaled;
    let err = apply(
        Some(&live),
        &deploy(json!({"replicas": 2})),
        &writer("kubectl", DEPLOY, &none),
        false,
    )
    .unwrap_err();
    let api = conflict_error(err);
    assert_eq!(api.code, 409);
    assert_eq!(
        api.message,
        r#"Apply failed with 1 conflict: conflict with "kube-controller-manager" using apps/v1: .spec.replicas"#
    );
    assert_eq!(
        api.details.unwrap()["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"kube-controller-manager\" using apps/v1", "field": ".spec.replicas"}])
    );
}

#[test]
fn applying_the_same_value_shares_ownership_without_conflict() {
    let none = FieldSet::default();
    let live = apply(
        None,
        &deploy(json!({"replicas": 1})),
        &writer("a", DEPLOY, &none),
        false,
    )
    .unwrap();
    let out = apply(
        Some(&live),
        &deploy(json!({"replicas": 1})),
        &writer("b", DEPLOY, &none),
        false,
    )
    .unwrap();
    let owners: Vec<String> = managed(&out).into_iter().map(|m| m.0).collect();
    assert_eq!(owners, ["a", "b"]);
}

#[test]
fn several_conflicts_are_listed_per_manager() {
    let none = FieldSet::default();
    let live = apply(
        None,
        &deploy(json!({"replicas": 1, "paused": true})),
        &writer("a", DEPLOY, &none),
        false,
    )
    .unwrap();
    let err = apply(
        Some(&live),
        &deploy(json!({"replicas": 2, "paused": false})),
        &writer("b", DEPLOY, &none),
        false,
    )
    .unwrap_err();
    assert_eq!(
        conflict_error(err).message,
        "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.paused\n- .spec.replicas"
    );
}

#[test]
fn force_takes_conflicting_fields_over() {
    let none = FieldSet::default();
    let live = apply(
        None,
        &deploy(json!({"replicas": 1, "paused": true})),
        &writer("a", DEPLOY, &none),
        false,
    )
    .unwrap();
    let out = apply(
        Some(&live),
        &deploy(json!({"replicas": 2})),
        &writer("b", DEPLOY, &none),
        true,
    )
    .unwrap();
    assert_eq!(out["spec"]["replicas"], 2);
    assert_eq!(
        managed(&out),
        [
            (
                "a".into(),
                "Apply".into(),
                json!({"f:spec": {"f:paused": {}}})
            ),
            (
                "b".into(),
                "Apply".into(),
                json!({"f:spec": {"f:replicas": {}}})
            ),
        ]
    );
}

#[test]
fn controller_applying_only_env_keeps_other_containers_and_image() {
    let none = FieldSet::default();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "main", "image": "app:1"}, {"name": "sidecar", "image": "proxy:1"}]}});
    let mut live = pod.clone();
    update(None, &mut live, &writer("kubectl-create", POD, &none));
    let config = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "main", "env": [{"name": "MODE", "value": "fast"}]}]}});
    let out = apply(
        Some(&live),
        &config,
        &writer("controller", POD, &none),
        false,
    )
    .unwrap();
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "main", "image": "app:1", "env": [{"name": "MODE", "value": "fast"}]}, {"name": "sidecar", "image": "proxy:1"}])
    );
    let out = apply(
        Some(&out),
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
        &writer("controller", POD, &none),
        false,
    )
    .unwrap();
    assert_eq!(
        out["spec"]["containers"][0],
        json!({"name": "main", "image": "app:1"})
    );
}

#[test]
fn update_records_created_fields_and_moves_changed_ones() {
    let none = FieldSet::default();
    let mut created = deploy(json!({"replicas": 1}));
    created["metadata"]["labels"] = json!({"app": "web"});
    update(None, &mut created, &writer("creator", DEPLOY, &none));
    assert_eq!(
        managed(&created),
        [(
            "creator".into(),
            "Update".into(),
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:replicas": {}}})
        )]
    );
    let mut changed = created.clone();
    changed["spec"]["replicas"] = json!(2);
    update(
        Some(&created),
        &mut changed,
        &writer("scaler", DEPLOY, &none),
    );
    let managers = managed(&changed);
    assert_eq!(
        managers[0].2,
        json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
    );
    assert_eq!(managers[1].0, "scaler");
    assert_eq!(managers[1].2, json!({"f:spec": {"f:replicas": {}}}));
}

#[test]
fn update_of_an_untracked_object_stays_untracked() {
    let none = FieldSet::default();
    let live = deploy(json!({"replicas": 1}));
    let mut new = deploy(json!({"replicas": 2}));
    update(Some(&live), &mut new, &writer("x", DEPLOY, &none));
    assert!(new["metadata"].get("managedFields").is_none());
}

#[test]
fn an_empty_managed_fields_list_resets_tracking() {
    let none = FieldSet::default();
    let mut live = deploy(json!({"replicas": 1}));
    update(None, &mut live, &writer("x", DEPLOY, &none));
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([]);
    update(Some(&live), &mut new, &writer("y", DEPLOY, &none));
    assert!(new["metadata"].get("managedFields").is_none());
}

#[test]
fn first_apply_to_an_untracked_object_conflicts_with_before_first_apply() {
    let none = FieldSet::default();
    let live = deploy(json!({"replicas": 1}));
    let err = apply(
        Some(&live),
        &deploy(json!({"replicas": 2})),
        &writer("a", DEPLOY, &none),
        false,
    )
    .unwrap_err();
    assert_eq!(
        conflict_error(err).message,
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: .spec.replicas"#
    );
}

#[test]
fn reset_fields_are_left_out_of_the_sets() {
    let status = field_set(&[&["status"]]);
    let mut config = deploy(json!({"replicas": 1}));
    config["status"] = json!({"replicas": 5});
    let out = apply(None, &config, &writer("a", DEPLOY, &status), false).unwrap();
    assert_eq!(managed(&out)[0].2, json!({"f:spec": {"f:replicas": {}}}));
}

#[test]
fn an_apply_that_changes_nothing_keeps_the_entry_time() {
    let none = FieldSet::default();
    let live = apply(
        None,
        &deploy(json!({"replicas": 1})),
        &writer("a", DEPLOY, &none),
        false,
    )
    .unwrap();
    let mut later = writer("a", DEPLOY, &none);
    later.now = "2027-01-01T00:00:00Z";
    let out = apply(Some(&live), &deploy(json!({"replicas": 1})), &later, false).unwrap();
    assert_eq!(out, live);
}

#[test]
fn an_apply_that_changes_only_reset_fields_keeps_the_entry_time() {
    let status = field_set(&[&["status"]]);
    let mut config = deploy(json!({"replicas": 1}));
    config["status"] = json!({"replicas": 5});
    let mut live = apply(None, &config, &writer("a", DEPLOY, &status), false).unwrap();
    // What the strategy keeps: the status the apply asked for is not written.
    live["status"] = json!({"replicas": 0});
    let mut later = writer("a", DEPLOY, &status);
    later.now = "2027-01-01T00:00:00Z";
    let out = apply(Some(&live), &config, &later, false).unwrap();
    assert_eq!(out["metadata"]["managedFields"][0]["time"], NOW, "{out}");
}

#[test]
fn kubectl_server_side_apply_rewrites_the_client_side_last_applied_annotation() {
    let none = FieldSet::default();
    let mut live = deploy(json!({"replicas": 1}));
    live["metadata"]["annotations"] = json!({LAST_APPLIED: "{\"old\":true}", "keep": "x"});
    update(
        None,
        &mut live,
        &writer("kubectl-client-side-apply", DEPLOY, &none),
    );
    let config = deploy(json!({"replicas": 1}));
    let out = apply(
        Some(&live),
        &config,
        &writer("kubectl", DEPLOY, &none),
        false,
    )
    .unwrap();
    assert_eq!(
        out["metadata"]["annotations"][LAST_APPLIED],
        config.to_string()
    );
    let other = apply(Some(&live), &config, &writer("helm", DEPLOY, &none), false).unwrap();
    assert_eq!(
        other["metadata"]["annotations"][LAST_APPLIED],
        "{\"old\":true}"
    );
}

/// The 409 of an apply's conflicts.
fn conflict_error(err: super::ApplyError) -> crate::error::ApiError {
    match err {
        super::ApplyError::Conflicts(c) => c.into(),
        other => panic!("not a conflict: {other}"),
    }
}
