//! The storage conformance suite: the `Storage` contract, run against every backend (memory and
//! etcd) by `on_every_backend!`.

use kcache_testkit::within;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kcache_apiserver::{
    EventType, ListRequest, Object, Preconditions, Storage, StorageError, StorageWatch, UpdateFn,
    WatchItem,
};
use kube_core::Resource;
use serde_json::json;

use crate::support::{Backend, on_every_backend};

const PREFIX: &str = "/configmaps/default/";

fn key(name: &str) -> String {
    format!("{PREFIX}{name}")
}

fn cm(name: &str, value: &str) -> Object {
    Object::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"v": value}
    }))
    .unwrap()
}

fn value_of(obj: &Object) -> String {
    obj.data()["data"]["v"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// An update function setting `data.v` to `value`.
fn set_value(value: &'static str) -> UpdateFn {
    Box::new(move |cur| {
        let cur = cur.ok_or_else(|| kcache_apiserver::ApiError::bad_request("absent"))?;
        let mut next = (**cur).clone();
        let mut data = next.data();
        data.insert("data".into(), json!({"v": value}));
        next.set_data(data);
        Ok(next)
    })
}

async fn list(
    storage: &dyn Storage,
    revision: Option<u64>,
    start: Option<String>,
    limit: usize,
) -> Result<kcache_apiserver::ListResult, StorageError> {
    storage
        .list(ListRequest {
            prefix: PREFIX.into(),
            revision,
            start_key: start,
            limit: Some(limit),
        })
        .await
}

fn names(items: &[Arc<Object>]) -> Vec<String> {
    items
        .iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect()
}

/// The next item of a storage watch (fails the test after 10 s without one).
async fn next_item(watch: &mut StorageWatch) -> Result<WatchItem, StorageError> {
    tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("no storage watch item within 10 s")
        .expect("the storage watch ended")
}

/// The next event of a storage watch, skipping progress notifications.
async fn next_event(watch: &mut StorageWatch) -> kcache_apiserver::StorageEvent {
    loop {
        if let WatchItem::Event(e) = next_item(watch).await.unwrap() {
            return e;
        }
    }
}

async fn create_assigns_increasing_revisions_and_rejects_duplicates(backend: Backend) {
    let Some(s) = backend.storage().await else {
        return;
    };
    let before = s.revision().await.unwrap();
    let a = s.create(key("a"), cm("a", "1")).await.unwrap();
    let b = s.create(key("b"), cm("b", "1")).await.unwrap();
    assert!(a.resource_version_u64() > before);
    assert!(b.resource_version_u64() > a.resource_version_u64());
    assert_eq!(s.revision().await.unwrap(), b.resource_version_u64());
    let err = s.create(key("a"), cm("a", "2")).await.unwrap_err();
    assert!(matches!(err, StorageError::AlreadyExists(_)), "{err:?}");
    let got = s.get(key("a")).await.unwrap().unwrap();
    assert_eq!(got.raw(), a.raw(), "get returns the object as created");
    assert!(s.get(key("absent")).await.unwrap().is_none());
}

async fn guaranteed_update_retries_until_no_writer_raced_it(backend: Backend) {
    let Some(s) = backend.storage().await else {
        return;
    };
    s.create(key("counter"), cm("counter", "0")).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let s = Arc::clone(&s.inner);
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                let f: UpdateFn = Box::new(|cur| {
                    let cur =
                        cur.ok_or_else(|| kcache_apiserver::ApiError::bad_request("absent"))?;
                    let n: u64 = value_of(cur).parse().unwrap_or(0);
                    let mut next = (**cur).clone();
                    let mut data = next.data();
                    data.insert("data".into(), json!({"v": (n + 1).to_string()}));
                    next.set_data(data);
                    Ok(next)
                });
                s.guaranteed_update(key("counter"), f).await.unwrap();
            }
        }));
    }
    for t in tasks {
        within("a writer to finish", t).await.unwrap();
    }
    let last = s.get(key("counter")).await.unwrap().unwrap();
    assert_eq!(value_of(&last), "40");
    assert_eq!(last.resource_version_u64(), s.revision().await.unwrap());
}

