//! Server-side apply and managedFields over HTTP, through kube-client as controllers use it.
//! Expected statuses and messages: k8s.io/apiserver `pkg/endpoints/handlers/fieldmanager`
//! tests and `handlers/patch.go`; conflict wording from apimachinery
//! `util/managedfields/internal/conflict.go`.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube_client::Api;
use kube_client::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::*;

const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const APPLY: &str = "application/apply-patch+yaml";

fn settings(data: Value, labels: Value) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "labels": labels}, "data": data}))
    .unwrap()
}

fn deployment(replicas: i32) -> Deployment {
    serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "app:1"}, {"name": "sidecar", "image": "proxy:1"}]}}}}))
    .unwrap()
}

/// (manager, operation, subresource, fieldsV1) of each managedFields entry.
fn entries(obj: &Value) -> Vec<(String, String, String, Value)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_owned();
            (
                s("manager"),
                s("operation"),
                s("subresource"),
                e["fieldsV1"].clone(),
            )
        })
        .collect()
}

async fn apply_twice_with_a_field_and_a_label_removed_removes_both(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let api: Api<ConfigMap> = Api::default_namespaced(client(&s));
    let pp = PatchParams::apply("kubectl");
    let first = settings(json!({"k1": "1", "k2": "2"}), json!({"a": "1", "b": "2"}));
    api.patch("settings", &pp, &Patch::Apply(&first))
        .await
        .unwrap();
    let second = settings(json!({"k1": "1"}), json!({"a": "1"}));
    let cm = api
        .patch("settings", &pp, &Patch::Apply(&second))
        .await
        .unwrap();
    assert_eq!(cm.data.unwrap().keys().collect::<Vec<_>>(), ["k1"]);
    assert_eq!(
        cm.metadata.labels.unwrap().keys().collect::<Vec<_>>(),
        ["a"]
    );
    let (_, stored) = get(
        &client(&s),
        "/api/v1/namespaces/default/configmaps/settings",
    )
    .await;
    assert_eq!(
        entries(&stored),
        [(
            "kubectl".into(),
            "Apply".into(),
            String::new(),
            json!({"f:data": {"f:k1": {}}, "f:metadata": {"f:labels": {"f:a": {}}}})
        )]
    );
}

async fn a_second_manager_changing_an_owned_field_gets_409_until_forced(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let api: Api<Deployment> = Api::default_namespaced(client(&s));
    api.patch(
        "web",
        &PatchParams::apply("kubectl"),
        &Patch::Apply(&deployment(1)),
    )
    .await
    .unwrap();
    let err = api
        .patch(
            "web",
            &PatchParams::apply("other"),
            &Patch::Apply(&deployment(3)),
        )
        .await
        .unwrap_err();
    let kube_client::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        r#"Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas"#
    );
    let forced = api
        .patch(
            "web",
            &PatchParams::apply("other").force(),
            &Patch::Apply(&deployment(3)),
        )
        .await
        .unwrap();
    assert_eq!(forced.spec.replicas, Some(3));
    let (_, stored) = get(&client(&s), &format!("{DEPLOYS}/web")).await;
    let managers = entries(&stored);
    assert_eq!(managers[0].0, "kubectl");
    assert!(managers[0].3["f:spec"].get("f:replicas").is_none());
    assert_eq!(managers[1].0, "other");
    assert_eq!(managers[1].3["f:spec"]["f:replicas"], json!({}));
}

on_every_backend!(
    apply_twice_with_a_field_and_a_label_removed_removes_both,
    a_second_manager_changing_an_owned_field_gets_409_until_forced,
    a_put_that_changes_nothing_keeps_managed_fields_and_resource_version,
);

#[tokio::test]
async fn conflict_status_names_each_field_in_its_causes() {
    let s = start().await;
    let c = client(&s);
    let api: Api<Deployment> = Api::default_namespaced(c.clone());
    api.create(&PostParams::default(), &deployment(1))
        .await
        .unwrap();
    let mut scaled = deployment(5);
    scaled.spec.paused = Some(true);
    let body = serde_json::to_value(&scaled).unwrap();
    let (code, status) = patch(&c, &format!("{DEPLOYS}/web?fieldManager=ctl"), APPLY, &body).await;
    assert_eq!(code, 409);
    let manager = status["details"]["causes"][0]["message"].as_str().unwrap();
    assert!(
        manager.starts_with("conflict with \"") && manager.ends_with(" using apps/v1"),
        "{status}"
    );
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "FieldManagerConflict"
    );
    assert_eq!(status["details"]["causes"][0]["field"], ".spec.replicas");
    assert!(status["details"].get("name").is_none());
}

