//! RealFIFO (in-order) behaviours.

use std::convert::Infallible;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_deltafifo::DeltaType::{Added, Bookmark, Deleted, Replaced, Sync, SyncAll, Updated};
use kcache_deltafifo::{
    Delta, DeltaType, PopError, ProcessError, Queue, RealFifo, RealFifoOptions,
};
use kcache_store::Store;

use crate::common::{Summary, batch_keys, fill, key, known, pod, pop_summary, rv};
use kcache_testkit::within;

fn plain() -> RealFifo<Pod> {
    RealFifo::new(RealFifoOptions::default())
}

fn atomic() -> RealFifo<Pod> {
    RealFifo::new(RealFifoOptions::default().atomic_events(true))
}

fn summarize(deltas: &[Delta<Pod>]) -> Vec<Summary> {
    deltas
        .iter()
        .map(|d| {
            let o = d.object().unwrap();
            (d.kind(), o.is_tombstone(), rv(o.object()))
        })
        .collect()
}

async fn pop_batch(q: &RealFifo<Pod>) -> Result<(Vec<Summary>, bool), PopError<Infallible>> {
    within(
        "an item to pop",
        q.pop_batch(|d, initial| Ok::<_, ProcessError<Infallible>>((summarize(d), initial))),
    )
    .await
}

async fn pop_kind(q: &RealFifo<Pod>) -> DeltaType {
    within(
        "an item to pop",
        q.pop(|d, _| Ok::<_, ProcessError<Infallible>>(d.newest().unwrap().kind())),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn every_event_is_its_own_delta_in_arrival_order() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.add(pod(2, 1)).unwrap();
    q.update(pod(1, 2)).unwrap();
    q.delete(pod(2, 2)).unwrap();
    assert_eq!(q.len(), 4);
    assert_eq!(pop_summary(&q).await.unwrap().0, [(Added, false, 1)]);
    assert_eq!(pop_summary(&q).await.unwrap().0, [(Added, false, 1)]);
    assert_eq!(pop_summary(&q).await.unwrap().0, [(Updated, false, 2)]);
    assert_eq!(pop_summary(&q).await.unwrap().0, [(Deleted, false, 2)]);
}

#[tokio::test]
async fn delete_is_always_queued() {
    let q = plain();
    q.delete(pod(1, 1)).unwrap();
    q.delete(pod(1, 1)).unwrap();
    assert_eq!(q.len(), 2);
}

#[tokio::test]
async fn replace_queues_tombstones_before_replaced_items() {
    let (indexer, known) = known();
    fill(&indexer, [pod(1, 1), pod(2, 1)]);
    let q = RealFifo::new(RealFifoOptions::default().known_objects(known));
    q.update(pod(3, 2)).unwrap();
    q.replace(vec![pod(2, 5)], "5").unwrap();
    let mut all = Vec::new();
    while !q.is_empty() {
        all.extend(pop_summary(&q).await.unwrap().0);
    }
    // The queued key 3 (newest object rv 2) and the known key 1 get tombstones, then key 2 is replaced.
    assert_eq!(
        all,
        [
            (Updated, false, 2),
            (Deleted, true, 2),
            (Deleted, true, 1),
            (Replaced, false, 5)
        ]
    );
}

#[tokio::test]
async fn replace_skips_keys_whose_last_queued_delta_is_a_delete() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.delete(pod(1, 2)).unwrap();
    q.replace(vec![], "3").unwrap();
    assert_eq!(q.len(), 2);
}

#[tokio::test]
async fn resync_queues_sync_for_known_keys_with_nothing_queued() {
    let (indexer, known) = known();
    fill(&indexer, [pod(1, 1), pod(2, 1)]);
    let q = RealFifo::new(RealFifoOptions::default().known_objects(known));
    q.update(pod(1, 2)).unwrap();
    q.resync().unwrap();
    assert_eq!(q.len(), 2);
    pop_summary(&q).await.unwrap();
    assert_eq!(pop_summary(&q).await.unwrap().0, [(Sync, false, 1)]);
}

#[tokio::test]
async fn atomic_mode_replace_is_one_replaced_all() {
    let q = atomic();
    q.add(pod(9, 1)).unwrap();
    q.replace(vec![pod(1, 3), pod(2, 3)], "3").unwrap();
    assert_eq!(q.len(), 2);
    assert_eq!(pop_kind(&q).await, Added);
    let (rv, n) = within(
        "an item to pop",
        q.pop(|d, _| match d.newest().unwrap() {
            Delta::ReplacedAll {
                resource_version,
                objects,
            } => Ok::<_, ProcessError<Infallible>>((resource_version.clone(), objects.len())),
            other => panic!("unexpected {other:?}"),
        }),
    )
    .await
    .unwrap();
    assert_eq!((rv.as_str(), n), ("3", 2));
}

