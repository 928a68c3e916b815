//! kcache-informer benches: distribution to many handlers, client-go's
//! `BenchmarkSharedIndexInformer` scenario (namespace listers reading while updates are applied)
//! and the initial sync of a whole informer; `watch_path_metrics` compares the watch path with
//! and without the `prometheus` export (`--features prometheus` for the `on` case);
//! `watch_path_cpu` the CPU per watch event of the default and the compact cache.
//!
//! `cargo bench -p kcache-informer` (set `KCACHE_BENCH_LARGE=1` for the 40k-pod scenario and the
//! 100k-pod initial sync: fixture pods take ≈72 KB each in memory).

// criterion_group! generates undocumented public items; a bench binary has no public API.
#![allow(missing_docs)]

#[path = "support/export.rs"]
mod export;

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use export::{exported, scrape};
use futures::stream;
use k8s_openapi::api::core::v1::Pod;
use kcache_informer::{ResourceEventHandler, SharedIndexInformer};
use kcache_reflector::testing::FakeControllerSource;
use kcache_reflector::{ListPage, ListWatch, WatchEvent, WatchStream};
use kcache_store::{MaybeTombstone, NODE_NAME_INDEX, node_name_index_func, testing};
use kube_core::Selector;
use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::time::TimeVal;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Namespaces the fixture pods are spread over.
const NAMESPACES: usize = 100;
/// Watch events sent per measured batch.
const BATCH: usize = 1000;
/// The pods cached by `watch_path_cpu`'s informers.
const WATCH_PATH_PODS: usize = 5_000;

fn large() -> bool {
    std::env::var_os("KCACHE_BENCH_LARGE").is_some()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Counts every notification and wakes the bench when `target` is reached.
#[derive(Clone)]
struct Counter {
    seen: Arc<AtomicUsize>,
    target: Arc<AtomicUsize>,
    done: Arc<Notify>,
}

impl Counter {
    fn new() -> Self {
        Self {
            seen: Arc::default(),
            target: Arc::new(AtomicUsize::new(usize::MAX)),
            done: Arc::default(),
        }
    }

    fn hit(&self) {
        if self.seen.fetch_add(1, Ordering::AcqRel) + 1 >= self.target.load(Ordering::Acquire) {
            self.done.notify_one();
        }
    }

    /// Raises the target by `n` notifications.
    fn expect(&self, n: usize) {
        let now = self.seen.load(Ordering::Acquire);
        let target = self.target.load(Ordering::Acquire);
        let base = if target == usize::MAX { now } else { target };
        self.target.store(base + n, Ordering::Release);
    }

    async fn wait(&self) {
        loop {
            let notified = self.done.notified();
            if self.seen.load(Ordering::Acquire) >= self.target.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

impl ResourceEventHandler<Pod> for Counter {
    fn on_add(&self, _: &Arc<Pod>, _: bool) {
        self.hit();
    }
    fn on_update(&self, _: &Arc<Pod>, _: &Arc<Pod>) {
        self.hit();
    }
    fn on_delete(&self, _: &MaybeTombstone<Pod>) {
        self.hit();
    }
}

/// How a fixture's informer holds its cache.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cache {
    /// The default cache with the namespace index only (the scenarios of client-go's benchmarks).
    Unindexed,
    /// The default cache, indexed by namespace and node.
    Shared,
    /// The compact cache, indexed by namespace and node.
    Compact,
}

/// A synced informer over a fake source holding `n` fixture pods, with `handlers` counters.
struct Fixture {
    source: Arc<FakeControllerSource<Pod>>,
    informer: SharedIndexInformer<Pod>,
    counter: Counter,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), kcache_informer::InformerError>>,
    /// Two states of the first `BATCH` pods with distinct resource versions, sent alternately.
    updates: [Vec<Arc<Pod>>; 2],
    round: AtomicUsize,
}

impl Fixture {
    async fn new(n: usize, handlers: usize) -> Self {
        Self::with_cache(n, handlers, Cache::Unindexed).await
    }

    /// The fixture with the cache `cache`.
    async fn with_cache(n: usize, handlers: usize, cache: Cache) -> Self {
        let source = Arc::new(FakeControllerSource::with_history(16));
        source.add_all((0..n).map(|i| testing::pod(i, NAMESPACES)));
        let mut builder = SharedIndexInformer::builder(Arc::clone(&source));
        if cache == Cache::Compact {
            builder = builder.compact_cache();
        }
        if cache != Cache::Unindexed {
            builder = builder.index(NODE_NAME_INDEX, node_name_index_func());
        }
        let informer = builder.build();
        let counter = Counter::new();
        for _ in 0..handlers {
            informer.add_event_handler(counter.clone()).unwrap();
        }
        counter.expect(n * handlers);
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(informer.run(shutdown.clone()));
        counter.wait().await;
        // Events sent before the informer's watch is open would be lost.
        while source.watchers() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let updates = [1_000_000u64, 2_000_000].map(|base| {
            (0..BATCH.min(n))
                .map(|i| Arc::new(testing::pod_at(i, NAMESPACES, base + i as u64)))
                .collect()
        });
        Self {
            source,
            informer,
            counter,
            shutdown,
            task,
            updates,
            round: AtomicUsize::new(0),
        }
    }

    /// Sends one batch of updates and waits until every handler saw it.
    async fn write_batch(&self, handlers: usize) {
        // Alternate between the two states: an update to the state already cached would be a
        // resync, which reaches no handler.
        let batch = &self.updates[self.round.fetch_add(1, Ordering::Relaxed) % 2];
        self.counter.expect(batch.len() * handlers);
        for pod in batch {
            self.source
                .send_event(|| WatchEvent::Modified(Arc::clone(pod)));
        }
        self.counter.wait().await;
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap().unwrap();
    }
}

fn distribution(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("distribution");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));
    for handlers in [1, 10, 50] {
        let fixture = rt.block_on(Fixture::new(BATCH, handlers));
        group.throughput(Throughput::Elements((BATCH * handlers) as u64));
        group.bench_function(BenchmarkId::new("handlers", handlers), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        fixture.write_batch(handlers).await;
                    }
                    start.elapsed()
                })
            });
        });
        rt.block_on(fixture.stop());
    }
    group.finish();
}

