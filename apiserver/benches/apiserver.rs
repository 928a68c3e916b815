//! kcache-apiserver benches over real HTTP on 127.0.0.1: lists of realistic pods (full from the
//! watch cache, and paginated from its snapshot), one event fanned out to many watchers, and a
//! streaming watch-list.
//!
//! `cargo bench -p kcache-apiserver` runs 10k pods; `KCACHE_BENCH_LARGE=1` runs 100k (the
//! server holds each ≈9 KB fixture pod in about 12.5 KB: 1.2 GB for 100k; a full list body of
//! 100k pods is another 0.9 GB on the client side).

// criterion_group! generates undocumented public items; a bench binary has no public API.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::{AsyncBufReadExt, StreamExt};
use kcache_apiserver::{Object, TestServer};
use kcache_store::testing;
use kube_client::Client;
use serde_json::json;
use tokio::runtime::Runtime;
use tokio::sync::Notify;

fn pods() -> usize {
    if std::env::var_os("KCACHE_BENCH_LARGE").is_some() {
        100_000
    } else {
        10_000
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn seeded_server(n: usize) -> TestServer {
    // The fixture pods name ReplicaSets that do not exist: no garbage collection.
    let builder = kcache_apiserver::ApiServer::builder().garbage_collection(false);
    let server = TestServer::start_with(builder).await.unwrap();
    let objects = (0..n).map(|i| Object::from_value(testing::pod_json(i, 100, 0)).unwrap());
    server.seed(objects).await.unwrap();
    server.wait_caches_synced().await.unwrap();
    server
}

/// GETs `path` and returns the body size.
async fn fetch(client: &Client, path: &str) -> usize {
    let req = http::Request::get(path)
        .body(kube_client::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert!(resp.status().is_success());
    resp.into_body().collect_bytes().await.unwrap().len()
}

/// GETs `path` and returns the body.
async fn fetch_body(client: &Client, path: &str) -> bytes::Bytes {
    let req = http::Request::get(path)
        .body(kube_client::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert!(resp.status().is_success());
    resp.into_body().collect_bytes().await.unwrap()
}

/// Follows `continue` tokens with `limit` until the list ends; returns the bytes received. The
/// token is read from the list metadata at the head of the body (items are not decoded).
async fn paginate(client: &Client, limit: usize) -> usize {
    let mut token = String::new();
    let mut size = 0;
    loop {
        let body = fetch_body(
            client,
            &format!("/api/v1/pods?limit={limit}&continue={token}"),
        )
        .await;
        size += body.len();
        let head = String::from_utf8_lossy(&body[..body.len().min(4096)]).into_owned();
        match head
            .split_once("\"continue\":\"")
            .and_then(|(_, rest)| rest.split_once('"'))
        {
            Some((t, _)) => token = t.to_owned(),
            None => return size,
        }
    }
}

fn lists(c: &mut Criterion) {
    let rt = runtime();
    let _guard = rt.enter();
    let n = pods();
    let server = rt.block_on(seeded_server(n));
    let client = server.client().unwrap();
    let mut group = c.benchmark_group("list");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(BenchmarkId::new("full_from_cache_rv0", n), |b| {
        b.iter(|| rt.block_on(fetch(&client, "/api/v1/pods?resourceVersion=0")));
    });
    group.bench_function(BenchmarkId::new("consistent_from_cache", n), |b| {
        b.iter(|| rt.block_on(fetch(&client, "/api/v1/pods")));
    });
    group.bench_function(
        BenchmarkId::new("paginated_500_from_cache_snapshot", n),
        |b| {
            b.iter(|| rt.block_on(paginate(&client, 500)));
        },
    );
    group.finish();
    drop(server);
}

fn watch_list(c: &mut Criterion) {
    let rt = runtime();
    let _guard = rt.enter();
    let n = pods();
    let server = rt.block_on(seeded_server(n));
    let client = server.client().unwrap();
    let mut group = c.benchmark_group("watch_list");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(BenchmarkId::new("initial_events_to_one_client", n), |b| {
        b.iter(|| rt.block_on(async {
            let path = "/api/v1/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan";
            let req = http::Request::get(path).body(Vec::new()).unwrap();
            let mut lines = client.request_stream(req).await.unwrap().lines();
            let mut events = 0usize;
            while let Some(line) = lines.next().await {
                let line = line.unwrap();
                if line.contains("k8s.io/initial-events-end") {
                    break;
                }
                events += 1;
            }
            assert_eq!(events, n);
        }));
    });
    group.finish();
    drop(server);
}

/// `watchers` watches of the config map; each line read bumps the counter.
async fn open_watchers(server: &TestServer, watchers: usize, seen: &Arc<(AtomicU64, Notify)>) {
    let path = "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0";
    let mut clients = Vec::new();
    for _ in 0..watchers.div_ceil(100) {
        clients.push(server.client().unwrap());
    }
    for i in 0..watchers {
        let req = http::Request::get(path).body(Vec::new()).unwrap();
        let stream = clients[i / 100].request_stream(req).await.unwrap();
        let seen = Arc::clone(seen);
        tokio::spawn(async move {
            let mut lines = stream.lines();
            while let Some(Ok(_)) = lines.next().await {
                seen.0.fetch_add(1, Ordering::Relaxed);
                seen.1.notify_one();
            }
        });
    }
}

fn fanout(c: &mut Criterion) {
    let rt = runtime();
    let _guard = rt.enter();
    let mut group = c.benchmark_group("fanout_one_event");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    for watchers in [1usize, 100, 1000] {
        let server = rt.block_on(TestServer::start()).unwrap();
        let seen = Arc::new((AtomicU64::new(0), Notify::new()));
        rt.block_on(async {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hot", "namespace": "default"}, "data": {"v": "0"}});
            server.seed([Object::from_value(cm).unwrap()]).await.unwrap();
            server.wait_caches_synced().await.unwrap();
            open_watchers(&server, watchers, &seen).await;
            // Every watcher first receives the existing object.
            while seen.0.load(Ordering::Relaxed) < watchers as u64 {
                seen.1.notified().await;
            }
        });
        let client = server.client().unwrap();
        let api: kube_client::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube_client::Api::default_namespaced(client);
        let counter = Arc::new(AtomicU64::new(0));
        group.throughput(Throughput::Elements(watchers as u64));
        group.bench_function(BenchmarkId::from_parameter(watchers), |b| {
            b.iter_custom(|iters| {
                let api = api.clone();
                let seen = Arc::clone(&seen);
                let counter = Arc::clone(&counter);
                rt.block_on(async move {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let v = counter.fetch_add(1, Ordering::Relaxed) + 1;
                        let target = seen.0.load(Ordering::Relaxed) + watchers as u64;
                        let patch = json!({"data": {"v": v.to_string()}});
                        api.patch(
                            "hot",
                            &kube_client::api::PatchParams::default(),
                            &kube_client::api::Patch::Merge(&patch),
                        )
                        .await
                        .unwrap();
                        while seen.0.load(Ordering::Relaxed) < target {
                            seen.1.notified().await;
                        }
                    }
                    start.elapsed()
                })
            });
        });
        drop(server);
    }
    group.finish();
}

/// The costs of the light `Object` on one fixture pod: building it from JSON, stamping a
/// resource version (metadata re-encoded and spliced, nothing parsed), reading a selectable
/// field, and parsing the other fields (what writes do).
fn object(c: &mut Criterion) {
    let mut group = c.benchmark_group("object");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    let value = testing::pod_json(7, 100, 0);
    let pod = Object::from_value(value.clone()).unwrap();
    group.bench_function("from_value_fixture_pod", |b| {
        b.iter_batched(
            || value.clone(),
            |v| Object::from_value(v).unwrap(),
            criterion::BatchSize::SmallInput,
        );
    });
    group.bench_function("stamp_resource_version", |b| {
        b.iter(|| pod.with_resource_version(42));
    });
    group.bench_function("selected_field", |b| {
        b.iter(|| pod.field("spec.nodeName").map(|v| v.len()));
    });
    group.bench_function("parse_data", |b| {
        b.iter(|| pod.data());
    });
    group.finish();
}

criterion_group!(benches, object, lists, watch_list, fanout);
criterion_main!(benches);
