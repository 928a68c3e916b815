//! Services' node ports and ExternalName services over HTTP, on memory and etcd: node ports
//! allocated from the range (30000-32767) for NodePort and LoadBalancer services, a requested
//! one checked to be in the range and free (portallocator's errors), released when the
//! service is deleted or changes to a type without them; ExternalName services need an
//! `externalName` and lose their cluster IP (`pkg/registry/core/service/strategy.go`,
//! `storage/alloc.go`; TestValidateServiceCreate's "invalid externalName" cases).

use serde_json::{Value, json};

use crate::support::*;

const SERVICES: &str = "/api/v1/namespaces/default/services";

fn service(name: &str, ty: &str, node_port: Option<i64>) -> Value {
    let mut port = json!({"port": 80});
    if let Some(n) = node_port {
        port["nodePort"] = json!(n);
    }
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
           "spec": {"type": ty, "selector": {"app": "web"}, "ports": [port]}})
}

fn node_port(svc: &Value) -> i64 {
    svc["spec"]["ports"][0]["nodePort"].as_i64().unwrap_or(0)
}

async fn node_ports_are_allocated_in_range(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let (code, a) = post(&c, SERVICES, &service("a", "NodePort", None)).await;
    assert_eq!(code, 201, "{a}");
    let (code, b) = post(&c, SERVICES, &service("b", "LoadBalancer", None)).await;
    assert_eq!(code, 201, "{b}");
    let (pa, pb) = (node_port(&a), node_port(&b));
    assert!((30000..=32767).contains(&pa), "{a}");
    assert!((30000..=32767).contains(&pb), "{b}");
    assert_ne!(pa, pb);
    let (code, plain) = post(&c, SERVICES, &service("plain", "ClusterIP", None)).await;
    assert_eq!(code, 201, "{plain}");
    assert!(
        plain["spec"]["ports"][0].get("nodePort").is_none(),
        "{plain}"
    );
}

async fn provided_port_not_in_range_or_already_allocated_is_422(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let (code, body) = post(&c, SERVICES, &service("a", "NodePort", Some(80))).await;
    assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(
        body["message"],
        "Service \"a\" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"
    );
    let (code, body) = post(&c, SERVICES, &service("a", "NodePort", Some(30080))).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(node_port(&body), 30080);
    let (code, body) = post(&c, SERVICES, &service("b", "NodePort", Some(30080))).await;
    assert_eq!(code, 422);
    assert_eq!(
        invalid(&body).1,
        [(
            "spec.ports[0].nodePort".to_owned(),
            "FieldValueInvalid".to_owned(),
            "Invalid value: 30080: provided port is already allocated".to_owned()
        )]
    );
}

async fn node_ports_are_released_on_delete_and_type_change(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let (code, _) = post(&c, SERVICES, &service("a", "NodePort", Some(30081))).await;
    assert_eq!(code, 201);
    let (code, _) = request(&c, "DELETE", &format!("{SERVICES}/a"), None).await;
    assert_eq!(code, 200);
    let (code, body) = post(&c, SERVICES, &service("b", "NodePort", Some(30081))).await;
    assert_eq!(code, 201, "{body}");
    // An update to ClusterIP that leaves the node port as it was drops it.
    let mut cluster = body.clone();
    cluster["spec"]["type"] = json!("ClusterIP");
    let (code, updated) = put(&c, &format!("{SERVICES}/b"), &cluster).await;
    assert_eq!(code, 200, "{updated}");
    assert!(
        updated["spec"]["ports"][0].get("nodePort").is_none(),
        "{updated}"
    );
    let (code, body) = post(&c, SERVICES, &service("c", "NodePort", Some(30081))).await;
    assert_eq!(code, 201, "{body}");
    // Back to NodePort: a new port is allocated, and an update without the port keeps it.
    let mut back = updated.clone();
    back["spec"]["type"] = json!("NodePort");
    let (code, back) = put(&c, &format!("{SERVICES}/b"), &back).await;
    assert_eq!(code, 200, "{back}");
    let port = node_port(&back);
    assert!((30000..=32767).contains(&port) && port != 30081, "{back}");
    let mut without = back.clone();
    without["spec"]["ports"][0]
        .as_object_mut()
        .unwrap()
        .remove("nodePort");
    let (code, kept) = put(&c, &format!("{SERVICES}/b"), &without).await;
    assert_eq!(code, 200, "{kept}");
    assert_eq!(node_port(&kept), port);
}

on_every_backend!(
    node_ports_are_allocated_in_range,
    provided_port_not_in_range_or_already_allocated_is_422,
    node_ports_are_released_on_delete_and_type_change,
);

#[tokio::test]
async fn a_node_port_on_a_cluster_ip_service_is_forbidden() {
    let s = start().await;
    let c = client(&s);
    let (code, body) = post(&c, SERVICES, &service("a", "ClusterIP", Some(30082))).await;
    assert_eq!(code, 422);
    assert_eq!(
        body["message"],
        "Service \"a\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
    );
}

#[tokio::test]
async fn invalid_external_name_and_a_change_to_external_name_drops_the_cluster_ip() {
    let s = start().await;
    let c = client(&s);
    let external = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "e"},
                          "spec": {"type": "ExternalName"}});
    let (code, body) = post(&c, SERVICES, &external).await;
    assert_eq!(code, 422);
    assert_eq!(
        body["message"],
        "Service \"e\" is invalid: spec.externalName: Required value"
    );
    let mut bad = external.clone();
    bad["spec"]["externalName"] = json!("-foo.example.com");
    bad["spec"]["clusterIP"] = json!("10.96.0.50");
    let (code, body) = post(&c, SERVICES, &bad).await;
    assert_eq!(code, 422);
    let fields: Vec<String> = invalid(&body).1.into_iter().map(|c| c.0).collect();
    assert_eq!(fields, ["spec.clusterIPs", "spec.externalName"], "{body}");
    let (code, created) = post(&c, SERVICES, &service("s", "NodePort", None)).await;
    assert_eq!(code, 201, "{created}");
    let mut changed = created.clone();
    changed["spec"]["type"] = json!("ExternalName");
    changed["spec"]["externalName"] = json!("db.example.com.");
    let (code, updated) = put(&c, &format!("{SERVICES}/s"), &changed).await;
    assert_eq!(code, 200, "{updated}");
    let spec = &updated["spec"];
    for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        assert!(spec.get(field).is_none(), "{field}: {updated}");
    }
    assert!(spec["ports"][0].get("nodePort").is_none(), "{updated}");
    // Leaving ExternalName allocates a cluster IP again.
    let mut back = updated.clone();
    back["spec"]["type"] = json!("ClusterIP");
    back["spec"].as_object_mut().unwrap().remove("externalName");
    let (code, back) = put(&c, &format!("{SERVICES}/s"), &back).await;
    assert_eq!(code, 200, "{back}");
    let ip = back["spec"]["clusterIP"].as_str().unwrap_or("");
    assert!(ip.starts_with("10."), "{back}");
    assert_eq!(back["spec"]["clusterIPs"], json!([ip]));
}