/// Readers listing one namespace each in a loop on their own threads, until stopped.
struct Readers {
    stop: Arc<AtomicBool>,
    reads: Arc<AtomicUsize>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Readers {
    fn start(informer: &SharedIndexInformer<Pod>, count: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicUsize::new(0));
        let threads = (0..count)
            .map(|r| {
                let (lister, stop, reads) =
                    (informer.lister(), Arc::clone(&stop), Arc::clone(&reads));
                std::thread::spawn(move || {
                    let everything = Selector::default();
                    let mut i = r;
                    while !stop.load(Ordering::Relaxed) {
                        let ns = testing::namespace_of(i, NAMESPACES);
                        black_box(lister.namespace(&ns).list(&everything));
                        reads.fetch_add(1, Ordering::Relaxed);
                        i += 1;
                    }
                })
            })
            .collect();
        Self {
            stop,
            reads,
            threads,
        }
    }

    fn stop(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().unwrap();
        }
        self.reads.load(Ordering::Relaxed)
    }
}

fn shared_index_informer(c: &mut Criterion) {
    let rt = runtime();
    let sizes: &[usize] = if large() {
        &[10_000, 40_000]
    } else {
        &[10_000]
    };
    let mut group = c.benchmark_group("shared_index_informer");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));
    for &n in sizes {
        let fixture = rt.block_on(Fixture::new(n, 1));
        for listers in [0, 10, 80] {
            // Writes: a batch of updates applied to the cache while `listers` threads read.
            let readers = Readers::start(&fixture.informer, listers);
            group.throughput(Throughput::Elements(BATCH as u64));
            group.bench_function(BenchmarkId::new(format!("writes/{n}"), listers), |b| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let start = Instant::now();
                        for _ in 0..iters {
                            fixture.write_batch(1).await;
                        }
                        start.elapsed()
                    })
                });
            });
            readers.stop();
            // Reads: one namespace list while `listers` other threads read and updates stream in.
            let readers = Readers::start(&fixture.informer, listers);
            let writing = Arc::new(AtomicBool::new(true));
            let writer = rt.spawn({
                let (source, updates, writing) = (
                    Arc::clone(&fixture.source),
                    fixture.updates.clone(),
                    Arc::clone(&writing),
                );
                async move {
                    let mut round = 0usize;
                    while writing.load(Ordering::Relaxed) {
                        for pod in &updates[round % 2] {
                            source.send_event(|| WatchEvent::Modified(Arc::clone(pod)));
                        }
                        round += 1;
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
            });
            let lister = fixture.informer.lister();
            let everything = Selector::default();
            group.throughput(Throughput::Elements(1));
            group.bench_function(BenchmarkId::new(format!("reads/{n}"), listers), |b| {
                let mut i = 0;
                b.iter(|| {
                    i += 1;
                    black_box(
                        lister
                            .namespace(&testing::namespace_of(i, NAMESPACES))
                            .list(&everything),
                    )
                });
            });
            writing.store(false, Ordering::Relaxed);
            rt.block_on(writer).unwrap();
            readers.stop();
        }
        rt.block_on(fixture.stop());
    }
    group.finish();
}

