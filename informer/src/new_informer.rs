//! [`new_informer`] and its variants: an unshared informer, a controller and its indexer.

use std::sync::Arc;
use std::time::Duration;

use kcache_reflector::{ListerWatcher, ObjectMaking, ReflectorConfig};
use kcache_store::{BoxError, Indexer, Indexers, KnownObjects, TransformFunc};
use kube_core::Resource;

use crate::controller::{Controller, ControllerConfig, ProcessFunc, type_name};
use crate::handler::ResourceEventHandler;
use crate::panics::call_handler;
use crate::process::apply_deltas;
use crate::queue::{InformerQueue, QueueMode};

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

/// [`new_informer`] with a transform run on every object as the lister-watcher makes it, before
/// it is stored or handed to the handler (client-go's `NewTransformingInformer`; given to the
/// lister-watcher with [`ObjectMaking`]). The transform must be idempotent.
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

/// [`new_indexer_informer`] with a transform, as [`new_transforming_informer`] (client-go's
/// `NewTransformingIndexerInformer`).
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
    let mut making = ObjectMaking::default().known_objects(Arc::clone(&known));
    if let Some(transform) = transform {
        making = making.transform(transform);
    }
    let lister_watcher: Arc<dyn ListerWatcher<K>> =
        Arc::from(Box::new(lister_watcher).making_objects(making));
    let queue = InformerQueue::new(QueueMode::default(), known);
    let name = type_name::<K>();
    let store = Arc::clone(&indexer);
    let process: ProcessFunc<K> = Arc::new(move |deltas, initial| {
        apply_deltas(&store, deltas, initial, |event| {
            call_handler(&name, &handler, &event);
        })
        .map_err(BoxError::from)
    });
    let config = ControllerConfig::new(queue, lister_watcher, process)
        .reflector(ReflectorConfig::default().resync_period(resync_period));
    (indexer, Controller::new(config))
}
