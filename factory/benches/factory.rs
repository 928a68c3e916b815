//! kcache-factory benches: the whole stack syncing pods over HTTP from the in-process API server,
//! side by side with kube-runtime's `watcher` + `reflector` against the same server in one run.
//!
//! Two measures: the initial sync of a seeded server, and the steady watch: once a client is
//! synced on an empty namespace, the time until it has applied every ADDED event of a burst of
//! pods created in that namespace (the server's writes and event encoding count for both).
//!
//! `cargo bench -p kcache-factory` (`KCACHE_BENCH_PODS=N` to change the 10,000 pods).

// criterion_group! generates undocumented public items; a bench binary has no public API.
#![allow(missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_apiserver::{Object, TestServer};
use kcache_factory::SharedInformerFactory;
use kcache_store::testing;
use kube_client::{Api, Client};
use kube_runtime::{WatchStreamExt, reflector, watcher};

fn pods() -> usize {
    std::env::var("KCACHE_BENCH_PODS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000)
}

async fn seeded_server(n: usize) -> (TestServer, Client) {
    // The fixture pods name ReplicaSets that do not exist: no garbage collection.
    let builder = kcache_apiserver::ApiServer::builder().garbage_collection(false);
    let server = TestServer::start_with(builder).await.unwrap();
    let objects = (0..n).map(|i| Object::from_value(testing::pod_json(i, 100, 0)).unwrap());
    server.seed(objects).await.unwrap();
    let client = server.client().unwrap();
    (server, client)
}

/// Starts the factory's informers and waits until they have synced.
async fn start_synced(factory: &SharedInformerFactory) {
    factory.start().unwrap();
    assert!(factory.wait_for_cache_sync().await.values().all(|s| *s));
}

/// Criterion's `iter_custom` body: runs `once` `iters` times and adds up the durations it
/// returns (each run times only what it measures, not its tear-down).
async fn total<F: Future<Output = Duration>>(iters: u64, mut once: impl FnMut() -> F) -> Duration {
    let mut sum = Duration::ZERO;
    for _ in 0..iters {
        sum += once().await;
    }
    sum
}

/// Initial sync of every pod: list over HTTP, decode, cache; until synced.
fn initial_sync(c: &mut Criterion) {
    let n = pods();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (_server, client) = rt.block_on(seeded_server(n));
    let mut g = c.benchmark_group(format!("initial-sync-over-http/{n}"));
    g.throughput(Throughput::Elements(n as u64))
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    g.bench_function("kcache factory informer", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            total(iters, || async {
                let start = Instant::now();
                let factory = SharedInformerFactory::new(client.clone());
                let informer = factory.informer::<Pod>();
                start_synced(&factory).await;
                let took = start.elapsed();
                assert_eq!(informer.indexer().len(), n);
                factory.shutdown().await;
                took
            })
        })
    });
    g.bench_function("kube-runtime watcher + reflector", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            total(iters, || async {
                let start = Instant::now();
                let (reader, writer) = reflector::store::<Pod>();
                let stream = reflector(
                    writer,
                    watcher(Api::<Pod>::all(client.clone()), watcher::Config::default()),
                );
                let task = tokio::spawn(stream.for_each(|_| async {}));
                reader.wait_until_ready().await.unwrap();
                let took = start.elapsed();
                assert_eq!(reader.len(), n);
                task.abort();
                let _ = task.await;
                took
            })
        })
    });
    g.finish();
}

/// `n` fixture pods moved to namespace `ns`.
fn pods_in(ns: &str, n: usize) -> Vec<Object> {
    (0..n)
        .map(|i| {
            let mut pod = testing::pod_json(i, 100, 0);
            pod["metadata"]["namespace"] = ns.into();
            Object::from_value(pod).unwrap()
        })
        .collect()
}

/// Watch throughput: a client synced on an empty namespace applies a burst of `n` creations.
fn watch_events(c: &mut Criterion) {
    let n = pods();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // The fixture pods name ReplicaSets that do not exist: no garbage collection.
    let builder = kcache_apiserver::ApiServer::builder().garbage_collection(false);
    let server = rt.block_on(TestServer::start_with(builder)).unwrap();
    let client = {
        let _runtime = rt.enter();
        server.client().unwrap()
    };
    let round = AtomicU64::new(0);
    let next_namespace = || format!("burst-{}", round.fetch_add(1, Ordering::Relaxed));
    let mut g = c.benchmark_group(format!("watch-events-over-http/{n}"));
    g.throughput(Throughput::Elements(n as u64))
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    g.bench_function("kcache factory informer", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            total(iters, || async {
                let ns = next_namespace();
                let burst = pods_in(&ns, n);
                let factory = SharedInformerFactory::builder(client.clone())
                    .namespace(ns)
                    .build();
                let informer = factory.informer::<Pod>();
                let (done_tx, done) = tokio::sync::oneshot::channel();
                let done_tx = std::sync::Mutex::new(Some(done_tx));
                let seen = AtomicU64::new(0);
                informer
                    .add_event_handler(kcache_informer::ResourceEventHandlerFuncs::new().add_func(
                        move |_, _| {
                            if seen.fetch_add(1, Ordering::Relaxed) + 1 == n as u64
                                && let Some(tx) = done_tx.lock().unwrap().take()
                            {
                                let _ = tx.send(());
                            }
                        },
                    ))
                    .unwrap();
                start_synced(&factory).await;
                let start = Instant::now();
                server.seed(burst).await.unwrap();
                done.await.unwrap();
                let took = start.elapsed();
                assert_eq!(informer.indexer().len(), n);
                factory.shutdown().await;
                took
            })
        })
    });
    g.bench_function("kube-runtime watcher + reflector", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            total(iters, || async {
                let ns = next_namespace();
                let burst = pods_in(&ns, n);
                let (reader, writer) = reflector::store::<Pod>();
                let mut applied = Box::pin(
                    reflector(
                        writer,
                        watcher(
                            Api::<Pod>::namespaced(client.clone(), &ns),
                            Default::default(),
                        ),
                    )
                    .applied_objects(),
                );
                let task = tokio::spawn(async move { applied.by_ref().take(n).count().await });
                reader.wait_until_ready().await.unwrap();
                let start = Instant::now();
                server.seed(burst).await.unwrap();
                assert_eq!(task.await.unwrap(), n);
                let took = start.elapsed();
                assert_eq!(reader.len(), n);
                took
            })
        })
    });
    g.finish();
}

criterion_group!(benches, initial_sync, watch_events);
criterion_main!(benches);
