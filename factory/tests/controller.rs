//! The sample controller (`examples/controller.rs`, run as a process) end to end against the
//! in-process API server, its metrics included.

#[path = "support/example.rs"]
mod support;

use std::io::{BufRead, BufReader, Read};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kcache_apiserver::TestServer;
use kcache_factory::SharedInformerFactory;
use kcache_informer::EventStream;
use kcache_testkit::within;
use kube_client::Api;
use kube_client::api::{Patch, PatchParams, PostParams};
use kube_core::Resource;
use serde_json::json;

/// Waits, event by event (each for a bounded time), until `done` holds.
async fn until<K: Resource + Send + Sync + 'static>(
    events: &mut EventStream<K>,
    what: &str,
    mut done: impl FnMut() -> bool,
) {
    while !done() {
        within(what, events.next())
            .await
            .expect("the observer stopped");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_controller_creates_owned_pods_scales_down_writes_status_serves_metrics_and_shuts_down_cleanly()
 {
    let server = TestServer::start().await.unwrap();
    let client = server.client().unwrap();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "prod"}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();

    let kubeconfig = support::Kubeconfig::for_server(&server.url(), "controller");
    let mut controller = std::process::Command::new(support::example("controller"))
        .env("KUBECONFIG", &kubeconfig.0)
        .env("METRICS_ADDR", "127.0.0.1:0")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(controller.stdout.take().unwrap());
    let (stdout, metrics_url) = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let url = line.trim().strip_prefix("metrics at ").map(str::to_owned);
        (
            stdout,
            url.expect("the controller prints where it serves metrics"),
        )
    })
    .await
    .unwrap();

    // An observer of its own, as a user would watch the cluster.
    let observer = SharedInformerFactory::new(client.clone());
    let (pods, replica_sets) = (
        observer.informer::<Pod>(),
        observer.informer::<ReplicaSet>(),
    );
    let (mut pod_events, mut rs_events) = (
        pods.event_stream().unwrap(),
        replica_sets.event_stream().unwrap(),
    );
    observer.start().unwrap();
    let pod_names = || {
        let mut names: Vec<String> = pods
            .lister()
            .namespace("prod")
            .list(&Default::default())
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        names.sort();
        names
    };
    let status_replicas = || {
        replica_sets
            .lister()
            .namespace("prod")
            .get("web")
            .and_then(|rs| rs.status.as_ref().map(|s| s.replicas))
    };

    let rs: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "prod"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}
            }
        }
    }))
    .unwrap();
    let rs_api = Api::<ReplicaSet>::namespaced(client.clone(), "prod");
    rs_api.create(&PostParams::default(), &rs).await.unwrap();
    until(&mut pod_events, "pods web-0, web-1 and web-2", || {
        pod_names() == ["web-0", "web-1", "web-2"]
    })
    .await;
    until(&mut rs_events, "status replicas 3", || {
        status_replicas() == Some(3)
    })
    .await;
    let owner = pods.lister().namespace("prod").get("web-1").unwrap();
    let owner = &owner.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("ReplicaSet", "web")
    );
    assert_eq!(owner.controller, Some(true));

    rs_api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await
        .unwrap();
    until(&mut pod_events, "only pod web-0", || {
        pod_names() == ["web-0"]
    })
    .await;
    until(&mut rs_events, "status replicas 1", || {
        status_replicas() == Some(1)
    })
    .await;

    // Its metrics: the queue's adds and the informers' caches.
    let curl = std::process::Command::new("curl")
        .args(["-sf", &metrics_url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&curl.stdout);
    assert!(curl.status.success(), "curl {metrics_url} failed");
    let value = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.parse::<u64>().ok())
    };
    assert!(
        value("workqueue_adds_total{name=\"replicasets\"} ").is_some_and(|n| n > 0),
        "no adds counted:\n{text}"
    );
    let replica_sets_cached = value(
        "informer_stored_items{name=\"apps/v1/ReplicaSet\",group=\"apps\",version=\"v1\",resource=\"replicasets\"} ",
    );
    assert_eq!(replica_sets_cached, Some(1), "{text}");

    // Ctrl-C: the controller drains its queue, stops its informers and exits cleanly.
    let interrupted = std::process::Command::new("kill")
        .args(["-INT", &controller.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let (status, rest) = tokio::task::spawn_blocking(move || {
        let mut rest = String::new();
        let mut stdout = stdout;
        stdout.read_to_string(&mut rest).unwrap();
        (controller.wait().unwrap(), rest)
    })
    .await
    .unwrap();
    assert!(status.success(), "{status}: {rest}");
    assert_eq!(rest.trim(), "shut down cleanly");
    within("the observer to shut down", observer.shutdown()).await;
}
