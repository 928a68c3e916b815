//! [`Controller`]: runs a reflector into a queue and pops until closed; the delta processing
//! shared by every informer; `new_informer` and its variants.

use std::collections::HashSet;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kcache_deltafifo::{Delta, DeltaType, PopError, ProcessError};
use kcache_reflector::{ListerWatcher, Reflector, ReflectorConfig};
use kcache_store::{
    BoxError, DeletedFinalStateUnknown, Indexer, Indexers, KnownObjects, MaybeTombstone, Store,
    StoreError, TransformFunc,
};
use kube_core::Resource;
use tokio_util::sync::CancellationToken;

use crate::error::InformerError;
use crate::handler::{InformerEvent, ResourceEventHandler};
use crate::queue::{InformerQueue, QueueMode};
use crate::sync::sync_changed;

/// What a [`Controller`] does with each batch of popped deltas: `(deltas, is_in_initial_list)`.
/// It runs under the queue's lock, so it must be short and must not call back into the queue.
pub type ProcessFunc<K> = Arc<dyn Fn(&[Delta<K>], bool) -> Result<(), BoxError> + Send + Sync>;

/// How a [`Controller`] is built (client-go's `cache.Config`). Start from [`ControllerConfig::new`]
/// and set the public fields.
#[non_exhaustive]
pub struct ControllerConfig<K> {
    /// The queue the reflector writes into and the process loop pops from.
    pub queue: InformerQueue<K>,
    /// Lists and watches the resource.
    pub lister_watcher: Arc<dyn ListerWatcher<K>>,
    /// Applied to every batch of popped deltas.
    pub process: ProcessFunc<K>,
    /// Put deltas whose processing failed back into the queue (the seeds' `RetryOnError`).
    pub retry_on_error: bool,
    /// The reflector's settings (its name is the controller's; its resync period is how often
    /// the reflector asks the queue to resync).
    pub reflector: ReflectorConfig,
}

impl<K> fmt::Debug for ControllerConfig<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerConfig")
            .field("queue", &self.queue)
            .field("retry_on_error", &self.retry_on_error)
            .field("reflector", &self.reflector)
            .finish_non_exhaustive()
    }
}

pub(crate) fn type_name<K>() -> String {
    let full = std::any::type_name::<K>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base).to_owned()
}

impl<K> ControllerConfig<K> {
    /// A configuration with client-go's defaults: no retry, the reflector's defaults (no resync,
    /// default page size and watch timeout, list + watch).
    pub fn new(
        queue: InformerQueue<K>,
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        process: ProcessFunc<K>,
    ) -> Self {
        Self {
            queue,
            lister_watcher,
            process,
            retry_on_error: false,
            reflector: ReflectorConfig::default(),
        }
    }
}

type ControllerReflector<K> = Reflector<K, Arc<dyn ListerWatcher<K>>, InformerQueue<K>>;

/// Runs a reflector into a queue and pops the queue into a process function until shut down
/// (client-go's `cache.Controller`). Built by [`Controller::new`], by the
/// [`new_informer`] family, or inside a [`SharedIndexInformer`](crate::SharedIndexInformer).
pub struct Controller<K> {
    name: String,
    queue: InformerQueue<K>,
    reflector: Arc<ControllerReflector<K>>,
    process: ProcessFunc<K>,
    retry_on_error: bool,
    started: AtomicBool,
}

impl<K> fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("queue", &self.queue)
            .field("retry_on_error", &self.retry_on_error)
            .field("started", &self.started.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<K: Send + Sync + 'static> Controller<K> {
    /// Whether the queue has handed out the initial list (client-go's `HasSynced`).
    pub fn has_synced(&self) -> bool {
        self.queue.has_synced()
    }
}

