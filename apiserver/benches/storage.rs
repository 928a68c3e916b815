//! Storage benches, memory against etcd (the `etcd` feature and an etcd binary; otherwise only
//! memory runs, after a message): writes per second (one writer, and 16 concurrent writers) of
//! realistic ≈9 KB fixture pods, and the latency of listing 1,000 of them (whole, and in pages
//! of 100), straight on the `Storage` trait (no HTTP).

// criterion_group! generates undocumented public items; a bench binary has no public API.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kcache_apiserver::{ListRequest, MemoryStorage, Object, Storage};
use kcache_store::testing;
use tokio::runtime::Runtime;

/// Pods in the listed prefix.
const LISTED: usize = 1000;
/// Concurrent writers in the concurrent write bench.
const WRITERS: usize = 16;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A backend to measure: a name, the storage, and what keeps it running.
type Backend = (&'static str, Arc<dyn Storage>, Box<dyn std::any::Any>);

/// The backends to measure: memory, and etcd when it can run here.
fn backends(rt: &Runtime) -> Vec<Backend> {
    let memory: Backend = ("memory", Arc::new(MemoryStorage::default()), Box::new(()));
    #[cfg(feature = "etcd")]
    {
        std::iter::once(memory).chain(etcd(rt)).collect()
    }
    #[cfg(not(feature = "etcd"))]
    {
        let _ = rt;
        eprintln!("etcd benches skipped: built without the etcd feature (--features etcd)");
        vec![memory]
    }
}

#[cfg(feature = "etcd")]
fn etcd(rt: &Runtime) -> Option<Backend> {
    let Some(etcd) = rt.block_on(kcache_apiserver::TestEtcd::start()).unwrap() else {
        eprintln!("etcd benches skipped: no etcd binary (Debian's etcd-server)");
        return None;
    };
    let storage = rt.block_on(etcd.storage()).unwrap();
    Some(("etcd", Arc::new(storage), Box::new(etcd)))
}

fn pod(i: usize) -> (String, Object) {
    let obj = Object::from_value(testing::pod_json(i, 100, 0)).unwrap();
    (format!("/pods/written/pod-{i}"), obj)
}

fn writes(c: &mut Criterion) {
    let rt = runtime();
    let _guard = rt.enter();
    let mut group = c.benchmark_group("storage_write");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(1));
    for (name, storage, _keep) in backends(&rt) {
        let next = Arc::new(AtomicUsize::new(1_000_000));
        group.bench_function(BenchmarkId::new("create_pod", name), |b| {
            b.iter_custom(|iters| {
                let pods: Vec<_> = (0..iters)
                    .map(|_| pod(next.fetch_add(1, Ordering::Relaxed)))
                    .collect();
                rt.block_on(async {
                    let start = Instant::now();
                    for (key, obj) in pods {
                        storage.create(key, obj).await.unwrap();
                    }
                    start.elapsed()
                })
            });
        });
        group.bench_function(
            BenchmarkId::new(format!("create_pod_{WRITERS}_writers"), name),
            |b| {
                b.iter_custom(|iters| {
                    let pods: Vec<_> = (0..iters)
                        .map(|_| pod(next.fetch_add(1, Ordering::Relaxed)))
                        .collect();
                    rt.block_on(async {
                        let queue = Arc::new(parking_lot::Mutex::new(pods));
                        let start = Instant::now();
                        let tasks: Vec<_> = (0..WRITERS)
                            .map(|_| {
                                let queue = Arc::clone(&queue);
                                let storage = Arc::clone(&storage);
                                tokio::spawn(async move {
                                    loop {
                                        let Some((key, obj)) = queue.lock().pop() else {
                                            return;
                                        };
                                        storage.create(key, obj).await.unwrap();
                                    }
                                })
                            })
                            .collect();
                        for task in tasks {
                            task.await.unwrap();
                        }
                        start.elapsed()
                    })
                });
            },
        );
    }
    group.finish();
}

async fn list_all(storage: &dyn Storage, limit: usize) -> usize {
    let mut items = 0;
    let mut start = None;
    let mut revision = None;
    loop {
        let page = storage
            .list(ListRequest {
                prefix: "/pods/listed/".into(),
                revision,
                start_key: start,
                limit: Some(limit),
            })
            .await
            .unwrap();
        items += page.items.len();
        revision = Some(page.revision);
        match page.last_key {
            Some(mut key) => {
                key.push('\0');
                start = Some(key);
            }
            None => return items,
        }
    }
}

fn lists(c: &mut Criterion) {
    let rt = runtime();
    let _guard = rt.enter();
    let mut group = c.benchmark_group("storage_list");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(LISTED as u64));
    for (name, storage, _keep) in backends(&rt) {
        rt.block_on(async {
            for i in 0..LISTED {
                let obj = Object::from_value(testing::pod_json(i, 100, 0)).unwrap();
                storage
                    .create(format!("/pods/listed/pod-{i:05}"), obj)
                    .await
                    .unwrap();
            }
        });
        for (what, limit) in [("whole", 0), ("pages_of_100", 100)] {
            group.bench_function(
                BenchmarkId::new(format!("{LISTED}_pods_{what}"), name),
                |b| {
                    b.iter(|| {
                        let n = rt.block_on(list_all(&*storage, limit));
                        assert_eq!(n, LISTED);
                    });
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, writes, lists);
criterion_main!(benches);