async fn noop_update_keeps_resource_version_and_emits_no_event(backend: Backend) {
    let Some(s) = backend.storage().await else {
        return;
    };
    let a = s.create(key("a"), cm("a", "1")).await.unwrap();
    let rev = a.resource_version_u64();
    let mut watch = s.watch(PREFIX.into(), rev, false).await.unwrap();
    // The same state (even with another resource version in the new object) is not written.
    let f: UpdateFn = Box::new(|cur| Ok(cur.unwrap().with_resource_version(1)));
    let same = s.guaranteed_update(key("a"), f).await.unwrap();
    assert_eq!(same.resource_version_u64(), rev);
    let same = s.guaranteed_update(key("a"), set_value("1")).await.unwrap();
    assert_eq!(same.resource_version_u64(), rev);
    assert_eq!(s.revision().await.unwrap(), rev, "no revision was used");
    let changed = s.guaranteed_update(key("a"), set_value("2")).await.unwrap();
    assert!(changed.resource_version_u64() > rev);
    let first = next_event(&mut watch).await;
    assert_eq!(
        first.revision,
        changed.resource_version_u64(),
        "the first event is the real change"
    );
    assert_eq!(value_of(&first.object), "2");
}

async fn delete_checks_preconditions_and_returns_the_last_state_at_the_delete_revision(
    backend: Backend,
) {
    let Some(s) = backend.storage().await else {
        return;
    };
    let a = s.create(key("a"), cm("a", "1")).await.unwrap();
    let stale = Preconditions {
        resource_version: Some(a.resource_version_u64() + 100),
        uid: None,
    };
    let err = s.delete(key("a"), stale).await.unwrap_err();
    assert!(matches!(err, StorageError::Conflict { .. }), "{err:?}");
    let wrong_uid = Preconditions {
        resource_version: None,
        uid: Some("not-the-uid".into()),
    };
    let err = s.delete(key("a"), wrong_uid).await.unwrap_err();
    assert!(matches!(err, StorageError::Conflict { .. }), "{err:?}");
    let exact = Preconditions {
        resource_version: Some(a.resource_version_u64()),
        uid: None,
    };
    let gone = s.delete(key("a"), exact).await.unwrap();
    assert!(gone.resource_version_u64() > a.resource_version_u64());
    assert_eq!(gone.resource_version_u64(), s.revision().await.unwrap());
    assert_eq!(value_of(&gone), "1");
    assert!(s.get(key("a")).await.unwrap().is_none());
    let err = s
        .delete(key("a"), Preconditions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::NotFound(_)), "{err:?}");
}

async fn list_pages_at_one_revision_with_the_count_of_what_follows(backend: Backend) {
    let Some(s) = backend.storage().await else {
        return;
    };
    for name in ["a", "b", "c", "d", "e"] {
        s.create(key(name), cm(name, "1")).await.unwrap();
    }
    s.create("/configmaps/other/x".into(), cm("x", "1"))
        .await
        .unwrap();
    let first = list(&**s, None, None, 2).await.unwrap();
    assert_eq!(names(&first.items), ["a", "b"]);
    assert_eq!(first.remaining, 3);
    let at = first.revision;
    // Writes after the first page do not show in the following ones.
    s.delete(key("c"), Preconditions::default()).await.unwrap();
    s.create(key("bb"), cm("bb", "1")).await.unwrap();
    let mut start = first.last_key.clone().unwrap();
    start.push('\0');
    let second = list(&**s, Some(at), Some(start), 2).await.unwrap();
    assert_eq!(names(&second.items), ["c", "d"]);
    assert_eq!(second.revision, at);
    assert_eq!(second.remaining, 1);
    let mut start = second.last_key.clone().unwrap();
    start.push('\0');
    let last = list(&**s, Some(at), Some(start), 2).await.unwrap();
    assert_eq!(names(&last.items), ["e"]);
    assert_eq!(last.last_key, None);
    assert_eq!(last.remaining, 0);
    let now = list(&**s, None, None, 0).await.unwrap();
    assert_eq!(names(&now.items), ["a", "b", "bb", "d", "e"]);
    assert_eq!(now.revision, s.revision().await.unwrap());
}

