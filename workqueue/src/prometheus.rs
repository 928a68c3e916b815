//! [`PrometheusMetrics`]: a [`MetricsProvider`] exporting client-go's work-queue metric families
//! through `prometheus-client` (feature `prometheus`).

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::MetricsProvider;

/// The label every family carries: the queue's name (client-go's `name`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueName {
    name: String,
}

type Seconds = Family<QueueName, Histogram, fn() -> Histogram>;
type SecondsGauge = Family<QueueName, Gauge<f64, AtomicU64>>;

/// The buckets of client-go's (and controller-runtime's) duration histograms: 10 ns to 1000 s.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 12))
}

/// The work-queue families with client-go's names (`workqueue_depth`, `workqueue_adds_total`,
/// `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds`,
/// `workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds`,
/// `workqueue_retries_total`), and kcache's `workqueue_stale_requeues_total` (items requeued
/// because their cache was behind the controller's writes), labelled with the queue's `name`. One value serves every queue:
/// clone it into each queue's config and [`register`](PrometheusMetrics::register) it once.
#[derive(Debug, Clone)]
pub struct PrometheusMetrics {
    depth: Family<QueueName, Gauge>,
    adds: Family<QueueName, Counter>,
    queue_duration: Seconds,
    work_duration: Seconds,
    unfinished_work: SecondsGauge,
    longest_running: SecondsGauge,
    retries: Family<QueueName, Counter>,
    stale_requeues: Family<QueueName, Counter>,
}

impl Default for PrometheusMetrics {
    fn default() -> Self {
        Self {
            depth: Family::default(),
            adds: Family::default(),
            queue_duration: Family::new_with_constructor(duration_histogram),
            work_duration: Family::new_with_constructor(duration_histogram),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
            retries: Family::default(),
            stale_requeues: Family::default(),
        }
    }
}

impl PrometheusMetrics {
    /// Registers the families in `registry` (counters get their `_total` suffix there).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            self.depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            self.adds.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            self.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            self.work_duration.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
            self.unfinished_work.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            self.longest_running.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            self.retries.clone(),
        );
        registry.register(
            "workqueue_stale_requeues",
            "Total number of items requeued because their cache had not caught up with the controller's writes",
            self.stale_requeues.clone(),
        );
    }
}

fn label(queue: &str) -> QueueName {
    QueueName {
        name: queue.to_owned(),
    }
}

impl MetricsProvider for PrometheusMetrics {
    fn depth(&self, queue: &str, depth: usize) {
        let depth = i64::try_from(depth).unwrap_or(i64::MAX);
        self.depth.get_or_create(&label(queue)).set(depth);
    }

    fn add(&self, queue: &str) {
        self.adds.get_or_create(&label(queue)).inc();
    }

    fn queue_latency(&self, queue: &str, latency: Duration) {
        let histogram = self.queue_duration.get_or_create(&label(queue));
        histogram.observe(latency.as_secs_f64());
    }

    fn work_duration(&self, queue: &str, duration: Duration) {
        let histogram = self.work_duration.get_or_create(&label(queue));
        histogram.observe(duration.as_secs_f64());
    }

    fn unfinished_work(&self, queue: &str, total: Duration, longest: Duration) {
        let name = label(queue);
        self.unfinished_work
            .get_or_create(&name)
            .set(total.as_secs_f64());
        self.longest_running
            .get_or_create(&name)
            .set(longest.as_secs_f64());
    }

    fn retry(&self, queue: &str) {
        self.retries.get_or_create(&label(queue)).inc();
    }

    fn stale_requeue(&self, queue: &str) {
        self.stale_requeues.get_or_create(&label(queue)).inc();
    }
}
