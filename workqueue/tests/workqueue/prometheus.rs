//! `PrometheusMetrics`: the exposition after a scripted sequence of queue operations.

use std::sync::Arc;
use std::time::Duration;

use kcache_testkit::within;
use kcache_workqueue::{PrometheusMetrics, WorkQueue, WorkQueueConfig};
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

#[tokio::test]
async fn prometheus_families_count_adds_depth_latency_work_and_retries_per_queue() {
    let metrics = PrometheusMetrics::default();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let queue = WorkQueue::with_config(
        WorkQueueConfig::default()
            .name("pods")
            .metrics(Arc::new(metrics)),
    );
    queue.add("a");
    queue.add("b");
    queue.add("a"); // already waiting: not an add
    let item = within("an item from the queue", queue.next())
        .await
        .unwrap();
    drop(item); // done
    queue.add_after("c", Duration::from_secs(3600)); // a retry, not yet an add

    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    for line in [
        "workqueue_depth{name=\"pods\"} 1",
        "workqueue_adds_total{name=\"pods\"} 2",
        "workqueue_retries_total{name=\"pods\"} 1",
        "workqueue_queue_duration_seconds_count{name=\"pods\"} 1",
        "workqueue_work_duration_seconds_count{name=\"pods\"} 1",
        "workqueue_unfinished_work_seconds{name=\"pods\"} 0.0",
        "workqueue_longest_running_processor_seconds{name=\"pods\"} 0.0",
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
    }
}
