//! `fieldValidation` (Strict, Warn, Ignore) on creates, updates and patches of built-in kinds
//! and custom objects: unknown fields refused with the strict decoder's error, answered as
//! `Warning` headers (the default), or dropped silently; kubectl validates strictly. A
//! server-side apply refuses fields its schema does not declare whatever the directive.

use serde_json::{Value, json};

use crate::crds::{create_established, widget_crd};
use crate::kubectl::session;
use crate::kubectl_directives::deployment_yaml;
use crate::support::*;

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// A deployment with an unknown field in its spec and one in its container.
fn deployment_with_unknown_fields(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {
            "replicas": 1, "bogus": true,
            "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}},
                "spec": {"containers": [{"name": "c", "image": "nginx", "colour": "red"}]}}
        }
    })
}

async fn send(
    c: &kube_client::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: &Value,
) -> (u16, Value, Vec<String>) {
    let body = Some((content_type, body.to_string().into_bytes()));
    request_warned(c, method, path, body).await
}

#[tokio::test]
async fn strict_creates_and_updates_refuse_unknown_fields_of_built_in_kinds() {
    let s = start().await;
    let c = client(&s);
    let body = deployment_with_unknown_fields("d1");
    let path = format!("{DEPLOYMENTS}?fieldValidation=Strict");
    let (code, status, _) = send(&c, "POST", &path, "application/json", &body).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.bogus", unknown field "spec.template.spec.containers[0].colour""#
    );
    let (code, created) = post(&c, DEPLOYMENTS, &{
        let mut d = deployment_with_unknown_fields("d1");
        d["spec"].as_object_mut().unwrap().remove("bogus");
        d["spec"]["template"]["spec"]["containers"][0]
            .as_object_mut()
            .unwrap()
            .remove("colour");
        d
    })
    .await;
    assert_eq!(code, 201, "{created}");
    let mut update = created.clone();
    update["spec"]["bogus"] = json!(1);
    let path = format!("{DEPLOYMENTS}/d1?fieldValidation=Strict");
    let (code, status, _) = send(&c, "PUT", &path, "application/json", &update).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.bogus""#
    );
}

#[tokio::test]
async fn unknown_fields_are_warned_about_by_default_and_dropped_silently_when_ignored() {
    let s = start().await;
    let c = client(&s);
    let body = deployment_with_unknown_fields("warned");
    let (code, created, warnings) = send(&c, "POST", DEPLOYMENTS, "application/json", &body).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        warnings,
        [
            r#"299 - "unknown field \"spec.bogus\"""#,
            r#"299 - "unknown field \"spec.template.spec.containers[0].colour\"""#,
        ]
    );
    assert!(created["spec"].get("bogus").is_none(), "{created}");
    let container = &created["spec"]["template"]["spec"]["containers"][0];
    assert!(container.get("colour").is_none(), "{created}");
    let body = deployment_with_unknown_fields("ignored");
    let path = format!("{DEPLOYMENTS}?fieldValidation=Ignore");
    let (code, created, warnings) = send(&c, "POST", &path, "application/json", &body).await;
    assert_eq!((code, warnings.len()), (201, 0), "{created}");
    assert!(created["spec"].get("bogus").is_none(), "{created}");
    let path = format!("{DEPLOYMENTS}?fieldValidation=Loose");
    let (code, status, _) = send(&c, "POST", &path, "application/json", &body).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        r#"CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn""#
    );
}

#[tokio::test]
async fn strict_patches_refuse_unknown_fields_as_an_invalid_patch() {
    let s = start().await;
    let c = client(&s);
    let (code, _) = post(
        &c,
        "/api/v1/namespaces/default/configmaps",
        &configmap("cm", "1"),
    )
    .await;
    assert_eq!(code, 201);
    let path = "/api/v1/namespaces/default/configmaps/cm?fieldValidation=Strict";
    let strategic = json!({"extra": {"a": [1, "x"]}});
    let ct = "application/strategic-merge-patch+json";
    let (code, status, _) = send(&c, "PATCH", path, ct, &strategic).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        r#" "" is invalid: patch: Invalid value: "map[extra:map[a:[1 x]]]": strict decoding error: unknown field "extra""#
    );
    // No kind, group or name: StatusDetails leaves the empty ones out.
    assert_eq!(
        status["details"],
        json!({"causes": [{"reason": "FieldValueInvalid", "field": "patch",
            "message": status["details"]["causes"][0]["message"]}]})
    );
    let merge = json!({"data": {"k": "2"}, "extra": 1});
    let ct = "application/merge-patch+json";
    let (code, status, _) = send(&c, "PATCH", path, ct, &merge).await;
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with(r#" "" is invalid: patch: Invalid value: "{\"apiVersion\":\"v1\","#)
            && message.ends_with(r#"": strict decoding error: unknown field "extra""#),
        "{message}"
    );
    let path = "/api/v1/namespaces/default/configmaps/cm";
    let (code, patched, warnings) = send(&c, "PATCH", path, ct, &merge).await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(warnings, [r#"299 - "unknown field \"extra\"""#]);
    assert_eq!(patched["data"]["k"], "2");
    assert!(patched.get("extra").is_none(), "{patched}");
}

#[tokio::test]
async fn duplicate_fields_of_json_bodies_and_patches_are_strict_decoding_errors() {
    let s = start().await;
    let c = client(&s);
    let cms = "/api/v1/namespaces/default/configmaps";
    let body = |name: &str| {
        let text = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"a":"1"}},"data":{{"b":"2"}}}}"#
        );
        Some(("application/json", text.into_bytes()))
    };
    let strict = format!("{cms}?fieldValidation=Strict");
    let (code, status, _) = request_warned(&c, "POST", &strict, body("dup")).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data""#
    );
    let (code, created, warnings) = request_warned(&c, "POST", cms, body("dup")).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(warnings, [r#"299 - "duplicate field \"data\"""#]);
    assert_eq!(created["data"], json!({"b": "2"}));
    let patch = Some((
        "application/merge-patch+json",
        br#"{"data":{"c":"3","c":"4"}}"#.to_vec(),
    ));
    let path = format!("{cms}/dup?fieldValidation=Strict");
    let (code, status, _) = request_warned(&c, "PATCH", &path, patch).await;
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.ends_with(r#"": strict decoding error: duplicate field "data.c""#),
        "{message}"
    );
}

async fn unknown_fields_of_custom_objects_are_their_pruned_fields(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    create_established(&c, &widget_crd()).await;
    let widget = json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
        "spec": {"size": 2, "gone": 1, "extra": {"kept": true}}, "top": 1
    });
    let path = format!("{WIDGETS}?fieldValidation=Strict");
    let (code, status, _) = send(&c, "POST", &path, "application/json", &widget).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        r#"Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.gone", unknown field "top""#
    );
    let (code, created, warnings) = send(&c, "POST", WIDGETS, "application/json", &widget).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        warnings,
        [
            r#"299 - "unknown field \"spec.gone\"""#,
            r#"299 - "unknown field \"top\"""#
        ]
    );
    assert_eq!(
        created["spec"],
        json!({"size": 2, "color": "red", "extra": {"kept": true}})
    );
}

