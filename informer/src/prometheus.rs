//! [`PrometheusMetrics`]: the informer families through `prometheus-client` (feature
//! `prometheus`), read from each informer's [`InformerStats`] at scrape time, so nothing is
//! added to the path of a watch event.

use std::fmt;
use std::sync::Arc;

use kube_core::Resource;
use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::informer::SharedIndexInformer;
use crate::metrics::InformerStats;

/// client-go's informer labels: the informer's name and the resource it watches.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InformerLabels {
    name: String,
    group: String,
    version: String,
    resource: String,
}

/// An informer's labels and one more: the handler, or a reason.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HandlerLabels {
    #[prometheus(flatten)]
    informer: InformerLabels,
    handler: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    #[prometheus(flatten)]
    informer: InformerLabels,
    reason: String,
}

/// Reads one informer's stats; `None` once the informer is gone.
type StatsFn = Box<dyn Fn() -> Option<InformerStats> + Send + Sync>;

struct Source {
    group: String,
    version: String,
    resource: String,
    stats: StatsFn,
}

/// The informer families, with client-go's names and labels (`name`, `group`, `version`,
/// `resource`) where client-go 1.36 has them:
///
/// - `informer_stored_items`: objects in the cache (KEP-4346's store size);
/// - `informer_queued_items`: keys or deltas in the queue between the reflector and the cache;
/// - `informer_store_resource_version`: the 15 least significant digits of the last synced
///   resource version;
/// - `informer_pending_notifications` (`handler` label): notifications a handler has not handled
///   yet;
/// - `informer_oldest_pending_notification_age_seconds` (`handler`): how long the oldest of them
///   has waited;
/// - `informer_relists_total` and `informer_watch_restarts_total` (`reason` label).
///
/// The values are read from each informer's [`stats`](SharedIndexInformer::stats) when the
/// registry is encoded; an informer that is dropped disappears from the families. Cheap to
/// clone: clones share the informers added.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kcache_informer::{PrometheusMetrics, SharedIndexInformer};
/// use kcache_reflector::testing::FakeControllerSource;
/// use prometheus_client::registry::Registry;
///
/// let informer = SharedIndexInformer::builder(Arc::new(FakeControllerSource::<Pod>::new()))
///     .name("pods")
///     .build();
/// let metrics = PrometheusMetrics::default();
/// metrics.add(&informer, &());
/// let mut registry = Registry::default();
/// metrics.register(&mut registry);
/// let mut text = String::new();
/// prometheus_client::encoding::text::encode(&mut text, &registry)?;
/// assert!(text.contains(
///     r#"informer_stored_items{name="pods",group="",version="v1",resource="pods"} 0"#
/// ));
/// # Ok::<(), std::fmt::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct PrometheusMetrics {
    sources: Arc<Mutex<Vec<Source>>>,
}

impl fmt::Debug for PrometheusMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrometheusMetrics")
            .field("informers", &self.sources.lock().len())
            .finish()
    }
}

impl PrometheusMetrics {
    /// Exports `informer` (held weakly), labelled with the resource of `K` (`dynamic_type` is
    /// `&()` for typed resources, the `ApiResource` of a dynamic one).
    pub fn add<K: Resource + Send + Sync + 'static>(
        &self,
        informer: &SharedIndexInformer<K>,
        dynamic_type: &K::DynamicType,
    ) {
        let weak = Arc::downgrade(&informer.inner);
        self.sources.lock().push(Source {
            group: K::group(dynamic_type).into_owned(),
            version: K::version(dynamic_type).into_owned(),
            resource: K::plural(dynamic_type).into_owned(),
            stats: Box::new(move || {
                weak.upgrade()
                    .map(|inner| SharedIndexInformer { inner }.stats())
            }),
        });
    }

    /// Registers the families in `registry` (counters get their `_total` suffix there).
    pub fn register(&self, registry: &mut Registry) {
        registry.register_collector(Box::new(self.clone()));
    }

    /// The stats of every informer still alive, with its labels; forgets the dropped ones.
    fn snapshot(&self) -> Vec<(InformerLabels, InformerStats)> {
        let mut sources = self.sources.lock();
        let mut out = Vec::with_capacity(sources.len());
        sources.retain(|source| match (source.stats)() {
            Some(stats) => {
                let labels = InformerLabels {
                    name: stats.name.clone(),
                    group: source.group.clone(),
                    version: source.version.clone(),
                    resource: source.resource.clone(),
                };
                out.push((labels, stats));
                true
            }
            None => false,
        });
        out
    }
}

