//! [`WorkQueue::requeue_stale`]: read-your-writes for controllers (client-go 1.36, KEP-5647).

use std::hash::Hash;

use super::WorkQueue;

impl<T: Eq + Hash + Clone + Send + Sync + 'static> WorkQueue<T> {
    /// Requeues `item`, whose cache has not caught up with the controller's own writes yet,
    /// instead of reconciling it from the old state: a rate-limited add (the delay the queue's
    /// [`RateLimiter`](crate::RateLimiter) gives, growing while the cache stays behind), counted
    /// by the metrics provider's [`stale_requeue`](crate::MetricsProvider::stale_requeue) (and
    /// as a retry). Called from a reconcile run by [`run_workers`](WorkQueue::run_workers), which
    /// then returns `Ok`: the item's backoff is not forgotten.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use kcache_workqueue::{ItemExponentialFailureRateLimiter, WorkQueue, WorkQueueConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
    /// let limiter = ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1));
    /// let queue = WorkQueue::with_config(WorkQueueConfig::default().rate_limiter(Arc::new(limiter)));
    /// queue.add("default/web");
    /// let key = queue.get().await.unwrap();
    /// // The informer has not caught up with what we wrote for this key: look again later.
    /// queue.requeue_stale(key);
    /// queue.done(&key);
    /// assert_eq!(queue.num_requeues(&"default/web"), 1);
    /// assert_eq!(queue.get().await, Some("default/web")); // after 5 ms
    /// # }
    /// ```
    pub fn requeue_stale(&self, item: T) {
        if let Some(m) = &self.inner.metrics {
            m.stale_requeue(&self.inner.name);
        }
        self.inner.state.lock().stale.insert(item.clone());
        self.add_rate_limited(item);
    }

    /// Whether `item` was requeued as stale since it was handed out (and forgets that).
    pub(crate) fn take_stale(&self, item: &T) -> bool {
        self.inner.state.lock().stale.remove(item)
    }
}
