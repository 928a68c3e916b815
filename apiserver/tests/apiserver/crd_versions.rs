//! A CustomResourceDefinition with several served versions and the `None` conversion: objects
//! are stored in the storage version and every read and write answers in the version it
//! addresses, each version's schema validating, pruning and defaulting its writes.

use kcache_testkit::within;
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

/// The `apiVersion` an object is stored with (read from storage, under the server).
async fn stored_api_version(s: &kcache_apiserver::TestServer, name: &str) -> String {
    let key = format!("example.com/gadgets/default/{name}");
    let stored = s.storage().get(key).await.unwrap().unwrap();
    stored.api_version().to_owned()
}

async fn served_gadgets(
    backend: Backend,
) -> Option<(Backed<kcache_apiserver::TestServer>, kube_client::Client)> {
    let s = backend.server().await?;
    let c = client(&s);
    create_established(&c, &gadget_crd()).await;
    within(
        "the version's served state",
        s.wait_served("example.com", "v1beta1", "gadgets", true),
    )
    .await;
    within(
        "the version's served state",
        s.wait_served("example.com", "v1", "gadgets", true),
    )
    .await;
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
    let stored = stored_api_version(&s, "g1").await;
    assert_eq!(stored, "example.com/v1");
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
    // A custom resource's store does not return deleted objects: the answer is a Status.
    let (code, deleted) = request(&c, "DELETE", &format!("{V1BETA1}/g1"), None).await;
    assert_eq!(
        (code, &deleted["kind"], &deleted["details"]["group"]),
        (200, &json!("Status"), &json!("example.com"))
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

async fn server_side_apply_through_either_version_keeps_one_manager(backend: Backend) {
    let Some((s, c)) = served_gadgets(backend).await else {
        return;
    };
    let apply = |version: &str, size: i64| {
        let path = if version == "v1" { V1 } else { V1BETA1 };
        let body = gadget(version, "g1", json!({"size": size}));
        let c = c.clone();
        async move {
            patch(
                &c,
                &format!("{path}/g1?fieldManager=ctl"),
                "application/apply-patch+yaml",
                &body,
            )
            .await
        }
    };
    let (code, created) = apply("v1beta1", 2).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "example.com/v1beta1");
    let (code, applied) = apply("v1", 4).await;
    assert_eq!(code, 200, "{applied}");
    assert_eq!(applied["apiVersion"], "example.com/v1");
    assert_eq!(applied["spec"]["size"], 4);
    let managers: Vec<&str> = applied["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["operation"] == "Apply")
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers, ["ctl"], "{applied}");
    let stored = stored_api_version(&s, "g1").await;
    assert_eq!(stored, "example.com/v1");
}

async fn a_new_storage_version_is_recorded_and_stores_new_writes(backend: Backend) {
    let Some((s, c)) = served_gadgets(backend).await else {
        return;
    };
    assert_eq!(
        post(&c, V1, &gadget("v1", "old", json!({"size": 1})))
            .await
            .0,
        201
    );
    let crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com";
    let (_, mut crd) = get(&c, crd_path).await;
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    crd["spec"]["versions"][0]["storage"] = json!(true);
    crd["spec"]["versions"][1]["storage"] = json!(false);
    let (code, updated) = put(&c, crd_path, &crd).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(
        updated["status"]["storedVersions"],
        json!(["v1", "v1beta1"])
    );
    within(
        "the new storage version",
        s.wait_storage_version("example.com", "v1", "gadgets", "v1beta1"),
    )
    .await;
    assert_eq!(
        post(&c, V1, &gadget("v1", "new", json!({"size": 2})))
            .await
            .0,
        201
    );
    let new = stored_api_version(&s, "new").await;
    assert_eq!(
        new, "example.com/v1beta1",
        "new writes are stored in v1beta1"
    );
    let old = stored_api_version(&s, "old").await;
    assert_eq!(old, "example.com/v1", "stored objects stay until rewritten");
    let (code, list) = get(&c, V1BETA1).await;
    assert_eq!(code, 200);
    assert!(
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["apiVersion"] == "example.com/v1beta1"),
        "{list}"
    );
    // The garbage collector writes through the resource as served now: orphaning a dependent
    // keeps it in the new storage version.
    let (_, parent) = get(&c, &format!("{V1}/new")).await;
    let mut child = gadget("v1", "child", json!({"size": 1}));
    child["metadata"]["ownerReferences"] = json!([{"apiVersion": parent["apiVersion"], "kind": "Gadget",
        "name": "new", "uid": parent["metadata"]["uid"]}]);
    assert_eq!(post(&c, V1, &child).await.0, 201);
    let orphan =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"});
    let orphan = Some(("application/json", orphan.to_string().into_bytes()));
    let (code, _) = request(&c, "DELETE", &format!("{V1}/new"), orphan).await;
    assert_eq!(code, 200);
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    let (_, child) = get(&c, &format!("{V1}/child")).await;
    assert_eq!(child["metadata"].get("ownerReferences"), None, "{child}");
    assert_eq!(stored_api_version(&s, "child").await, "example.com/v1beta1");
}

on_every_backend!(
    an_object_written_through_a_served_version_is_stored_in_the_storage_version,
    every_read_answers_in_the_version_it_addresses,
    each_version_validates_and_defaults_with_its_own_schema,
    server_side_apply_through_either_version_keeps_one_manager,
    a_new_storage_version_is_recorded_and_stores_new_writes,
);
