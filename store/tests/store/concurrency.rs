//! Readers and writers on several threads.

use std::sync::Arc;
use std::thread;

use k8s_openapi::api::core::v1::Pod;
use kcache_store::{Indexer, NAMESPACE_INDEX, Store, testing};

#[test]
fn concurrent_readers_and_writers_keep_indexes_consistent() {
    let indexer = Arc::new(Indexer::<Pod>::with_namespace_index());
    let pods = testing::pods(2_000, 10);
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let indexer = Arc::clone(&indexer);
            let pods = pods.clone();
            thread::spawn(move || {
                for (i, p) in pods.iter().enumerate().filter(|(i, _)| i % 4 == w) {
                    indexer.add(Arc::clone(p)).unwrap();
                    if i % 3 == 0 {
                        indexer.delete(Arc::clone(p)).unwrap();
                    }
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..4)
        .map(|r| {
            let indexer = Arc::clone(&indexer);
            thread::spawn(move || {
                for i in 0..2_000 {
                    let ns = format!("ns-{}", (i + r) % 10);
                    for p in indexer.by_index(NAMESPACE_INDEX, &ns).unwrap() {
                        assert_eq!(p.metadata.namespace.as_deref(), Some(ns.as_str()));
                    }
                    let _ = indexer.list_keys();
                }
            })
        })
        .collect();
    for t in writers.into_iter().chain(readers) {
        t.join().unwrap();
    }
    let expected = (0..2_000).filter(|i| i % 3 != 0).count();
    assert_eq!(indexer.len(), expected);
    let indexed: usize = (0..10)
        .map(|n| {
            indexer
                .index_keys(NAMESPACE_INDEX, &format!("ns-{n}"))
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(indexed, expected);
}
