//! Exporting a bench's informer through the `prometheus` feature (nothing without it).

use k8s_openapi::api::core::v1::Pod;
use kcache_informer::SharedIndexInformer;

/// The registry an informer is exported into.
#[cfg(feature = "prometheus")]
pub(crate) type Registry = prometheus_client::registry::Registry;
/// Without the `prometheus` feature there is no registry.
#[cfg(not(feature = "prometheus"))]
pub(crate) type Registry = ();

/// `informer` exported through `PrometheusMetrics` into a registry of its own (`None` without
/// the `prometheus` feature).
pub(crate) fn exported(informer: &SharedIndexInformer<Pod>) -> Option<Registry> {
    #[cfg(feature = "prometheus")]
    {
        let metrics = kcache_informer::PrometheusMetrics::default();
        metrics.add(informer, &());
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        Some(registry)
    }
    #[cfg(not(feature = "prometheus"))]
    {
        let _ = informer;
        None
    }
}

/// Scrapes the registry once; the length of the exposition.
pub(crate) fn scrape(registry: &Registry) -> usize {
    #[cfg(feature = "prometheus")]
    {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        text.len()
    }
    #[cfg(not(feature = "prometheus"))]
    {
        let () = registry;
        0
    }
}
