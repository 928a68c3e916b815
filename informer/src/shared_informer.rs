//! [`SharedIndexInformer`]: one list-watch shared by any number of handlers, an indexed cache
//! and per-handler sync tracking.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use kcache_reflector::{ListerWatcher, ReflectorConfig, ReflectorError};
use kcache_store::{
    BoxError, IndexFunc, Indexer, Indexers, KnownObjects, Lister, MaybeTombstone, NAMESPACE_INDEX,
    Store, TransformFunc, namespace_index_func,
};
use kube_core::Resource;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::controller::{Controller, ControllerConfig, ProcessFunc, type_name};
use crate::error::InformerError;
use crate::handler::{InformerEvent, ResourceEventHandler};
use crate::panics::panic_error;
use crate::process::process_deltas;
use crate::processor::{
    MINIMUM_RESYNC_PERIOD, Processor, ResourceEventHandlerRegistration, Sink, UpstreamSynced,
    determine_resync_period,
};
use crate::queue::{InformerQueue, QueueMode};
use crate::stream::EventStream;
use crate::sync::HasSynced;

/// Per-handler options of [`SharedIndexInformer::add_event_handler_with_options`] (client-go's
/// `HandlerOptions`).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct HandlerOptions {
    /// The handler's resync period; `None` takes the informer's default. Zero: never. Periods
    /// under one second become one second; see [`SharedIndexInformer::add_event_handler_with_resync_period`].
    pub resync_period: Option<Duration>,
}

impl HandlerOptions {
    /// Options with the informer's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the resync period.
    #[must_use]
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = Some(period);
        self
    }
}

type EventReceiver<K> = tokio::sync::mpsc::UnboundedReceiver<InformerEvent<K>>;

struct Lifecycle<K> {
    started: bool,
    stopped: bool,
    resync_check_period: Duration,
    default_handler_resync: Duration,
    transform: Option<TransformFunc<K>>,
    reflector: ReflectorConfig,
}

struct Inner<K> {
    name: Arc<str>,
    indexer: Arc<Indexer<K>>,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    processor: Processor<K>,
    /// Held while deltas are applied and distributed, and while a handler joins: a late handler's
    /// replay and live notifications never interleave (client-go's `blockDeltas`).
    block_deltas: Mutex<()>,
    lifecycle: Mutex<Lifecycle<K>>,
    queue_mode: QueueMode,
    controller: OnceLock<Arc<Controller<K>>>,
}

impl<K: Send + Sync + 'static> Inner<K> {
    fn has_synced(&self) -> bool {
        self.controller.get().is_some_and(|c| c.has_synced())
    }
}

/// The handler the process loop calls: applies nothing itself, distributes to the listeners.
struct Distributor<'a, K> {
    processor: &'a Processor<K>,
}

impl<K: Resource + Send + Sync + 'static> ResourceEventHandler<K> for Distributor<'_, K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let event = InformerEvent::Add {
            obj: Arc::clone(obj),
            is_in_initial_list,
        };
        self.processor.distribute(&event, false);
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        // Equal resource versions: a resync (or an unchanged object in a relist), which goes
        // only to the listeners due a resync.
        let is_sync = old.meta().resource_version == new.meta().resource_version;
        let event = InformerEvent::Update {
            old: Arc::clone(old),
            new: Arc::clone(new),
        };
        self.processor.distribute(&event, is_sync);
    }

    fn on_delete(&self, obj: &MaybeTombstone<K>) {
        self.processor
            .distribute(&InformerEvent::Delete(obj.clone()), false);
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
/// [`RealFifo`](kcache_deltafifo::RealFifo) by default; see [`QueueMode`].
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
    inner: Arc<Inner<K>>,
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

/// Builds a [`SharedIndexInformer`]; see [`SharedIndexInformer::builder`].
pub struct SharedIndexInformerBuilder<K> {
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    name: Option<String>,
    resync_period: Duration,
    indexers: Indexers<K>,
    transform: Option<TransformFunc<K>>,
    queue_mode: QueueMode,
    reflector: ReflectorConfig,
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

    /// A transformer run on every object before it is cached or handed to handlers (for
    /// example to drop `managedFields`). It must be idempotent: relisted objects already in
    /// the cache may pass through it again.
    #[must_use]
    pub fn transform(mut self, transform: TransformFunc<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// The queue between reflector and cache (default [`QueueMode::RealFifo`]).
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
                indexer: Arc::new(Indexer::new(indexers)),
                lister_watcher: self.lister_watcher,
                block_deltas: Mutex::new(()),
                lifecycle: Mutex::new(Lifecycle {
                    started: false,
                    stopped: false,
                    resync_check_period: self.resync_period,
                    default_handler_resync: self.resync_period,
                    transform: self.transform,
                    reflector: self.reflector,
                }),
                queue_mode: self.queue_mode,
                controller: OnceLock::new(),
            }
        });
        SharedIndexInformer { inner }
    }
}

