//! DeltaFIFO behaviours.

use std::convert::Infallible;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_deltafifo::DeltaType::{Added, Deleted, Replaced, Sync, Updated};
use kcache_deltafifo::{Delta, DeltaFifo, DeltaFifoOptions, Deltas, PopError, ProcessError, Queue};
use kcache_store::{DeletedFinalStateUnknown, MaybeTombstone, Store, Transaction, TransactionType};

use crate::common::{batch_keys, fill, key, known, pod, pop_summary, rv};
use kcache_testkit::within;

fn plain() -> DeltaFifo<Pod> {
    DeltaFifo::new(DeltaFifoOptions::default())
}

fn with_known(known: Arc<dyn kcache_store::KnownObjects<Pod>>) -> DeltaFifo<Pod> {
    DeltaFifo::new(DeltaFifoOptions::default().known_objects(known))
}

#[tokio::test]
async fn producers_order_preserved() {
    let q = plain();
    for i in 0..10 {
        q.add(pod(i, 1)).unwrap();
    }
    // Touching an earlier key again does not move it.
    q.update(pod(3, 2)).unwrap();
    for i in 0..10 {
        let popped = q.pop(|d, _| Ok::<_, ProcessError<Infallible>>(q.key_of_deltas(d).unwrap()));
        let key_popped = within("an item to pop", popped).await;
        assert_eq!(key_popped.unwrap(), key(i));
    }
}

#[tokio::test]
async fn add_update_delete_on_one_key_gives_one_entry_one_pop_newest_object() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.update(pod(1, 2)).unwrap();
    q.delete(pod(1, 3)).unwrap();
    assert_eq!(q.len(), 1);
    assert_eq!(q.list_keys().len(), 1);
    let (deltas, _) = pop_summary(&q).await.unwrap();
    assert_eq!(
        deltas,
        [(Added, false, 1), (Updated, false, 2), (Deleted, false, 3)]
    );
    assert!(q.is_empty());
    q.close();
    assert!(pop_summary(&q).await.unwrap_err().is_closed());
}

#[tokio::test]
async fn delete_then_replace_with_same_key_gives_deleted_old_then_sync_new() {
    let (indexer, known) = known();
    fill(&indexer, [pod(1, 1)]);
    let q = with_known(known);
    q.delete(pod(1, 1)).unwrap();
    q.replace(vec![pod(1, 2)], "2").unwrap();
    let (deltas, _) = pop_summary(&q).await.unwrap();
    assert_eq!(deltas, [(Deleted, false, 1), (Sync, false, 2)]);
}

#[tokio::test]
async fn replace_makes_exactly_one_tombstone_for_queue_only_keys_across_repeated_replaces() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.replace(vec![], "5").unwrap();
    q.replace(vec![], "6").unwrap();
    q.replace(vec![], "7").unwrap();
    let (deltas, _) = pop_summary(&q).await.unwrap();
    assert_eq!(deltas, [(Added, false, 1), (Deleted, true, 1)]);
}

#[tokio::test]
async fn explicit_delete_absorbs_the_replace_tombstone() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.replace(vec![], "5").unwrap();
    q.delete(pod(1, 4)).unwrap();
    let (deltas, _) = pop_summary(&q).await.unwrap();
    assert_eq!(deltas, [(Added, false, 1), (Deleted, false, 4)]);
}

#[tokio::test]
async fn consecutive_deletes_keep_the_older_unless_it_is_a_tombstone() {
    let (indexer, known) = known();
    fill(&indexer, [pod(1, 1)]);
    let q = with_known(known);
    q.delete(pod(1, 2)).unwrap();
    q.delete(pod(1, 3)).unwrap();
    let (deltas, _) = pop_summary(&q).await.unwrap();
    assert_eq!(deltas, [(Deleted, false, 2)]);
}

