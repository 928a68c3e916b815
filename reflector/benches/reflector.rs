//! Benches of kcache-reflector: initial sync from the fake source (10k and 100k realistic pods,
//! paginated or not, list or watch-list), a steady watch stream into an indexer, and the
//! kube-client path over local HTTP (list pages decoded in parallel, watch lines decoded off
//! the reading task) next to a single-threaded serde_json decode of the same bytes and to
//! kube-runtime's `watcher` + `reflector` against the same canned server, in the same run.
//!
//! `cargo bench -p kcache-reflector` (set `KCACHE_BENCH_LARGE=1` to add the 100k-pod sizes).

// criterion_group! generates undocumented public items; a bench binary has no public API.
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kcache_reflector::testing::FakeControllerSource;
use kcache_reflector::{
    KubeListerWatcher, ListerWatcher, Reflector, ReflectorConfig, ReflectorMetrics, WatchEvent,
};
use kcache_store::Indexer;
use kcache_store::testing::{pod_json, pods};
use tokio::runtime::Runtime;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Wakes the bench when the reflector reaches a resource version.
#[derive(Debug)]
struct Signal {
    target: String,
    reached: Notify,
}

impl ReflectorMetrics for Signal {
    fn last_resource_version(&self, _name: &str, rv: &str) {
        if rv == self.target {
            self.reached.notify_one();
        }
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs a reflector until it reaches `target`, then stops it.
async fn sync_once<L: ListerWatcher<Pod>>(
    lw: L,
    target: &str,
    config: ReflectorConfig,
) -> Arc<Indexer<Pod>> {
    let store = Arc::new(Indexer::<Pod>::with_namespace_index());
    let signal = Arc::new(Signal {
        target: target.to_owned(),
        reached: Notify::new(),
    });
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::clone(&store),
        config.metrics(signal.clone()),
    ));
    let shutdown = CancellationToken::new();
    let task = tokio::spawn({
        let (r, s) = (Arc::clone(&reflector), shutdown.clone());
        async move { r.run(s).await }
    });
    signal.reached.notified().await;
    shutdown.cancel();
    task.await.unwrap();
    store
}

fn initial_sync_fake(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("initial_sync_fake");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    let mut sizes = vec![10_000usize];
    if std::env::var_os("KCACHE_BENCH_LARGE").is_some() {
        sizes.push(100_000);
    }
    for n in sizes {
        let source = Arc::new(FakeControllerSource::<Pod>::new());
        source.load(pods(n, 50));
        source.set_honour_timeouts(false);
        let target = n.to_string();
        for (mode, page_size, watch_list) in [
            ("paged_500", 0u32, false),
            ("unpaged", u32::MAX, false),
            ("watch_list", 0, true),
        ] {
            group.bench_with_input(BenchmarkId::new(mode, n), &n, |b, _| {
                b.iter(|| {
                    rt.block_on(async {
                        let store = sync_once(
                            Arc::clone(&source),
                            &target,
                            ReflectorConfig::default()
                                .page_size(page_size)
                                .use_watch_list(watch_list),
                        )
                        .await;
                        assert_eq!(store.len(), n);
                    })
                });
            });
        }
    }
    group.finish();
}

fn watch_stream_fake(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("watch_stream_fake");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    const EVENTS: usize = 100_000;
    let objects = pods(1_000, 50);
    let mut last = kcache_store::testing::pod_at(0, 50, 999_999_999);
    last.metadata.name = Some("last".into());
    let last = Arc::new(last);
    group.throughput(criterion::Throughput::Elements(EVENTS as u64));
    group.bench_function("modified_100k", |b| {
        b.iter(|| {
            rt.block_on(async {
                let source = Arc::new(FakeControllerSource::<Pod>::new());
                source.load(objects.iter().cloned());
                source.set_honour_timeouts(false);
                let feeder = {
                    let (source, objects, last) =
                        (Arc::clone(&source), objects.clone(), Arc::clone(&last));
                    async move {
                        while source.watchers() == 0 {
                            tokio::task::yield_now().await;
                        }
                        for i in 0..EVENTS - 1 {
                            let obj = Arc::clone(&objects[i % objects.len()]);
                            source.send_event(|| WatchEvent::Modified(Arc::clone(&obj)));
                        }
                        source.send_event(|| WatchEvent::Modified(Arc::clone(&last)));
                    }
                };
                let feeder = tokio::spawn(feeder);
                sync_once(Arc::clone(&source), "999999999", ReflectorConfig::default()).await;
                feeder.await.unwrap();
            })
        });
    });
    group.finish();
}

/// A canned API server on 127.0.0.1 serving `n` pods, in pages of 500, and a watch of `n` events.
mod http {
    use std::sync::Arc;

    use axum::body::Body;
    use axum::extract::State;
    use axum::http::Uri;
    use axum::response::{IntoResponse, Response};
    use bytes::Bytes;

    pub(crate) struct Canned {
        pub(crate) pages: Vec<Bytes>,
        pub(crate) watch: Vec<Bytes>,
    }

