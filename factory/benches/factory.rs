//! kcache-factory benches: the whole stack syncing pods over HTTP from the in-process API server,
//! side by side with kube-runtime's `watcher` + `reflector` against the same server in one run.
//!
//! `cargo bench -p kcache-factory` (`KCACHE_BENCH_PODS=N` to change the 10,000 pods).

// criterion_group! generates undocumented public items; a bench binary has no public API.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_apiserver::{Object, TestServer};
use kcache_factory::SharedInformerFactory;
use kcache_store::testing;
use kube_client::{Api, Client};
use kube_runtime::{reflector, watcher};

fn pods() -> usize {
    std::env::var("KCACHE_BENCH_PODS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000)
}

async fn seeded_server(n: usize) -> (TestServer, Client) {
    let server = TestServer::start().await.unwrap();
    let objects = (0..n).map(|i| Object::from_value(testing::pod_json(i, 100, 0)).unwrap());
    server.seed(objects).await.unwrap();
    let client = server.client().unwrap();
    (server, client)
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
        b.to_async(&rt).iter(|| async {
            let factory = SharedInformerFactory::new(client.clone());
            let informer = factory.informer::<Pod>();
            factory.start().unwrap();
            assert!(factory.wait_for_cache_sync().await.values().all(|s| *s));
            assert_eq!(informer.indexer().len(), n);
            factory.shutdown().await;
        })
    });
    g.bench_function("kube-runtime watcher + reflector", |b| {
        b.to_async(&rt).iter(|| async {
            let (reader, writer) = reflector::store::<Pod>();
            let stream = reflector(
                writer,
                watcher(Api::<Pod>::all(client.clone()), watcher::Config::default()),
            );
            let task = tokio::spawn(stream.for_each(|_| async {}));
            reader.wait_until_ready().await.unwrap();
            assert_eq!(reader.len(), n);
            task.abort();
        })
    });
    g.finish();
}

criterion_group!(benches, initial_sync);
criterion_main!(benches);
