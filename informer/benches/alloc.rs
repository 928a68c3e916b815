//! Allocations per watch event through a whole [`SharedIndexInformer`]: a counting global
//! allocator ([`stats_alloc`]) counts every allocation made while a batch of watch events
//! goes from the source through the queue, the indexer and the processor to one handler.
//! Deterministic (one current-thread runtime): `cargo bench -p kcache-informer --bench alloc`;
//! with `--features prometheus` also with the informer exported to Prometheus.

// A bench binary has no public API.
#![allow(missing_docs)]

#[path = "support/export.rs"]
mod export;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use export::{exported, scrape};
use k8s_openapi::api::core::v1::Pod;
use kcache_informer::{ResourceEventHandler, SharedIndexInformer, wait_for_cache_sync};
use kcache_reflector::WatchEvent;
use kcache_reflector::testing::FakeControllerSource;
use kcache_store::testing;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Pods in the cache; every event updates one of them.
const PODS: usize = 1000;
/// Events per measured batch.
const EVENTS: usize = 10_000;

/// Counts updates and wakes the bench at `target`.
#[derive(Default)]
struct Updates {
    seen: AtomicUsize,
    target: AtomicUsize,
    done: Notify,
}

impl ResourceEventHandler<Pod> for Updates {
    fn on_update(&self, _: &Arc<Pod>, _: &Arc<Pod>) {
        if self.seen.fetch_add(1, Ordering::AcqRel) + 1 == self.target.load(Ordering::Acquire) {
            self.done.notify_one();
        }
    }
}

/// Allocations per event; with `export`, the informer is exported through the `prometheus`
/// feature's `PrometheusMetrics` (read at scrape time: the registry is encoded before and after
/// the measured events, outside the count).
async fn allocations_per_event(export: bool) -> f64 {
    let source = Arc::new(FakeControllerSource::with_history(16));
    source.add_all((0..PODS).map(|i| testing::pod(i, 10)));
    let informer = SharedIndexInformer::builder(Arc::clone(&source)).build();
    let registry = if export { exported(&informer) } else { None };
    let updates = Arc::new(Updates::default());
    informer.add_event_handler(Arc::clone(&updates)).unwrap();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(informer.run(shutdown.clone()));
    assert!(wait_for_cache_sync(&shutdown, &[&informer]).await);
    while source.watchers() == 0 {
        tokio::task::yield_now().await;
    }
    let pods: Vec<Arc<Pod>> = (0..EVENTS)
        .map(|i| Arc::new(testing::pod_at(i % PODS, 10, 1_000_000 + i as u64)))
        .collect();
    updates.target.store(EVENTS, Ordering::Release);
    registry.as_ref().map(scrape);
    let region = Region::new(GLOBAL);
    let done = updates.done.notified();
    for pod in &pods {
        source.send_event(|| WatchEvent::Modified(Arc::clone(pod)));
    }
    done.await;
    let change = region.change();
    let made = change.allocations + change.reallocations;
    registry.as_ref().map(scrape);
    shutdown.cancel();
    task.await.unwrap().unwrap();
    made as f64 / EVENTS as f64
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let per_event = rt.block_on(allocations_per_event(false));
    println!("allocations per watch event (informer, one handler): {per_event:.2}");
    if cfg!(feature = "prometheus") {
        let per_event = rt.block_on(allocations_per_event(true));
        println!("allocations per watch event, informer exported to Prometheus: {per_event:.2}");
    }
}