#[tokio::test]
async fn create_and_updates_are_recorded_as_update_entries() {
    let s = start().await;
    let c = client(&s);
    let api: Api<Deployment> = Api::default_namespaced(c.clone());
    api.create(
        &PostParams {
            field_manager: Some("creator".into()),
            ..PostParams::default()
        },
        &deployment(1),
    )
    .await
    .unwrap();
    let scale = json!({"spec": {"replicas": 2}});
    let (code, _) = patch(
        &c,
        &format!("{DEPLOYS}/web?fieldManager=scaler"),
        "application/merge-patch+json",
        &scale,
    )
    .await;
    assert_eq!(code, 200);
    let (_, stored) = get(&c, &format!("{DEPLOYS}/web")).await;
    let managers = entries(&stored);
    assert_eq!(managers.len(), 2, "{stored}");
    assert_eq!(
        (managers[0].0.as_str(), managers[0].1.as_str()),
        ("creator", "Update")
    );
    assert!(managers[0].3["f:spec"].get("f:replicas").is_none());
    assert_eq!(
        managers[0].3["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"main\"}"],
        json!({".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
            "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}),
        "the creator owns the defaulted fields too"
    );
    assert_eq!(managers[1].0, "scaler");
    assert_eq!(managers[1].3, json!({"f:spec": {"f:replicas": {}}}));
    let entry = &stored["metadata"]["managedFields"][1];
    assert_eq!(entry["apiVersion"], "apps/v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert!(entry["time"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test]
async fn a_controller_applying_only_env_of_main_keeps_the_other_container_and_image() {
    let s = start().await;
    let api: Api<Deployment> = Api::default_namespaced(client(&s));
    api.create(&PostParams::default(), &deployment(1))
        .await
        .unwrap();
    let env: Deployment = serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {"containers": [
            {"name": "main", "env": [{"name": "MODE", "value": "fast"}]}]}}}}))
    .unwrap();
    let out = api
        .patch(
            "web",
            &PatchParams::apply("controller"),
            &Patch::Apply(&env),
        )
        .await
        .unwrap();
    let containers = out.spec.template.spec.unwrap().containers;
    assert_eq!(containers.len(), 2);
    assert_eq!(containers[0].image.as_deref(), Some("app:1"));
    assert_eq!(containers[0].env.as_ref().unwrap()[0].name, "MODE");
    assert_eq!(containers[1].name, "sidecar");
}

#[tokio::test]
async fn a_controller_applies_status_through_the_status_subresource() {
    let s = start().await;
    let api: Api<Deployment> = Api::default_namespaced(client(&s));
    api.create(&PostParams::default(), &deployment(1))
        .await
        .unwrap();
    let status = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "status": {"replicas": 1, "readyReplicas": 1}});
    let out = api
        .patch_status(
            "web",
            &PatchParams::apply("web-controller"),
            &Patch::Apply(&status),
        )
        .await
        .unwrap();
    assert_eq!(out.status.unwrap().ready_replicas, Some(1));
    assert_eq!(out.spec.replicas, Some(1));
    let (_, stored) = get(&client(&s), &format!("{DEPLOYS}/web")).await;
    let mine = entries(&stored)
        .into_iter()
        .find(|e| e.0 == "web-controller")
        .unwrap();
    assert_eq!(
        (mine.1.as_str(), mine.2.as_str(), mine.3),
        (
            "Apply",
            "status",
            json!({"f:status": {"f:readyReplicas": {}, "f:replicas": {}}})
        )
    );
}