#[tokio::test]
async fn atomic_mode_resync_is_one_sync_all_and_bookmarks_are_queued() {
    let q = atomic();
    q.resync().unwrap();
    q.bookmark("7");
    assert_eq!(pop_kind(&q).await, SyncAll);
    assert_eq!(pop_kind(&q).await, Bookmark);
}

#[tokio::test]
async fn atomic_mode_initial_replace_is_one_pop_to_sync() {
    let q = atomic();
    q.replace(vec![pod(1, 1), pod(2, 1)], "1").unwrap();
    assert!(!q.has_synced());
    let initial = within(
        "an item to pop",
        q.pop(|_, initial| Ok::<_, ProcessError<Infallible>>(initial)),
    )
    .await
    .unwrap();
    assert!(initial);
    assert!(q.has_synced());
}

#[tokio::test]
async fn pop_batch_hands_out_deltas_of_unique_keys() {
    let q = plain();
    for (i, v) in [(1, 1), (2, 1), (3, 1), (2, 2), (4, 1)] {
        q.update(pod(i, v)).unwrap();
    }
    assert_eq!(pop_batch(&q).await.unwrap().0.len(), 3);
    assert_eq!(
        pop_batch(&q).await.unwrap().0,
        [(Updated, false, 2), (Updated, false, 1)]
    );
}

#[tokio::test]
async fn pop_batch_stops_at_the_batch_size() {
    let q = RealFifo::new(RealFifoOptions::default().batch_size(2));
    for i in 0..5 {
        q.add(pod(i, 1)).unwrap();
    }
    assert_eq!(pop_batch(&q).await.unwrap().0.len(), 2);
    assert_eq!(pop_batch(&q).await.unwrap().0.len(), 2);
    assert_eq!(pop_batch(&q).await.unwrap().0.len(), 1);
}

#[tokio::test]
async fn pop_batch_default_size_is_1000() {
    let q = plain();
    assert_eq!(q.batch_size(), kcache_deltafifo::DEFAULT_BATCH_SIZE);
    for i in 0..1001 {
        q.add(Arc::new(kcache_store::testing::pod(i, 1))).unwrap();
    }
    assert_eq!(pop_batch(&q).await.unwrap().0.len(), 1000);
    assert_eq!(pop_batch(&q).await.unwrap().0.len(), 1);
}

#[tokio::test]
async fn pop_batch_never_crosses_the_initial_list_boundary() {
    let q = plain();
    q.replace(vec![pod(1, 1), pod(2, 1)], "1").unwrap();
    q.add(pod(3, 2)).unwrap();
    q.add(pod(4, 2)).unwrap();
    let (first, initial) = pop_batch(&q).await.unwrap();
    assert_eq!(first, [(Replaced, false, 1), (Replaced, false, 1)]);
    assert!(initial);
    assert!(q.has_synced());
    let (second, initial) = pop_batch(&q).await.unwrap();
    assert_eq!(second.len(), 2);
    assert!(!initial);
}

#[tokio::test]
async fn pop_batch_hands_out_atomic_deltas_alone() {
    let q = atomic();
    q.add(pod(1, 1)).unwrap();
    q.resync().unwrap();
    q.add(pod(2, 1)).unwrap();
    let kinds = |d: &[Delta<Pod>], _| {
        Ok::<_, ProcessError<Infallible>>(d.iter().map(Delta::kind).collect::<Vec<_>>())
    };
    assert_eq!(
        within("an item to pop", q.pop_batch(kinds)).await.unwrap(),
        [Added]
    );
    assert_eq!(
        within("an item to pop", q.pop_batch(kinds)).await.unwrap(),
        [SyncAll]
    );
    assert_eq!(
        within("an item to pop", q.pop_batch(kinds)).await.unwrap(),
        [Added]
    );
}

#[tokio::test]
async fn pop_batch_requeue_puts_the_batch_back_in_order() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.add(pod(2, 1)).unwrap();
    let err = within(
        "an item to pop",
        q.pop_batch(|_, _| Err::<(), _>(ProcessError::Requeue(()))),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, PopError::Requeued(())));
    let keys: Vec<String> = q.list_keys().iter().map(|k| k.to_string()).collect();
    assert_eq!(keys, [key(1), key(2)]);
}

