//! Work-queue behaviours.

use std::sync::Arc;
use std::time::Duration;

use kcache_deltafifo::{ItemFastSlowRateLimiter, MetricsProvider, WorkQueue, WorkQueueConfig};
use parking_lot::Mutex;

#[tokio::test]
async fn add_while_processing_requeues_on_done() {
    let q = WorkQueue::<&str>::new();
    q.add("a");
    let item = q.get().await.unwrap();
    q.add("a");
    // Not handed out a second time while it is processed.
    assert_eq!(q.len(), 0);
    q.done(&item);
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("a"));
}

#[tokio::test]
async fn collapse_while_processing() {
    let q = WorkQueue::<&str>::new();
    q.add("a");
    let item = q.get().await.unwrap();
    q.add("a");
    q.add("a");
    q.done(&item);
    assert_eq!(q.len(), 1);
    let again = q.get().await.unwrap();
    q.done(&again);
    assert_eq!(q.len(), 0);
}

#[tokio::test]
async fn adding_an_item_already_dirty_does_nothing() {
    let q = WorkQueue::<u32>::new();
    q.add(1);
    q.add(2);
    q.add(1);
    assert_eq!(q.len(), 2);
    assert_eq!(q.get().await, Some(1));
    assert_eq!(q.get().await, Some(2));
}

#[tokio::test]
async fn add_is_ignored_after_shut_down_but_get_hands_out_remaining_items() {
    let q = WorkQueue::<u32>::new();
    q.add(1);
    q.shut_down();
    q.add(2);
    assert!(q.is_shutting_down());
    assert_eq!(q.get().await, Some(1));
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn shut_down_unblocks_every_waiting_get() {
    let q = WorkQueue::<u32>::new();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    tokio::task::yield_now().await;
    q.shut_down();
    for w in workers {
        assert_eq!(w.await.unwrap(), None);
    }
}

#[tokio::test]
async fn drain_with_shut_down_with_drain_and_a_dirty_item() {
    let q = WorkQueue::<&str>::new();
    q.add("foo");
    let gotten = q.get().await.unwrap();
    q.add("foo");
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain().await })
    };
    tokio::task::yield_now().await;
    // Shutting down and nothing waiting: `get` says so, the drain still waits for "foo".
    assert_eq!(q.get().await, None);
    assert!(!drain.is_finished());
    // Done puts the dirty item back: it is handed out once more despite the shutdown.
    q.done(&gotten);
    let again = q.get().await.unwrap();
    assert!(!drain.is_finished());
    q.done(&again);
    assert_eq!(q.get().await, None);
    drain.await.unwrap();
}

#[tokio::test]
async fn shut_down_with_drain_waits_for_every_item_being_processed() {
    let q = WorkQueue::<&str>::new();
    q.add("a");
    q.add("b");
    let a = q.get().await.unwrap();
    // "a" is processing and dirty again; "b" waits.
    q.add("a");
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain().await })
    };
    tokio::task::yield_now().await;
    assert!(!drain.is_finished());
    q.done(&a);
    // The dirty "a" was queued again on done; the worker keeps getting until None.
    let mut rest = Vec::new();
    while let Some(item) = q.get().await {
        rest.push(item);
        q.done(&item);
    }
    rest.sort();
    assert_eq!(rest, ["a", "b"]);
    drain.await.unwrap();
    assert_eq!(q.processing(), 0);
}

#[tokio::test]
async fn shut_down_aborts_the_drain() {
    let q = WorkQueue::<u32>::new();
    q.add(1);
    let _held = q.get().await.unwrap();
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain().await })
    };
    tokio::task::yield_now().await;
    assert!(!drain.is_finished());
    q.shut_down();
    drain.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn add_after_adds_once_the_delay_has_passed() {
    let q = WorkQueue::<u32>::new();
    q.add_after(1, Duration::from_millis(50));
    assert_eq!(q.len(), 0);
    assert_eq!(q.delayed(), 1);
    tokio::time::advance(Duration::from_millis(49)).await;
    assert_eq!(q.len(), 0);
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some(1));
}

#[tokio::test(start_paused = true)]
async fn waiting_get_wakes_when_a_delay_expires() {
    let q = WorkQueue::<u32>::new();
    let worker = {
        let q = q.clone();
        tokio::spawn(async move { q.get().await })
    };
    tokio::task::yield_now().await;
    q.add_after(7, Duration::from_secs(10));
    q.add_after(8, Duration::from_secs(1));
    // Paused time auto-advances to the earliest timer.
    assert_eq!(worker.await.unwrap(), Some(8));
}

#[tokio::test(start_paused = true)]
async fn delaying_queue_dedup_keeps_the_earliest_time() {
    let q = WorkQueue::<u32>::new();
    q.add_after(1, Duration::from_secs(5));
    q.add_after(1, Duration::from_secs(1));
    q.add_after(1, Duration::from_secs(10));
    assert_eq!(q.delayed(), 1);
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some(1));
    tokio::time::advance(Duration::from_secs(20)).await;
    // The later times were absorbed: nothing comes back.
    assert_eq!(q.len(), 0);
    assert_eq!(q.delayed(), 0);
}