#[tokio::test]
async fn apply_creates_a_missing_object_with_201() {
    let s = start().await;
    let c = client(&s);
    let body = serde_json::to_value(deployment(2)).unwrap();
    let (code, created) = patch(
        &c,
        &format!("{DEPLOYS}/web?fieldManager=kubectl"),
        APPLY,
        &body,
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let managers = entries(&created);
    assert_eq!(managers.len(), 1, "only the apply is recorded: {created}");
    assert_eq!(
        (managers[0].0.as_str(), managers[0].1.as_str()),
        ("kubectl", "Apply")
    );
}

#[tokio::test]
async fn an_apply_that_changes_nothing_writes_nothing() {
    let s = start().await;
    let api: Api<Pod> = Api::default_namespaced(client(&s));
    let pod: Pod = serde_json::from_value(pod("default", "p", "n1", "Running", "web")).unwrap();
    let pp = PatchParams::apply("kubectl");
    let first = api.patch("p", &pp, &Patch::Apply(&pod)).await.unwrap();
    let again = api.patch("p", &pp, &Patch::Apply(&pod)).await.unwrap();
    assert_eq!(
        first.metadata.resource_version,
        again.metadata.resource_version
    );
    assert_eq!(first.metadata.managed_fields, again.metadata.managed_fields);
}

#[tokio::test]
async fn apply_without_field_manager_is_422_patch_options() {
    let s = start().await;
    let body = serde_json::to_value(deployment(1)).unwrap();
    let (code, status) = patch(&client(&s), &format!("{DEPLOYS}/web"), APPLY, &body).await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        r#"PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch"#
    );
    assert_eq!(status["details"]["kind"], "PatchOptions");
}

#[tokio::test]
async fn force_on_a_non_apply_patch_is_422() {
    let s = start().await;
    let (code, status) = patch(
        &client(&s),
        &format!("{DEPLOYS}/web?force=true"),
        "application/merge-patch+json",
        &json!({}),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        r#"PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch"#
    );
}

#[tokio::test]
async fn managed_fields_in_an_applied_body_are_400() {
    let s = start().await;
    let mut body = serde_json::to_value(deployment(1)).unwrap();
    body["metadata"]["managedFields"] = json!([{"manager": "x"}]);
    let (code, status) = patch(
        &client(&s),
        &format!("{DEPLOYS}/web?fieldManager=a"),
        APPLY,
        &body,
    )
    .await;
    assert_eq!(
        (code, status["message"].as_str()),
        (400, Some("metadata.managedFields must be nil"))
    );
}

async fn a_put_that_changes_nothing_keeps_managed_fields_and_resource_version(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let api: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let cm = settings(json!({"k1": "1"}), json!({"a": "1"}));
    let applied = api
        .patch(
            "settings",
            &PatchParams::apply("kubectl"),
            &Patch::Apply(&cm),
        )
        .await
        .unwrap();
    let path = "/api/v1/namespaces/default/configmaps/settings";
    let (_, live) = get(&c, path).await;
    let (code, same) = put(&c, &format!("{path}?fieldManager=other"), &live).await;
    assert_eq!(code, 200);
    assert_eq!(rv(&same), rv(&live));
    assert_eq!(
        same["metadata"]["managedFields"],
        live["metadata"]["managedFields"]
    );
    assert_eq!(applied.metadata.managed_fields.unwrap().len(), 1);
}

#[tokio::test]
async fn custom_resources_without_a_schema_apply_lists_atomic_and_maps_granular() {
    let gvk = kube_core::GroupVersionKind::gvk("example.com", "v1", "Widget");
    let ar = kube_core::ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let s =
        kcache_apiserver::TestServer::start_with(test_builder().custom_resource(ar.clone(), true))
            .await
            .unwrap();
    let api: Api<kube_core::DynamicObject> = Api::namespaced_with(client(&s), "default", &ar);
    let first = kube_core::DynamicObject::new("w1", &ar)
        .data(json!({"spec": {"size": 3, "tags": ["a", "b"], "opts": {"x": 1}}}));
    api.patch("w1", &PatchParams::apply("one"), &Patch::Apply(&first))
        .await
        .unwrap();
    let second = kube_core::DynamicObject::new("w1", &ar)
        .data(json!({"spec": {"tags": ["c"], "opts": {"y": 2}}}));
    let err = api
        .patch("w1", &PatchParams::apply("two"), &Patch::Apply(&second))
        .await
        .unwrap_err();
    assert!(err.to_string().contains(".spec.tags"), "{err}");
    let out = api
        .patch(
            "w1",
            &PatchParams::apply("two").force(),
            &Patch::Apply(&second),
        )
        .await
        .unwrap();
    assert_eq!(
        out.data["spec"],
        json!({"size": 3, "tags": ["c"], "opts": {"x": 1, "y": 2}})
    );
}
