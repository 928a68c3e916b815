//! The streaming watch-list (sendInitialEvents).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::channel::mpsc;
use k8s_openapi::api::core::v1::Pod;
use kcache_reflector::testing::{Call, FakeControllerSource};
use kcache_reflector::{
    Bookmark, INITIAL_EVENTS_END_ANNOTATION, ListOptions, ListWatch, ListWatchError, Reflector,
    ReflectorConfig, ResourceVersionMatch, WatchEvent, WatchStream, status,
};
use kcache_store::{Indexer, Store};

use crate::support::*;
use kcache_testkit::within;

type Streaming = (
    Arc<RecordingStore>,
    Arc<Reflector<Pod, ListWatch<Pod>, RecordingStore>>,
    Running,
    mpsc::UnboundedReceiver<Call>,
);

/// A watch-list reflector over a scripted watch (lists are not expected).
fn streaming(
    watch: impl Fn(usize, &ListOptions) -> Result<WatchStream<Pod>, ListWatchError>
    + Send
    + Sync
    + 'static,
) -> Streaming {
    let (lw, calls) = scripted(
        |_, _| Err(ListWatchError::Other("no list expected".into())),
        watch,
    );
    let store = Arc::new(RecordingStore::default());
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::clone(&store),
        ReflectorConfig::default().use_watch_list(true),
    ));
    let running = run(&reflector);
    (store, reflector, running, calls)
}

fn initial_events_end(rv: &str, value: &str) -> WatchEvent<Pod> {
    WatchEvent::Bookmark(Bookmark {
        resource_version: rv.into(),
        annotations: BTreeMap::from([(INITIAL_EVENTS_END_ANNOTATION.to_owned(), value.to_owned())]),
    })
}

fn added(name: &str, rv: &str) -> WatchEvent<Pod> {
    WatchEvent::Added(Arc::new(pod(name, rv)))
}

