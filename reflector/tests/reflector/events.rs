//! Applying watch events: store calls, resource versions, bad input, resync.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kcache_reflector::testing::FakeControllerSource;
use kcache_reflector::{Bookmark, Reflector, ReflectorConfig, WatchEvent};
use kcache_store::{Indexer, Store};

use crate::support::*;
use kcache_testkit::{until, within};

#[tokio::test(start_paused = true)]
async fn events_applied_to_store_in_order() {
    let source = Arc::new(FakeControllerSource::new());
    source.add(pod("a", ""));
    let (store, reflector, running) = watching(&source).await;
    source.add(pod("b", ""));
    source.modify(pod("a", ""));
    source.delete(pod("b", ""));
    store.wait_for("delete b 4").await;
    assert_eq!(
        store.ops(),
        [
            "replace 1 1",
            "add b 2",
            "rv 2",
            "update a 3",
            "rv 3",
            "delete b 4",
            "rv 4"
        ]
    );
    assert_eq!(store.inner.len(), 1);
    assert_eq!(reflector.last_sync_resource_version(), "4");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn update_resource_version_sees_each_rv() {
    let source = Arc::new(FakeControllerSource::new());
    let (store, _reflector, running) = watching(&source).await;
    for i in 0..5 {
        source.add(pod(&format!("p{i}"), ""));
    }
    source.send_bookmark();
    store.wait_for("bookmark 5").await;
    store.wait_for("rv 5").await;
    let rvs: Vec<_> = store.ops_starting("rv ");
    assert_eq!(rvs, ["rv 1", "rv 2", "rv 3", "rv 4", "rv 5", "rv 5"]);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn bookmark_moves_last_rv_without_touching_objects() {
    let (lw, mut calls) = scripted(
        |_, _| Ok(page(vec![pod("a", "1")], "10", None)),
        |n, _| match n {
            0 => Ok(events_then_close(vec![WatchEvent::Bookmark(Bookmark {
                resource_version: "42".into(),
                annotations: Default::default(),
            })])),
            _ => Ok(pending_stream()),
        },
    );
    let store = Arc::new(RecordingStore::default());
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::clone(&store),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    let got = next_calls(&mut calls, 3).await;
    assert_eq!(
        got[2].resource_version(),
        "42",
        "re-watch from the bookmark's RV"
    );
    assert_eq!(store.ops(), ["replace 1 10", "bookmark 42", "rv 42"]);
    assert_eq!(store.inner.last_store_sync_resource_version(), "42");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn objects_without_metadata_skipped() {
    let source = Arc::new(FakeControllerSource::new());
    let (store, _reflector, running) = watching(&source).await;
    source.send_event(|| WatchEvent::Added(Arc::new(k8s_openapi::api::core::v1::Pod::default())));
    source.add(pod("a", ""));
    store.wait_for("add a 1").await;
    assert_eq!(store.ops(), ["replace 0 0", "add a 1", "rv 1"]);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn resync_calls_store_resync_when_should_resync() {
    let source = Arc::new(FakeControllerSource::new());
    source.set_honour_timeouts(false);
    let store = Arc::new(RecordingStore::default());
    let ticks = Arc::new(parking_lot::Mutex::new(0u32));
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::clone(&store),
        ReflectorConfig::default()
            .resync_period(Duration::from_secs(30))
            .should_resync({
                let ticks = Arc::clone(&ticks);
                move || {
                    let mut t = ticks.lock();
                    *t += 1;
                    *t % 2 == 0
                }
            }),
    ));
    let running = run(&reflector);
    within("2 calls to the source", source.wait_for_calls(2)).await;
    tokio::time::sleep(Duration::from_secs(30 * 4 + 1)).await;
    assert_eq!(*ticks.lock(), 4);
    assert_eq!(
        store.ops_starting("resync").len(),
        2,
        "only the ticks where should_resync said yes"
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn last_sync_resource_version_readable_while_running() {
    let source = Arc::new(FakeControllerSource::new());
    let store = Arc::new(Indexer::default());
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::clone(&store),
        ReflectorConfig::default(),
    ));
    assert_eq!(reflector.last_sync_resource_version(), "");
    let running = run(&reflector);
    within("2 calls to the source", source.wait_for_calls(2)).await;
    assert_eq!(reflector.last_sync_resource_version(), "0");
    let mut stream = futures::stream::iter(0..3);
    while let Some(i) = stream.next().await {
        source.add(pod(&format!("p{i}"), ""));
    }
    until("the reflector to apply the three adds", || {
        reflector.last_sync_resource_version() == "3"
    })
    .await;
    assert_eq!(store.len(), 3);
    running.stop().await;
}

#[derive(Debug, Default)]
struct CountingMetrics {
    lines: parking_lot::Mutex<Vec<String>>,
}

impl kcache_reflector::ReflectorMetrics for CountingMetrics {
    fn list_completed(&self, name: &str, _duration: Duration, items: usize) {
        self.lines.lock().push(format!("{name} list {items}"));
    }
    fn watch_started(&self, name: &str) {
        self.lines.lock().push(format!("{name} watch"));
    }
    fn event_received(&self, name: &str) {
        self.lines.lock().push(format!("{name} event"));
    }
    fn event_skipped(&self, name: &str, reason: &str) {
        self.lines.lock().push(format!("{name} skipped {reason}"));
    }
    fn last_resource_version(&self, name: &str, rv: &str) {
        self.lines.lock().push(format!("{name} rv {rv}"));
    }
}

#[tokio::test(start_paused = true)]
async fn metrics_hooks_see_lists_watches_events_and_skips() {
    let source = Arc::new(FakeControllerSource::new());
    source.add(pod("a", ""));
    let metrics = Arc::new(CountingMetrics::default());
    let store = Arc::new(RecordingStore::default());
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::clone(&store),
        ReflectorConfig::default()
            .name("pods")
            .metrics(Arc::clone(&metrics) as _),
    ));
    let running = run(&reflector);
    within("2 calls to the source", source.wait_for_calls(2)).await;
    source.send_event(|| WatchEvent::Added(Arc::new(k8s_openapi::api::core::v1::Pod::default())));
    source.add(pod("b", ""));
    store.wait_for("rv 2").await;
    running.stop().await;
    assert_eq!(
        *metrics.lines.lock(),
        [
            "pods rv 1",
            "pods list 1",
            "pods watch",
            "pods skipped no metadata",
            "pods rv 2",
            "pods event"
        ]
    );
}
