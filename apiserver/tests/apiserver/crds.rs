//! CustomResourceDefinitions: a created CRD is established and its resource served (discovery,
//! CRUD, list/watch), objects are validated, pruned and defaulted by the version's schema, and
//! a deleted CRD takes its objects with it.

use kcache_testkit::within;
use serde_json::{Value, json};

use crate::support::*;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// A CRD of namespaced `widgets.example.com` with a schema, status subresource and a column.
pub(crate) fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "required": ["size"], "properties": {
                            "size": {"type": "integer", "minimum": 1, "maximum": 10},
                            "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                        }},
                        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
                    }
                }}
            }]
        }
    })
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

/// The field paths of a Status's causes.
fn cause_fields(status: &Value) -> Vec<&str> {
    status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect()
}

/// Creates the CRD and waits (through a watch) until it is Established.
pub(crate) async fn create_established(c: &kube_client::Client, crd: &Value) -> Value {
    let name = crd["metadata"]["name"].as_str().unwrap().to_owned();
    let mut lines = watch(
        c,
        &format!("{CRDS}?watch=1&fieldSelector=metadata.name={name}"),
    )
    .await;
    let (code, created) = post(c, CRDS, crd).await;
    assert_eq!(code, 201, "{created}");
    loop {
        let e = next_change(&mut lines).await;
        let conditions = e["object"]["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if conditions
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
        {
            return e["object"].clone();
        }
    }
}

async fn a_created_crd_is_established_and_its_resource_served(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let crd = create_established(&c, &widget_crd()).await;
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");
    assert_eq!(crd["status"]["acceptedNames"]["listKind"], "WidgetList");
    assert!(
        crd["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "NamesAccepted" && c["status"] == "True")
    );
    assert_eq!(crd["metadata"]["generation"], 1);
    let (code, list) = get(&c, "/apis/example.com/v1").await;
    assert_eq!(code, 200, "{list}");
    let r = &list["resources"][0];
    assert_eq!(r["name"], "widgets");
    assert_eq!(r["kind"], "Widget");
    assert_eq!(r["shortNames"], json!(["wd"]));
    assert_eq!(r["categories"], json!(["all"]));
    let (code, created) = post(&c, WIDGETS, &widget("w1", json!({"size": 3}))).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["generation"], 1);
    let (code, got) = get(&c, &format!("{WIDGETS}/w1")).await;
    assert_eq!((code, &got["spec"]["size"]), (200, &json!(3)));
    let mut update = got.clone();
    update["spec"]["size"] = json!(4);
    let (code, updated) = put(&c, &format!("{WIDGETS}/w1"), &update).await;
    assert_eq!(
        (code, &updated["metadata"]["generation"]),
        (200, &json!(2)),
        "{updated}"
    );
    let (code, status) = patch(
        &c,
        &format!("{WIDGETS}/w1/status"),
        "application/merge-patch+json",
        &json!({"status": {"ready": true}}),
    )
    .await;
    assert_eq!(
        (code, &status["status"]["ready"]),
        (200, &json!(true)),
        "{status}"
    );
    let (code, list) = get(&c, WIDGETS).await;
    assert_eq!((code, names(&list)), (200, vec!["w1".to_owned()]));
    assert_eq!(list["kind"], "WidgetList");
    let (code, _) = request(&c, "DELETE", &format!("{WIDGETS}/w1"), None).await;
    assert_eq!(code, 200);
    let (code, _) = get(&c, &format!("{WIDGETS}/w1")).await;
    assert_eq!(code, 404);
}

async fn custom_objects_are_validated_against_the_schema(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    create_established(&c, &widget_crd()).await;
    let (code, status) = post(
        &c,
        WIDGETS,
        &widget("big", json!({"size": 11, "color": "green"})),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["kind"], "Widget");
    assert_eq!(status["details"]["group"], "example.com");
    let fields = cause_fields(&status);
    assert_eq!(fields, ["spec.color", "spec.size"], "{status}");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains(
            "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"
        ),
        "{message}"
    );
    assert!(
        message.contains("spec.color: Unsupported value: \"green\""),
        "{message}"
    );
    let (code, status) = post(&c, WIDGETS, &widget("nosize", json!({}))).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["details"]["causes"][0]["field"], "spec.size");
    let (code, status) = post(&c, WIDGETS, &widget("str", json!({"size": "three"}))).await;
    assert_eq!(code, 422, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("spec.size in body must be of type integer: \"string\""),
        "{status}"
    );
}