#[tokio::test(start_paused = true)]
async fn watch_list_mode_one_watch_rv_empty_send_initial_events_not_older_than() {
    let source = Arc::new(FakeControllerSource::new());
    source.add(pod("a", ""));
    source.add(pod("b", ""));
    let store = Arc::new(RecordingStore::default());
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::clone(&store),
        ReflectorConfig::default().use_watch_list(true),
    ));
    let running = run(&reflector);
    store.wait_for("replace 2 2").await;
    source.add(pod("c", ""));
    store.wait_for("add c 3").await;
    let calls = source.calls();
    assert_eq!(calls.len(), 1, "one watch, no list: {calls:?}");
    let o = opts(&calls[0]);
    assert!(!is_list(&calls[0]));
    assert_eq!(o.resource_version, None);
    assert_eq!(o.send_initial_events, Some(true));
    assert_eq!(
        o.resource_version_match,
        Some(ResourceVersionMatch::NotOlderThan)
    );
    assert!(o.allow_watch_bookmarks);
    assert!((300..600).contains(&o.timeout_seconds.unwrap()));
    assert_eq!(
        store.ops(),
        ["replace 2 2", "add c 3", "rv 3"],
        "streamed objects reach the store only by replace"
    );
    assert_eq!(reflector.last_sync_resource_version(), "3");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_list_sync_needs_the_annotation_value_true() {
    let (store, reflector, running, mut calls) = streaming(|n, _| match n {
        0 => Ok(events_then_pending(vec![
            added("a", "5"),
            initial_events_end("6", "false"),
            added("b", "7"),
            initial_events_end("8", "true"),
        ])),
        _ => Ok(pending_stream()),
    });
    next_calls(&mut calls, 1).await;
    store.wait_for("replace 2 8").await;
    assert_eq!(store.ops(), ["replace 2 8"]);
    assert_eq!(reflector.last_sync_resource_version(), "8");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_list_modified_and_deleted_during_streaming_applied() {
    let (store, _reflector, running, mut calls) = streaming(|n, _| match n {
        0 => Ok(events_then_pending(vec![
            added("a", "5"),
            added("b", "6"),
            WatchEvent::Modified(Arc::new(pod("a", "7"))),
            WatchEvent::Deleted(Arc::new(pod("b", "8"))),
            initial_events_end("9", "true"),
        ])),
        _ => Ok(pending_stream()),
    });
    next_calls(&mut calls, 1).await;
    store.wait_for("replace 1 9").await;
    let a = store.inner.get_by_key("ns/a").unwrap();
    assert_eq!(a.metadata.resource_version.as_deref(), Some("7"));
    assert!(store.inner.get_by_key("ns/b").is_none());
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_list_stop_before_sync_restarts_watch_list() {
    let (store, _reflector, running, mut calls) = streaming(|n, _| match n {
        // Ends before the initial-events-end bookmark.
        0 => Ok(events_then_close(vec![added("a", "5")])),
        1 => Ok(events_then_pending(vec![
            added("b", "6"),
            initial_events_end("6", "true"),
        ])),
        _ => Ok(pending_stream()),
    });
    let got = next_calls(&mut calls, 2).await;
    assert!(
        got.iter()
            .all(|c| !is_list(c) && opts(c).send_initial_events == Some(true))
    );
    store.wait_for("replace 1 6").await;
    assert!(
        store.inner.get_by_key("ns/a").is_none(),
        "a fresh temporary store per attempt"
    );
    assert!(store.inner.get_by_key("ns/b").is_some());
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_list_after_sync_a_plain_watch() {
    let (store, _reflector, running, mut calls) = streaming(|n, _| match n {
        0 => Ok(events_then_close(vec![
            added("a", "5"),
            initial_events_end("6", "true"),
            added("b", "7"),
        ])),
        _ => Ok(pending_stream()),
    });
    let got = next_calls(&mut calls, 2).await;
    let second = opts(&got[1]);
    assert!(!is_list(&got[1]));
    assert_eq!(
        second.send_initial_events, None,
        "after the sync the stream is resumed as a plain watch"
    );
    assert_eq!(second.resource_version_match, None);
    assert_eq!(second.resource_version.as_deref(), Some("7"));
    assert_eq!(store.ops(), ["replace 1 6", "add b 7", "rv 7"]);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_list_expired_retries_with_rv_empty() {
    let (store, _reflector, running, mut calls) = streaming(|n, _| match n {
        0 => Ok(events_then_close(vec![
            added("a", "5"),
            initial_events_end("10", "true"),
            WatchEvent::Error(status::expired("too old")),
        ])),
        1 => Err(ListWatchError::from(status::expired("too old"))),
        _ => Ok(events_then_pending(vec![initial_events_end("20", "true")])),
    });
    let got = next_calls(&mut calls, 3).await;
    let rvs: Vec<_> = got
        .iter()
        .map(|c| c.resource_version().to_owned())
        .collect();
    assert_eq!(rvs, ["", "10", ""]);
    assert!(
        got.iter()
            .all(|c| opts(c).send_initial_events == Some(true))
    );
    store.wait_for("replace 0 20").await;
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_list_unsupported_falls_back_to_list_and_watch() {
    let source = Arc::new(FakeControllerSource::new());
    source.set_watch_list_supported(false);
    source.add(pod("a", ""));
    let store = Arc::new(Indexer::default());
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::clone(&store),
        ReflectorConfig::default().use_watch_list(true),
    ));
    let running = run(&reflector);
    within("3 calls to the source", source.wait_for_calls(3)).await;
    let calls = source.calls();
    assert_eq!(opts(&calls[0]).send_initial_events, Some(true));
    assert!(is_list(&calls[1]));
    assert_eq!(calls[1].resource_version(), "0");
    assert!(!is_list(&calls[2]));
    assert_eq!(opts(&calls[2]).send_initial_events, None);
    assert_eq!(store.len(), 1);
    running.stop().await;
}
