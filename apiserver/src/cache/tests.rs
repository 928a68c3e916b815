//! The watch cache's behaviour under a paused clock.

use std::sync::Arc;
use std::time::Duration;

use kcache_reflector::ReflectorStore;
use kcache_testkit::within;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::lifecycle::Lifecycle;
use super::watchers::WatchHandle;
use super::*;
use crate::error::ApiError;
use crate::filter::Filter;
use crate::resource::builtin_resources;

fn cm(name: &str, rv: u64) -> Arc<Object> {
    let json = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"default","resourceVersion":"{rv}"}}}}"#
    );
    Arc::new(Object::from_json(json.as_bytes()).unwrap())
}

fn cache(config: CacheConfig) -> Arc<WatchCache> {
    let def = builtin_resources()
        .into_iter()
        .find(|d| d.api.plural == "configmaps")
        .unwrap();
    let cache = Arc::new(WatchCache::new(Arc::new(def), config));
    tokio::spawn(Arc::clone(&cache).run_dispatcher(CancellationToken::new()));
    cache.replace(Vec::new(), "1").unwrap();
    cache
}

fn watch_after(cache: &WatchCache, rv: u64) -> Result<WatchHandle, ApiError> {
    cache.watch(WatchRequest {
        start: WatchStart::After(rv),
        filter: Filter::default(),
        bookmarks: false,
        deadline: Instant::now() + Duration::from_secs(3600),
    })
}

#[tokio::test(start_paused = true)]
async fn a_stuck_watcher_is_cut_off_and_the_others_keep_flowing() {
    let cache = cache(CacheConfig {
        watcher_buffer: 2,
        ..CacheConfig::default()
    });
    let mut stuck = watch_after(&cache, 1).unwrap();
    let mut fast = watch_after(&cache, 1).unwrap();
    let reader = tokio::spawn(async move {
        let mut seen = 0;
        while seen < 20 {
            match fast.rx.recv().await {
                Some(Msg::Event(..)) => seen += 1,
                Some(_) => {}
                None => break,
            }
        }
        seen
    });
    for i in 0..20 {
        cache.add(cm(&format!("cm-{i}"), i + 2)).unwrap();
        tokio::task::yield_now().await;
    }
    assert_eq!(
        within("the fast watcher's twenty events", reader)
            .await
            .unwrap(),
        20,
        "the fast watcher saw every event"
    );
    let mut buffered = 0;
    while within("the stuck watcher's stream to end", stuck.rx.recv())
        .await
        .is_some()
    {
        buffered += 1;
    }
    assert!(
        buffered < 20,
        "the stuck watcher's stream ended after its buffer"
    );
}

#[tokio::test(start_paused = true)]
async fn a_watch_older_than_the_window_is_too_old_and_a_relist_empties_the_window() {
    let cache = cache(CacheConfig {
        capacity: 3,
        ..CacheConfig::default()
    });
    for i in 0..5 {
        cache.add(cm(&format!("cm-{i}"), i + 2)).unwrap();
    }
    // Events 4, 5 and 6 are buffered: watches from 3 on are served, older ones are too old.
    assert_eq!(watch_after(&cache, 3).unwrap().initial.len(), 3);
    let err = watch_after(&cache, 2).unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
    assert_eq!(err.message, "too old resource version: 2 (3)");
    let mut open = watch_after(&cache, 6).unwrap();
    cache.replace(vec![cm("only", 10)], "10").unwrap();
    assert!(
        within("the relist to end the watcher", open.rx.recv())
            .await
            .is_none(),
        "a relist ends every watcher"
    );
    assert!(watch_after(&cache, 6).is_err());
    assert!(watch_after(&cache, 10).unwrap().initial.is_empty());
}

