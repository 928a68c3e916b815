//! [`FactoryOptions`]: what every informer of a factory is built with.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kcache_informer::QueueMode;
use kcache_reflector::{ListOptions, ReflectorConfig, TweakListOptions};
use kcache_store::TransformFunc;

/// The settings of a [`SharedInformerFactory`](crate::SharedInformerFactory), set with its builder.
#[derive(Clone, Default)]
pub(crate) struct FactoryOptions {
    pub(crate) namespace: Option<String>,
    pub(crate) tweak_list_options: Option<TweakListOptions>,
    pub(crate) default_resync: Duration,
    pub(crate) custom_resync: HashMap<String, Duration>,
    /// `TransformFunc<K>` per type key, as `Any` so one map holds every type.
    pub(crate) transforms: HashMap<String, Arc<dyn Any + Send + Sync>>,
    pub(crate) queue_mode: QueueMode,
    pub(crate) reflector: ReflectorConfig,
    /// The type keys whose informers hold a compact cache, each with the builder step making
    /// it (a `CompactCache<K>`, as `Any`).
    #[cfg(feature = "compact")]
    pub(crate) compact_caches: HashMap<String, Arc<dyn Any + Send + Sync>>,
}

/// The builder step giving an informer of `K` the compact cache.
#[cfg(feature = "compact")]
pub(crate) type CompactCache<K> = fn(
    kcache_informer::SharedIndexInformerBuilder<K>,
) -> kcache_informer::SharedIndexInformerBuilder<K>;

impl fmt::Debug for FactoryOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FactoryOptions")
            .field("namespace", &self.namespace)
            .field("tweak_list_options", &self.tweak_list_options.is_some())
            .field("default_resync", &self.default_resync)
            .field("custom_resync", &self.custom_resync)
            .field("transforms", &self.transforms.keys().collect::<Vec<_>>())
            .field("queue_mode", &self.queue_mode)
            .field("reflector", &self.reflector)
            .finish_non_exhaustive()
    }
}

impl FactoryOptions {
    /// The resync period of the informer of `type_key`: its custom one, else the default.
    pub(crate) fn resync_for(&self, type_key: &str) -> Duration {
        self.custom_resync
            .get(type_key)
            .copied()
            .unwrap_or(self.default_resync)
    }

    /// Applies the namespace restriction (for namespaced resources) and the tweak function to the
    /// options of one request. kube-client's typed `Api` fixes a resource's scope at compile time,
    /// so a namespace is applied as a `metadata.namespace` field selector on the cluster-wide path.
    pub(crate) fn tweak(&self, options: &mut ListOptions, namespaced: bool) {
        if let (Some(ns), true) = (&self.namespace, namespaced) {
            let selector = format!("metadata.namespace={ns}");
            options.field_selector = Some(match options.field_selector.take() {
                Some(existing) if !existing.is_empty() => format!("{existing},{selector}"),
                _ => selector,
            });
        }
        if let Some(tweak) = &self.tweak_list_options {
            tweak(options);
        }
    }

    /// The builder step giving the informer of `type_key` a compact cache, if it has one.
    #[cfg(feature = "compact")]
    pub(crate) fn compact_cache_for<K: 'static>(&self, type_key: &str) -> Option<CompactCache<K>> {
        self.compact_caches
            .get(type_key)
            .and_then(|c| c.downcast_ref::<CompactCache<K>>())
            .copied()
    }

    /// The transform registered for `type_key`, if it is a `TransformFunc<K>`.
    pub(crate) fn transform_for<K: 'static>(&self, type_key: &str) -> Option<TransformFunc<K>> {
        self.transforms
            .get(type_key)?
            .downcast_ref::<TransformFunc<K>>()
            .cloned()
    }
}