impl<K: Resource + Send + Sync + 'static> Controller<K> {
    /// A controller for `config`.
    pub fn new(config: ControllerConfig<K>) -> Self {
        let reflector = Reflector::new(
            config.lister_watcher,
            Arc::new(config.queue.clone()),
            config.reflector,
        );
        Self {
            name: reflector.name().to_owned(),
            queue: config.queue,
            reflector: Arc::new(reflector),
            process: config.process,
            retry_on_error: config.retry_on_error,
            started: AtomicBool::new(false),
        }
    }

    /// Runs the reflector (in its own task) and the process loop until `shutdown` fires, then
    /// closes the queue and waits for the reflector to stop. A controller runs once: a second
    /// call returns [`InformerError::AlreadyRun`] at once.
    pub async fn run(&self, shutdown: CancellationToken) -> Result<(), InformerError> {
        if self.started.swap(true, Ordering::AcqRel) {
            return Err(InformerError::AlreadyRun(self.name.clone()));
        }
        // A child token: the reflector also stops if this future is dropped, and stopping here
        // never cancels the caller's token (which may be shared).
        let token = shutdown.child_token();
        let _stop_reflector_on_drop = token.clone().drop_guard();
        let reflector = Arc::clone(&self.reflector);
        let reflector_token = token.clone();
        let reflector_task = tokio::spawn(async move { reflector.run(reflector_token).await });
        self.process_loop(&token).await;
        self.queue.close();
        token.cancel();
        if let Err(err) = reflector_task.await {
            tracing::error!(name = %self.name, error = %err, "reflector task failed");
        }
        Ok(())
    }

    async fn process_loop(&self, shutdown: &CancellationToken) {
        let retry = self.retry_on_error;
        // Until the queue first reports synced, each pop may be the one that syncs it.
        let mut synced = false;
        loop {
            let popped = tokio::select! {
                biased;
                () = shutdown.cancelled() => return,
                popped = self.queue.pop(|deltas, initial| {
                    // A panic in user code (an index function) fails this batch, not the loop.
                    let outcome = catch_unwind(AssertUnwindSafe(|| (self.process)(deltas, initial)))
                        .unwrap_or_else(|payload| Err(panic_error(&*payload)));
                    outcome.map_err(|e| {
                        if retry { ProcessError::Requeue(e) } else { ProcessError::Fail(e) }
                    })
                }) => popped,
            };
            if !synced && self.queue.has_synced() {
                synced = true;
                sync_changed();
            }
            match popped {
                Ok(()) => {}
                Err(PopError::Closed) => return,
                Err(err) => {
                    tracing::error!(name = %self.name, error = %err, "processing deltas failed");
                }
            }
        }
    }

    /// Whether [`run`](Self::run) was called.
    pub fn has_started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// The resource version the reflector last synced to ("" before the first list).
    pub fn last_sync_resource_version(&self) -> String {
        self.reflector.last_sync_resource_version()
    }

    /// The queue.
    pub fn queue(&self) -> &InformerQueue<K> {
        &self.queue
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Applies popped deltas to `indexer` and tells `handler` (client-go's `processDeltas` and
/// `processReplacedAllInfo`):
///
/// - Added, Updated, Sync, Replaced: update and `on_update(old, new)` if the key is stored,
///   else add and `on_add(obj, is_in_initial_list)`;
/// - Deleted: delete (by the tombstone's key for a tombstone) and `on_delete(obj or tombstone)`;
/// - ReplacedAll: the indexer is replaced in one step; then `on_delete` with a tombstone for
///   each vanished object, `on_update`/`on_add` for each listed object in list order;
/// - SyncAll: `on_update(o, o)` for every stored object; Bookmark: the indexer's resource version.
pub fn process_deltas<K, H>(
    handler: &H,
    indexer: &Indexer<K>,
    deltas: &[Delta<K>],
    is_in_initial_list: bool,
) -> Result<(), StoreError>
where
    K: Resource + Send + Sync + 'static,
    H: ResourceEventHandler<K> + ?Sized,
{
    for delta in deltas {
        match delta {
            Delta::Object {
                kind: DeltaType::Deleted,
                object,
            } => {
                match object {
                    MaybeTombstone::Tombstone(t) => {
                        indexer.delete_by_key(&t.key);
                    }
                    MaybeTombstone::Object(o) => indexer.delete(Arc::clone(o))?,
                }
                handler.on_delete(object);
            }
            Delta::Object { object, .. } => {
                let obj = object.object();
                match indexer.get(obj)? {
                    Some(old) => {
                        indexer.update(Arc::clone(obj))?;
                        handler.on_update(&old, obj);
                    }
                    None => {
                        indexer.add(Arc::clone(obj))?;
                        handler.on_add(obj, is_in_initial_list);
                    }
                }
            }
            Delta::ReplacedAll {
                resource_version,
                objects,
            } => {
                process_replaced_all(
                    handler,
                    indexer,
                    resource_version,
                    objects,
                    is_in_initial_list,
                )?;
            }
            Delta::SyncAll => {
                for obj in indexer.list() {
                    handler.on_update(&obj, &obj);
                }
            }
            Delta::Bookmark { resource_version } => indexer.bookmark(resource_version),
        }
    }
    Ok(())
}

fn process_replaced_all<K, H>(
    handler: &H,
    indexer: &Indexer<K>,
    resource_version: &str,
    objects: &Arc<[Arc<K>]>,
    is_in_initial_list: bool,
) -> Result<(), StoreError>
where
    K: Resource + Send + Sync + 'static,
    H: ResourceEventHandler<K> + ?Sized,
{
    let keys = objects
        .iter()
        .map(|o| indexer.key_of(o))
        .collect::<Result<Vec<_>, _>>()?;
    let listed: HashSet<&str> = keys.iter().map(String::as_str).collect();
    let deletions: Vec<DeletedFinalStateUnknown<K>> = Store::list_keys(indexer)
        .into_iter()
        .filter(|key| !listed.contains(&**key))
        .filter_map(|key| {
            Store::get_by_key(indexer, &key).map(|obj| DeletedFinalStateUnknown {
                key: key.to_string(),
                obj,
            })
        })
        .collect();
    let olds: Vec<Option<Arc<K>>> = keys.iter().map(|k| Store::get_by_key(indexer, k)).collect();
    indexer.replace(objects.to_vec(), resource_version)?;
    for tombstone in deletions {
        handler.on_delete(&MaybeTombstone::Tombstone(tombstone));
    }
    for (old, new) in olds.into_iter().zip(objects.iter()) {
        match old {
            Some(old) => handler.on_update(&old, new),
            None => handler.on_add(new, is_in_initial_list),
        }
    }
    Ok(())
}

/// Calls a handler, catching and logging its panics (a panicking handler must not take the
/// queue or the process loop down with it).
pub(crate) struct CatchPanics<H> {
    pub(crate) name: Arc<str>,
    pub(crate) handler: H,
}

/// A panic turned into an error.
pub(crate) fn panic_error(payload: &(dyn std::any::Any + Send)) -> BoxError {
    format!("panicked: {}", panic_message(payload)).into()
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("non-string panic payload")
}

pub(crate) fn log_panic(name: &str, payload: &(dyn std::any::Any + Send)) {
    tracing::error!(
        informer = name,
        panic = panic_message(payload),
        "event handler panicked; the handler keeps receiving notifications"
    );
}

impl<H> CatchPanics<H> {
    fn guard(&self, f: impl FnOnce(&H)) {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| f(&self.handler))) {
            log_panic(&self.name, &*payload);
        }
    }
}