#[tokio::test]
async fn tombstone_object_from_newest_queued_delta_else_known_objects() {
    let (indexer, known) = known();
    // Key 1 is queued (newest rv 3) and known (rv 1); key 2 is only known.
    fill(&indexer, [pod(1, 1), pod(2, 1)]);
    let q = with_known(known);
    q.update(pod(1, 2)).unwrap();
    q.update(pod(1, 3)).unwrap();
    q.replace(vec![], "9").unwrap();
    let (first, _) = pop_summary(&q).await.unwrap();
    assert_eq!(
        first,
        [(Updated, false, 2), (Updated, false, 3), (Deleted, true, 3)]
    );
    let tombstone = within(
        "an item to pop",
        q.pop(|d, _| {
            Ok::<_, ProcessError<Infallible>>(d.newest().unwrap().object().unwrap().clone())
        }),
    )
    .await
    .unwrap();
    let MaybeTombstone::Tombstone(t) = tombstone else {
        panic!("expected a tombstone")
    };
    assert_eq!(t.key, key(2));
    assert_eq!(rv(&t.obj), 1);
}

#[tokio::test]
async fn tombstone_of_a_queued_tombstone_unwraps_its_object() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.replace(vec![], "2").unwrap();
    q.replace(vec![], "3").unwrap();
    let obj = within(
        "an item to pop",
        q.pop(|d, _| {
            Ok::<_, ProcessError<Infallible>>(d.newest().unwrap().object().unwrap().clone())
        }),
    )
    .await
    .unwrap();
    let MaybeTombstone::Tombstone(t) = obj else {
        panic!("expected a tombstone")
    };
    assert_eq!(rv(&t.obj), 1);
}

#[tokio::test]
async fn emit_replaced_option() {
    let default = plain();
    default.replace(vec![pod(1, 1)], "1").unwrap();
    assert_eq!(pop_summary(&default).await.unwrap().0, [(Sync, false, 1)]);

    let replaced = DeltaFifo::new(DeltaFifoOptions::default().emit_delta_type_replaced(true));
    replaced.replace(vec![pod(1, 1)], "1").unwrap();
    assert_eq!(
        pop_summary(&replaced).await.unwrap().0,
        [(Replaced, false, 1)]
    );
}

#[tokio::test]
async fn delete_of_unknown_key_dropped_unless_known() {
    let q = plain();
    q.delete(pod(1, 1)).unwrap();
    assert!(q.is_empty());

    let (indexer, known) = known();
    fill(&indexer, [pod(1, 1)]);
    let q = with_known(known);
    q.delete(pod(2, 1)).unwrap();
    assert!(q.is_empty());
    q.delete(pod(1, 2)).unwrap();
    assert_eq!(pop_summary(&q).await.unwrap().0, [(Deleted, false, 2)]);
}

#[tokio::test]
async fn resync_only_for_keys_with_nothing_queued() {
    let (indexer, known) = known();
    fill(&indexer, [pod(1, 1), pod(2, 1)]);
    let q = with_known(known);
    q.update(pod(1, 2)).unwrap();
    q.resync().unwrap();
    assert_eq!(pop_summary(&q).await.unwrap().0, [(Updated, false, 2)]);
    assert_eq!(pop_summary(&q).await.unwrap().0, [(Sync, false, 1)]);
    assert!(q.is_empty());
}

#[tokio::test]
async fn resync_without_known_objects_does_nothing() {
    let q = plain();
    q.resync().unwrap();
    assert!(q.is_empty());
}

#[tokio::test]
async fn add_then_delete_gives_two_deltas() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.delete(pod(1, 2)).unwrap();
    assert_eq!(
        pop_summary(&q).await.unwrap().0,
        [(Added, false, 1), (Deleted, false, 2)]
    );
}

#[tokio::test]
async fn has_synced_empty_queue_is_not_synced() {
    assert!(!plain().has_synced());
}

#[tokio::test]
async fn has_synced_after_add_or_empty_replace() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    assert!(q.has_synced());
    let q = plain();
    q.replace(vec![], "1").unwrap();
    assert!(q.has_synced());
}

#[tokio::test]
async fn has_synced_n_item_replace_needs_n_pops_and_duplicate_keys_count_once() {
    let q = plain();
    q.replace(vec![pod(1, 1), pod(2, 1), pod(1, 2)], "2")
        .unwrap();
    assert_eq!(q.len(), 2);
    let (first, initial) = pop_summary(&q).await.unwrap();
    assert_eq!(first, [(Sync, false, 1), (Sync, false, 2)]);
    assert!(initial);
    assert!(!q.has_synced());
    let (_, initial) = pop_summary(&q).await.unwrap();
    assert!(initial);
    assert!(q.has_synced());
}

