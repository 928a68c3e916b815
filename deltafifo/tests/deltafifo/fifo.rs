//! FIFO behaviours.

use std::convert::Infallible;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_deltafifo::{Fifo, PopError, ProcessError, Queue};
use kcache_store::Store;

use crate::common::{key, pod, rv};
use kcache_testkit::within;

async fn pop(q: &Fifo<Pod>) -> Result<(String, u64, bool), PopError<Infallible>> {
    let popped = q.pop(|p, initial| {
        Ok::<_, ProcessError<Infallible>>((q.key_of(p).unwrap(), rv(p), initial))
    });
    within("an item to pop", popped).await
}

#[tokio::test]
async fn fifo_add_and_update_keep_the_place_and_store_the_newest() {
    let q = Fifo::new();
    q.add(pod(1, 1)).unwrap();
    q.add(pod(2, 1)).unwrap();
    q.update(pod(1, 2)).unwrap();
    assert_eq!(q.len(), 2);
    assert_eq!(pop(&q).await.unwrap().0, key(1));
    assert_eq!(pop(&q).await.unwrap().0, key(2));
}

#[tokio::test]
async fn fifo_update_replaces_the_accumulated_object() {
    let q = Fifo::new();
    q.add(pod(1, 1)).unwrap();
    q.update(pod(1, 7)).unwrap();
    assert_eq!(pop(&q).await.unwrap().1, 7);
}

#[tokio::test]
async fn fifo_delete_removes_the_item_and_pop_skips_its_key() {
    let q = Fifo::new();
    q.add(pod(1, 1)).unwrap();
    q.add(pod(2, 1)).unwrap();
    q.delete(pod(1, 1)).unwrap();
    assert!(q.get_by_key(&key(1)).is_none());
    assert_eq!(pop(&q).await.unwrap().0, key(2));
    q.close();
    assert!(pop(&q).await.unwrap_err().is_closed());
}

#[tokio::test]
async fn fifo_replace_resets_the_queue_without_deletions() {
    let q = Fifo::new();
    q.add(pod(1, 1)).unwrap();
    q.add(pod(2, 1)).unwrap();
    q.replace(vec![pod(3, 1), pod(2, 2)], "5").unwrap();
    assert_eq!(q.len(), 2);
    assert_eq!(pop(&q).await.unwrap().0, key(3));
    assert_eq!(pop(&q).await.unwrap(), (key(2), 2, false));
    assert!(q.is_empty());
}

#[tokio::test]
async fn fifo_resync_does_not_duplicate_queued_keys() {
    let q = Fifo::new();
    q.add(pod(1, 1)).unwrap();
    q.resync().unwrap();
    pop(&q).await.unwrap();
    q.close();
    assert!(pop(&q).await.unwrap_err().is_closed());
}

#[tokio::test]
async fn fifo_pop_returns_closed_once_closed_and_empty() {
    let q = Arc::new(Fifo::<Pod>::new());
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move { pop(&q).await })
    };
    tokio::task::yield_now().await;
    q.close();
    assert!(waiter.await.unwrap().unwrap_err().is_closed());
}

#[tokio::test]
async fn fifo_add_if_not_present_keeps_the_existing_item() {
    let q = Fifo::new();
    q.add(pod(1, 1)).unwrap();
    q.add_if_not_present(pod(1, 9)).unwrap();
    q.add_if_not_present(pod(2, 9)).unwrap();
    assert_eq!(pop(&q).await.unwrap().1, 1);
    assert_eq!(pop(&q).await.unwrap().1, 9);
}

#[tokio::test]
async fn fifo_requeue_puts_the_item_back_and_returns_the_inner_error() {
    let q = Fifo::new();
    q.add(pod(1, 1)).unwrap();
    let err = within(
        "an item to pop",
        q.pop(|_, _| Err::<(), _>(ProcessError::Requeue(42))),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, PopError::Requeued(42)));
    assert_eq!(pop(&q).await.unwrap().0, key(1));
}

#[tokio::test]
async fn fifo_has_synced_after_the_initial_replace_is_popped() {
    let q = Fifo::new();
    assert!(!q.has_synced());
    q.replace(vec![pod(1, 1), pod(2, 1)], "1").unwrap();
    assert!(pop(&q).await.unwrap().2);
    assert!(!q.has_synced());
    assert!(pop(&q).await.unwrap().2);
    assert!(q.has_synced());
    let q = Fifo::new();
    q.delete(pod(1, 1)).unwrap();
    assert!(q.has_synced());
}