/// Longer than one etcd range request (1,000 keys): lists are read in pages at one revision.
async fn list_returns_every_key_however_many(backend: Backend) {
    let Some(s) = backend.storage().await else {
        return;
    };
    let mut tasks = Vec::new();
    for w in 0..8 {
        let s = Arc::clone(&s.inner);
        tasks.push(tokio::spawn(async move {
            for i in (w..1201).step_by(8) {
                let name = format!("cm-{i:04}");
                s.create(key(&name), cm(&name, "1")).await.unwrap();
            }
        }));
    }
    for t in tasks {
        within("a writer to finish", t).await.unwrap();
    }
    let all = list(&**s, None, None, 0).await.unwrap();
    assert_eq!(all.items.len(), 1201);
    assert_eq!(all.last_key, None);
    let most = list(&**s, None, None, 1100).await.unwrap();
    assert_eq!(most.items.len(), 1100);
    assert_eq!(most.remaining, 101);
    assert_eq!(most.last_key.as_deref(), Some(key("cm-1099").as_str()));
}

async fn reads_and_watches_before_the_compaction_point_are_compacted(backend: Backend) {
    let Some(s) = backend.storage().await else {
        return;
    };
    let a = s.create(key("a"), cm("a", "1")).await.unwrap();
    let old = a.resource_version_u64();
    s.guaranteed_update(key("a"), set_value("2")).await.unwrap();
    let at_old = list(&**s, Some(old), None, 0).await.unwrap();
    assert_eq!(
        value_of(&at_old.items[0]),
        "1",
        "an old revision shows the old state"
    );
    s.create(key("b"), cm("b", "1")).await.unwrap();
    let now = s.revision().await.unwrap();
    s.compact(now).await.unwrap();
    let err = list(&**s, Some(old), None, 0).await.unwrap_err();
    assert!(matches!(err, StorageError::Compacted { .. }), "{err:?}");
    let watched = match s.watch(PREFIX.into(), old, false).await {
        Err(err) => err,
        Ok(mut watch) => next_item(&mut watch).await.unwrap_err(),
    };
    assert!(
        matches!(watched, StorageError::Compacted { .. }),
        "{watched:?}"
    );
    let current = list(&**s, Some(now), None, 0).await.unwrap();
    assert_eq!(names(&current.items), ["a", "b"]);
}

async fn reads_at_a_future_revision_fail(backend: Backend) {
    let Some(s) = backend.storage().await else {
        return;
    };
    s.create(key("a"), cm("a", "1")).await.unwrap();
    let now = s.revision().await.unwrap();
    let err = list(&**s, Some(now + 100), None, 0).await.unwrap_err();
    assert!(
        matches!(err, StorageError::FutureRevision { .. }),
        "{err:?}"
    );
}