async fn unknown_fields_are_pruned_and_defaults_applied(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    create_established(&c, &widget_crd()).await;
    let body = widget(
        "w",
        json!({"size": 2, "unknown": 1, "extra": {"kept": {"deep": true}}}),
    );
    let mut body = body;
    body["topLevel"] = json!("dropped");
    let (code, created) = post(&c, WIDGETS, &body).await;
    assert_eq!(code, 201, "{created}");
    assert!(created.get("topLevel").is_none(), "{created}");
    assert!(created["spec"].get("unknown").is_none(), "{created}");
    assert_eq!(created["spec"]["extra"], json!({"kept": {"deep": true}}));
    assert_eq!(created["spec"]["color"], "red");
}

async fn a_status_given_on_create_is_dropped_with_a_status_subresource(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    create_established(&c, &widget_crd()).await;
    let mut body = widget("w", json!({"size": 2}));
    body["status"] = json!({"ready": true});
    let (code, created) = post(&c, WIDGETS, &body).await;
    assert_eq!(code, 201, "{created}");
    assert!(created.get("status").is_none(), "{created}");
}

async fn deleting_a_crd_deletes_its_objects_and_stops_serving_it(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    create_established(&c, &widget_crd()).await;
    let (code, _) = post(&c, WIDGETS, &widget("w1", json!({"size": 1}))).await;
    assert_eq!(code, 201);
    let (_, list) = get(&c, WIDGETS).await;
    let mut lines = watch(
        &c,
        &format!("{WIDGETS}?watch=1&resourceVersion={}", rv(&list)),
    )
    .await;
    let mut crds = watch(
        &c,
        &format!("{CRDS}?watch=1&fieldSelector=metadata.name=widgets.example.com"),
    )
    .await;
    let (code, deleted) = request(&c, "DELETE", &format!("{CRDS}/widgets.example.com"), None).await;
    assert_eq!(code, 200, "{deleted}");
    let e = next_change(&mut lines).await;
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("DELETED"), Some("w1"))
    );
    assert!(ends(&mut lines).await, "the watch of the resource ends");
    let mut held = false;
    loop {
        let e = next_change(&mut crds).await;
        if e["type"] == "DELETED" {
            break;
        }
        held |= e["object"]["metadata"]["deletionTimestamp"].is_string()
            && e["object"]["metadata"]["finalizers"]
                == json!(["customresourcecleanup.apiextensions.k8s.io"]);
    }
    assert!(held, "the CRD was held by the cleanup finalizer");
    let (code, _) = get(&c, WIDGETS).await;
    assert_eq!(code, 404);
    let (code, _) = get(&c, "/apis/example.com/v1").await;
    assert_eq!(code, 404);
}

async fn an_invalid_crd_is_refused_with_field_paths(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let mut crd = widget_crd();
    crd["metadata"]["name"] = json!("wrong.example.com");
    crd["spec"]["scope"] = json!("Galaxy");
    crd["spec"]["versions"][0]["storage"] = json!(false);
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"] =
        json!({"minimum": 1});
    let (code, status) = post(&c, CRDS, &crd).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["details"]["kind"], "CustomResourceDefinition");
    assert_eq!(status["details"]["group"], "apiextensions.k8s.io");
    let fields = cause_fields(&status);
    for expected in [
        "metadata.name",
        "spec.scope",
        "spec.versions",
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type",
    ] {
        assert!(fields.contains(&expected), "{expected} in {fields:?}");
    }
}

