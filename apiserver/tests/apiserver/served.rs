//! What is served: unknown paths, discovery (core and group resources, the `all` category),
//! custom resources registered from an `ApiResource`, cluster-scoped resources.

use kube_client::Api;
use kube_client::api::PostParams;
use kube_core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn unknown_paths_are_404_status_under_served_groups_and_a_page_elsewhere() {
    let s = start().await;
    let c = client(&s);
    for path in ["/api/v1/widgets", "/api/v1/namespaces/default/nodes"] {
        let (code, status) = get(&c, path).await;
        assert_eq!(
            (code, status["kind"].as_str()),
            (404, Some("Status")),
            "{path}"
        );
    }
    // No handler at all: Go's `404 page not found`, not JSON (see health.rs).
    for path in ["/apis/nope/v1/things", "/random"] {
        let (code, body) = get(&c, path).await;
        assert_eq!((code, body), (404, serde_json::Value::Null), "{path}");
    }
}

#[tokio::test]
async fn discovery_lists_core_and_group_resources() {
    let s = start().await;
    let c = client(&s);
    let version = c.apiserver_version().await.unwrap();
    assert_eq!(version.major, "1");
    let core = c.list_core_api_resources("v1").await.unwrap();
    let pods = core.resources.iter().find(|r| r.name == "pods").unwrap();
    assert!(pods.namespaced);
    assert_eq!(pods.short_names.as_deref(), Some(&["po".to_owned()][..]));
    assert!(core.resources.iter().any(|r| r.name == "pods/status"));
    let groups = c.list_api_groups().await.unwrap();
    for g in ["apps", "batch", "coordination.k8s.io"] {
        assert!(groups.groups.iter().any(|x| x.name == g), "{g}");
    }
    let apps = c.list_api_group_resources("apps/v1").await.unwrap();
    assert!(
        apps.resources
            .iter()
            .any(|r| r.name == "deployments" && r.kind == "Deployment")
    );
    let nodes = core.resources.iter().find(|r| r.name == "nodes").unwrap();
    assert!(!nodes.namespaced);
}

#[tokio::test]
async fn discovery_puts_workloads_and_services_in_the_all_category() {
    let s = start().await;
    let c = client(&s);
    let core = c.list_core_api_resources("v1").await.unwrap();
    let apps = c.list_api_group_resources("apps/v1").await.unwrap();
    let batch = c.list_api_group_resources("batch/v1").await.unwrap();
    let all = |r: &k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource| {
        r.categories
            .as_ref()
            .is_some_and(|c| c.iter().any(|c| c == "all"))
    };
    let in_all: Vec<&str> = [&core, &apps, &batch]
        .iter()
        .flat_map(|l| l.resources.iter())
        .filter(|r| all(r))
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(
        in_all,
        [
            "pods",
            "services",
            "deployments",
            "replicasets",
            "statefulsets",
            "daemonsets",
            "jobs",
            "cronjobs"
        ]
    );
}

#[tokio::test]
async fn custom_resources_registered_from_an_api_resource_are_served() {
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let s =
        kcache_apiserver::TestServer::start_with(test_builder().custom_resource(ar.clone(), true))
            .await
            .unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(client(&s), "default", &ar);
    let w = DynamicObject::new("w1", &ar).data(json!({"spec": {"size": 3}}));
    let created = api.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(created.data["spec"]["size"], 3);
    assert_eq!(api.list(&Default::default()).await.unwrap().items.len(), 1);
    let groups = client(&s).list_api_groups().await.unwrap();
    assert!(groups.groups.iter().any(|g| g.name == "example.com"));
}

#[tokio::test]
async fn cluster_scoped_resources_live_outside_namespaces() {
    let s = start().await;
    let c = client(&s);
    let (code, node) = post(&c, "/api/v1/nodes", &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "namespace": "ignored"}})).await;
    assert_eq!(code, 201);
    assert!(node["metadata"].get("namespace").is_none());
    assert_eq!(get(&c, "/api/v1/nodes/n1").await.0, 200);
}
