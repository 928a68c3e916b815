//! The recorder against kcache-apiserver's `TestServer`: Events written with their reporting
//! controller, repeats aggregated into a series, a full queue dropping, shutdown flushing.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, ObjectReference};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kcache_apiserver::TestServer;
use kcache_events::{EventBroadcaster, EventType, Recorder};
use kcache_testkit::within;
use kube_client::Api;
use kube_client::api::{ListParams, PostParams};

fn pod(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some("apps".into()),
        name: Some(name.into()),
        ..ObjectReference::default()
    }
}

/// A server holding the `apps` namespace the events go to.
async fn server_with_apps_namespace() -> TestServer {
    let server = TestServer::start().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(server.client().unwrap());
    let apps = Namespace {
        metadata: ObjectMeta {
            name: Some("apps".into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces
        .create(&PostParams::default(), &apps)
        .await
        .unwrap();
    server
}

/// A server with the `apps` namespace, a broadcaster writing to it and a recorder.
async fn start() -> (TestServer, EventBroadcaster, Recorder) {
    let server = server_with_apps_namespace().await;
    let broadcaster = EventBroadcaster::new(server.client().unwrap());
    let recorder = broadcaster.recorder("example.com/controller", "controller-0");
    (server, broadcaster, recorder)
}

async fn events(server: &TestServer) -> Vec<Event> {
    let api: Api<Event> = Api::namespaced(server.client().unwrap(), "apps");
    api.list(&ListParams::default()).await.unwrap().items
}

#[tokio::test]
async fn an_event_is_written_with_its_reporting_controller_and_instance() {
    let (server, broadcaster, recorder) = start().await;
    let node = ObjectReference {
        kind: Some("Node".into()),
        name: Some("node-1".into()),
        ..ObjectReference::default()
    };
    recorder.event(
        &pod("web-0"),
        Some(&node),
        EventType::Warning,
        "FailedBinding",
        "Binding",
        "node-1 is full",
    );
    within("the broadcaster to flush and stop", broadcaster.shutdown()).await;

    let written = events(&server).await;
    assert_eq!(written.len(), 1);
    let e = &written[0];
    assert!(e.metadata.name.as_deref().unwrap().starts_with("web-0."));
    assert_eq!(
        e.reporting_controller.as_deref(),
        Some("example.com/controller")
    );
    assert_eq!(e.reporting_instance.as_deref(), Some("controller-0"));
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(e.reason.as_deref(), Some("FailedBinding"));
    assert_eq!(e.action.as_deref(), Some("Binding"));
    assert_eq!(e.note.as_deref(), Some("node-1 is full"));
    assert_eq!(e.related.as_ref().unwrap().name.as_deref(), Some("node-1"));
    assert!(e.event_time.is_some());
    assert!(e.series.is_none());
}

#[tokio::test]
async fn repeats_become_one_event_whose_series_counts_them_and_shutdown_writes_the_count() {
    let (server, broadcaster, recorder) = start().await;
    for _ in 0..5 {
        recorder.event(
            &pod("web-0"),
            None,
            EventType::Normal,
            "Synced",
            "Sync",
            "in sync",
        );
    }
    recorder.event(
        &pod("web-0"),
        None,
        EventType::Normal,
        "Synced",
        "Sync",
        "other note",
    );
    within("the broadcaster to flush and stop", broadcaster.shutdown()).await;

    let written = events(&server).await;
    assert_eq!(written.len(), 2);
    let repeated = written
        .iter()
        .find(|e| e.note.as_deref() == Some("in sync"))
        .unwrap();
    let series = repeated.series.as_ref().unwrap();
    assert_eq!(series.count, 5);
    assert!(series.last_observed_time.0 >= repeated.event_time.as_ref().unwrap().0);
    let single = written
        .iter()
        .find(|e| e.note.as_deref() == Some("other note"))
        .unwrap();
    assert!(single.series.is_none());
}

#[tokio::test]
async fn a_full_queue_drops_events_and_counts_them_without_blocking() {
    let server = server_with_apps_namespace().await;
    server.set_response_delay(Duration::from_millis(200));
    let broadcaster = EventBroadcaster::with_capacity(server.client().unwrap(), 2);
    let recorder = broadcaster.recorder("example.com/controller", "controller-0");
    for i in 0..20 {
        let note = format!("event {i}");
        recorder.event(
            &pod("web-0"),
            None,
            EventType::Normal,
            "Tick",
            "Tick",
            &note,
        );
    }
    let dropped = broadcaster.dropped();
    assert!(dropped >= 17, "dropped {dropped}");
    within("the broadcaster to flush and stop", broadcaster.shutdown()).await;
    server.set_response_delay(Duration::ZERO);

    let written = u64::try_from(events(&server).await.len()).unwrap();
    assert_eq!(written + dropped, 20);
}

#[tokio::test]
async fn shutdown_writes_every_queued_event() {
    let (server, broadcaster, recorder) = start().await;
    for i in 0..50 {
        let note = format!("event {i}");
        recorder.event(
            &pod(&format!("web-{i}")),
            None,
            EventType::Normal,
            "Tick",
            "Tick",
            &note,
        );
    }
    within("the broadcaster to flush and stop", broadcaster.shutdown()).await;
    assert_eq!(events(&server).await.len(), 50);
}