async fn crds_survive_a_restart(backend: Backend) {
    let Some(storage) = backend.storage().await else {
        return;
    };
    let first = kcache_apiserver::TestServer::start_with(
        test_builder().storage(std::sync::Arc::clone(&storage.inner)),
    )
    .await
    .unwrap();
    let c = client(&first);
    create_established(&c, &widget_crd()).await;
    let (code, _) = post(&c, WIDGETS, &widget("kept", json!({"size": 5}))).await;
    assert_eq!(code, 201);
    drop(first);
    let second = kcache_apiserver::TestServer::start_with(
        test_builder().storage(std::sync::Arc::clone(&storage.inner)),
    )
    .await
    .unwrap();
    let c = client(&second);
    let mut crds = watch(&c, &format!("{CRDS}?watch=1")).await;
    let e = next_change(&mut crds).await;
    assert_eq!(e["object"]["metadata"]["name"], "widgets.example.com");
    let (code, got) = get(&c, &format!("{WIDGETS}/kept")).await;
    assert_eq!((code, &got["spec"]["size"]), (200, &json!(5)), "{got}");
}

async fn updating_a_crd_takes_effect_live(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let crd = create_established(&c, &widget_crd()).await;
    let mut updated = crd.clone();
    let mut v2 = updated["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    updated["spec"]["versions"][0]["additionalPrinterColumns"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "Color", "type": "string", "jsonPath": ".spec.color"}));
    updated["spec"]["versions"].as_array_mut().unwrap().push(v2);
    let (code, body) = put(&c, &format!("{CRDS}/widgets.example.com"), &updated).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["metadata"]["generation"], 2);
    within(
        "the version's served state",
        s.wait_served("example.com", "v2", "widgets", true),
    )
    .await;
    let (code, list) = get(&c, "/apis/example.com/v2").await;
    assert_eq!(
        (code, &list["resources"][0]["name"]),
        (200, &json!("widgets"))
    );
    let (code, group) = get(&c, "/apis/example.com").await;
    assert_eq!(code, 200);
    assert_eq!(group["versions"].as_array().unwrap().len(), 2, "{group}");
    let (code, _) = post(&c, WIDGETS, &widget("w1", json!({"size": 1}))).await;
    assert_eq!(code, 201);
    let req = http::Request::get(WIDGETS)
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .unwrap();
    let table: Value = c.request(req).await.unwrap();
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Name", "Size", "Color"]);
    assert_eq!(table["rows"][0]["cells"], json!(["w1", 1, "red"]));
    let (_, current) = get(&c, &format!("{CRDS}/widgets.example.com")).await;
    let mut removed = current.clone();
    removed["spec"]["versions"][1]["served"] = json!(false);
    let (code, body) = put(&c, &format!("{CRDS}/widgets.example.com"), &removed).await;
    assert_eq!(code, 200, "{body}");
    within(
        "the version's served state",
        s.wait_served("example.com", "v2", "widgets", false),
    )
    .await;
    assert_eq!(get(&c, "/apis/example.com/v2").await.0, 404);
}

on_every_backend!(
    a_status_given_on_create_is_dropped_with_a_status_subresource,
    updating_a_crd_takes_effect_live,
    a_created_crd_is_established_and_its_resource_served,
    custom_objects_are_validated_against_the_schema,
    unknown_fields_are_pruned_and_defaults_applied,
    deleting_a_crd_deletes_its_objects_and_stops_serving_it,
    an_invalid_crd_is_refused_with_field_paths,
    crds_survive_a_restart,
);

#[tokio::test]
async fn the_custom_resource_builder_registers_an_established_crd() {
    let gvk = kube_core::GroupVersionKind::gvk("example.com", "v1", "Widget");
    let ar = kube_core::ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let s = kcache_apiserver::TestServer::start_with(test_builder().custom_resource(ar, true))
        .await
        .unwrap();
    let c = client(&s);
    let (code, crd) = get(&c, &format!("{CRDS}/widgets.example.com")).await;
    assert_eq!(code, 200, "{crd}");
    assert_eq!(crd["spec"]["names"]["kind"], "Widget");
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    let (code, created) = post(&c, WIDGETS, &widget("w1", json!({"anything": [1, 2]}))).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["anything"], json!([1, 2]));
}

