//! [`SharedIndexInformer`]: one list-watch shared by any number of handlers, an indexed cache
//! and per-handler sync tracking (client-go's `sharedIndexInformer` in `shared_informer.go`).
//! The builder is in builder.rs, the start wiring and `run` in run.rs.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kcache_reflector::{ListerWatcher, ReflectorConfig, ReflectorError};
use kcache_store::{IndexFunc, Indexer, Indexers, Lister, Store, TransformFunc};
use kube_core::Resource;
use parking_lot::Mutex;

use crate::controller::Controller;
use crate::error::InformerError;
use crate::handler::{HandlerOptions, InformerEvent, ResourceEventHandler};
use crate::metrics::{InformerStats, WatchCounters};
use crate::processor::{
    MINIMUM_RESYNC_PERIOD, Notification, Processor, ResourceEventHandlerRegistration, Sink,
    determine_resync_period,
};
use crate::queue::QueueMode;
use crate::stream::EventStream;
use crate::sync::HasSynced;

pub(crate) type EventReceiver<K> = tokio::sync::mpsc::UnboundedReceiver<Notification<K>>;

pub(crate) struct Lifecycle<K> {
    pub(crate) started: bool,
    pub(crate) stopped: bool,
    pub(crate) resync_check_period: Duration,
    pub(crate) default_handler_resync: Duration,
    /// Given to the lister-watcher when the informer starts (`ObjectMaking`).
    pub(crate) transform: Option<TransformFunc<K>>,
    pub(crate) reflector: ReflectorConfig,
    /// Built into the lister-watcher the informer runs when it starts.
    pub(crate) lister_watcher: Option<Box<dyn ListerWatcher<K>>>,
}

pub(crate) struct Inner<K> {
    pub(crate) name: Arc<str>,
    pub(crate) indexer: Arc<Indexer<K>>,
    pub(crate) processor: Processor<K>,
    /// Held while deltas are applied and distributed, and while a handler joins: a late handler's
    /// replay and live notifications never interleave (client-go's `blockDeltas`).
    pub(crate) block_deltas: Mutex<()>,
    pub(crate) lifecycle: Mutex<Lifecycle<K>>,
    pub(crate) queue_mode: QueueMode,
    pub(crate) controller: OnceLock<Arc<Controller<K>>>,
    /// The reflector's relists and watch restarts.
    pub(crate) watch_counters: Arc<WatchCounters>,
    /// Woken after every batch applied to the indexer (`wait_for_resource_version`).
    pub(crate) cache_advanced: tokio::sync::Notify,
}

impl<K: Send + Sync + 'static> Inner<K> {
    pub(crate) fn has_synced(&self) -> bool {
        self.controller.get().is_some_and(|c| c.has_synced())
    }
}