impl<K, H: ResourceEventHandler<K>> ResourceEventHandler<K> for CatchPanics<H> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        self.guard(|h| h.on_add(obj, is_in_initial_list));
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        self.guard(|h| h.on_update(old, new));
    }
    fn on_delete(&self, obj: &MaybeTombstone<K>) {
        self.guard(|h| h.on_delete(obj));
    }
}

/// Dispatches one event through [`CatchPanics`].
pub(crate) fn dispatch_catching<K, H: ResourceEventHandler<K> + ?Sized>(
    name: &str,
    event: &InformerEvent<K>,
    handler: &H,
) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| event.dispatch(handler))) {
        log_panic(name, &*payload);
    }
}

/// An informer without sharing: an indexer kept in sync with the server and a handler called
/// for every change, from the controller's process loop (client-go's `NewInformer`). The queue is
/// the in-order [`RealFifo`](kcache_deltafifo::RealFifo). Run the controller; read the indexer.
///
/// ```
/// use std::sync::Arc;
/// use futures::stream;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kcache_informer::{ResourceEventHandlerFuncs, new_informer};
/// use kcache_reflector::{ListPage, ListWatch, WatchStream};
/// use kcache_store::Store;
/// use tokio_util::sync::CancellationToken;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let lw = ListWatch::<ConfigMap>::new(
///     |_| async {
///         let mut cm = ConfigMap::default();
///         cm.metadata.name = Some("settings".into());
///         Ok(ListPage { items: vec![Arc::new(cm)], resource_version: "5".into(), continue_token: None, remaining_item_count: None })
///     },
///     |_| async { Ok(Box::pin(stream::pending()) as WatchStream<ConfigMap>) },
/// );
/// let handler = ResourceEventHandlerFuncs::new().add_func(|cm: &Arc<ConfigMap>, initial| {
///     assert!(initial);
///     assert_eq!(cm.metadata.name.as_deref(), Some("settings"));
/// });
/// let (store, controller) = new_informer(lw, std::time::Duration::ZERO, handler);
/// let controller = Arc::new(controller);
/// let shutdown = CancellationToken::new();
/// let task = tokio::spawn({
///     let (controller, shutdown) = (controller.clone(), shutdown.clone());
///     async move { controller.run(shutdown).await }
/// });
/// while !controller.has_synced() {
///     tokio::task::yield_now().await;
/// }
/// assert!(store.get_by_key("settings").is_some());
/// shutdown.cancel();
/// task.await.unwrap().unwrap();
/// # }
/// ```
pub fn new_informer<K, L, H>(
    lister_watcher: L,
    resync_period: Duration,
    handler: H,
) -> (Arc<Indexer<K>>, Controller<K>)
where
    K: Resource + Send + Sync + 'static,
    L: ListerWatcher<K>,
    H: ResourceEventHandler<K> + 'static,
{
    new_informer_with(
        lister_watcher,
        resync_period,
        handler,
        Indexers::default(),
        None,
    )
}

