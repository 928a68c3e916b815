//! The transform's one home: every lister-watcher runs it on each object it makes, given with
//! `ObjectMaking` when it is built (the behaviours the queues' and the indexer's transformers
//! had before).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_reflector::testing::FakeControllerSource;
use kcache_reflector::{ListOptions, ListWatchError, ListerWatcher, ObjectMaking, WatchEvent};
use kcache_store::TransformFunc;

use crate::support::pod;
use kcache_testkit::within;

/// Counts its calls and annotates the object.
fn counting(calls: Arc<AtomicUsize>) -> TransformFunc<Pod> {
    Arc::new(move |mut pod: Arc<Pod>| {
        calls.fetch_add(1, Ordering::SeqCst);
        let annotations = Arc::make_mut(&mut pod)
            .metadata
            .annotations
            .get_or_insert_default();
        annotations.insert("transformed".into(), "yes".into());
        Ok(pod)
    })
}

fn transformed(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.get("transformed").map(String::as_str) == Some("yes"))
}

#[tokio::test(start_paused = true)]
async fn the_transform_runs_once_on_every_listed_item_and_watched_object() {
    let source = Arc::new(FakeControllerSource::<Pod>::new());
    source.add(pod("a", ""));
    source.add(pod("b", ""));
    let calls = Arc::new(AtomicUsize::new(0));
    let lw = Box::new(Arc::clone(&source))
        .making_objects(ObjectMaking::default().transform(counting(Arc::clone(&calls))));

    let page = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(page.items.len(), 2);
    assert!(page.items.iter().all(|p| transformed(p)));
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    let mut events = lw
        .watch(&ListOptions {
            resource_version: Some(page.resource_version.clone()),
            allow_watch_bookmarks: true,
            ..ListOptions::default()
        })
        .await
        .unwrap();
    source.modify(pod("a", ""));
    source.delete(pod("b", ""));
    source.send_bookmark();
    let Some(Ok(WatchEvent::Modified(a))) = within("the next watch event", events.next()).await
    else {
        panic!("expected the modification of a")
    };
    assert!(transformed(&a));
    let Some(Ok(WatchEvent::Deleted(b))) = within("the next watch event", events.next()).await
    else {
        panic!("expected the deletion of b")
    };
    assert!(transformed(&b));
    assert!(matches!(
        within("the next watch event", events.next()).await,
        Some(Ok(WatchEvent::Bookmark(_)))
    ));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        4,
        "once per object, never on a bookmark"
    );
}

#[tokio::test(start_paused = true)]
async fn a_rejected_list_item_fails_the_list_and_a_rejected_watch_event_is_skipped() {
    let source = Arc::new(FakeControllerSource::<Pod>::new());
    source.add(pod("bad", ""));
    let reject_bad: TransformFunc<Pod> = Arc::new(|pod: Arc<Pod>| {
        if pod.metadata.name.as_deref() == Some("bad") {
            Err("rejected".into())
        } else {
            Ok(pod)
        }
    });
    let lw =
        Box::new(Arc::clone(&source)).making_objects(ObjectMaking::default().transform(reject_bad));
    let err = lw.list(&ListOptions::default()).await.unwrap_err();
    assert!(matches!(err, ListWatchError::Transform(_)), "{err:?}");

    let mut events = lw
        .watch(&ListOptions {
            resource_version: Some(source.resource_version()),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    source.modify(pod("bad", ""));
    source.add(pod("good", ""));
    let Some(Ok(WatchEvent::Added(good))) = within("the next watch event", events.next()).await
    else {
        panic!("expected the addition of good, the rejected event skipped")
    };
    assert_eq!(good.metadata.name.as_deref(), Some("good"));
}

#[tokio::test(start_paused = true)]
async fn without_a_transform_objects_pass_unchanged() {
    let source = Arc::new(FakeControllerSource::<Pod>::new());
    let added = source.add(pod("a", ""));
    let lw = Box::new(Arc::clone(&source)).making_objects(ObjectMaking::default());
    let page = lw.list(&ListOptions::default()).await.unwrap();
    assert!(Arc::ptr_eq(&page.items[0], &added), "the source's own Arc");
}
