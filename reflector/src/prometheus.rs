//! [`PrometheusMetrics`]: a [`ReflectorMetrics`] exporting the reflector's lists, watches and
//! events through `prometheus-client` (feature `prometheus`), with the names client-go's
//! `reflector_metrics.go` used where it had one.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::ReflectorMetrics;

/// The reflector's name.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Name {
    name: String,
}

/// The reflector's name and a reason (why an event was skipped, a relist, a watch restart).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reason {
    name: String,
    reason: String,
}

fn reason(name: &str, reason: &str) -> Reason {
    Reason {
        name: name.to_owned(),
        reason: reason.to_owned(),
    }
}

type Histograms = Family<Name, Histogram, fn() -> Histogram>;

fn seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 4.0, 10))
}

fn items() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 4.0, 10))
}

fn name(name: &str) -> Name {
    Name {
        name: name.to_owned(),
    }
}

/// The reflector families: `reflector_lists_total`, `reflector_list_duration_seconds`,
/// `reflector_items_per_list`, `reflector_list_errors_total`, `reflector_watches_total`,
/// `reflector_watch_duration_seconds`, `reflector_items_per_watch`,
/// `reflector_watch_events_total`, `reflector_skipped_events_total`, `reflector_relists_total`
/// and `reflector_watch_restarts_total` (with `reason`) and `reflector_last_resource_version`,
/// labelled with the reflector's `name`. One value serves
/// every reflector: clone it into each config and [`register`](PrometheusMetrics::register)
/// it once.
#[derive(Debug, Clone)]
pub struct PrometheusMetrics {
    lists: Family<Name, Counter>,
    list_duration: Histograms,
    items_per_list: Histograms,
    list_errors: Family<Name, Counter>,
    watches: Family<Name, Counter>,
    watch_duration: Histograms,
    items_per_watch: Histograms,
    events: Family<Name, Counter>,
    skipped: Family<Reason, Counter>,
    relists: Family<Reason, Counter>,
    watch_restarts: Family<Reason, Counter>,
    last_resource_version: Family<Name, Gauge>,
    /// Each reflector's event counter, found without allocating a label on the watch path.
    event_counters: Arc<RwLock<HashMap<String, Counter>>>,
}

impl Default for PrometheusMetrics {
    fn default() -> Self {
        Self {
            lists: Family::default(),
            list_duration: Family::new_with_constructor(seconds),
            items_per_list: Family::new_with_constructor(items),
            list_errors: Family::default(),
            watches: Family::default(),
            watch_duration: Family::new_with_constructor(seconds),
            items_per_watch: Family::new_with_constructor(items),
            events: Family::default(),
            skipped: Family::default(),
            relists: Family::default(),
            watch_restarts: Family::default(),
            last_resource_version: Family::default(),
            event_counters: Arc::default(),
        }
    }
}

impl PrometheusMetrics {
    /// Registers the families in `registry` (counters get their `_total` suffix there).
    pub fn register(&self, registry: &mut Registry) {
        let r = registry;
        r.register(
            "reflector_lists",
            "Total number of API lists done by the reflectors",
            self.lists.clone(),
        );
        r.register(
            "reflector_list_duration_seconds",
            "How long an API list takes to return and decode for the reflectors",
            self.list_duration.clone(),
        );
        r.register(
            "reflector_items_per_list",
            "How many items an API list returns to the reflectors",
            self.items_per_list.clone(),
        );
        r.register(
            "reflector_list_errors",
            "Total number of failed API lists of the reflectors",
            self.list_errors.clone(),
        );
        r.register(
            "reflector_watches",
            "Total number of API watches done by the reflectors",
            self.watches.clone(),
        );
        r.register(
            "reflector_watch_duration_seconds",
            "How long an API watch takes to return and decode for the reflectors",
            self.watch_duration.clone(),
        );
        r.register(
            "reflector_items_per_watch",
            "How many items an API watch returns to the reflectors",
            self.items_per_watch.clone(),
        );
        r.register(
            "reflector_watch_events",
            "Total number of watch events (bookmarks included) applied by the reflectors",
            self.events.clone(),
        );
        r.register(
            "reflector_skipped_events",
            "Total number of watch events the reflectors dropped, by reason",
            self.skipped.clone(),
        );
        r.register(
            "reflector_relists",
            "Total number of lists after the first of the reflectors, by reason",
            self.relists.clone(),
        );
        r.register(
            "reflector_watch_restarts",
            "Total number of watches the reflectors resumed from their last resource version, by reason",
            self.watch_restarts.clone(),
        );
        r.register(
            "reflector_last_resource_version",
            "Last resource version seen for the reflectors",
            self.last_resource_version.clone(),
        );
    }
}