#[tokio::test]
async fn close_unblocks_pop_and_pop_batch() {
    let q = Arc::new(plain());
    let a = {
        let q = q.clone();
        tokio::spawn(async move { pop_summary(&*q).await.map(|_| ()) })
    };
    let b = {
        let q = q.clone();
        tokio::spawn(async move { pop_batch(&q).await.map(|_| ()) })
    };
    tokio::task::yield_now().await;
    q.close();
    assert!(a.await.unwrap().unwrap_err().is_closed());
    assert!(b.await.unwrap().unwrap_err().is_closed());
}

#[tokio::test]
async fn store_reads_group_the_queued_deltas_by_key() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.add(pod(2, 1)).unwrap();
    q.update(pod(1, 2)).unwrap();
    assert_eq!(q.get_by_key(&key(1)).unwrap().kinds(), [Added, Updated]);
    assert_eq!(q.list().len(), 2);
    assert_eq!(q.list_keys().len(), 2);
}

#[tokio::test]
async fn requeue_is_skipped_when_a_newer_delta_took_the_key() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.update(pod(1, 2)).unwrap();
    let err = within(
        "an item to pop",
        q.pop(|_, _| Err::<(), _>(ProcessError::Requeue(()))),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, PopError::Requeued(())));
    assert_eq!(q.len(), 1);
    assert_eq!(pop_summary(&q).await.unwrap().0, [(Updated, false, 2)]);
}

#[tokio::test]
async fn pop_keyed_batch_hands_out_each_delta_with_the_key_computed_when_it_was_queued() {
    let q = atomic();
    q.add(pod(1, 1)).unwrap();
    q.delete(pod(2, 1)).unwrap();
    let keys = within(
        "an item to pop",
        q.pop_keyed_batch(|batch, _| {
            Ok::<_, ProcessError<Infallible>>((batch_keys(batch), batch.len()))
        }),
    )
    .await
    .unwrap();
    assert_eq!(keys, (vec![Some(key(1)), Some(key(2))], 2));
    // An atomic delta has no key of its own.
    q.resync().unwrap();
    let keys = within(
        "an item to pop",
        q.pop_keyed_batch(|batch, _| {
            Ok::<_, ProcessError<Infallible>>(
                batch.iter().map(|(k, _)| k.is_some()).collect::<Vec<_>>(),
            )
        }),
    )
    .await
    .unwrap();
    assert_eq!(keys, [false]);
}

/// The kinds of a popped batch, and whether it was in the initial list.
async fn pop_kinds(q: &RealFifo<Pod>) -> (Vec<DeltaType>, bool) {
    within(
        "an item to pop",
        q.pop_batch(|d, initial| {
            Ok::<_, ProcessError<Infallible>>((d.iter().map(Delta::kind).collect(), initial))
        }),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_replace_in_pages_queues_each_page_at_once_and_syncs_only_after_its_end() {
    for q in [plain(), atomic()] {
        let mut pages = q.replace_in_pages();
        pages.page(vec![pod(0, 1), pod(1, 1)]).unwrap();
        assert_eq!(q.len(), 2);
        assert_eq!(pop_kinds(&q).await, (vec![Replaced, Replaced], true));
        // Every page popped, but the list has not ended: not synced.
        assert!(!q.has_synced());
        pages.page(vec![pod(2, 1)]).unwrap();
        pages.finish("7").unwrap();
        assert!(!q.has_synced());
        assert_eq!(pop_kinds(&q).await, (vec![Replaced], true));
        assert!(!q.has_synced());
        let end = within(
            "an item to pop",
            q.pop(|d, initial| {
                let Some(Delta::ReplaceEnd {
                    resource_version,
                    listed,
                }) = d.newest()
                else {
                    panic!("expected the end of the replace, got {d:?}");
                };
                let mut keys: Vec<String> = listed.iter().map(|k| k.to_string()).collect();
                keys.sort();
                Ok::<_, ProcessError<Infallible>>((resource_version.clone(), keys, initial))
            }),
        )
        .await
        .unwrap();
        assert_eq!(end, ("7".to_string(), vec![key(0), key(1), key(2)], true));
        assert!(q.has_synced());
    }
}

#[tokio::test]
async fn waiting_for_room_in_a_replace_in_pages_ends_when_the_consumer_took_the_queue() {
    let q = Arc::new(plain());
    let mut pages = q.replace_in_pages();
    pages.page(vec![pod(0, 1), pod(1, 1)]).unwrap();
    // Room for two queued deltas: at once.
    within("room in the queue", q.wait_len_at_most(2)).await;
    let consumer = {
        let q = Arc::clone(&q);
        tokio::spawn(async move { pop_kinds(&q).await })
    };
    within("room in the queue", q.wait_len_at_most(0)).await;
    assert!(q.is_empty());
    let consumed = within("the consumer's pop", consumer).await.unwrap();
    assert_eq!(consumed, (vec![Replaced, Replaced], true));
}