impl<K: Resource + Send + Sync + 'static> SharedIndexInformer<K> {
    /// A builder for an informer listing and watching with `lister_watcher` (any
    /// [`ListerWatcher`], including an `Arc<dyn ListerWatcher<K>>`).
    pub fn builder(lister_watcher: impl ListerWatcher<K>) -> SharedIndexInformerBuilder<K> {
        SharedIndexInformerBuilder {
            lister_watcher: Arc::new(lister_watcher),
            name: None,
            resync_period: Duration::ZERO,
            indexers: Indexers::default(),
            transform: None,
            queue_mode: QueueMode::default(),
            reflector: ReflectorConfig::default(),
        }
    }

    /// An informer with a default handler resync period and the namespace index (client-go's
    /// `NewSharedInformer`).
    pub fn new(lister_watcher: impl ListerWatcher<K>, default_resync: Duration) -> Self {
        Self::builder(lister_watcher)
            .resync_period(default_resync)
            .build()
    }

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
            .add_listener(sink, requested, effective, |send| {
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

    /// Sets the transformer. Errors once the informer has started.
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
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # use kcache_informer::SharedIndexInformer;
    /// # fn f(pods: &SharedIndexInformer<Pod>) -> Result<(), kcache_informer::InformerError> {
    /// pods.add_index(kcache_store::NODE_NAME_INDEX, kcache_store::node_name_index_func())?;
    /// let on_node = pods.lister().by_index(kcache_store::NODE_NAME_INDEX, "node-1")?;
    /// # let _ = on_node; Ok(()) }
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

    /// Runs the informer until `shutdown` fires: lists and watches, keeps the cache and calls
    /// the handlers; then stops every handler task and waits for every task to finish. The
    /// future is `'static`: spawn it. An informer runs once; a second call returns
    /// [`InformerError::AlreadyRun`].
    pub fn run(
        &self,
        shutdown: CancellationToken,
    ) -> impl Future<Output = Result<(), InformerError>> + Send + 'static {
        let inner = Arc::clone(&self.inner);
        async move {
            let controller = start(&inner)?;
            let mut abort_on_drop = AbortOnDrop {
                inner: Some(Arc::clone(&inner)),
            };
            inner.processor.run();
            tracing::debug!(informer = %inner.name, "informer started");
            let result = controller.run(shutdown).await;
            inner.lifecycle.lock().stopped = true;
            inner.processor.stop().await;
            abort_on_drop.inner = None;
            tracing::debug!(informer = %inner.name, "informer stopped");
            result
        }
    }
}

/// Stops the informer if its `run` future is dropped before it finished: handler tasks are
/// aborted instead of joined.
struct AbortOnDrop<K: Send + Sync + 'static> {
    inner: Option<Arc<Inner<K>>>,
}

impl<K: Send + Sync + 'static> Drop for AbortOnDrop<K> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            inner.lifecycle.lock().stopped = true;
            inner.processor.abort();
        }
    }
}