/// [`new_informer`] with indexes on the store (client-go's `NewIndexerInformer`).
pub fn new_indexer_informer<K, L, H>(
    lister_watcher: L,
    resync_period: Duration,
    handler: H,
    indexers: Indexers<K>,
) -> (Arc<Indexer<K>>, Controller<K>)
where
    K: Resource + Send + Sync + 'static,
    L: ListerWatcher<K>,
    H: ResourceEventHandler<K> + 'static,
{
    new_informer_with(lister_watcher, resync_period, handler, indexers, None)
}

/// [`new_informer`] with a transformer run on every object before it is stored or handed to the
/// handler (client-go's `NewTransformingInformer`). The transformer must be idempotent.
pub fn new_transforming_informer<K, L, H>(
    lister_watcher: L,
    resync_period: Duration,
    handler: H,
    transform: TransformFunc<K>,
) -> (Arc<Indexer<K>>, Controller<K>)
where
    K: Resource + Send + Sync + 'static,
    L: ListerWatcher<K>,
    H: ResourceEventHandler<K> + 'static,
{
    new_informer_with(
        lister_watcher,
        resync_period,
        handler,
        Indexers::default(),
        Some(transform),
    )
}

/// [`new_indexer_informer`] with a transformer (client-go's `NewTransformingIndexerInformer`).
pub fn new_transforming_indexer_informer<K, L, H>(
    lister_watcher: L,
    resync_period: Duration,
    handler: H,
    indexers: Indexers<K>,
    transform: TransformFunc<K>,
) -> (Arc<Indexer<K>>, Controller<K>)
where
    K: Resource + Send + Sync + 'static,
    L: ListerWatcher<K>,
    H: ResourceEventHandler<K> + 'static,
{
    new_informer_with(
        lister_watcher,
        resync_period,
        handler,
        indexers,
        Some(transform),
    )
}

fn new_informer_with<K, L, H>(
    lister_watcher: L,
    resync_period: Duration,
    handler: H,
    indexers: Indexers<K>,
    transform: Option<TransformFunc<K>>,
) -> (Arc<Indexer<K>>, Controller<K>)
where
    K: Resource + Send + Sync + 'static,
    L: ListerWatcher<K>,
    H: ResourceEventHandler<K> + 'static,
{
    let indexer = Arc::new(Indexer::new(indexers));
    let known: Arc<dyn KnownObjects<K>> = indexer.clone();
    let queue = InformerQueue::new(QueueMode::RealFifo, known, transform);
    let name: Arc<str> = type_name::<K>().into();
    let handler = CatchPanics { name, handler };
    let store = Arc::clone(&indexer);
    let process: ProcessFunc<K> = Arc::new(move |deltas, initial| {
        process_deltas(&handler, &store, deltas, initial).map_err(BoxError::from)
    });
    let mut config = ControllerConfig::new(queue, Arc::new(lister_watcher), process);
    config.reflector = ReflectorConfig::default().resync_period(resync_period);
    (indexer, Controller::new(config))
}
