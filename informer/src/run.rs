//! Running a [`SharedIndexInformer`]: the start wiring (its queue, the process function that
//! applies popped deltas to the indexer and hands the notifications to the processor in one
//! step, its controller) and `run` (client-go's `sharedIndexInformer.Run` and
//! `HandleDeltas`).

use std::sync::Arc;

use kcache_reflector::{ListSemantic, ListerWatcher, ObjectMaking};
use kcache_store::KnownObjects;
use kube_core::Resource;
use tokio_util::sync::CancellationToken;

use crate::controller::{Controller, ControllerConfig, ProcessFunc};
use crate::error::InformerError;
use crate::informer::{Inner, SharedIndexInformer};
use crate::metrics::CountingMetrics;
use crate::process::apply_deltas;
use crate::queue::InformerQueue;

impl<K: Resource + Send + Sync + 'static> SharedIndexInformer<K> {
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
    let Some(lister_watcher) = lifecycle.lister_watcher.take() else {
        return Err(InformerError::AlreadyRun(inner.name.to_string()));
    };
    lifecycle.started = true;
    let known: Arc<dyn KnownObjects<K>> = inner.indexer.clone();
    // The transform and the indexer are given to the lister-watcher as it is built for this run:
    // objects are transformed where they are made, and a relist may reuse cached objects (a
    // transform is idempotent, so reused Arcs may pass through it again).
    let mut making = ObjectMaking::default().known_objects(Arc::clone(&known));
    if let Some(transform) = lifecycle.transform.clone() {
        making = making.transform(transform);
    }
    let lister_watcher: Arc<dyn ListerWatcher<K>> =
        Arc::from(lister_watcher.making_objects(making));
    let mut queue = InformerQueue::new(inner.queue_mode, known);
    let mut reflector = lifecycle.reflector.clone();
    if inner.indexer.store().is_compact() {
        // A compact cache is small: its list is applied page by page as it arrives, so that
        // the decoded list is never held whole; the first list asks for the most recent state,
        // which a server sends in pages (resourceVersion=0 comes whole whatever the limit).
        queue = queue.paged();
        reflector = reflector.list_semantic(ListSemantic::MostRecent);
    }
    let weak = Arc::downgrade(inner);
    // client-go's `HandleDeltas`: the popped deltas are applied to the indexer and each change
    // goes to the processor as the notification it is, in one step. `block_deltas` keeps a
    // joining handler's replay and live notifications apart.
    let process: ProcessFunc<K> = Arc::new(move |deltas, initial| {
        let Some(inner) = weak.upgrade() else {
            return Ok(());
        };
        let _block = inner.block_deltas.lock();
        let applied = apply_deltas(&inner.indexer, deltas, initial, |event| {
            inner.processor.distribute(event);
        });
        inner.cache_advanced.notify_waiters();
        applied.map_err(Into::into)
    });
    let weak = Arc::downgrade(inner);
    let metrics = CountingMetrics {
        inner: Arc::clone(lifecycle.reflector.metrics_provider()),
        counters: Arc::clone(&inner.watch_counters),
    };
    let reflector = reflector
        .metrics(Arc::new(metrics))
        .name(inner.name.to_string())
        .resync_period(lifecycle.resync_check_period)
        .should_resync(move || {
            weak.upgrade()
                .is_some_and(|inner| inner.processor.should_resync())
        });
    let config = ControllerConfig::new(queue, lister_watcher, process).reflector(reflector);
    let controller = Arc::new(Controller::new(config));
    let _ = inner.controller.set(Arc::clone(&controller));
    Ok(controller)
}
