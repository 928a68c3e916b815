//! Work-queue metrics: a small provider trait with a no-op and a `tracing` implementation.

use std::fmt;
use std::time::Duration;

/// Receives a work queue's metrics (client-go's `workqueue.MetricsProvider`, flattened into
/// callbacks). Every method has a no-op default; `queue` is the queue's name.
pub trait MetricsProvider: Send + Sync + fmt::Debug {
    /// The number of items waiting to be handed out changed.
    fn depth(&self, _queue: &str, _depth: usize) {}
    /// An item was added (not counted when it was already waiting).
    fn add(&self, _queue: &str) {}
    /// An item waited `_latency` between being added and being handed out.
    fn queue_latency(&self, _queue: &str, _latency: Duration) {}
    /// An item was processed for `_duration` (from `get` to `done`).
    fn work_duration(&self, _queue: &str, _duration: Duration) {}
    /// The total time items currently in processing have been processed, and the longest of them
    /// (client-go's unfinished work and longest running processor), updated on every `get` and
    /// `done` and by [`WorkQueue::report_unfinished_work_every`](crate::WorkQueue::report_unfinished_work_every).
    fn unfinished_work(&self, _queue: &str, _total: Duration, _longest: Duration) {}
    /// An item was re-added with a delay (`add_after`, and so `add_rate_limited`), as client-go
    /// counts retries.
    fn retry(&self, _queue: &str) {}
    /// An item was requeued because the cache it is reconciled from had not caught up with the
    /// controller's own writes ([`WorkQueue::requeue_stale`](crate::WorkQueue::requeue_stale));
    /// also counted as a [`retry`](Self::retry).
    fn stale_requeue(&self, _queue: &str) {}
}

/// Discards every metric (the default).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopMetrics;

impl MetricsProvider for NoopMetrics {}

/// Emits every metric as a `tracing` event at TRACE level (target `kcache_workqueue::workqueue`).
#[derive(Debug, Default, Clone, Copy)]
pub struct TracingMetrics;

impl MetricsProvider for TracingMetrics {
    fn depth(&self, queue: &str, depth: usize) {
        tracing::trace!(target: "kcache_workqueue", queue, depth, "depth");
    }

    fn add(&self, queue: &str) {
        tracing::trace!(target: "kcache_workqueue", queue, "add");
    }

    fn queue_latency(&self, queue: &str, latency: Duration) {
        tracing::trace!(target: "kcache_workqueue", queue, latency_s = latency.as_secs_f64(), "queue latency");
    }

    fn work_duration(&self, queue: &str, duration: Duration) {
        tracing::trace!(target: "kcache_workqueue", queue, duration_s = duration.as_secs_f64(), "work duration");
    }

    fn unfinished_work(&self, queue: &str, total: Duration, longest: Duration) {
        tracing::trace!(
            target: "kcache_workqueue",
            queue,
            unfinished_s = total.as_secs_f64(),
            longest_running_s = longest.as_secs_f64(),
            "unfinished work"
        );
    }

    fn retry(&self, queue: &str) {
        tracing::trace!(target: "kcache_workqueue", queue, "retry");
    }

    fn stale_requeue(&self, queue: &str) {
        tracing::trace!(target: "kcache_workqueue", queue, "stale requeue");
    }
}