#[tokio::test(start_paused = true)]
async fn dynamic_capacity_grows_while_events_are_fresh_and_shrinks_when_they_age() {
    let cache = cache(CacheConfig {
        capacity: 4,
        max_capacity: Some(16),
        ..CacheConfig::default()
    });
    let window = |cache: &WatchCache| cache.state.read().ring.len();
    // RVs 2..=21 within a second: 4 → 8 → 16 events kept, then the oldest go.
    for i in 0..20 {
        cache.add(cm(&format!("cm-{i}"), i + 2)).unwrap();
    }
    assert_eq!(window(&cache), 16);
    assert_eq!(watch_after(&cache, 5).unwrap().initial.len(), 16);
    assert!(watch_after(&cache, 4).is_err());
    // 76 s later the full ring's recent quarter is stale: it halves, and the next halves again.
    tokio::time::advance(Duration::from_secs(76)).await;
    cache.add(cm("late-1", 22)).unwrap();
    assert_eq!(window(&cache), 8);
    cache.add(cm("late-2", 23)).unwrap();
    assert_eq!(
        window(&cache),
        4,
        "halved to the minimum, full, the oldest gone"
    );
    assert_eq!(watch_after(&cache, 19).unwrap().initial.len(), 4);
    let err = watch_after(&cache, 18).unwrap_err();
    assert_eq!(err.code, 410);
}

#[tokio::test(start_paused = true)]
async fn bookmarks_carry_the_latest_dispatched_resource_version() {
    let config = CacheConfig {
        bookmark_interval: Duration::from_secs(60),
        ..CacheConfig::default()
    };
    let cache = cache(config);
    let mut w = cache
        .watch(WatchRequest {
            start: WatchStart::After(1),
            filter: Filter::default(),
            bookmarks: true,
            deadline: Instant::now() + Duration::from_secs(3600),
        })
        .unwrap();
    cache.add(cm("a", 2)).unwrap();
    cache.bookmark("7");
    assert!(matches!(
        within("the added event", w.rx.recv()).await,
        Some(Msg::Event(WatchKind::Added, _))
    ));
    tokio::time::advance(Duration::from_secs(61)).await;
    assert!(matches!(
        within("the bookmark", w.rx.recv()).await,
        Some(Msg::Bookmark(7))
    ));
}

fn cm_with(name: &str, rv: u64, metadata: serde_json::Value) -> Arc<Object> {
    let mut value = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": rv.to_string()}});
    if let (Some(meta), Some(extra)) = (value["metadata"].as_object_mut(), metadata.as_object()) {
        meta.extend(extra.clone());
    }
    Arc::new(Object::from_value(value).unwrap())
}

/// The resource versions of the changes a lifecycle subscription has received so far
/// (`0` for a relist).
fn lifecycle_changes(sub: &mut Lifecycle) -> Vec<u64> {
    std::iter::from_fn(|| sub.rx.try_recv().ok())
        .map(|event| match event {
            LifecycleEvent::Upsert(o) | LifecycleEvent::Delete(o) => o.resource_version_u64(),
            LifecycleEvent::Replace(_) => 0,
        })
        .collect()
}