/// Marks the informer started and builds its controller.
fn start<K: Resource + Send + Sync + 'static>(
    inner: &Arc<Inner<K>>,
) -> Result<Arc<Controller<K>>, InformerError> {
    let mut lifecycle = inner.lifecycle.lock();
    if lifecycle.started {
        return Err(InformerError::AlreadyRun(inner.name.to_string()));
    }
    lifecycle.started = true;
    let known: Arc<dyn KnownObjects<K>> = inner.indexer.clone();
    let queue = InformerQueue::new(
        inner.queue_mode,
        Arc::clone(&known),
        lifecycle.transform.clone(),
    );
    let weak = Arc::downgrade(inner);
    let process: ProcessFunc<K> = Arc::new(move |deltas, initial| {
        let Some(inner) = weak.upgrade() else {
            return Ok(());
        };
        let _block = inner.block_deltas.lock();
        let distributor = Distributor {
            processor: &inner.processor,
        };
        // One delta at a time: a failing or panicking index function (user code) skips that
        // object only, not the other keys of the batch.
        let mut first_error = None;
        for delta in deltas {
            let one = std::slice::from_ref(delta);
            let result = catch_unwind(AssertUnwindSafe(|| {
                process_deltas(&distributor, &inner.indexer, one, initial)
            }));
            let error: BoxError = match result {
                Ok(Ok(())) => continue,
                Ok(Err(err)) => err.into(),
                Err(payload) => panic_error(&*payload),
            };
            tracing::error!(informer = %inner.name, error = &*error as &dyn std::error::Error, "a delta could not be applied; skipped");
            first_error.get_or_insert(error);
        }
        first_error.map_or(Ok(()), Err)
    });
    // A transformer is idempotent and may see cached objects again, so reused Arcs pass through
    // it: one that has nothing left to change (drop_managed_fields) returns them as they are.
    inner.lister_watcher.reuse_known_objects(known);
    let weak = Arc::downgrade(inner);
    let mut config = ControllerConfig::new(queue, Arc::clone(&inner.lister_watcher), process);
    config.reflector = lifecycle
        .reflector
        .clone()
        .name(inner.name.to_string())
        .resync_period(lifecycle.resync_check_period)
        .should_resync(move || {
            weak.upgrade()
                .is_some_and(|inner| inner.processor.should_resync())
        });
    let controller = Arc::new(Controller::new(config));
    let _ = inner.controller.set(Arc::clone(&controller));
    Ok(controller)
}

impl<K: Resource + Send + Sync + 'static> HasSynced for SharedIndexInformer<K> {
    fn has_synced(&self) -> bool {
        SharedIndexInformer::has_synced(self)
    }
    fn signals_sync(&self) -> bool {
        true
    }
}

/// A [`SharedIndexInformer`] of any object type, for code that keeps informers of different
/// types together (an informer factory): run, wait for sync and stop them uniformly, and get
/// the typed informer back with `downcast`.
pub trait AnyInformer: HasSynced + Send + Sync + fmt::Debug + 'static {
    /// The informer's name.
    fn name(&self) -> &str;
    /// The Rust type name of the objects.
    fn object_type(&self) -> &'static str;
    /// [`SharedIndexInformer::run`], boxed.
    fn run_boxed(
        &self,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), InformerError>>;
    /// Whether `run` was called.
    fn has_started(&self) -> bool;
    /// Whether the informer ran and stopped.
    fn is_stopped(&self) -> bool;
    /// The resource version the informer last synced to.
    fn last_sync_resource_version(&self) -> String;
    /// The informer as [`Any`], for downcasting.
    fn as_any(&self) -> &dyn Any;
}

impl dyn AnyInformer {
    /// The typed informer, if this is a `SharedIndexInformer<K>`.
    pub fn downcast<K: Resource + Send + Sync + 'static>(&self) -> Option<SharedIndexInformer<K>> {
        self.as_any()
            .downcast_ref::<SharedIndexInformer<K>>()
            .cloned()
    }
}

impl<K: Resource + Send + Sync + 'static> AnyInformer for SharedIndexInformer<K> {
    fn name(&self) -> &str {
        SharedIndexInformer::name(self)
    }
    fn object_type(&self) -> &'static str {
        std::any::type_name::<K>()
    }
    fn run_boxed(
        &self,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), InformerError>> {
        Box::pin(self.run(shutdown))
    }
    fn has_started(&self) -> bool {
        SharedIndexInformer::has_started(self)
    }
    fn is_stopped(&self) -> bool {
        SharedIndexInformer::is_stopped(self)
    }
    fn last_sync_resource_version(&self) -> String {
        SharedIndexInformer::last_sync_resource_version(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
