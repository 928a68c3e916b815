//! Fixtures and helpers shared by the test modules.

use std::convert::Infallible;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_deltafifo::{DeltaType, Deltas, PopError, ProcessError, Queue};
use kcache_store::{Indexer, KnownObjects, Store, meta_namespace_key};
use kcache_testkit::within;

thread_local! {
    /// Fixture pods by index, parsed once per thread (parsing dominates the property tests).
    static PODS: std::cell::RefCell<std::collections::HashMap<usize, Pod>> = Default::default();
}

/// Fixture pod `i` at resource version `rv`.
pub(crate) fn pod(i: usize, rv: u64) -> Arc<Pod> {
    let mut p = PODS.with(|pods| {
        pods.borrow_mut()
            .entry(i)
            .or_insert_with(|| kcache_store::testing::pod_at(i, 1, 0))
            .clone()
    });
    p.metadata.resource_version = Some(rv.to_string());
    Arc::new(p)
}

/// The key of fixture pod `i`.
pub(crate) fn key(i: usize) -> String {
    meta_namespace_key(&*pod(i, 1)).unwrap()
}

/// The resource version of a pod as a number.
pub(crate) fn rv(p: &Pod) -> u64 {
    p.metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

/// One delta as (type, is a tombstone, resource version of its object).
pub(crate) type Summary = (DeltaType, bool, u64);

pub(crate) fn summary(deltas: &Deltas<Pod>) -> Vec<Summary> {
    deltas
        .iter()
        .map(|d| {
            let obj = d.object().unwrap();
            (d.kind(), obj.is_tombstone(), rv(obj.object()))
        })
        .collect()
}

/// Pops one item and returns its summary and `is_in_initial_list`.
pub(crate) async fn pop_summary<Q>(q: &Q) -> Result<(Vec<Summary>, bool), PopError<Infallible>>
where
    Q: Queue<Pod, Item = Deltas<Pod>>,
{
    let popped = q.pop(|d, initial| Ok::<_, ProcessError<Infallible>>((summary(d), initial)));
    within("an item to pop", popped).await
}

/// The key the queue handed out with each delta of a batch.
pub(crate) fn batch_keys(batch: &kcache_deltafifo::Batch<'_, Pod>) -> Vec<Option<String>> {
    batch
        .iter()
        .map(|(key, _)| key.map(|k| k.to_string()))
        .collect()
}

/// A shared indexer and its known-objects view.
pub(crate) fn known() -> (Arc<Indexer<Pod>>, Arc<dyn KnownObjects<Pod>>) {
    let indexer = Arc::new(Indexer::<Pod>::default());
    let known: Arc<dyn KnownObjects<Pod>> = indexer.clone();
    (indexer, known)
}

/// Adds pods to an indexer.
pub(crate) fn fill(indexer: &Indexer<Pod>, pods: impl IntoIterator<Item = Arc<Pod>>) {
    for p in pods {
        indexer.add(p).unwrap();
    }
}
