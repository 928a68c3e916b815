//! `requeue_stale`: a key whose cache is behind the controller's writes is requeued, rate
//! limited and counted, and its backoff survives the worker's success.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kcache_workqueue::{
    ItemExponentialFailureRateLimiter, MetricsProvider, WorkQueue, WorkQueueConfig,
};
use parking_lot::Mutex;

#[derive(Debug, Default)]
struct StaleCounter(Mutex<Vec<String>>);

impl MetricsProvider for StaleCounter {
    fn stale_requeue(&self, queue: &str) {
        self.0.lock().push(format!("{queue} stale"));
    }
    fn retry(&self, queue: &str) {
        self.0.lock().push(format!("{queue} retry"));
    }
}

fn queue_with(metrics: Arc<StaleCounter>) -> WorkQueue<&'static str> {
    let limiter =
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(10));
    WorkQueue::with_config(
        WorkQueueConfig::default()
            .name("rs")
            .rate_limiter(Arc::new(limiter))
            .metrics(metrics),
    )
}

#[tokio::test(start_paused = true)]
async fn requeue_stale_is_rate_limited_and_counted() {
    let metrics = Arc::new(StaleCounter::default());
    let queue = queue_with(Arc::clone(&metrics));
    queue.add("a");
    let key = queue.get().await.unwrap();
    queue.requeue_stale(key);
    queue.done(&key);
    assert_eq!(queue.len(), 0, "not ready before its delay");
    assert_eq!(queue.delayed(), 1);
    let start = tokio::time::Instant::now();
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), Duration::from_millis(5));
    assert_eq!(*metrics.0.lock(), ["rs stale", "rs retry"]);
}

#[tokio::test(start_paused = true)]
async fn stale_requeues_back_off_through_run_workers() {
    let metrics = Arc::new(StaleCounter::default());
    let queue = queue_with(Arc::clone(&metrics));
    let calls = Arc::new(AtomicUsize::new(0));
    queue.add("a");
    let workers = tokio::spawn(queue.run_workers(1, {
        let (queue, calls) = (queue.clone(), Arc::clone(&calls));
        move |key: &'static str| {
            let (queue, calls) = (queue.clone(), Arc::clone(&calls));
            async move {
                // Stale three times, then reconciled.
                if calls.fetch_add(1, Ordering::SeqCst) < 3 {
                    queue.requeue_stale(key);
                    return Ok::<(), String>(());
                }
                queue.shut_down();
                Ok(())
            }
        }
    }));
    let start = tokio::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(60), workers)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    // 5 + 10 + 20 ms: the worker's Ok did not forget the backoff between stale requeues.
    assert_eq!(start.elapsed(), Duration::from_millis(35));
    assert_eq!(
        metrics
            .0
            .lock()
            .iter()
            .filter(|m| m.ends_with("stale"))
            .count(),
        3
    );
    assert_eq!(queue.num_requeues(&"a"), 0, "forgotten once reconciled");
}
