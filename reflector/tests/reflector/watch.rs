//! Watches: resume, relist, backoff and timeouts.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kcache_reflector::testing::{Call, FakeControllerSource};
use kcache_reflector::{
    ListWatchError, Reflector, ReflectorConfig, ReflectorError, WatchEvent, status,
};
use kcache_store::{Indexer, Store};
use tokio::time::Instant;

use crate::support::*;
use kcache_testkit::{within, within_for};

fn kinds(calls: &[Call]) -> String {
    calls
        .iter()
        .map(|c| if is_list(c) { 'L' } else { 'W' })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn watch_timeout_in_300_600_seconds() {
    let source = Arc::new(FakeControllerSource::<Pod>::new());
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::new(Indexer::default()),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    // The fake ends each watch at its timeout; the reflector re-watches each time.
    for n in 1..=31 {
        let what = format!("call {n} to the source (each watch ends within 600 s)");
        within_for(Duration::from_secs(600), &what, source.wait_for_calls(n)).await;
    }
    let watches = source.watch_calls();
    assert!(watches.len() >= 30);
    for w in &watches {
        let t = w.timeout_seconds.unwrap();
        assert!((300..600).contains(&t), "timeout {t}");
    }
    let distinct: std::collections::BTreeSet<_> =
        watches.iter().map(|w| w.timeout_seconds).collect();
    assert!(distinct.len() > 1, "timeouts are random");
    assert_eq!(
        source.list_calls().len(),
        1,
        "a watch ending at its timeout is resumed, not relisted"
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn normal_close_rewatches_at_once_from_last_rv() {
    let source = Arc::new(FakeControllerSource::new());
    source.add(pod("a", ""));
    let (store, _reflector, running) = watching(&source).await;
    source.add(pod("b", ""));
    source.modify(pod("a", ""));
    store.wait_for("update a 3").await;
    let closed_at = Instant::now();
    source.end_all_watches();
    within("3 calls to the source", source.wait_for_calls(3)).await;
    assert_eq!(Instant::now(), closed_at, "no backoff after a normal close");
    let calls = source.calls();
    assert_eq!(kinds(&calls), "LWW");
    assert_eq!(calls[2].resource_version(), "3");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn too_many_requests_rewatches_after_backoff_without_relist() {
    let (lw, mut calls) = scripted(
        |_, _| Ok(page(vec![pod("a", "5")], "10", None)),
        |n, _| match n {
            0 => Err(ListWatchError::from(status::too_many_requests())),
            1 => Ok(events_then_close(vec![
                WatchEvent::Added(Arc::new(pod("b", "11"))),
                WatchEvent::Error(status::too_many_requests()),
            ])),
            _ => Ok(pending_stream()),
        },
    );
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    let first = next_calls(&mut calls, 2).await;
    let t0 = Instant::now();
    let second = next_calls(&mut calls, 1).await;
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(800) && waited < Duration::from_millis(1600),
        "{waited:?}"
    );
    let third = next_calls(&mut calls, 1).await;
    let all: Vec<_> = first.into_iter().chain(second).chain(third).collect();
    assert_eq!(kinds(&all), "LWWW", "429 re-watches, never relists");
    assert_eq!(all[2].resource_version(), "10");
    assert_eq!(
        all[3].resource_version(),
        "11",
        "resumes from the last event"
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn connection_refused_rewatches_after_backoff_without_relist() {
    let (lw, mut calls) = scripted(
        |_, _| Ok(page(vec![], "10", None)),
        |n, _| match n {
            0 | 1 => Err(connection_refused()),
            _ => Ok(pending_stream()),
        },
    );
    let errors = Arc::new(parking_lot::Mutex::new(0));
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorConfig::default().watch_error_handler({
            let errors = Arc::clone(&errors);
            move |_| *errors.lock() += 1
        }),
    ));
    let running = run(&reflector);
    let got = next_calls(&mut calls, 4).await;
    assert_eq!(kinds(&got), "LWWW");
    assert!(got[1..].iter().all(|c| c.resource_version() == "10"));
    assert_eq!(*errors.lock(), 0, "retried watch errors are not reported");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn backoff_flattens_at_cap() {
    let (lw, mut calls) = scripted(
        |_, _| Ok(page(vec![], "10", None)),
        |_, _| Err(connection_refused()),
    );
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    next_calls(&mut calls, 2).await;
    let bases_ms = [
        800u64, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000, 30000,
    ];
    for base in bases_ms {
        let t0 = Instant::now();
        next_calls(&mut calls, 1).await;
        let waited = t0.elapsed();
        let base = Duration::from_millis(base);
        assert!(
            waited >= base && waited < base * 2,
            "expected [{base:?}, {:?}), waited {waited:?}",
            base * 2
        );
    }
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn error_event_stops_the_watch() {
    let (lw, mut calls) = scripted(
        |_, _| Ok(page(vec![], "10", None)),
        |n, _| match n {
            0 => Ok(events_then_pending(vec![
                WatchEvent::Added(Arc::new(pod("a", "11"))),
                WatchEvent::Error(status::internal_error("etcd went away")),
                WatchEvent::Added(Arc::new(pod("never", "12"))),
            ])),
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
    let got = next_calls(&mut calls, 4).await;
    assert_eq!(
        kinds(&got),
        "LWLW",
        "an error event ends the watch and a relist follows"
    );
    assert_eq!(
        got[2].resource_version(),
        "11",
        "relist from the last synced RV"
    );
    assert!(Store::get_by_key(&store.inner, "ns/never").is_none());
    assert_eq!(store.ops_starting("add"), ["add a 11"]);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn expired_watch_relists_from_last_rv() {
    let source = Arc::new(FakeControllerSource::new());
    source.add(pod("a", ""));
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::new(Indexer::default()),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    within("2 calls to the source", source.wait_for_calls(2)).await;
    source.add(pod("b", ""));
    source.send_error(status::expired("too old resource version: 1 (2)"));
    within("4 calls to the source", source.wait_for_calls(4)).await;
    let calls = source.calls();
    assert_eq!(kinds(&calls), "LWLW");
    assert_eq!(
        calls[2].resource_version(),
        "2",
        "not \"\": a list at the RV is not older than it"
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_from_a_compacted_rv_gets_expired_and_relists() {
    let source = Arc::new(FakeControllerSource::with_history(2));
    source.add(pod("a", ""));
    let store = Arc::new(Indexer::default());
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::clone(&store),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    within("2 calls to the source", source.wait_for_calls(2)).await;
    source.set_honour_timeouts(false);
    // Older than a second, so that its end is not a "very short watch".
    tokio::time::advance(Duration::from_secs(2)).await;
    source.end_all_watches();
    // The reflector re-watches at once from RV 1; make that RV too old first.
    for i in 0..3 {
        source.add(pod(&format!("x{i}"), ""));
    }
    within("5 calls to the source", source.wait_for_calls(5)).await;
    let calls = source.calls();
    assert_eq!(kinds(&calls[..5]), "LWWLW");
    assert_eq!(store.len(), 4);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn very_short_watch_backs_off_and_relists() {
    let (lw, mut calls) = scripted(
        |_, _| Ok(page(vec![], "10", None)),
        |n, _| match n {
            0 => Ok(events_then_close(vec![])),
            _ => Ok(pending_stream()),
        },
    );
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    let first = next_calls(&mut calls, 2).await;
    let t0 = Instant::now();
    let rest = next_calls(&mut calls, 2).await;
    assert!(t0.elapsed() >= Duration::from_millis(800), "backed off");
    let all: Vec<_> = first.into_iter().chain(rest).collect();
    assert_eq!(kinds(&all), "LWLW");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn malformed_event_relists() {
    let source = Arc::new(FakeControllerSource::new());
    source.add(pod("a", ""));
    let store = Arc::new(Indexer::default());
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::clone(&store),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    within("2 calls to the source", source.wait_for_calls(2)).await;
    source.send_malformed_event();
    within("4 calls to the source", source.wait_for_calls(4)).await;
    assert_eq!(kinds(&source.calls()), "LWLW");
    assert_eq!(store.len(), 1);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_open_error_reaches_the_handler_then_relists() {
    let source = Arc::new(FakeControllerSource::<Pod>::new());
    source.fail_next_watch(ListWatchError::from(status::failure(
        403,
        "Forbidden",
        "no",
    )));
    let errors = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::new(Indexer::default()),
        ReflectorConfig::default().watch_error_handler({
            let errors = Arc::clone(&errors);
            move |e: &ReflectorError| {
                errors
                    .lock()
                    .push(matches!(e, ReflectorError::Watch { .. }))
            }
        }),
    ));
    let running = run(&reflector);
    within("4 calls to the source", source.wait_for_calls(4)).await;
    assert_eq!(kinds(&source.calls()), "LWLW");
    assert_eq!(*errors.lock(), [true]);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn run_returns_when_cancelled_during_backoff() {
    let (lw, mut calls) = scripted(
        |_, _| Err(ListWatchError::Other("down".into())),
        |_, _| Ok(pending_stream()),
    );
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    assert_eq!(kinds(&next_calls(&mut calls, 1).await), "L");
    // The failed list puts the reflector in its backoff; paused time would run it out if the
    // reflector waited for it.
    let cancelled_at = Instant::now();
    running.stop().await;
    assert_eq!(
        Instant::now(),
        cancelled_at,
        "run returns at once, not after the backoff"
    );
    assert!(
        calls.try_recv().is_err(),
        "nothing is listed after the cancel"
    );
}

/// A store with room for `room` watch events until the test opens it.
struct Bounded {
    inner: RecordingStore,
    room: usize,
    open: tokio::sync::watch::Sender<bool>,
}

impl Bounded {
    fn events(&self) -> Vec<String> {
        self.inner.ops_starting("add")
    }
}

impl kcache_reflector::ReflectorStore<Pod> for Bounded {
    fn add(&self, obj: Arc<Pod>) -> Result<(), kcache_store::StoreError> {
        self.inner.add(obj)
    }
    fn update(&self, obj: Arc<Pod>) -> Result<(), kcache_store::StoreError> {
        self.inner.update(obj)
    }
    fn delete(&self, obj: Arc<Pod>) -> Result<(), kcache_store::StoreError> {
        self.inner.delete(obj)
    }
    fn replace(
        &self,
        items: Vec<Arc<Pod>>,
        resource_version: &str,
    ) -> Result<(), kcache_store::StoreError> {
        self.inner.replace(items, resource_version)
    }
    fn room(&self) -> Option<futures::future::BoxFuture<'_, ()>> {
        if *self.open.borrow() || self.events().len() < self.room {
            return None;
        }
        let mut open = self.open.subscribe();
        Some(Box::pin(async move {
            let _ = open.wait_for(|o| *o).await;
        }))
    }
}

#[tokio::test(start_paused = true)]
async fn a_store_without_room_holds_the_watch_back_until_it_has_some() {
    let source = Arc::new(FakeControllerSource::<Pod>::new());
    let store = Arc::new(Bounded {
        inner: RecordingStore::default(),
        room: 2,
        open: tokio::sync::watch::channel(false).0,
    });
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::clone(&store),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    store.inner.wait_for("replace 0 0").await;
    for i in 0..4 {
        source.add(pod(&format!("p{i}"), ""));
    }
    store.inner.wait_for("add p1 2").await;
    // Paused time moves on only once every task is idle: the reflector has stopped reading.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(store.events(), ["add p0 1", "add p1 2"]);
    store.open.send_replace(true);
    store.inner.wait_for("add p3 4").await;
    assert_eq!(
        store.events(),
        ["add p0 1", "add p1 2", "add p2 3", "add p3 4"],
        "nothing lost or reordered"
    );
    running.stop().await;
}
