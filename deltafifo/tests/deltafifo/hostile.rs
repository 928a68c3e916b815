//! Hostile input: the queues receive what the reflector decoded from the server, and a list
//! page or a watch event may hold an object without a name. Each is a key error and the queue
//! keeps what it held (a relist with one bad item queues nothing of it).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_deltafifo::{DeltaFifo, DeltaFifoOptions, RealFifo, RealFifoOptions};
use kcache_store::{KeyError, Store, StoreError};

use crate::common::{fill, known, pod};

fn is_missing_name(result: Result<(), StoreError>) -> bool {
    matches!(result, Err(StoreError::Key(KeyError::MissingName)))
}

/// Feeds `queue` nameless objects every way the reflector can; asserts each is rejected and
/// that the queued keys did not change.
fn assert_nameless_rejected<Q: Store<Pod>>(queue: &Q) {
    queue.add(pod(0, 1)).unwrap();
    let before = queue.list_keys();
    let rv_before = queue.last_store_sync_resource_version();
    let nameless = || Arc::new(Pod::default());
    assert!(is_missing_name(queue.add(nameless())));
    assert!(is_missing_name(queue.update(nameless())));
    assert!(is_missing_name(queue.delete(nameless())));
    assert!(is_missing_name(
        queue.replace(vec![pod(1, 2), nameless()], "9")
    ));
    assert_eq!(queue.list_keys(), before);
    assert_eq!(queue.last_store_sync_resource_version(), rv_before);
}

#[test]
fn objects_without_a_name_are_key_errors_and_the_delta_fifo_is_unchanged() {
    let (indexer, known) = known();
    fill(&indexer, [pod(5, 1)]);
    assert_nameless_rejected(&DeltaFifo::new(
        DeltaFifoOptions::default().known_objects(known),
    ));
}

#[test]
fn objects_without_a_name_are_key_errors_and_the_real_fifo_is_unchanged() {
    let (indexer, known) = known();
    fill(&indexer, [pod(5, 1)]);
    assert_nameless_rejected(&RealFifo::new(
        RealFifoOptions::default().known_objects(known),
    ));
}
