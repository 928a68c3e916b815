//! [`SharedIndexInformerBuilder`]: how a [`SharedIndexInformer`] is made (client-go's
//! `NewSharedIndexInformerWithOptions` and its `SharedIndexInformerOptions`).

use std::fmt;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use kcache_reflector::{ListerWatcher, ReflectorConfig};
#[cfg(feature = "compact")]
use kcache_store::meta_namespace_key_func;
use kcache_store::{
    IndexFunc, Indexer, Indexers, NAMESPACE_INDEX, TransformFunc, namespace_index_func,
};
use kube_core::Resource;
use parking_lot::Mutex;

use crate::controller::type_name;
use crate::informer::{Inner, Lifecycle, SharedIndexInformer};
use crate::processor::{Processor, UpstreamSynced};
use crate::queue::QueueMode;

/// Builds a [`SharedIndexInformer`]; see [`SharedIndexInformer::builder`].
pub struct SharedIndexInformerBuilder<K> {
    lister_watcher: Box<dyn ListerWatcher<K>>,
    name: Option<String>,
    resync_period: Duration,
    indexers: Indexers<K>,
    transform: Option<TransformFunc<K>>,
    queue_mode: QueueMode,
    reflector: ReflectorConfig,
    /// Makes the cache from its indexes: [`Indexer::new`], or a compact one.
    cache: fn(Indexers<K>) -> Indexer<K>,
}

impl<K> fmt::Debug for SharedIndexInformerBuilder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedIndexInformerBuilder")
            .field("name", &self.name)
            .field("resync_period", &self.resync_period)
            .field("indexers", &self.indexers.keys().collect::<Vec<_>>())
            .field("transform", &self.transform.is_some())
            .field("queue_mode", &self.queue_mode)
            .field("reflector", &self.reflector)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Send + Sync + 'static> SharedIndexInformerBuilder<K> {
    /// The name in logs (default: the object type's name).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The default resync period of handlers, which is also the informer's resync check
    /// period (client-go's `defaultEventHandlerResyncPeriod`). Zero, the default: no resync.
    #[must_use]
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = period;
        self
    }

    /// Adds an index to the cache. The [`NAMESPACE_INDEX`] is always there.
    #[must_use]
    pub fn index(mut self, name: impl Into<String>, func: IndexFunc<K>) -> Self {
        self.indexers.insert(name.into(), func);
        self
    }

    /// Adds indexes to the cache.
    #[must_use]
    pub fn indexers(mut self, indexers: Indexers<K>) -> Self {
        self.indexers.extend(indexers);
        self
    }

    /// A transform run on every object as the lister-watcher makes it, before it is cached or
    /// handed to handlers (for example to drop `managedFields`); the informer gives it to the
    /// lister-watcher with [`ObjectMaking`](kcache_reflector::ObjectMaking) when it starts. It
    /// must be idempotent: relisted objects already in the cache may pass through it again.
    #[must_use]
    pub fn transform(mut self, transform: TransformFunc<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// The queue between reflector and cache (default [`QueueMode::AtomicRealFifo`]).
    #[must_use]
    pub fn queue_mode(mut self, mode: QueueMode) -> Self {
        self.queue_mode = mode;
        self
    }

    /// How the reflector lists and watches: page size, watch-list, watch timeout, backoff,
    /// metrics (including the progress of each list page), watch-error handler. The informer
    /// sets the reflector's name and resync period itself.
    #[must_use]
    pub fn reflector(mut self, config: ReflectorConfig) -> Self {
        self.reflector = config;
        self
    }

    /// Builds the informer (nothing runs until [`SharedIndexInformer::run`]).
    pub fn build(self) -> SharedIndexInformer<K> {
        let name: Arc<str> = self.name.unwrap_or_else(type_name::<K>).into();
        let mut indexers = self.indexers;
        indexers
            .entry(NAMESPACE_INDEX.to_owned())
            .or_insert_with(namespace_index_func);
        let inner = Arc::new_cyclic(|weak: &Weak<Inner<K>>| {
            let weak = weak.clone();
            let upstream: UpstreamSynced =
                Arc::new(move || weak.upgrade().is_some_and(|inner| inner.has_synced()));
            Inner {
                processor: Processor::new(Arc::clone(&name), upstream),
                name,
                indexer: Arc::new((self.cache)(indexers)),
                block_deltas: Mutex::new(()),
                cache_advanced: tokio::sync::Notify::new(),
                lifecycle: Mutex::new(Lifecycle {
                    started: false,
                    stopped: false,
                    resync_check_period: self.resync_period,
                    default_handler_resync: self.resync_period,
                    transform: self.transform,
                    reflector: self.reflector,
                    lister_watcher: Some(self.lister_watcher),
                }),
                queue_mode: self.queue_mode,
                controller: OnceLock::new(),
                watch_counters: Arc::default(),
            }
        });
        SharedIndexInformer { inner }
    }
}

#[cfg(feature = "compact")]
impl<K> SharedIndexInformerBuilder<K>
where
    K: Resource + serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    /// Holds the cache compactly (feature `compact`): each object as zstd-compressed JSON, with
    /// a dictionary trained on the initial list, decoded again on every read. For a large cache
    /// whose memory matters more than read latency: a realistic Pod takes ≈200 bytes instead of
    /// ≈73 KB, and each write and read costs a compression or a decompression and a JSON
    /// decode (tens of µs; see the crate's README).
    ///
    /// Handlers still receive `Arc<K>`: the new object of an event is the one the lister-watcher
    /// made; the old object of an update or a replaced object is decoded from the cache. Index
    /// functions run on each object as it is written. Listers, indexes, the queue's known
    /// objects, resync, relists and bookmarks behave as with the default cache, but every read
    /// hands out a freshly decoded `Arc` (two reads of one object are equal, not the same
    /// allocation), and a resync or a relist decodes the whole cache.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kcache_informer::SharedIndexInformer;
    /// use kcache_reflector::testing::FakeControllerSource;
    ///
    /// let informer = SharedIndexInformer::builder(FakeControllerSource::<Pod>::new())
    ///     .compact_cache()
    ///     .build();
    /// assert!(informer.indexer().store().is_compact());
    /// ```
    #[must_use]
    pub fn compact_cache(mut self) -> Self {
        self.cache = |indexers| Indexer::compact(meta_namespace_key_func(), indexers);
        self
    }
}

impl<K: Resource + Send + Sync + 'static> SharedIndexInformer<K> {
    /// A builder for an informer listing and watching with `lister_watcher` (any
    /// [`ListerWatcher`], including an `Arc<dyn ListerWatcher<K>>`).
    pub fn builder(lister_watcher: impl ListerWatcher<K>) -> SharedIndexInformerBuilder<K> {
        SharedIndexInformerBuilder {
            lister_watcher: Box::new(lister_watcher),
            name: None,
            resync_period: Duration::ZERO,
            indexers: Indexers::default(),
            transform: None,
            queue_mode: QueueMode::default(),
            reflector: ReflectorConfig::default(),
            cache: Indexer::new,
        }
    }

    /// An informer with a default handler resync period and the namespace index (client-go's
    /// `NewSharedInformer`).
    pub fn new(lister_watcher: impl ListerWatcher<K>, default_resync: Duration) -> Self {
        Self::builder(lister_watcher)
            .resync_period(default_resync)
            .build()
    }
}