#[tokio::test]
async fn has_synced_tombstones_count_and_carry_is_in_initial_list() {
    let (indexer, known) = known();
    fill(&indexer, [pod(9, 1)]);
    let q = with_known(known);
    q.replace(vec![pod(1, 1)], "2").unwrap();
    assert_eq!(q.len(), 2);
    let (_, initial) = pop_summary(&q).await.unwrap();
    assert!(initial && !q.has_synced());
    let (tombstone, initial) = pop_summary(&q).await.unwrap();
    assert_eq!(tombstone, [(Deleted, true, 1)]);
    assert!(initial);
    assert!(q.has_synced());
    // Later items are not part of the initial list.
    q.add(pod(2, 1)).unwrap();
    assert!(!pop_summary(&q).await.unwrap().1);
}

#[tokio::test]
async fn later_replace_does_not_change_has_synced() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.replace(vec![pod(2, 1), pod(3, 1)], "3").unwrap();
    assert!(q.has_synced());
    assert!(!pop_summary(&q).await.unwrap().1);
}

#[tokio::test]
async fn re_added_key_keeps_its_position() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.add(pod(2, 1)).unwrap();
    q.add(pod(3, 1)).unwrap();
    q.update(pod(1, 2)).unwrap();
    q.add(pod(2, 2)).unwrap();
    let keys: Vec<String> = q.list_keys().iter().map(|k| k.to_string()).collect();
    assert_eq!(keys, [key(1), key(2), key(3)]);
    assert_eq!(
        pop_summary(&q).await.unwrap().0,
        [(Added, false, 1), (Updated, false, 2)]
    );
}

#[tokio::test]
async fn close_unblocks_pop() {
    let q = Arc::new(plain());
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { pop_summary(&*q).await })
        })
        .collect();
    tokio::task::yield_now().await;
    q.close();
    assert!(q.is_closed());
    for w in waiters {
        assert!(w.await.unwrap().unwrap_err().is_closed());
    }
}

#[tokio::test]
async fn pop_waits_for_an_add() {
    let q = Arc::new(plain());
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move { pop_summary(&*q).await })
    };
    tokio::task::yield_now().await;
    q.add(pod(1, 1)).unwrap();
    assert_eq!(waiter.await.unwrap().unwrap().0, [(Added, false, 1)]);
}

#[tokio::test]
async fn closed_queue_still_hands_out_queued_items() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.close();
    assert!(pop_summary(&q).await.is_ok());
    assert!(pop_summary(&q).await.unwrap_err().is_closed());
}

#[tokio::test]
async fn requeue_puts_the_item_back_and_returns_the_inner_error() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.add(pod(2, 1)).unwrap();
    let requeued = q.pop(|_, _| Err::<(), _>(ProcessError::Requeue("busy")));
    let err = within("an item to pop", requeued).await.unwrap_err();
    assert!(matches!(err, PopError::Requeued("busy")));
    // Put back at the end, with its deltas.
    assert_eq!(
        q.list_keys()
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>(),
        [key(2), key(1)]
    );
    let failed = q.pop(|_, _| Err::<(), _>(ProcessError::Fail("bad")));
    let err = within("an item to pop", failed).await.unwrap_err();
    assert_eq!(err.into_inner(), Some("bad"));
    assert_eq!(q.len(), 1);
    assert_eq!(pop_summary(&q).await.unwrap().0, [(Added, false, 1)]);
}

#[tokio::test]
async fn add_if_not_present_only_adds_missing_keys() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.add_if_not_present(Deltas::one(Delta::new(Added, pod(1, 5))))
        .unwrap();
    q.add_if_not_present(Deltas::one(Delta::new(Added, pod(2, 5))))
        .unwrap();
    assert_eq!(pop_summary(&q).await.unwrap().0, [(Added, false, 1)]);
    assert_eq!(pop_summary(&q).await.unwrap().0, [(Added, false, 5)]);
}

