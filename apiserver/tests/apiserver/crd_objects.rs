//! Custom objects and the rest of the server: the garbage collector sees the resources of a
//! CRD created after the server started (as owners and as dependents), and server-side apply
//! merges custom objects by their CRD version's structural schema (a `map` list keeps each
//! manager's entries).

use kcache_testkit::within;
use serde_json::{Value, json};

use crate::crds::{create_established, widget_crd};
use crate::support::*;

on_every_backend!(
    the_garbage_collector_sees_custom_resources_of_a_crd_created_later,
    apply_merges_custom_objects_by_the_list_types_of_their_schema,
);

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const GADGETS: &str = "/apis/example.com/v1/namespaces/default/gadgets";

async fn the_garbage_collector_sees_custom_resources_of_a_crd_created_later(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    create_established(&c, &widget_crd()).await;
    let widget = |name: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name}, "spec": {"size": 1}})
    };
    let (code, owner) = post(&c, WIDGETS, &widget("owner")).await;
    assert_eq!(code, 201, "{owner}");
    let mut cm = configmap("dependent", "1");
    cm["metadata"]["ownerReferences"] = owner_ref(&owner, false);
    assert_eq!(post(&c, CONFIGMAPS, &cm).await.0, 201);
    let (code, cm_owner) = post(&c, CONFIGMAPS, &configmap("owner", "1")).await;
    assert_eq!(code, 201, "{cm_owner}");
    let mut dependent = widget("dependent");
    dependent["metadata"]["ownerReferences"] = owner_ref(&cm_owner, false);
    assert_eq!(post(&c, WIDGETS, &dependent).await.0, 201);

    let (code, _) = request(&c, "DELETE", &format!("{WIDGETS}/owner"), None).await;
    assert_eq!(code, 200);
    let (code, _) = request(&c, "DELETE", &format!("{CONFIGMAPS}/owner"), None).await;
    assert_eq!(code, 200);
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    assert_eq!(
        get(&c, &format!("{CONFIGMAPS}/dependent")).await.0,
        404,
        "the ConfigMap owned by a deleted Widget is collected"
    );
    assert_eq!(
        get(&c, &format!("{WIDGETS}/dependent")).await.0,
        404,
        "the Widget owned by a deleted ConfigMap is collected"
    );
}

/// A CRD of `gadgets.example.com` whose `spec.ports` is a `map` list keyed by `name`.
fn gadget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"], "properties": {
                                "name": {"type": "string"},
                                "port": {"type": "integer"}
                            }}
                        }
                    }}}
                }}
            }]
        }
    })
}

/// Server-side apply by `manager` of Gadget `g` with one entry in `spec.ports`.
async fn apply_port(c: &kube_client::Client, manager: &str, port: Value) -> (u16, Value) {
    let gadget = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g"}, "spec": {"ports": [port]}});
    let path = format!("{GADGETS}/g?fieldManager={manager}");
    patch(c, &path, "application/apply-patch+yaml", &gadget).await
}

async fn apply_merges_custom_objects_by_the_list_types_of_their_schema(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    create_established(&c, &gadget_crd()).await;
    let (code, first) = apply_port(&c, "web", json!({"name": "http", "port": 80})).await;
    assert_eq!(code, 201, "{first}");
    // Another manager's entry of a `map` list is no conflict: the list is merged by key (an
    // atomic list, as without a schema, would be 409 Conflict).
    let (code, second) = apply_port(&c, "metrics", json!({"name": "metrics", "port": 9090})).await;
    assert_eq!(code, 200, "{second}");
    assert_eq!(
        second["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}])
    );
    let owned = second["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "metrics")
        .map(|e| e["fieldsV1"].clone());
    assert_eq!(
        owned,
        Some(json!({"f:spec": {"f:ports": {
            "k:{\"name\":\"metrics\"}": {".": {}, "f:name": {}, "f:port": {}}
        }}}))
    );
}