impl ReflectorMetrics for PrometheusMetrics {
    fn list_completed(&self, reflector: &str, duration: Duration, count: usize) {
        let label = name(reflector);
        self.lists.get_or_create(&label).inc();
        self.list_duration
            .get_or_create(&label)
            .observe(duration.as_secs_f64());
        #[expect(clippy::cast_precision_loss, reason = "an item count as a sample")]
        self.items_per_list
            .get_or_create(&label)
            .observe(count as f64);
    }

    fn list_failed(&self, reflector: &str) {
        self.list_errors.get_or_create(&name(reflector)).inc();
    }

    fn watch_started(&self, reflector: &str) {
        self.watches.get_or_create(&name(reflector)).inc();
    }

    fn watch_ended(&self, reflector: &str, duration: Duration, events: u64) {
        let label = name(reflector);
        self.watch_duration
            .get_or_create(&label)
            .observe(duration.as_secs_f64());
        #[expect(clippy::cast_precision_loss, reason = "an event count as a sample")]
        self.items_per_watch
            .get_or_create(&label)
            .observe(events as f64);
    }

    fn event_received(&self, reflector: &str) {
        if let Some(counter) = self.event_counters.read().get(reflector) {
            counter.inc();
            return;
        }
        let counter = self.events.get_or_create(&name(reflector)).clone();
        counter.inc();
        self.event_counters
            .write()
            .insert(reflector.to_owned(), counter);
    }

    fn event_skipped(&self, reflector: &str, why: &str) {
        self.skipped.get_or_create(&reason(reflector, why)).inc();
    }

    fn relist(&self, reflector: &str, why: &str) {
        self.relists.get_or_create(&reason(reflector, why)).inc();
    }

    fn watch_restart(&self, reflector: &str, why: &str) {
        self.watch_restarts
            .get_or_create(&reason(reflector, why))
            .inc();
    }

    fn last_resource_version(&self, reflector: &str, resource_version: &str) {
        // Resource versions are opaque; etcd's (and so every real server's) are integers, which
        // is what client-go's gauge held too.
        if let Ok(rv) = resource_version.parse::<i64>() {
            self.last_resource_version
                .get_or_create(&name(reflector))
                .set(rv);
        }
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::encoding::text::encode;

    use super::*;

    #[test]
    fn families_after_a_list_a_watch_its_events_a_watch_restart_and_a_relist() {
        let metrics = PrometheusMetrics::default();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let m: &dyn ReflectorMetrics = &metrics;
        m.list_failed("pods");
        m.list_completed("pods", Duration::from_millis(20), 3);
        m.last_resource_version("pods", "41");
        m.watch_started("pods");
        m.event_received("pods");
        m.event_received("pods");
        m.event_skipped("pods", "wrong kind");
        m.last_resource_version("pods", "43");
        m.watch_ended("pods", Duration::from_secs(300), 2);
        m.watch_restart("pods", "closed");
        m.relist("pods", "expired");

        let mut text = String::new();
        assert!(encode(&mut text, &registry).is_ok());
        for line in [
            "reflector_lists_total{name=\"pods\"} 1",
            "reflector_list_errors_total{name=\"pods\"} 1",
            "reflector_items_per_list_sum{name=\"pods\"} 3.0",
            "reflector_list_duration_seconds_count{name=\"pods\"} 1",
            "reflector_watches_total{name=\"pods\"} 1",
            "reflector_watch_events_total{name=\"pods\"} 2",
            "reflector_skipped_events_total{name=\"pods\",reason=\"wrong kind\"} 1",
            "reflector_items_per_watch_sum{name=\"pods\"} 2.0",
            "reflector_watch_duration_seconds_sum{name=\"pods\"} 300.0",
            "reflector_last_resource_version{name=\"pods\"} 43",
            "reflector_watch_restarts_total{name=\"pods\",reason=\"closed\"} 1",
            "reflector_relists_total{name=\"pods\",reason=\"expired\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
        }
    }
}
