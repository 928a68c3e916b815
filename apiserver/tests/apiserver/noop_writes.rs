//! Writes that change nothing (a PUT of the object as stored, a merge patch setting what is
//! already set) keep the resource version and send no watch event, on every backend.

use serde_json::json;

use crate::support::*;

async fn noop_put_and_patch_keep_resource_version_and_emit_no_event(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let path = "/api/v1/namespaces/default/configmaps/settings";
    let (code, created) = post(
        &c,
        "/api/v1/namespaces/default/configmaps",
        &configmap("settings", "1"),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let rv0 = rv(&created);
    let mut lines = watch(
        &c,
        &format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv0}"),
    )
    .await;
    let (code, put) = put(&c, path, &created).await;
    assert_eq!(code, 200, "{put}");
    assert_eq!(rv(&put), rv0, "an unchanged PUT keeps the resource version");
    let (code, patched) = patch(
        &c,
        path,
        "application/merge-patch+json",
        &json!({"data": {"v": "1"}}),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(
        rv(&patched),
        rv0,
        "an unchanged patch keeps the resource version"
    );
    let (code, changed) = patch(
        &c,
        path,
        "application/merge-patch+json",
        &json!({"data": {"v": "2"}}),
    )
    .await;
    assert_eq!(code, 200, "{changed}");
    assert!(rv(&changed) > rv0);
    let first = next_change(&mut lines).await;
    assert_eq!(first["type"], "MODIFIED");
    assert_eq!(
        rv(&first["object"]),
        rv(&changed),
        "the first event is the real change"
    );
}

on_every_backend!(noop_put_and_patch_keep_resource_version_and_emit_no_event);