fn initial_sync(c: &mut Criterion) {
    let rt = runtime();
    let n = if large() { 100_000 } else { 10_000 };
    let pods = Arc::new(testing::pods(n, NAMESPACES));
    let lw = ListWatch::<Pod>::new(
        move |_| {
            let items = pods.to_vec();
            async move {
                Ok(ListPage {
                    items,
                    resource_version: "1".into(),
                    continue_token: None,
                    remaining_item_count: None,
                })
            }
        },
        |_| async { Ok(Box::pin(stream::pending()) as WatchStream<Pod>) },
    );
    let mut group = c.benchmark_group("initial_sync");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_millis(500));
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(BenchmarkId::new("pods", n), |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let informer = SharedIndexInformer::builder(lw.clone()).build();
                    let counter = Counter::new();
                    informer.add_event_handler(counter.clone()).unwrap();
                    counter.expect(n);
                    let shutdown = CancellationToken::new();
                    let start = Instant::now();
                    let task = tokio::spawn(informer.run(shutdown.clone()));
                    counter.wait().await;
                    total += start.elapsed();
                    assert!(informer.has_synced());
                    shutdown.cancel();
                    task.await.unwrap().unwrap();
                }
                total
            })
        });
    });
    group.finish();
}

/// A group of watch-path cases: ten samples of `measurement` each, per batch of `BATCH` events.
fn watch_path_group<'a>(
    c: &'a mut Criterion,
    name: &str,
    measurement: Duration,
) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .measurement_time(measurement)
        .warm_up_time(Duration::from_millis(500))
        .throughput(Throughput::Elements(BATCH as u64));
    group
}

/// The cost of metrics on the watch path, in one run: batches of watch updates through an
/// informer to one handler, `off` as it is, `on` exported through `PrometheusMetrics` and
/// scraped after every batch (only with `--features prometheus`).
fn watch_path_metrics(c: &mut Criterion) {
    let rt = runtime();
    let mut group = watch_path_group(c, "watch_path_metrics", Duration::from_secs(3));
    for on in [false, true] {
        let fixture = rt.block_on(Fixture::new(BATCH, 1));
        let registry = if on {
            exported(&fixture.informer)
        } else {
            None
        };
        if on && registry.is_none() {
            rt.block_on(fixture.stop());
            continue;
        }
        group.bench_function(if on { "on" } else { "off" }, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        fixture.write_batch(1).await;
                        if let Some(registry) = &registry {
                            black_box(scrape(registry));
                        }
                    }
                    start.elapsed()
                })
            });
        });
        rt.block_on(fixture.stop());
    }
    group.finish();
}

/// The process's CPU time so far (user and system, every thread).
fn cpu_time() -> Duration {
    let usage = getrusage(UsageWho::RUSAGE_SELF).unwrap();
    let time = |t: TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1_000);
    time(usage.user_time()) + time(usage.system_time())
}

/// The CPU per watch event of the default and the compact cache, side by side in one run:
/// batches of watch updates (each replacing a cached pod) through an informer of
/// [`WATCH_PATH_PODS`] pods indexed by namespace and node to one handler. The figure is the
/// process's CPU time (every thread: the reflector, the queue, the cache, the handler), not
/// wall time, so that it is the work an event costs on any machine, loaded or not.
fn watch_path_cpu(c: &mut Criterion) {
    let rt = runtime();
    let mut group = watch_path_group(c, "watch_path_cpu", Duration::from_secs(5));
    for (name, cache) in [("shared", Cache::Shared), ("compact", Cache::Compact)] {
        let fixture = rt.block_on(Fixture::with_cache(WATCH_PATH_PODS, 1, cache));
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = cpu_time();
                    for _ in 0..iters {
                        fixture.write_batch(1).await;
                    }
                    cpu_time() - start
                })
            });
        });
        rt.block_on(fixture.stop());
    }
    group.finish();
}

criterion_group!(
    benches,
    distribution,
    shared_index_informer,
    initial_sync,
    watch_path_metrics,
    watch_path_cpu
);
criterion_main!(benches);