/// One list-watch of a resource shared by any number of event handlers, with an indexed cache
/// (client-go's `SharedIndexInformer`). Cheap to clone: clones share the informer.
///
/// - [`add_event_handler`](Self::add_event_handler) (before or after start) returns a
///   [`ResourceEventHandlerRegistration`] whose `has_synced` turns true once that handler was
///   handed every initial item; a handler added after start first gets every cached object
///   as an add with `is_in_initial_list = true`. [`event_stream`](Self::event_stream) is the
///   same as an async [`Stream`](futures::Stream).
/// - Every handler has its own unbounded buffer and task: a slow handler delays only itself;
///   a panicking handler is logged and keeps receiving.
/// - [`run`](Self::run) lists and watches until the token fires, then stops and joins every
///   task. [`indexer`](Self::indexer) and [`lister`](Self::lister) read the cache.
///
/// The queue between the reflector and the cache is the in-order
/// [`RealFifo`](kcache_deltafifo::RealFifo) in atomic mode by default; see [`QueueMode`] for the modes and
/// what the informer guarantees about order under each.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use futures::{StreamExt, stream};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kcache_informer::{InformerEvent, SharedIndexInformer, wait_for_cache_sync};
/// use kcache_reflector::{ListPage, ListWatch, WatchStream};
/// use tokio_util::sync::CancellationToken;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let lw = ListWatch::<ConfigMap>::new(
///     |_| async {
///         let mut cm = ConfigMap::default();
///         cm.metadata.namespace = Some("default".into());
///         cm.metadata.name = Some("settings".into());
///         Ok(ListPage { items: vec![Arc::new(cm)], resource_version: "5".into(), continue_token: None, remaining_item_count: None })
///     },
///     |_| async { Ok(Box::pin(stream::pending()) as WatchStream<ConfigMap>) },
/// );
/// let informer = SharedIndexInformer::builder(lw).resync_period(Duration::ZERO).build();
/// let mut events = informer.event_stream().unwrap();
///
/// let shutdown = CancellationToken::new();
/// let task = tokio::spawn(informer.run(shutdown.clone()));
/// assert!(wait_for_cache_sync(&shutdown, &[&informer]).await);
///
/// match events.next().await {
///     Some(InformerEvent::Add { obj, is_in_initial_list }) => {
///         assert!(is_in_initial_list);
///         assert_eq!(obj.metadata.name.as_deref(), Some("settings"));
///     }
///     other => panic!("unexpected {other:?}"),
/// }
/// assert!(informer.lister().namespace("default").get("settings").is_some());
///
/// shutdown.cancel();
/// task.await.unwrap().unwrap();
/// assert!(informer.is_stopped());
/// # }
/// ```
pub struct SharedIndexInformer<K> {
    pub(crate) inner: Arc<Inner<K>>,
}