#[tokio::test(start_paused = true)]
async fn delayed_items_come_out_in_ready_time_order() {
    let q = WorkQueue::<u32>::new();
    for (item, ms) in [(1, 30), (2, 10), (3, 20)] {
        q.add_after(item, Duration::from_millis(ms));
    }
    tokio::time::advance(Duration::from_millis(30)).await;
    let mut out = Vec::new();
    while !q.is_empty() {
        out.push(q.get().await.unwrap());
    }
    assert_eq!(out, [2, 3, 1]);
}

#[tokio::test(start_paused = true)]
async fn add_after_with_zero_delay_adds_at_once() {
    let q = WorkQueue::<u32>::new();
    q.add_after(1, Duration::ZERO);
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn add_after_is_ignored_after_shut_down_and_shut_down_drops_delayed_items() {
    let q = WorkQueue::<u32>::new();
    q.add_after(1, Duration::from_secs(1));
    q.shut_down();
    q.add_after(2, Duration::from_secs(1));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_waits_for_the_limiter_and_forget_resets_num_requeues() {
    let limiter = Arc::new(ItemFastSlowRateLimiter::new(
        Duration::from_millis(5),
        Duration::from_secs(10),
        1,
    ));
    let q = WorkQueue::<u32>::with_config(WorkQueueConfig::default().rate_limiter(limiter));
    q.add_rate_limited(1);
    assert_eq!(q.num_requeues(&1), 1);
    tokio::time::advance(Duration::from_millis(5)).await;
    assert_eq!(q.len(), 1);
    let item = q.get().await.unwrap();
    q.done(&item);
    q.add_rate_limited(1);
    assert_eq!(q.num_requeues(&1), 2);
    tokio::time::advance(Duration::from_secs(5)).await;
    assert_eq!(q.len(), 0, "second attempt is slow");
    q.forget(&1);
    assert_eq!(q.num_requeues(&1), 0);
}

#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<String>>);

impl MetricsProvider for Recorder {
    fn depth(&self, queue: &str, depth: usize) {
        self.0.lock().push(format!("{queue} depth {depth}"));
    }
    fn add(&self, queue: &str) {
        self.0.lock().push(format!("{queue} add"));
    }
    fn queue_latency(&self, queue: &str, latency: Duration) {
        self.0
            .lock()
            .push(format!("{queue} latency {}", latency.as_millis()));
    }
    fn work_duration(&self, queue: &str, duration: Duration) {
        self.0
            .lock()
            .push(format!("{queue} work {}", duration.as_millis()));
    }
    fn unfinished_work(&self, queue: &str, total: Duration, longest: Duration) {
        self.0.lock().push(format!(
            "{queue} unfinished {} {}",
            total.as_millis(),
            longest.as_millis()
        ));
    }
    fn retry(&self, queue: &str) {
        self.0.lock().push(format!("{queue} retry"));
    }
}

#[tokio::test(start_paused = true)]
async fn metrics_provider_sees_adds_depth_latency_work_and_retries() {
    let recorder = Arc::new(Recorder::default());
    let q = WorkQueue::<u32>::with_config(
        WorkQueueConfig::default()
            .name("q")
            .metrics(recorder.clone()),
    );
    q.add(1);
    q.add(1);
    tokio::time::advance(Duration::from_millis(3)).await;
    let item = q.get().await.unwrap();
    tokio::time::advance(Duration::from_millis(4)).await;
    q.done(&item);
    q.add_rate_limited(2);
    let events = recorder.0.lock().clone();
    assert_eq!(
        events,
        [
            "q add",
            "q depth 1",
            "q latency 3",
            "q depth 0",
            "q unfinished 0 0",
            "q work 4",
            "q unfinished 0 0",
            "q retry",
        ]
    );
}

#[tokio::test]
async fn tracing_metrics_provider_is_accepted() {
    let q = WorkQueue::<u32>::with_config(
        WorkQueueConfig::default()
            .name("traced")
            .metrics(Arc::new(kcache_deltafifo::TracingMetrics)),
    );
    q.add(1);
    let item = q.get().await.unwrap();
    q.done(&item);
    assert_eq!(q.name(), "traced");
}

#[tokio::test]
async fn a_dropped_get_loses_nothing() {
    let q = WorkQueue::<u32>::new();
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    tokio::task::yield_now().await;
    q.add(1);
    workers[0].abort();
    let [first, second]: [_; 2] = workers.try_into().unwrap();
    assert_eq!(second.await.unwrap(), Some(1));
    assert!(first.await.unwrap_err().is_cancelled());
    assert_eq!(q.processing(), 1);
}

#[tokio::test(start_paused = true)]
async fn unfinished_work_is_reported_periodically_until_shutdown() {
    let recorder = Arc::new(Recorder::default());
    let q = WorkQueue::<u32>::with_config(
        WorkQueueConfig::default()
            .name("q")
            .metrics(recorder.clone()),
    );
    q.add(1);
    let _stuck = q.get().await.unwrap();
    let reporter = {
        let q = q.clone();
        tokio::spawn(async move {
            q.report_unfinished_work_every(Duration::from_millis(500))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(1200)).await;
    q.shut_down();
    reporter.await.unwrap();
    let unfinished: Vec<String> = recorder
        .0
        .lock()
        .iter()
        .filter(|e| e.starts_with("q unfinished"))
        .cloned()
        .collect();
    // At get, then at 0, 500 and 1000 ms of being stuck.
    assert_eq!(
        unfinished,
        [
            "q unfinished 0 0",
            "q unfinished 0 0",
            "q unfinished 500 500",
            "q unfinished 1000 1000"
        ]
    );
}