#[tokio::test]
async fn server_side_apply_of_a_custom_object_refuses_fields_its_schema_does_not_declare() {
    let s = start().await;
    let c = client(&s);
    create_established(&c, &widget_crd()).await;
    let widget = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"},
        "spec": {"size": 2, "gone": 1, "extra": {"kept": {"deep": true}}}
    });
    let path = format!("{WIDGETS}/w1?fieldManager=test");
    let ct = "application/apply-patch+yaml";
    let (code, status, _) = send(&c, "PATCH", &path, ct, &widget).await;
    assert_eq!(code, 500, "{status}");
    assert_eq!(
        status["message"],
        "failed to create typed patch object (default/w1; example.com/v1, Kind=Widget): .spec.gone: field not declared in schema"
    );
    let mut declared = widget;
    declared["spec"].as_object_mut().unwrap().remove("gone");
    let (code, applied, _) = send(&c, "PATCH", &path, ct, &declared).await;
    assert_eq!(code, 201, "{applied}");
    assert_eq!(applied["spec"]["extra"], json!({"kept": {"deep": true}}));
}

on_every_backend!(unknown_fields_of_custom_objects_are_their_pruned_fields);

#[tokio::test]
async fn server_side_apply_refuses_fields_not_declared_in_the_schema_whatever_the_directive() {
    let s = start().await;
    let c = client(&s);
    let mut body = deployment_with_unknown_fields("applied");
    body["metadata"]["namespace"] = json!("default");
    let path = format!("{DEPLOYMENTS}/applied?fieldManager=test&fieldValidation=Ignore");
    let ct = "application/apply-patch+yaml";
    let (code, status, _) = send(&c, "PATCH", &path, ct, &body).await;
    assert_eq!(code, 500, "{status}");
    assert_eq!(status["reason"], json!(null), "{status}");
    assert_eq!(
        status["message"],
        "failed to create typed patch object (default/applied; apps/v1, Kind=Deployment): errors:\n  .spec.bogus: field not declared in schema\n  .spec.template.spec.containers[name=\"c\"].colour: field not declared in schema"
    );
}

#[test]
fn kubectl_create_and_apply_refuse_a_manifest_with_an_unknown_field() {
    let Some((kc, server, dir)) = session("field-validation") else {
        return;
    };
    let file = dir.join("deployment.yaml");
    let container = "{name: c, image: nginx, imagePullPolicyy: Always}";
    std::fs::write(&file, deployment_yaml("strict", "", &[container])).unwrap();
    let path = file.to_str().unwrap();
    let expected = r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.template.spec.containers[0].imagePullPolicyy""#;
    for verb in ["create", "apply"] {
        let out = std::process::Command::new(&kc)
            .env("KUBECONFIG", &server.kubeconfig)
            .args([verb, "-f", path])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "kubectl {verb}: {stderr}");
        assert!(
            stderr.contains("Error from server (BadRequest): error when creating")
                && stderr.contains(expected),
            "kubectl {verb}: {stderr}"
        );
    }
    let out = std::process::Command::new(&kc)
        .env("KUBECONFIG", &server.kubeconfig)
        .args(["apply", "--server-side", "-f", path])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"Error from server: failed to create typed patch object (default/strict; apps/v1, Kind=Deployment): .spec.template.spec.containers[name="c"].imagePullPolicyy: field not declared in schema"#),
        "{stderr}"
    );
    let out = std::process::Command::new(&kc)
        .env("KUBECONFIG", &server.kubeconfig)
        .args(["create", "--validate=warn", "-f", path])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            r#"Warning: unknown field "spec.template.spec.containers[0].imagePullPolicyy""#
        ),
        "{stderr}"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