async fn watch_replays_writes_after_its_revision_with_previous_states(backend: Backend) {
    let Some(s) = backend.storage().await else {
        return;
    };
    let from = s.revision().await.unwrap();
    let a1 = s.create(key("a"), cm("a", "1")).await.unwrap();
    let a2 = s.guaranteed_update(key("a"), set_value("2")).await.unwrap();
    s.create("/configmaps/other/x".into(), cm("x", "1"))
        .await
        .unwrap();
    let gone = s.delete(key("a"), Preconditions::default()).await.unwrap();
    let mut watch = s.watch(PREFIX.into(), from, false).await.unwrap();
    let added = next_event(&mut watch).await;
    assert_eq!(added.event_type, EventType::Added);
    assert_eq!(added.key.as_ref(), key("a"));
    assert_eq!(added.object.raw(), a1.raw());
    assert!(added.previous.is_none());
    let modified = next_event(&mut watch).await;
    assert_eq!(modified.event_type, EventType::Modified);
    assert_eq!(modified.object.raw(), a2.raw());
    assert_eq!(modified.previous.as_ref().unwrap().raw(), a1.raw());
    let deleted = next_event(&mut watch).await;
    assert_eq!(deleted.event_type, EventType::Deleted);
    assert_eq!(deleted.revision, gone.resource_version_u64());
    assert_eq!(
        deleted.object.raw(),
        gone.raw(),
        "the last state at the delete's revision"
    );
    assert_eq!(deleted.previous.as_ref().unwrap().raw(), a2.raw());
    // Then live writes.
    let b = s.create(key("b"), cm("b", "1")).await.unwrap();
    let live = next_event(&mut watch).await;
    assert_eq!(live.object.raw(), b.raw());
}

async fn watch_with_progress_reaches_writes_outside_its_prefix(backend: Backend) {
    let Some(s) = backend.storage().await else {
        return;
    };
    let from = s.revision().await.unwrap();
    let mut watch = s.watch(PREFIX.into(), from, true).await.unwrap();
    let elsewhere = s
        .create("/configmaps/other/x".into(), cm("x", "1"))
        .await
        .unwrap()
        .resource_version_u64();
    loop {
        match next_item(&mut watch).await.unwrap() {
            WatchItem::Progress(rev) if rev >= elsewhere => break,
            WatchItem::Progress(_) => {}
            WatchItem::Event(e) => panic!("an event outside the prefix: {e:?}"),
        }
    }
}

on_every_backend!(
    create_assigns_increasing_revisions_and_rejects_duplicates,
    guaranteed_update_retries_until_no_writer_raced_it,
    noop_update_keeps_resource_version_and_emits_no_event,
    delete_checks_preconditions_and_returns_the_last_state_at_the_delete_revision,
    list_pages_at_one_revision_with_the_count_of_what_follows,
    list_returns_every_key_however_many,
    reads_and_watches_before_the_compaction_point_are_compacted,
    reads_at_a_future_revision_fail,
    watch_replays_writes_after_its_revision_with_previous_states,
    watch_with_progress_reaches_writes_outside_its_prefix,
);

/// etcd killed and started again under an open storage watch: the watch resumes from where it
/// was and misses nothing.
#[cfg(feature = "etcd")]
#[tokio::test]
async fn etcd_storage_watch_resumes_after_etcd_restarts() {
    let Some(mut s) = Backend::Etcd.storage().await else {
        return;
    };
    let a = s.create(key("a"), cm("a", "1")).await.unwrap();
    let mut watch = s
        .watch(PREFIX.into(), a.resource_version_u64(), false)
        .await
        .unwrap();
    let b = s.create(key("b"), cm("b", "1")).await.unwrap();
    assert_eq!(next_event(&mut watch).await.object.raw(), b.raw());
    let etcd = s.etcd.as_mut().unwrap();
    etcd.kill().await.unwrap();
    let err = s.create(key("c"), cm("c", "1")).await.unwrap_err();
    assert!(matches!(err, StorageError::Backend(_)), "{err:?}");
    let etcd = s.etcd.as_mut().unwrap();
    etcd.restart().await.unwrap();
    // The client reconnects on its own; no signal tells when, so poll (bounded).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let c = loop {
        match s.create(key("c"), cm("c", "1")).await {
            Ok(c) => break c,
            Err(StorageError::Backend(e)) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(error = %e, "etcd not reachable yet");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    };
    let d = s.guaranteed_update(key("a"), set_value("2")).await.unwrap();
    assert_eq!(next_event(&mut watch).await.object.raw(), c.raw());
    assert_eq!(next_event(&mut watch).await.object.raw(), d.raw());
}