    async fn handle(State(canned): State<Arc<Canned>>, uri: Uri) -> Response {
        let query = uri.query().unwrap_or("");
        if query.contains("labelSelector=bench%3Dwatch") && !query.contains("watch=true") {
            let empty = format!(
                r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"{}"}},"items":[]}}"#,
                canned.watch.len()
            );
            return ([("content-type", "application/json")], empty).into_response();
        }
        if query.contains("watch=true") && !query.contains("bench%3Dwatch") {
            // The list benches stop at the end of the list: their watch gets nothing.
            return Response::new(Body::empty());
        }
        if query.contains("watch=true") {
            let chunks: Vec<Result<Bytes, std::convert::Infallible>> =
                canned.watch.iter().cloned().map(Ok).collect();
            return Response::new(Body::from_stream(futures::stream::iter(chunks)));
        }
        let page = query
            .split('&')
            .find_map(|kv| kv.strip_prefix("continue="))
            .and_then(|c| c.parse::<usize>().ok())
            .unwrap_or(0);
        (
            [("content-type", "application/json")],
            canned.pages[page].clone(),
        )
            .into_response()
    }

    pub(crate) async fn serve(canned: Canned) -> kube_client::Client {
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(Arc::new(canned));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let config = kube_client::Config::new(format!("http://{addr}").parse().unwrap());
        kube_client::Client::try_from(config).unwrap()
    }
}

fn canned(n: usize) -> http::Canned {
    let per_page = 500;
    let pages = (0..n.div_ceil(per_page))
        .map(|p| {
            let items: Vec<_> = (p * per_page..((p + 1) * per_page).min(n))
                .map(|i| pod_json(i, 50, i as u64 + 1))
                .collect();
            let cont = if (p + 1) * per_page < n {
                (p + 1).to_string()
            } else {
                String::new()
            };
            let body = serde_json::json!({"kind": "PodList", "apiVersion": "v1",
                "metadata": {"resourceVersion": n.to_string(), "continue": cont}, "items": items});
            bytes::Bytes::from(serde_json::to_vec(&body).unwrap())
        })
        .collect();
    let watch = (0..n)
        .map(|i| {
            // "type" first, as API servers write it.
            let object = pod_json(i % 1000, 50, (n + 1 + i) as u64);
            bytes::Bytes::from(format!("{{\"type\":\"MODIFIED\",\"object\":{object}}}\n"))
        })
        .collect();
    http::Canned { pages, watch }
}

fn kube_http(c: &mut Criterion) {
    let rt = runtime();
    let n = 10_000;
    let canned = canned(n);
    let bodies: Vec<bytes::Bytes> = canned.pages.clone();
    let client = rt.block_on(http::serve(canned));
    let mut group = c.benchmark_group("kube_http");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(1));
    group.throughput(criterion::Throughput::Elements(n as u64));
    group.bench_function("serde_json_one_thread_decode_10k", |b| {
        b.iter(|| {
            let mut count = 0;
            for body in &bodies {
                let list: k8s_openapi::List<Pod> = serde_json::from_slice(body).unwrap();
                count += list.items.len();
            }
            assert_eq!(count, n);
        });
    });
    for (name, parallelism, prefetch) in [
        ("list_10k_parallel_prefetch", 2, true),
        ("list_10k_one_thread", 1, false),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let lw = KubeListerWatcher::new(kube_client::Api::<Pod>::all(client.clone()))
                        .decode_parallelism(parallelism)
                        .prefetch_pages(prefetch);
                    // The first list is at "0" with limit 500; the server pages it.
                    let store = sync_once(lw, &n.to_string(), ReflectorConfig::default()).await;
                    assert_eq!(store.len(), n);
                })
            });
        });
    }
    let last_rv = (n + n).to_string();
    group.bench_function("watch_10k_events", |b| {
        b.iter(|| {
            rt.block_on(async {
                // An empty list at RV n, then n watch events.
                let lw = KubeListerWatcher::new(kube_client::Api::<Pod>::all(client.clone()))
                    .tweak_list_options(|o| o.label_selector = Some("bench=watch".into()));
                sync_once(lw, &last_rv, ReflectorConfig::default()).await;
            })
        });
    });
    group.bench_function("kube_runtime_list_10k", |b| {
        b.iter(|| {
            rt.block_on(async {
                let api = kube_client::Api::<Pod>::all(client.clone());
                let (reader, writer) = kube_runtime::reflector::store::<Pod>();
                let stream =
                    kube_runtime::reflector(writer, kube_runtime::watcher(api, Default::default()));
                let task = tokio::spawn(futures::StreamExt::for_each(stream, |_| async {}));
                reader.wait_until_ready().await.unwrap();
                assert_eq!(reader.len(), n);
                task.abort();
            })
        });
    });
    group.bench_function("kube_runtime_watch_10k_events", |b| {
        b.iter(|| {
            rt.block_on(async {
                let api = kube_client::Api::<Pod>::all(client.clone());
                let config = kube_runtime::watcher::Config::default().labels("bench=watch");
                let (_reader, writer) = kube_runtime::reflector::store::<Pod>();
                let applied = kube_runtime::WatchStreamExt::applied_objects(
                    kube_runtime::reflector(writer, kube_runtime::watcher(api, config)),
                );
                let seen = futures::StreamExt::count(futures::StreamExt::take(applied, n)).await;
                assert_eq!(seen, n);
            })
        });
    });
    group.finish();
}

criterion_group!(benches, initial_sync_fake, watch_stream_fake, kube_http);
criterion_main!(benches);