#[tokio::test]
async fn a_seeded_crd_is_served_before_the_next_seeded_object() {
    let s = start().await;
    // Seeding stores objects as given, without the defaulting a request gets.
    let mut crd = widget_crd();
    crd["spec"]["names"]["listKind"] = json!("WidgetList");
    let crd = kcache_apiserver::Object::from_value(crd).unwrap();
    let w = kcache_apiserver::Object::from_value(widget("seeded", json!({"size": 2}))).unwrap();
    let mut w = w;
    kube_core::Resource::meta_mut(&mut w).namespace = Some("default".into());
    s.seed([crd, w]).await.unwrap();
    let (code, got) = get(&client(&s), &format!("{WIDGETS}/seeded")).await;
    assert_eq!((code, &got["spec"]["size"]), (200, &json!(2)), "{got}");
}

/// A server restarted over the same etcd serves the stored CRDs again and finishes a cascade
/// of custom objects that was in flight: a Foreground deletion of a Widget whose dependents (a
/// Widget and a ConfigMap) were left when the first server stopped without a collector.
#[cfg(feature = "etcd")]
#[tokio::test]
async fn a_server_restarted_on_etcd_serves_crds_and_finishes_a_custom_cascade() {
    use kcache_apiserver::TestServer;

    let Some(storage) = Backend::Etcd.storage().await else {
        return;
    };
    let builder = || test_builder().storage(std::sync::Arc::clone(&storage.inner));
    let cms = "/api/v1/namespaces/default/configmaps";
    {
        // No collector: the cascade stops where a crash would leave it.
        let s = TestServer::start_with(builder().garbage_collection(false))
            .await
            .unwrap();
        let c = client(&s);
        create_established(&c, &widget_crd()).await;
        let (code, parent) = post(&c, WIDGETS, &widget("parent", json!({"size": 1}))).await;
        assert_eq!(code, 201, "{parent}");
        let mut child = widget("child", json!({"size": 2}));
        child["metadata"]["ownerReferences"] = owner_ref(&parent, true);
        assert_eq!(post(&c, WIDGETS, &child).await.0, 201);
        let mut cm = configmap("owned", "1");
        cm["metadata"]["ownerReferences"] = owner_ref(&parent, true);
        assert_eq!(post(&c, cms, &cm).await.0, 201);
        let mut marked = parent.clone();
        marked["metadata"]["finalizers"] = json!(["foregroundDeletion"]);
        assert_eq!(put(&c, &format!("{WIDGETS}/parent"), &marked).await.0, 200);
        let (code, _) = request(&c, "DELETE", &format!("{WIDGETS}/parent"), None).await;
        assert_eq!(code, 200);
        within("the controllers to go idle", s.wait_controllers_idle())
            .await
            .unwrap();
        assert_eq!(
            get(&c, &format!("{WIDGETS}/child")).await.0,
            200,
            "nothing collected yet"
        );
        assert_eq!(
            get(&c, &format!("{WIDGETS}/parent")).await.0,
            200,
            "the owner waits for its dependents"
        );
        s.shutdown();
    }
    let s = TestServer::start_with(builder()).await.unwrap();
    let c = client(&s);
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    for path in [
        format!("{WIDGETS}/parent"),
        format!("{WIDGETS}/child"),
        format!("{cms}/owned"),
    ] {
        assert_eq!(get(&c, &path).await.0, 404, "{path}");
    }
    let (code, list) = get(&c, WIDGETS).await;
    assert_eq!(
        (code, list["kind"].as_str()),
        (200, Some("WidgetList")),
        "the CRD is served"
    );
    let (code, created) = post(&c, WIDGETS, &widget("after", json!({"size": 3}))).await;
    assert_eq!(code, 201, "{created}");
}
