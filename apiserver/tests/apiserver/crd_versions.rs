//! A CustomResourceDefinition with several served versions and the `None` conversion: objects
//! are stored in the storage version and every read and write answers in the version it
//! addresses, each version's schema validating, pruning and defaulting its writes.

use serde_json::{Value, json};

use crate::crds::create_established;
use crate::support::*;

const V1BETA1: &str = "/apis/example.com/v1beta1/namespaces/default/gadgets";
const V1: &str = "/apis/example.com/v1/namespaces/default/gadgets";

/// `gadgets.example.com`: v1beta1 served (size defaults to 1, at most 5), v1 served and stored
/// (size at most 10, color defaults to red), a Size column in both.
pub(crate) fn gadget_crd() -> Value {
    let version = |name: &str, storage: bool, spec: Value| {
        json!({
            "name": name, "served": true, "storage": storage,
            "subresources": {"status": {}},
            "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
        })
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                version("v1beta1", false, json!({"type": "object", "properties": {
                    "size": {"type": "integer", "maximum": 5, "default": 1}}})),
                version("v1", true, json!({"type": "object", "properties": {
                    "size": {"type": "integer", "maximum": 10},
                    "color": {"type": "string", "default": "red"}}})),
            ],
        },
    })
}

fn gadget(version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Gadget", "metadata": {"name": name}, "spec": spec})
}

async fn served_gadgets(
    backend: Backend,
) -> Option<(Backed<kcache_apiserver::TestServer>, kube_client::Client)> {
    let s = backend.server().await?;
    let c = client(&s);
    create_established(&c, &gadget_crd()).await;
    s.wait_served("example.com", "v1beta1", "gadgets", true)
        .await;
    s.wait_served("example.com", "v1", "gadgets", true).await;
    Some((s, c))
}

async fn an_object_written_through_a_served_version_is_stored_in_the_storage_version(
    backend: Backend,
) {
    let Some((s, c)) = served_gadgets(backend).await else {
        return;
    };
    let (code, created) = post(&c, V1BETA1, &gadget("v1beta1", "g1", json!({}))).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "example.com/v1beta1");
    assert_eq!(
        created["spec"],
        json!({"size": 1}),
        "v1beta1's default only"
    );
    let stored = s
        .storage()
        .get("example.com/gadgets/default/g1".to_owned())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.api_version(), "example.com/v1");
    let mut update = created.clone();
    update["spec"]["size"] = json!(2);
    let (code, updated) = put(&c, &format!("{V1BETA1}/g1"), &update).await;
    assert_eq!(
        (code, &updated["apiVersion"]),
        (200, &json!("example.com/v1beta1")),
        "{updated}"
    );
    let (code, patched) = patch(
        &c,
        &format!("{V1}/g1"),
        "application/merge-patch+json",
        &json!({"spec": {"size": 3}}),
    )
    .await;
    assert_eq!(
        (code, &patched["apiVersion"]),
        (200, &json!("example.com/v1")),
        "{patched}"
    );
    let (code, deleted) = request(&c, "DELETE", &format!("{V1BETA1}/g1"), None).await;
    assert_eq!(
        (code, &deleted["apiVersion"]),
        (200, &json!("example.com/v1beta1"))
    );
}

async fn every_read_answers_in_the_version_it_addresses(backend: Backend) {
    let Some((_s, c)) = served_gadgets(backend).await else {
        return;
    };
    let mut watch_v1 = watch(&c, &format!("{V1}?watch=1")).await;
    let mut watch_v1beta1 = watch(&c, &format!("{V1BETA1}?watch=1")).await;
    let (code, _) = post(&c, V1BETA1, &gadget("v1beta1", "g1", json!({"size": 2}))).await;
    assert_eq!(code, 201);
    for (path, version) in [(V1, "example.com/v1"), (V1BETA1, "example.com/v1beta1")] {
        let (code, got) = get(&c, &format!("{path}/g1")).await;
        assert_eq!((code, &got["apiVersion"]), (200, &json!(version)), "{got}");
        assert_eq!(got["spec"]["size"], 2);
        let (code, list) = get(&c, path).await;
        assert_eq!(code, 200);
        assert_eq!(list["apiVersion"], version);
        assert_eq!(list["items"][0]["apiVersion"], version, "{list}");
        let (code, list) = get(&c, &format!("{path}?limit=5")).await;
        assert_eq!(
            (code, &list["items"][0]["apiVersion"]),
            (200, &json!(version))
        );
        let mut initial = watch(&c, &format!("{path}?watch=1&resourceVersion=0")).await;
        assert_eq!(
            next_event(&mut initial).await["object"]["apiVersion"],
            version
        );
        let req = http::Request::get(format!("{path}?includeObject=Object"))
            .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
            .body(Vec::new())
            .unwrap();
        let table: Value = c.request(req).await.unwrap();
        assert_eq!(table["rows"][0]["object"]["apiVersion"], version, "{table}");
        assert_eq!(table["rows"][0]["cells"], json!(["g1", 2]));
    }
    let e = next_change(&mut watch_v1).await;
    assert_eq!(
        (e["type"].as_str(), &e["object"]["apiVersion"]),
        (Some("ADDED"), &json!("example.com/v1"))
    );
    let e = next_change(&mut watch_v1beta1).await;
    assert_eq!(
        (e["type"].as_str(), &e["object"]["apiVersion"]),
        (Some("ADDED"), &json!("example.com/v1beta1"))
    );
}

async fn each_version_validates_and_defaults_with_its_own_schema(backend: Backend) {
    let Some((_s, c)) = served_gadgets(backend).await else {
        return;
    };
    let (code, refused) = post(&c, V1BETA1, &gadget("v1beta1", "big", json!({"size": 7}))).await;
    assert_eq!(code, 422, "{refused}");
    assert_eq!(refused["details"]["causes"][0]["field"], "spec.size");
    let (code, created) = post(&c, V1, &gadget("v1", "big", json!({"size": 7}))).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"], json!({"size": 7, "color": "red"}));
}

on_every_backend!(
    an_object_written_through_a_served_version_is_stored_in_the_storage_version,
    every_read_answers_in_the_version_it_addresses,
    each_version_validates_and_defaults_with_its_own_schema,
);