impl<K> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lifecycle = self.inner.lifecycle.lock();
        f.debug_struct("SharedIndexInformer")
            .field("name", &self.inner.name)
            .field("started", &lifecycle.started)
            .field("stopped", &lifecycle.stopped)
            .field("resync_check_period", &lifecycle.resync_check_period)
            .field("queue_mode", &self.inner.queue_mode)
            .field("indexer", &self.inner.indexer)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Send + Sync + 'static> SharedIndexInformer<K> {
    /// The informer's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Adds a handler with the informer's default resync period.
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K> + 'static,
    ) -> Result<ResourceEventHandlerRegistration, InformerError> {
        self.add_event_handler_with_options(handler, HandlerOptions::default())
    }

    /// Adds a handler with its own resync period. A period under one second becomes one
    /// second. A period shorter than the informer's resync check period lowers the check
    /// period if the informer has not started (re-clamping other handlers); after start it is
    /// raised to the check period. With a check period of zero nothing resyncs.
    pub fn add_event_handler_with_resync_period(
        &self,
        handler: impl ResourceEventHandler<K> + 'static,
        resync_period: Duration,
    ) -> Result<ResourceEventHandlerRegistration, InformerError> {
        self.add_event_handler_with_options(
            handler,
            HandlerOptions::new().resync_period(resync_period),
        )
    }

    /// Adds a handler with `options` (client-go's `AddEventHandlerWithOptions`). The same
    /// handler added twice is two registrations. Errors after the informer stopped.
    pub fn add_event_handler_with_options(
        &self,
        handler: impl ResourceEventHandler<K> + 'static,
        options: HandlerOptions,
    ) -> Result<ResourceEventHandlerRegistration, InformerError> {
        let sink = Sink::Handler(Arc::new(handler));
        self.add_listener(sink, options)
            .map(|(registration, _)| registration)
    }

    /// Subscribes an async stream of the informer's notifications: the same events, in the same
    /// order and with the same replay as a handler added now. The stream ends when the informer
    /// stops; dropping it unsubscribes. Errors after the informer stopped.
    pub fn event_stream(&self) -> Result<EventStream<K>, InformerError> {
        self.event_stream_with_options(HandlerOptions::default())
    }

    /// [`event_stream`](Self::event_stream) with its own resync period.
    pub fn event_stream_with_options(
        &self,
        options: HandlerOptions,
    ) -> Result<EventStream<K>, InformerError> {
        let (registration, rx) = self.add_listener(Sink::Stream, options)?;
        let rx = rx.ok_or_else(|| InformerError::Stopped(self.inner.name.to_string()))?;
        Ok(EventStream::new(rx, registration))
    }

    fn add_listener(
        &self,
        sink: Sink<K>,
        options: HandlerOptions,
    ) -> Result<(ResourceEventHandlerRegistration, Option<EventReceiver<K>>), InformerError> {
        let inner = &*self.inner;
        let stopped = || InformerError::Stopped(inner.name.to_string());
        let mut lifecycle = inner.lifecycle.lock();
        if lifecycle.stopped {
            return Err(stopped());
        }
        let mut requested = options
            .resync_period
            .unwrap_or(lifecycle.default_handler_resync);
        if !requested.is_zero() {
            if requested < MINIMUM_RESYNC_PERIOD {
                tracing::warn!(informer = %inner.name, ?requested, "resync period too small, using the minimum of 1s");
                requested = MINIMUM_RESYNC_PERIOD;
            }
            if requested < lifecycle.resync_check_period {
                if lifecycle.started {
                    tracing::warn!(
                        informer = %inner.name, ?requested, check_period = ?lifecycle.resync_check_period,
                        "resync period smaller than the informer's resync check period after start; using the check period"
                    );
                    requested = lifecycle.resync_check_period;
                } else {
                    lifecycle.resync_check_period = requested;
                    inner.processor.resync_check_period_changed(requested);
                }
            }
        }
        let effective =
            determine_resync_period(&inner.name, requested, lifecycle.resync_check_period);
        let started = lifecycle.started;
        let _block = inner.block_deltas.lock();
        inner
            .processor
            .add_listener(sink, options.name, requested, effective, |send| {
                if started {
                    for obj in inner.indexer.list() {
                        send(InformerEvent::Add {
                            obj,
                            is_in_initial_list: true,
                        });
                    }
                }
            })
            .ok_or_else(stopped)
    }

    /// Removes a handler (or event stream); its undelivered notifications are dropped.
    /// Idempotent; a registration of another informer is ignored.
    pub fn remove_event_handler(&self, registration: &ResourceEventHandlerRegistration) {
        let _block = self.inner.block_deltas.lock();
        self.inner.processor.remove_listener(registration.id());
    }

    /// The number of handlers and streams registered.
    pub fn handler_count(&self) -> usize {
        self.inner.processor.len()
    }

    /// Sets the transform every object passes as the lister-watcher makes it, before it is cached
    /// or handed to handlers (the builder's [`transform`](crate::SharedIndexInformerBuilder::transform)).
    /// Errors once the informer has started.
    pub fn set_transform(&self, transform: TransformFunc<K>) -> Result<(), InformerError> {
        let mut lifecycle = self.inner.lifecycle.lock();
        if lifecycle.started {
            return Err(InformerError::AlreadyStarted {
                name: self.inner.name.to_string(),
                what: "transform",
            });
        }
        lifecycle.transform = Some(transform);
        Ok(())
    }

    /// Sets the watch-error handler. Errors once the informer has started.
    pub fn set_watch_error_handler(
        &self,
        handler: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        let mut lifecycle = self.inner.lifecycle.lock();
        if lifecycle.started {
            return Err(InformerError::AlreadyStarted {
                name: self.inner.name.to_string(),
                what: "watch error handler",
            });
        }
        lifecycle.reflector = lifecycle.reflector.clone().watch_error_handler(handler);
        Ok(())
    }

    /// Adds indexes to the cache, also while the informer runs (cached objects are indexed
    /// for the new indexes). A name that already exists is an error.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), InformerError> {
        let _block = self.inner.block_deltas.lock();
        Ok(self.inner.indexer.add_indexers(indexers)?)
    }

    /// Adds one index to the cache, also while the informer runs (see
    /// [`add_indexers`](Self::add_indexers)).
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::{Pod, PodSpec};
    /// # use kcache_informer::{SharedIndexInformer, wait_for_cache_sync};
    /// # use kcache_reflector::testing::FakeControllerSource;
    /// # use tokio_util::sync::CancellationToken;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let source = FakeControllerSource::<Pod>::new();
    /// # for (name, node) in [("a", "node-1"), ("b", "node-2")] {
    /// #     let mut pod = Pod { spec: Some(PodSpec { node_name: Some(node.into()), ..Default::default() }), ..Default::default() };
    /// #     (pod.metadata.namespace, pod.metadata.name) = (Some("default".into()), Some(name.into()));
    /// #     source.add(pod);
    /// # }
    /// # let pods = SharedIndexInformer::builder(source).build();
    /// # let shutdown = CancellationToken::new();
    /// # let task = tokio::spawn(pods.run(shutdown.clone()));
    /// # assert!(wait_for_cache_sync(&shutdown, &[&pods]).await);
    /// // The informer runs and has cached pods a (on node-1) and b (on node-2).
    /// pods.add_index(kcache_store::NODE_NAME_INDEX, kcache_store::node_name_index_func())?;
    /// let on_node = pods.lister().by_index(kcache_store::NODE_NAME_INDEX, "node-1")?;
    /// assert_eq!(on_node.len(), 1);
    /// assert_eq!(on_node[0].metadata.name.as_deref(), Some("a"));
    /// # shutdown.cancel(); task.await??; Ok(()) }
    /// ```
    pub fn add_index(
        &self,
        name: impl Into<String>,
        func: IndexFunc<K>,
    ) -> Result<(), InformerError> {
        self.add_indexers(Indexers::from_iter([(name.into(), func)]))
    }

    /// The cache.
    pub fn indexer(&self) -> Arc<Indexer<K>> {
        Arc::clone(&self.inner.indexer)
    }

    /// A lister over the cache (list with a label selector, get, by index, per namespace).
    pub fn lister(&self) -> Lister<K> {
        Lister::new(self.indexer())
    }

    /// Whether the informer has handed out its initial list (false before start).
    pub fn has_synced(&self) -> bool {
        self.inner.has_synced()
    }

    /// Whether [`run`](Self::run) was called.
    pub fn has_started(&self) -> bool {
        self.inner.lifecycle.lock().started
    }

    /// Whether the informer ran and stopped.
    pub fn is_stopped(&self) -> bool {
        self.inner.lifecycle.lock().stopped
    }

    /// The resource version the informer last synced to ("" before the first list).
    pub fn last_sync_resource_version(&self) -> String {
        self.inner
            .controller
            .get()
            .map(|c| c.last_sync_resource_version())
            .unwrap_or_default()
    }

    /// The informer's resync check period (the smallest handler resync period, clamped).
    pub fn resync_check_period(&self) -> Duration {
        self.inner.lifecycle.lock().resync_check_period
    }

    /// What the informer holds and owes now: cache size, queue depth, each handler's pending
    /// notifications and the oldest one's age, the last synced resource version, relists and
    /// watch restarts (what the `prometheus` feature exports).
    pub fn stats(&self) -> InformerStats {
        let inner = &*self.inner;
        let controller = inner.controller.get();
        InformerStats {
            name: inner.name.to_string(),
            stored_items: inner.indexer.len(),
            queued_items: controller.map_or(0, |c| c.queue().len()),
            last_sync_resource_version: self.last_sync_resource_version(),
            handlers: inner.processor.handler_stats(),
            relists: inner.watch_counters.relists(),
            watch_restarts: inner.watch_counters.watch_restarts(),
        }
    }
}

impl<K: Resource + Send + Sync + 'static> HasSynced for SharedIndexInformer<K> {
    fn has_synced(&self) -> bool {
        SharedIndexInformer::has_synced(self)
    }
    fn signals_sync(&self) -> bool {
        true
    }
}
