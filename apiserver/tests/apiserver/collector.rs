//! The garbage collector's graph as it follows the server: dependents that arrive after their
//! owner is gone, custom resources of a CRD served after the controllers started (as
//! dependents of an owner waiting in Foreground deletion), and the graph after every watch of
//! the caches was ended. Each test waits with `wait_controllers_idle`, never a sleep, and runs
//! on memory and on etcd.

use kcache_testkit::within;
use serde_json::{Value, json};

use crate::crds::{create_established, widget_crd};
use crate::support::{Backend, get, on_every_backend, owner_ref, post, put, request};

on_every_backend!(
    a_dependent_created_after_its_owner_was_deleted_is_collected,
    a_custom_resource_of_a_crd_served_later_is_collected_when_its_owner_is_gone,
    an_owner_deleted_in_foreground_waits_for_a_custom_resource_dependent_added_later,
    the_collector_still_follows_the_caches_after_every_watch_was_ended,
);

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// Creates a ConfigMap with this metadata; returns it.
async fn configmap(c: &kube_client::Client, metadata: Value) -> Value {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata});
    let (code, created) = post(c, CONFIGMAPS, &body).await;
    assert_eq!(code, 201, "{created}");
    created
}

/// Creates a Widget with this metadata; returns it.
async fn widget(c: &kube_client::Client, metadata: Value) -> Value {
    let body = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": metadata,
        "spec": {"size": 1}});
    let (code, created) = post(c, WIDGETS, &body).await;
    assert_eq!(code, 201, "{created}");
    created
}

async fn delete_with(c: &kube_client::Client, path: &str, policy: &str) -> u16 {
    let body = json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": policy});
    let options = Some(("application/json", body.to_string().into_bytes()));
    request(c, "DELETE", path, options).await.0
}

/// Removes every finalizer of the object at `path`.
async fn release(c: &kube_client::Client, path: &str) {
    let (_, mut held) = get(c, path).await;
    held["metadata"]["finalizers"] = json!([]);
    let (code, body) = put(c, path, &held).await;
    assert_eq!(code, 200, "{body}");
}

async fn a_dependent_created_after_its_owner_was_deleted_is_collected(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    let owner = configmap(&c, json!({"name": "owner"})).await;
    assert_eq!(
        delete_with(&c, &format!("{CONFIGMAPS}/owner"), "Background").await,
        200
    );
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    configmap(
        &c,
        json!({"name": "late", "ownerReferences": owner_ref(&owner, true)}),
    )
    .await;
    let kept = configmap(&c, json!({"name": "kept"})).await;
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    assert_eq!(get(&c, &format!("{CONFIGMAPS}/late")).await.0, 404);
    let (code, still) = get(&c, &format!("{CONFIGMAPS}/kept")).await;
    assert_eq!(code, 200, "an object without owners stays");
    assert_eq!(still["metadata"]["uid"], kept["metadata"]["uid"]);
}

async fn a_custom_resource_of_a_crd_served_later_is_collected_when_its_owner_is_gone(
    backend: Backend,
) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    let owner = configmap(&c, json!({"name": "owner"})).await;
    create_established(&c, &widget_crd()).await;
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    widget(
        &c,
        json!({"name": "w", "ownerReferences": owner_ref(&owner, true)}),
    )
    .await;
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    assert_eq!(
        get(&c, &format!("{WIDGETS}/w")).await.0,
        200,
        "a live owner keeps it"
    );
    assert_eq!(
        delete_with(&c, &format!("{CONFIGMAPS}/owner"), "Background").await,
        200
    );
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    assert_eq!(get(&c, &format!("{WIDGETS}/w")).await.0, 404);
}

async fn an_owner_deleted_in_foreground_waits_for_a_custom_resource_dependent_added_later(
    backend: Backend,
) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    let owner_path = format!("{CONFIGMAPS}/owner");
    let owner = configmap(&c, json!({"name": "owner"})).await;
    // A dependent held by a finalizer keeps the owner waiting.
    let held = json!({"name": "held", "finalizers": ["example.com/hold"],
        "ownerReferences": owner_ref(&owner, true)});
    configmap(&c, held).await;
    assert_eq!(delete_with(&c, &owner_path, "Foreground").await, 200);
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    create_established(&c, &widget_crd()).await;
    let late = json!({"name": "late", "finalizers": ["example.com/hold"],
        "ownerReferences": owner_ref(&owner, true)});
    widget(&c, late).await;
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    let (_, w) = get(&c, &format!("{WIDGETS}/late")).await;
    assert!(
        w["metadata"]["deletionTimestamp"].is_string(),
        "the dependent of a waiting owner is deleted: {w}"
    );
    release(&c, &format!("{CONFIGMAPS}/held")).await;
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    let (code, waiting) = get(&c, &owner_path).await;
    assert_eq!(code, 200, "the owner waits for the custom resource");
    assert_eq!(
        waiting["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    release(&c, &format!("{WIDGETS}/late")).await;
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    assert_eq!(get(&c, &format!("{WIDGETS}/late")).await.0, 404);
    assert_eq!(get(&c, &owner_path).await.0, 404);
}

async fn the_collector_still_follows_the_caches_after_every_watch_was_ended(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    let owner = configmap(&c, json!({"name": "owner"})).await;
    configmap(
        &c,
        json!({"name": "dependent", "ownerReferences": owner_ref(&owner, true)}),
    )
    .await;
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    s.end_all_watches();
    assert_eq!(
        delete_with(&c, &format!("{CONFIGMAPS}/owner"), "Background").await,
        200
    );
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    assert_eq!(get(&c, &format!("{CONFIGMAPS}/dependent")).await.0, 404);
}
