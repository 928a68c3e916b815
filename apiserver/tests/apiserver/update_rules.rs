//! Update rules every kind's strategy sets (`AllowUnconditionalUpdate`, `AllowCreateOnUpdate`
//! of `pkg/registry/**/strategy.go`, checked by store.go's Update), and strategic merge patches
//! of custom resources refused with 415 as the apiextensions-apiserver refuses them.

use serde_json::{Value, json};

use crate::crds::{create_established, widget_crd};
use crate::kubectl::{kubectl, kubectl_failure, session};
use crate::support::{client, get, invalid, patch, post, put, start};

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn lease(name: &str, holder: &str) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
           "metadata": {"name": name}, "spec": {"holderIdentity": holder}})
}

#[tokio::test]
async fn an_update_of_a_lease_or_custom_resource_without_resource_version_is_invalid() {
    let s = start().await;
    let c = client(&s);
    create_established(&c, &widget_crd()).await;
    let (code, _) = post(&c, LEASES, &lease("l", "a")).await;
    assert_eq!(code, 201);
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": "w"}, "spec": {"size": 1}});
    let (code, created) = post(&c, WIDGETS, &widget).await;
    assert_eq!(code, 201, "{created}");
    for (path, body, what) in [
        (
            format!("{LEASES}/l"),
            lease("l", "b"),
            "leases.coordination.k8s.io",
        ),
        (
            format!("{WIDGETS}/w"),
            widget.clone(),
            "widgets.example.com",
        ),
    ] {
        let (code, status) = put(&c, &path, &body).await;
        assert_eq!(code, 422, "{status}");
        assert_eq!(
            invalid(&status).0,
            format!(
                "{what} \"{}\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update",
                body["metadata"]["name"].as_str().unwrap()
            )
        );
        let (plural, group) = what.split_once('.').unwrap();
        assert_eq!(status["details"]["kind"], plural);
        assert_eq!(status["details"]["group"], group);
    }
    // With the resource version the update goes through; a ConfigMap needs none.
    let mut named = widget.clone();
    named["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    named["spec"]["size"] = json!(2);
    let (code, updated) = put(&c, &format!("{WIDGETS}/w"), &named).await;
    assert_eq!((code, &updated["spec"]["size"]), (200, &json!(2)));
    post(&c, CMS, &json!({"metadata": {"name": "cm"}})).await;
    let (code, _) = put(
        &c,
        &format!("{CMS}/cm"),
        &json!({"metadata": {"name": "cm"}}),
    )
    .await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn a_put_to_a_missing_name_creates_only_kinds_that_allow_create_on_update() {
    let s = start().await;
    let c = client(&s);
    // Leases create on update, even without a resource version (the check needs an object).
    let (code, created) = put(&c, &format!("{LEASES}/new"), &lease("new", "a")).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["holderIdentity"], "a");
    assert!(created["metadata"]["uid"].is_string());
    assert_eq!(get(&c, &format!("{LEASES}/new")).await.0, 200);
    // A Service created by PUT gets its cluster IP, as one created by POST.
    let svc = json!({"metadata": {"name": "web"},
                     "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}});
    let (code, created) = put(&c, "/api/v1/namespaces/default/services/web", &svc).await;
    assert_eq!(code, 201, "{created}");
    assert!(
        created["spec"]["clusterIP"]
            .as_str()
            .is_some_and(|ip| !ip.is_empty())
    );
    let endpoints = json!({"metadata": {"name": "web"}});
    let (code, _) = put(&c, "/api/v1/namespaces/default/endpoints/web", &endpoints).await;
    assert_eq!(code, 201);
    let role = json!({"metadata": {"name": "r"}, "rules": []});
    let path = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/r";
    assert_eq!(put(&c, path, &role).await.0, 201);
    // Others answer 404, Events (POST only since 1.19) and custom resources included.
    let event = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}});
    let (code, _) = put(&c, "/api/v1/namespaces/default/events/e", &event).await;
    assert_eq!(code, 404);
    let (code, status) = put(
        &c,
        &format!("{CMS}/none"),
        &json!({"metadata": {"name": "none"}}),
    )
    .await;
    assert_eq!(code, 404, "{status}");
    assert_eq!(status["message"], "configmaps \"none\" not found");
    create_established(&c, &widget_crd()).await;
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    let (code, status) = put(&c, &format!("{WIDGETS}/w"), &widget).await;
    assert_eq!(code, 404, "{status}");
    assert_eq!(status["message"], "widgets.example.com \"w\" not found");
}

const SMP_REFUSED: &str = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

#[tokio::test]
async fn a_strategic_merge_patch_of_a_custom_resource_is_unsupported_media_type() {
    let s = start().await;
    let c = client(&s);
    create_established(&c, &widget_crd()).await;
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": "w"}, "spec": {"size": 1}});
    post(&c, WIDGETS, &widget).await;
    let change = json!({"spec": {"size": 2}});
    let path = format!("{WIDGETS}/w");
    let (code, status) = patch(&c, &path, "application/strategic-merge-patch+json", &change).await;
    assert_eq!(code, 415, "{status}");
    assert_eq!(status["reason"], "UnsupportedMediaType");
    assert_eq!(status["message"], SMP_REFUSED);
    let (code, patched) = patch(&c, &path, "application/merge-patch+json", &change).await;
    assert_eq!((code, &patched["spec"]["size"]), (200, &json!(2)));
    // Built-in kinds take strategic merge patches.
    post(&c, CMS, &json!({"metadata": {"name": "cm"}})).await;
    let (code, _) = patch(
        &c,
        &format!("{CMS}/cm"),
        "application/strategic-merge-patch+json",
        &json!({"data": {"a": "1"}}),
    )
    .await;
    assert_eq!(code, 200);
}

/// kubectl patch (strategic by default) of a custom resource fails as against a cluster,
/// naming the patch type; `--type=merge` goes through.
#[test]
fn kubectl_patch_of_a_custom_resource_needs_a_merge_patch() {
    let Some((kc, server, dir)) = session("smp-custom") else {
        return;
    };
    let crd = dir.join("crd.json");
    std::fs::write(&crd, widget_crd().to_string()).unwrap();
    kubectl(&kc, &server, &["apply", "-f", crd.to_str().unwrap()]);
    kubectl(
        &kc,
        &server,
        &[
            "wait",
            "--for=condition=Established",
            "--timeout=30s",
            "crd/widgets.example.com",
        ],
    );
    let widget = dir.join("w.json");
    let body = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                      "metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 1}});
    std::fs::write(&widget, body.to_string()).unwrap();
    kubectl(&kc, &server, &["create", "-f", widget.to_str().unwrap()]);
    let err = kubectl_failure(
        &kc,
        &server,
        &["patch", "widget", "w", "-p", r#"{"spec":{"size":2}}"#],
    );
    assert!(
        err.contains(
            "application/strategic-merge-patch+json is not supported by example.com/v1, Kind=Widget"
        ) && err.contains(SMP_REFUSED),
        "{err}"
    );
    let merge = [
        "patch",
        "widget",
        "w",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":2}}"#,
    ];
    kubectl(&kc, &server, &merge);
    let get_size = ["get", "widget", "w", "-o", "jsonpath={.spec.size}"];
    let size = kubectl(&kc, &server, &get_size);
    assert_eq!(size, "2");
}
