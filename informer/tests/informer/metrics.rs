//! The `prometheus` feature: each informer family read from the encoded exposition while an
//! informer runs over the fake source.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kcache_informer::{HandlerOptions, PrometheusMetrics, QueueMode, SharedIndexInformer};
use kcache_reflector::testing::FakeControllerSource;
use kcache_reflector::{ListWatchError, ReflectorConfig, ReflectorMetrics};
use kube_core::Status;
use parking_lot::Mutex;
use prometheus_client::registry::Registry;

use crate::common::{Recorder, Running, key, pod, recv_n, source_with, take_n};

/// An informer named `pods` over `source`, exported through a fresh registry.
fn exported(
    source: &Arc<FakeControllerSource<Pod>>,
    build: impl FnOnce(
        kcache_informer::SharedIndexInformerBuilder<Pod>,
    ) -> kcache_informer::SharedIndexInformerBuilder<Pod>,
) -> (SharedIndexInformer<Pod>, Registry) {
    let informer = build(SharedIndexInformer::builder(Arc::clone(source)).name("pods")).build();
    let metrics = PrometheusMetrics::default();
    metrics.add(&informer, &());
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    (informer, registry)
}

/// The registry in the text exposition format.
fn encoded(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text
}

/// The value of the sample `family{labels}` in the encoded registry.
fn sample(registry: &Registry, family: &str, extra_labels: &str) -> Option<String> {
    value(&encoded(registry), family, extra_labels)
}

/// The value of the sample `family{labels}` of the informer `pods` in `text`.
fn value(text: &str, family: &str, extra_labels: &str) -> Option<String> {
    let prefix = format!(
        "{family}{{name=\"pods\",group=\"\",version=\"v1\",resource=\"pods\"{extra_labels}}} "
    );
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix).map(str::to_owned))
}

#[tokio::test(start_paused = true)]
async fn stored_items_and_store_resource_version_follow_the_cache() {
    let source = source_with(3);
    let (informer, registry) = exported(&source, |b| b);
    let mut events = informer.event_stream().unwrap();
    let running = Running::start(Arc::clone(&source), informer);
    running.wait_synced().await;
    take_n(&mut events, 3).await;
    assert_eq!(
        sample(&registry, "informer_stored_items", "").as_deref(),
        Some("3")
    );
    assert_eq!(
        sample(&registry, "informer_store_resource_version", "").as_deref(),
        Some("3")
    );

    source.delete(pod(0));
    assert_eq!(
        take_n(&mut events, 1).await,
        vec![format!("delete {}", key(0))]
    );
    assert_eq!(
        sample(&registry, "informer_stored_items", "").as_deref(),
        Some("2")
    );
    assert_eq!(
        sample(&registry, "informer_store_resource_version", "").as_deref(),
        Some("4")
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn pending_notifications_and_the_oldest_age_are_per_handler() {
    let source = source_with(3);
    let (informer, registry) = exported(&source, |b| b);
    let (fast, mut handled) = Recorder::new();
    informer
        .add_event_handler_with_options(fast, HandlerOptions::new().name("fast"))
        .unwrap();
    // A consumer that does not read yet: its notifications wait.
    let mut slow = informer
        .event_stream_with_options(HandlerOptions::new().name("slow"))
        .unwrap();
    let running = Running::start(Arc::clone(&source), informer);
    running.wait_synced().await;
    recv_n(&mut handled, 3).await;
    tokio::time::advance(Duration::from_secs(5)).await;

    let pending = |handler: &str| {
        let labels = format!(",handler=\"{handler}\"");
        let count = sample(&registry, "informer_pending_notifications", &labels);
        let age = sample(
            &registry,
            "informer_oldest_pending_notification_age_seconds",
            &labels,
        );
        (count.unwrap(), age.unwrap())
    };
    assert_eq!(pending("fast"), ("0".into(), "0.0".into()));
    assert_eq!(pending("slow"), ("3".into(), "5.0".into()));

    take_n(&mut slow, 3).await;
    assert_eq!(pending("slow"), ("0".into(), "0.0".into()));
    running.stop().await;
}

/// Reflector metrics that encode the registry the moment a list has replaced the queue's
/// contents, before the informer's process loop (on the same thread) can pop any of it.
#[derive(Debug, Default)]
struct ScrapeAfterList {
    registry: OnceLock<Arc<Registry>>,
    scraped: Mutex<Vec<String>>,
}

impl ReflectorMetrics for ScrapeAfterList {
    fn list_completed(&self, _: &str, _: Duration, _: usize) {
        if let Some(registry) = self.registry.get() {
            self.scraped.lock().push(encoded(registry));
        }
    }
}

#[tokio::test(start_paused = true)]
async fn queued_items_count_what_the_queue_holds_for_the_cache() {
    let source = source_with(3);
    let scrape = Arc::new(ScrapeAfterList::default());
    let (informer, registry) = exported(&source, |b| {
        b.queue_mode(QueueMode::DeltaFifo)
            .reflector(ReflectorConfig::default().metrics(scrape.clone()))
    });
    let registry = Arc::new(registry);
    scrape.registry.set(Arc::clone(&registry)).unwrap();
    let running = Running::start(Arc::clone(&source), informer);
    running.wait_synced().await;

    // Right after the list: three keys queued, nothing cached yet.
    let after_list = scrape.scraped.lock()[0].clone();
    assert_eq!(
        value(&after_list, "informer_queued_items", "").as_deref(),
        Some("3")
    );
    assert_eq!(
        value(&after_list, "informer_stored_items", "").as_deref(),
        Some("0")
    );
    // Once synced, the queue has been drained into the cache.
    assert_eq!(
        sample(&registry, "informer_queued_items", "").as_deref(),
        Some("0")
    );
    assert_eq!(
        sample(&registry, "informer_stored_items", "").as_deref(),
        Some("3")
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn relists_and_watch_restarts_are_counted_by_reason() {
    let source = source_with(1);
    let (informer, registry) = exported(&source, |b| b);
    let (rec, mut handled) = Recorder::new();
    informer.add_event_handler(rec).unwrap();
    let running = Running::start(Arc::clone(&source), informer);
    running.wait_synced().await;
    recv_n(&mut handled, 1).await;
    let reason =
        |family: &str, reason: &str| sample(&registry, family, &format!(",reason=\"{reason}\""));
    assert_eq!(reason("informer_watch_restarts_total", "closed"), None);

    // The server ends a watch that delivered an event: the next one resumes.
    source.add(pod(1));
    recv_n(&mut handled, 1).await;
    source.end_all_watches();
    source.add(pod(2));
    recv_n(&mut handled, 1).await;
    // Ended again, and the next watch cannot be opened at first.
    source.fail_next_watch(ListWatchError::Connection("connection refused".into()));
    source.end_all_watches();
    source.add(pod(3));
    recv_n(&mut handled, 1).await;
    // 410 Expired inside the watch: a relist.
    source.send_error(Status::failure("too old resource version", "Expired").with_code(410));
    source.add(pod(4));
    recv_n(&mut handled, 1).await;

    assert_eq!(
        reason("informer_watch_restarts_total", "closed").as_deref(),
        Some("2")
    );
    assert_eq!(
        reason("informer_watch_restarts_total", "connection").as_deref(),
        Some("1")
    );
    assert_eq!(
        reason("informer_relists_total", "expired").as_deref(),
        Some("1")
    );
    running.stop().await;
}