#[tokio::test]
async fn key_of_accepts_deltas_and_tombstones() {
    let q = plain();
    let tombstone = MaybeTombstone::Tombstone(DeletedFinalStateUnknown {
        key: "custom/key".into(),
        obj: pod(1, 1),
    });
    assert_eq!(q.key_of(&tombstone).unwrap(), "custom/key");
    assert_eq!(
        q.key_of(&MaybeTombstone::Object(pod(1, 1))).unwrap(),
        key(1)
    );
    let deltas: Deltas<Pod> = [
        Delta::new(Added, pod(2, 1)),
        Delta::with_payload(Deleted, tombstone),
    ]
    .into_iter()
    .collect();
    assert_eq!(q.key_of_deltas(&deltas).unwrap(), "custom/key");
    let empty: Deltas<Pod> = std::iter::empty().collect();
    assert!(q.key_of_deltas(&empty).is_err());
}

#[tokio::test]
async fn store_reads_show_the_queued_deltas() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.update(pod(1, 2)).unwrap();
    assert_eq!(q.get(&pod(1, 9)).unwrap().unwrap().len(), 2);
    assert_eq!(q.get_by_key(&key(1)).unwrap().kinds(), [Added, Updated]);
    assert!(q.get_by_key(&key(2)).is_none());
    assert_eq!(q.list().len(), 1);
}

#[tokio::test]
async fn a_queue_records_no_resource_version_the_cache_it_feeds_does() {
    let q = plain();
    q.replace(vec![], "10").unwrap();
    q.bookmark("12");
    assert_eq!(q.last_store_sync_resource_version(), "");
}

#[tokio::test]
async fn transaction_applies_operations_in_order() {
    let q = plain();
    q.transaction(vec![
        Transaction::new(TransactionType::Added, pod(1, 1)),
        Transaction::new(TransactionType::Updated, pod(1, 2)),
        Transaction::new(TransactionType::Deleted, pod(2, 1)),
    ])
    .unwrap();
    assert_eq!(
        pop_summary(&q).await.unwrap().0,
        [(Added, false, 1), (Updated, false, 2)]
    );
    assert!(q.is_empty());
}

#[tokio::test]
async fn key_errors_are_reported_not_queued() {
    let q = plain();
    let nameless = Arc::new(Pod::default());
    assert!(q.add(nameless.clone()).is_err());
    assert!(q.replace(vec![pod(1, 1), nameless], "1").is_err());
    assert!(q.is_empty());
}

#[tokio::test]
async fn a_dropped_pop_loses_nothing() {
    let q = Arc::new(plain());
    let first = {
        let q = q.clone();
        tokio::spawn(async move { pop_summary(&*q).await })
    };
    tokio::task::yield_now().await;
    let second = {
        let q = q.clone();
        tokio::spawn(async move { pop_summary(&*q).await })
    };
    tokio::task::yield_now().await;
    // The add wakes the first waiter, which is dropped before it runs: the wakeup passes on.
    q.add(pod(1, 1)).unwrap();
    first.abort();
    assert_eq!(second.await.unwrap().unwrap().0, [(Added, false, 1)]);
    assert!(first.await.unwrap_err().is_cancelled());
}

#[tokio::test]
async fn debug_output_inside_a_process_function_does_not_deadlock() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    let popped = q.pop(|_, _| Ok::<_, ProcessError<Infallible>>(format!("{q:?}")));
    let inside = within("an item to pop", popped).await.unwrap();
    assert!(inside.contains("<locked>"));
    assert!(format!("{q:?}").contains("queued: 0"));
}

#[test]
fn a_store_write_kind_becomes_the_delta_type_it_queues() {
    use kcache_deltafifo::DeltaType;
    use kcache_store::TransactionType;
    assert_eq!(DeltaType::from(TransactionType::Added), DeltaType::Added);
    assert_eq!(
        DeltaType::from(TransactionType::Updated),
        DeltaType::Updated
    );
    assert_eq!(
        DeltaType::from(TransactionType::Deleted),
        DeltaType::Deleted
    );
}

#[tokio::test]
async fn pop_keyed_hands_out_the_key_of_the_deltas() {
    let q = plain();
    q.add(pod(1, 1)).unwrap();
    q.update(pod(1, 2)).unwrap();
    let popped = q.pop_keyed(|batch, _| Ok::<_, ProcessError<Infallible>>(batch_keys(batch)));
    let keys = within("an item to pop", popped).await.unwrap();
    assert_eq!(keys, [Some(key(1)), Some(key(1))]);
}
