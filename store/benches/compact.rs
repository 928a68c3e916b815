//! The compact store (feature `compact`) at 50,000 realistic pods: a write per object (encode,
//! indexes, the replaced object decoded), a get by key (criterion's mean, and p50/p99 sampled
//! over 20,000 gets and printed first), and a full `list()`.
//!
//! `cargo bench -p kcache-store --bench compact`

// criterion_group! generates undocumented public items; a bench binary has no public API.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kcache_store::{
    Indexer, Indexers, NAMESPACE_INDEX, NODE_NAME_INDEX, Store, meta_namespace_key,
    meta_namespace_key_func, namespace_index_func, node_name_index_func, testing,
};

const PODS: usize = 50_000;
const NAMESPACES: usize = 100;
/// The first list, from which the dictionary is trained.
const FIRST: usize = 1_000;
const SAMPLED_GETS: usize = 20_000;

/// A compact indexer with the namespace and node indexes holding `PODS` fixture pods, filled
/// without ever holding them all decoded.
fn filled() -> Indexer<Pod> {
    let indexer = Indexer::compact(
        meta_namespace_key_func(),
        Indexers::from_iter([
            (NAMESPACE_INDEX.to_owned(), namespace_index_func()),
            (NODE_NAME_INDEX.to_owned(), node_name_index_func()),
        ]),
    );
    let _ = indexer.replace(testing::pods(FIRST, NAMESPACES), "1");
    for i in FIRST..PODS {
        let _ = indexer.add(Arc::new(testing::pod(i, NAMESPACES)));
    }
    indexer
}

fn key(i: usize) -> String {
    meta_namespace_key(&testing::pod(i, NAMESPACES)).unwrap_or_default()
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

fn compact(c: &mut Criterion) {
    let indexer = filled();
    let keys: Vec<String> = (0..SAMPLED_GETS).map(|n| key(n * 7919 % PODS)).collect();
    let mut sampled: Vec<Duration> = keys
        .iter()
        .map(|k| {
            let t = Instant::now();
            black_box(indexer.get_by_key(k));
            t.elapsed()
        })
        .collect();
    sampled.sort_unstable();
    println!(
        "compact/get sampled over {SAMPLED_GETS} gets at {PODS} pods: p50 {:?}, p99 {:?}, max {:?}",
        quantile(&sampled, 0.5),
        quantile(&sampled, 0.99),
        quantile(&sampled, 1.0)
    );

    let mut group = c.benchmark_group("compact");
    let updates: Vec<Arc<Pod>> = (0..1_000)
        .map(|i| Arc::new(testing::pod_at(i * 37 % PODS, NAMESPACES, 2)))
        .collect();
    group.throughput(Throughput::Elements(1));
    let mut next = 0;
    group.bench_function("write_one", |b| {
        b.iter(|| {
            next = (next + 1) % updates.len();
            black_box(indexer.upsert(Arc::clone(&updates[next])))
        })
    });
    let mut n = 0;
    group.bench_function("get", |b| {
        b.iter(|| {
            n = (n + 1) % keys.len();
            black_box(indexer.get_by_key(&keys[n]))
        })
    });
    group.sample_size(10);
    group.throughput(Throughput::Elements(PODS as u64));
    group.bench_function("list_50000", |b| b.iter(|| black_box(indexer.list())));
    group.finish();
}

criterion_group!(benches, compact);
criterion_main!(benches);