fn gauge(value: usize) -> ConstGauge {
    ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX))
}

/// client-go's `store_resource_version`: the 15 least significant digits of an integer
/// resource version (an opaque one is not exported).
fn resource_version_digits(resource_version: &str) -> Option<ConstGauge> {
    let rv = resource_version.parse::<u64>().ok()?;
    i64::try_from(rv % 1_000_000_000_000_000)
        .ok()
        .map(ConstGauge::new)
}

/// Encodes one family: its descriptor, then one sample per `(labels, metric)`.
fn family<L: EncodeLabelSet, M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    metric_type: MetricType,
    samples: impl IntoIterator<Item = (L, M)>,
) -> Result<(), fmt::Error> {
    let mut metric_encoder = encoder.encode_descriptor(name, help, None, metric_type)?;
    for (labels, metric) in samples {
        metric.encode(metric_encoder.encode_family(&labels)?)?;
    }
    Ok(())
}

impl Collector for PrometheusMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let informers = self.snapshot();
        let e = &mut encoder;
        family(
            e,
            "informer_stored_items",
            "Number of objects in the informer's cache",
            MetricType::Gauge,
            informers
                .iter()
                .map(|(l, s)| (l.clone(), gauge(s.stored_items))),
        )?;
        family(
            e,
            "informer_queued_items",
            "Number of items currently queued in the FIFO",
            MetricType::Gauge,
            informers
                .iter()
                .map(|(l, s)| (l.clone(), gauge(s.queued_items))),
        )?;
        family(
            e,
            "informer_store_resource_version",
            "The 15 least significant digits of the resource version of the store",
            MetricType::Gauge,
            informers.iter().filter_map(|(l, s)| {
                resource_version_digits(&s.last_sync_resource_version).map(|g| (l.clone(), g))
            }),
        )?;
        let handlers = || {
            informers.iter().flat_map(|(l, s)| {
                s.handlers.iter().map(move |h| {
                    let labels = HandlerLabels {
                        informer: l.clone(),
                        handler: h.name.clone(),
                    };
                    (labels, h)
                })
            })
        };
        family(
            e,
            "informer_pending_notifications",
            "Number of notifications a handler has not handled yet",
            MetricType::Gauge,
            handlers().map(|(l, h)| (l, gauge(h.pending_notifications))),
        )?;
        family(
            e,
            "informer_oldest_pending_notification_age_seconds",
            "How long the oldest notification a handler has not handled yet has waited",
            MetricType::Gauge,
            handlers().map(|(l, h)| {
                let age = ConstGauge::new(h.oldest_pending_age.as_secs_f64());
                (l, age)
            }),
        )?;
        let reasons = |pick: fn(&InformerStats) -> &std::collections::BTreeMap<String, u64>| {
            informers.iter().flat_map(move |(l, s)| {
                pick(s).iter().map(move |(reason, n)| {
                    let labels = ReasonLabels {
                        informer: l.clone(),
                        reason: reason.clone(),
                    };
                    (labels, ConstCounter::new(*n))
                })
            })
        };
        family(
            e,
            "informer_relists",
            "Number of lists after the first, by reason",
            MetricType::Counter,
            reasons(|s| &s.relists),
        )?;
        family(
            e,
            "informer_watch_restarts",
            "Number of watches resumed from the last synced resource version, by reason",
            MetricType::Counter,
            reasons(|s| &s.watch_restarts),
        )
    }
}
