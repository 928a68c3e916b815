//! The controller work queue (client-go's `util/workqueue`): the queue between an informer's event
//! handlers and a controller's workers. It knows nothing of Kubernetes; items are any
//! `Eq + Hash + Clone` value, usually an object key.
//!
//! - [`WorkQueue`] holds distinct items and never hands one to two workers at once, with delayed
//!   ([`WorkQueue::add_after`]) and rate-limited ([`WorkQueue::add_rate_limited`]) adds.
//! - [`WorkQueue::next`] hands out a [`WorkItem`], a guard that marks the item done when it is
//!   dropped, so a worker that returns early or panics never wedges a key.
//! - [`WorkQueue::run_workers`] runs `n` workers calling a reconcile function: success forgets the
//!   item's backoff, an error (or a panic) retries it through the [`RateLimiter`]; it returns once
//!   the queue is shut down and every worker has finished.
//! - [`RateLimiter`]s decide how long a failed item waits; [`MetricsProvider`] receives metrics.
//!
//! ```
//! use kcache_workqueue::WorkQueue;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let queue = WorkQueue::<String>::new();
//! queue.add("default/web".to_string());
//! queue.add("default/db".to_string());
//! queue.shut_down(); // no new adds; what is queued is still handed out
//!
//! // Two workers; `run_workers` returns once the queue is shut down and drained.
//! queue
//!     .run_workers(2, |key: String| async move {
//!         println!("reconciling {key}");
//!         Ok::<(), std::convert::Infallible>(())
//!     })
//!     .await;
//! assert!(queue.is_empty());
//! # }
//! ```
//!
//! Everything waits on tokio primitives without blocking a thread; delays follow tokio's clock.

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod metrics;
#[cfg(feature = "prometheus")]
mod prometheus;
mod rate_limiter;
mod work_item;
mod work_queue;
mod workers;

pub use metrics::{MetricsProvider, NoopMetrics, TracingMetrics};
#[cfg(feature = "prometheus")]
pub use prometheus::PrometheusMetrics;
pub use rate_limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxOfRateLimiter, RateLimiter, default_controller_rate_limiter,
};
pub use work_item::WorkItem;
pub use work_queue::{WorkQueue, WorkQueueConfig};
