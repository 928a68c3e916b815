//! Work-queue metrics: what a `MetricsProvider` sees (adds, depth, latency, work duration,
//! retries, unfinished work), through a recording provider and the tracing one.

use std::sync::Arc;
use std::time::Duration;

use kcache_testkit::within;
use kcache_workqueue::{MetricsProvider, WorkQueue, WorkQueueConfig};
use parking_lot::Mutex;

use crate::work_queue::get;

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
    let item = get(&q).await.unwrap();
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

/// A writer the test reads back: what a `tracing` subscriber printed.
#[derive(Clone, Default)]
struct Printed(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Printed {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn tracing_metrics_provider_emits_each_metric_as_a_trace_event_naming_the_queue() {
    let printed = Printed::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer({
            let printed = printed.clone();
            move || printed.clone()
        })
        .with_ansi(false)
        .without_time()
        .with_max_level(tracing::Level::TRACE)
        .finish();
    // The test runs on one thread: every event below reaches this subscriber.
    let _default = tracing::subscriber::set_default(subscriber);
    let q = WorkQueue::<u32>::with_config(
        WorkQueueConfig::default()
            .name("traced")
            .metrics(Arc::new(kcache_workqueue::TracingMetrics)),
    );
    q.add(1);
    let item = get(&q).await.unwrap();
    q.done(&item);
    q.add_rate_limited(2);
    let text = String::from_utf8(printed.0.lock().clone()).unwrap();
    let events: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("TRACE kcache_workqueue: "))
        .map(|l| l.split(" queue=\"traced\"").next().unwrap_or(l))
        .collect();
    assert_eq!(
        events,
        [
            "add",
            "depth",
            "queue latency",
            "depth",
            "unfinished work",
            "work duration",
            "unfinished work",
            "retry",
        ],
        "{text}"
    );
    assert!(
        text.lines().all(|l| l.contains("queue=\"traced\"")),
        "{text}"
    );
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
    let _stuck = get(&q).await.unwrap();
    let reporter = {
        let q = q.clone();
        tokio::spawn(async move {
            q.report_unfinished_work_every(Duration::from_millis(500))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(1200)).await;
    q.shut_down();
    within("the reporter to stop on shutdown", reporter)
        .await
        .unwrap();
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
