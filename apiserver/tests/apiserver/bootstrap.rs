//! What a fresh control plane has: the `kubernetes` Service with its Endpoints and
//! EndpointSlice, and the system PriorityClasses.

use kcache_apiserver::TestServer;
use serde_json::json;

use crate::kubectl::{kubectl, session};
use crate::support::{Backend, get, on_every_backend, test_builder};

async fn a_fresh_server_has_the_kubernetes_service_and_its_endpoints(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    let port = s.addr().port();
    let (code, svc) = get(&c, "/api/v1/namespaces/default/services/kubernetes").await;
    assert_eq!(code, 200);
    assert_eq!(
        svc["metadata"]["labels"],
        json!({"component": "apiserver", "provider": "kubernetes"})
    );
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(svc["spec"]["clusterIP"], "10.96.0.1");
    assert_eq!(svc["spec"]["clusterIPs"], json!(["10.96.0.1"]));
    assert_eq!(
        svc["spec"]["ports"],
        json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}])
    );
    let (code, ep) = get(&c, "/api/v1/namespaces/default/endpoints/kubernetes").await;
    assert_eq!(code, 200);
    assert_eq!(
        ep["subsets"],
        json!([{
            "addresses": [{"ip": "127.0.0.1"}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }])
    );
    assert_eq!(
        ep["metadata"]["labels"]["endpointslice.kubernetes.io/skip-mirror"],
        "true"
    );
    let (code, slice) = get(
        &c,
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["metadata"]["labels"]["kubernetes.io/service-name"],
        "kubernetes"
    );
    assert_eq!(
        slice["endpoints"],
        json!([{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}])
    );
    assert_eq!(slice["ports"][0]["port"], port);
    // A new service gets another address than the kubernetes Service's.
    let (code, other) = crate::support::post(
        &c,
        "/api/v1/namespaces/default/services",
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "other"},
                "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    assert_eq!(code, 201, "{other}");
    assert_ne!(other["spec"]["clusterIP"], "10.96.0.1");
}

async fn a_fresh_server_has_the_system_priority_classes(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    let (code, list) = get(&c, "/apis/scheduling.k8s.io/v1/priorityclasses").await;
    assert_eq!(code, 200);
    let found: Vec<(String, i64)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pc| {
            (
                pc["metadata"]["name"].as_str().unwrap().to_owned(),
                pc["value"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("system-cluster-critical".to_owned(), 2_000_000_000),
            ("system-node-critical".to_owned(), 2_000_001_000),
        ]
    );
    let (_, node) = get(
        &c,
        "/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical",
    )
    .await;
    assert_eq!(node["globalDefault"], false);
    assert_eq!(node["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(
        node["description"],
        "Used for system critical pods that must not be moved from their current node."
    );
}

on_every_backend!(
    a_fresh_server_has_the_kubernetes_service_and_its_endpoints,
    a_fresh_server_has_the_system_priority_classes,
);

#[tokio::test]
async fn a_server_restarted_on_etcd_at_another_port_keeps_its_objects_and_moves_the_endpoints() {
    let Some(storage) = Backend::Etcd.storage().await else {
        return;
    };
    let builder = || test_builder().storage(std::sync::Arc::clone(&storage.inner));
    let first = TestServer::start_with(builder()).await.unwrap();
    let c = first.client().unwrap();
    let (_, svc) = get(&c, "/api/v1/namespaces/default/services/kubernetes").await;
    first.shutdown();
    let second = TestServer::start_with(builder()).await.unwrap();
    let c = second.client().unwrap();
    let (code, again) = get(&c, "/api/v1/namespaces/default/services/kubernetes").await;
    assert_eq!(code, 200);
    assert_eq!(
        again["metadata"]["uid"], svc["metadata"]["uid"],
        "the same object"
    );
    // The server moved: the bootstrap controller points the Service and its endpoints at it.
    let port = second.addr().port();
    assert_ne!(port, first.addr().port());
    assert_eq!(again["spec"]["ports"][0]["targetPort"], port);
    assert_eq!(again["spec"]["clusterIP"], "10.96.0.1");
    let (_, ep) = get(&c, "/api/v1/namespaces/default/endpoints/kubernetes").await;
    assert_eq!(ep["subsets"][0]["ports"][0]["port"], port);
    let slice = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes";
    assert_eq!(get(&c, slice).await.1["ports"][0]["port"], port);
    let (_, list) = get(&c, "/apis/scheduling.k8s.io/v1/priorityclasses").await;
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    // A second call on a running server finds everything there too.
    second.ensure_cluster_objects(second.addr()).await.unwrap();
}

#[test]
fn kubectl_get_shows_the_kubernetes_service_and_the_priority_classes() {
    let Some((kc, server, _dir)) = session("bootstrap") else {
        return;
    };
    let svc = kubectl(
        &kc,
        &server,
        &["get", "service", "kubernetes", "-o", "wide"],
    );
    assert!(
        svc.lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("kubernetes")
                && l.contains("ClusterIP")
                && l.contains("10.96.0.1")
                && l.contains("443/TCP")),
        "{svc}"
    );
    let pcs = kubectl(&kc, &server, &["get", "priorityclasses", "-o", "name"]);
    assert_eq!(
        pcs,
        "priorityclass.scheduling.k8s.io/system-cluster-critical\n\
         priorityclass.scheduling.k8s.io/system-node-critical\n"
    );
}