#[tokio::test]
async fn only_lifecycle_changes_reach_the_lifecycle_subscription() {
    let cache = cache(CacheConfig::default());
    let mut sub = cache.subscribe_lifecycle(Arc::new(tokio::sync::Notify::new()));
    cache.add(cm("a", 2)).unwrap();
    assert_eq!(lifecycle_changes(&mut sub), [2], "an object added");
    let annotated = serde_json::json!({"annotations": {"x": "1"}});
    cache.update(cm_with("a", 3, annotated)).unwrap();
    assert_eq!(lifecycle_changes(&mut sub), [0; 0], "an annotation changed");
    let owned = serde_json::json!({"ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u"}]});
    cache.update(cm_with("a", 4, owned.clone())).unwrap();
    let finalized =
        serde_json::json!({"finalizers": ["f"], "ownerReferences": owned["ownerReferences"]});
    cache.update(cm_with("a", 5, finalized)).unwrap();
    let deleting = serde_json::json!({"finalizers": ["f"], "ownerReferences": owned["ownerReferences"],
        "deletionTimestamp": "2026-11-24T00:00:00Z"});
    cache.update(cm_with("a", 6, deleting)).unwrap();
    cache.delete(cm("a", 7)).unwrap();
    assert_eq!(
        lifecycle_changes(&mut sub),
        [4, 5, 6, 7],
        "owner references and finalizers changed, deletion began, the object deleted"
    );
    cache.add(cm("b", 8)).unwrap();
    cache
        .update(cm_with("b", 9, serde_json::json!({"labels": {"l": "v"}})))
        .unwrap();
    assert_eq!(lifecycle_changes(&mut sub), [8], "a label changed");
    cache.replace(vec![cm("b", 10)], "10").unwrap();
    assert_eq!(lifecycle_changes(&mut sub), [0], "a relist");
    cache.terminate_all_watchers();
    assert!(
        matches!(
            sub.rx.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ),
        "the subscription ends with the watchers"
    );
}

#[tokio::test]
async fn a_lifecycle_subscription_that_falls_behind_is_ended() {
    let cache = cache(CacheConfig {
        lifecycle_buffer: 2,
        ..CacheConfig::default()
    });
    let mut sub = cache.subscribe_lifecycle(Arc::new(tokio::sync::Notify::new()));
    for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
        cache.add(cm(name, 2 + i as u64)).unwrap();
    }
    assert_eq!(lifecycle_changes(&mut sub), [2, 3], "what fitted");
    assert!(
        matches!(
            sub.rx.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ),
        "then the end"
    );
    let again = cache.subscribe_lifecycle(Arc::new(tokio::sync::Notify::new()));
    assert_eq!(
        again.objects.len(),
        3,
        "a new subscription starts from the state"
    );
}

/// The names at `at` (`None`: no snapshot covers it).
fn names_at(cache: &WatchCache, at: ReadAt) -> Option<Vec<String>> {
    let (objects, _) = cache.read(at)?;
    Some(objects.keys().map(|k| k.to_string()).collect())
}

#[tokio::test]
async fn snapshots_give_the_state_at_each_resource_version_and_leave_with_their_events() {
    let cache = cache(CacheConfig {
        capacity: 2,
        ..CacheConfig::default()
    });
    cache.add(cm("b", 2)).unwrap();
    cache.add(cm("a", 4)).unwrap();
    // The relist at 1 and the events at 2 and 4 are in a window of two events.
    assert_eq!(names_at(&cache, ReadAt::Exact(1)), Some(vec![]));
    assert_eq!(
        names_at(&cache, ReadAt::Exact(3)),
        Some(vec!["default/b".to_owned()])
    );
    assert_eq!(
        names_at(&cache, ReadAt::Latest),
        Some(vec!["default/a".to_owned(), "default/b".to_owned()])
    );
    // A third event pushes the one at 2 out, and the states up to it with it.
    cache.delete(cm("b", 5)).unwrap();
    assert!(!cache.can_serve_exact(3));
    assert_eq!(names_at(&cache, ReadAt::Exact(3)), None);
    assert_eq!(names_at(&cache, ReadAt::Exact(4)).map(|n| n.len()), Some(2));
    assert_eq!(
        names_at(&cache, ReadAt::Exact(5)),
        Some(vec!["default/a".to_owned()])
    );
    // A resource version the cache has not reached yet is served once it gets there.
    assert!(cache.can_serve_exact(9));
    assert_eq!(names_at(&cache, ReadAt::Exact(9)), None);
    // Emptying the window keeps only the current state.
    cache.compact_window();
    assert_eq!(names_at(&cache, ReadAt::Exact(4)), None);
    assert_eq!(
        names_at(&cache, ReadAt::Exact(5)),
        Some(vec!["default/a".to_owned()])
    );
    assert_eq!(cache.state.read().snapshots.len(), 1);
}
