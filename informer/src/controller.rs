//! [`Controller`]: runs a reflector into a queue and pops until closed.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kcache_deltafifo::{Batch, PopError, ProcessError};
use kcache_reflector::{ListerWatcher, Reflector, ReflectorConfig};
use kcache_store::BoxError;
use kube_core::Resource;
use tokio_util::sync::CancellationToken;

use crate::error::InformerError;
use crate::panics::call_process;
use crate::queue::InformerQueue;
use crate::sync::{HasSynced, sync_changed};

/// What a [`Controller`] does with each batch of popped deltas: `(batch, is_in_initial_list)`,
/// the batch holding each delta with the key the queue computed for it (it dereferences to the
/// deltas). It may run under the queue's lock, so it must be short and must not call back into
/// the queue.
pub type ProcessFunc<K> = Arc<dyn Fn(&Batch<'_, K>, bool) -> Result<(), BoxError> + Send + Sync>;

/// How a [`Controller`] is built (client-go's `cache.Config`): [`ControllerConfig::new`] with
/// the queue, the lister-watcher and the process function, then the chained setters.
///
/// ```
/// # use std::sync::Arc;
/// # use k8s_openapi::api::core::v1::Pod;
/// # use kcache_informer::{ControllerConfig, InformerQueue, ProcessFunc, QueueMode};
/// # use kcache_reflector::{ListerWatcher, ReflectorConfig};
/// # fn f(queue: InformerQueue<Pod>, lw: Arc<dyn ListerWatcher<Pod>>, process: ProcessFunc<Pod>) {
/// let config = ControllerConfig::new(queue, lw, process)
///     .retry_on_error(true)
///     .reflector(ReflectorConfig::default().name("pods"));
/// # let _ = config; }
/// ```
pub struct ControllerConfig<K> {
    queue: InformerQueue<K>,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    process: ProcessFunc<K>,
    retry_on_error: bool,
    reflector: ReflectorConfig,
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
    /// default page size and watch timeout, list + watch). `queue` is what the reflector writes
    /// into and the process loop pops from; `process` is applied to every batch of popped deltas.
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

    /// Puts deltas whose processing failed back into the queue (the seeds' `RetryOnError`;
    /// default off).
    #[must_use]
    pub fn retry_on_error(mut self, retry: bool) -> Self {
        self.retry_on_error = retry;
        self
    }

    /// The reflector's settings (its name is the controller's; its resync period is how often
    /// the reflector asks the queue to resync).
    #[must_use]
    pub fn reflector(mut self, config: ReflectorConfig) -> Self {
        self.reflector = config;
        self
    }
}

type ControllerReflector<K> = Reflector<K, Arc<dyn ListerWatcher<K>>, InformerQueue<K>>;

/// Runs a reflector into a queue and pops the queue into a process function until shut down
/// (client-go's `cache.Controller`). Built by [`Controller::new`], by the
/// [`new_informer`](crate::new_informer) family, or inside a [`SharedIndexInformer`](crate::SharedIndexInformer).
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
            tracing::error!(name = %self.name, error = &err as &dyn std::error::Error, "reflector task failed");
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
                    // A panic in the process function fails this batch, not the loop.
                    let outcome = call_process(|| (self.process)(deltas, initial));
                    outcome.map_err(|e| {
                        if retry { ProcessError::Requeue(e) } else { ProcessError::Fail(e) }
                    })
                }) => popped,
            };
            if !synced && self.queue.has_synced() {
                synced = true;
                sync_changed();
            }
            // A pop that finds deltas waiting never yields: without this the loop would hold its
            // worker for a whole burst, and the handlers' tasks it wakes would wait behind it
            // (in that worker's LIFO slot, which no other worker takes) while their
            // notifications, each holding the replaced object, piled up.
            yield_to_other_tasks().await;
            match popped {
                Ok(()) => {}
                Err(PopError::Closed) => return,
                Err(err) => {
                    tracing::error!(name = %self.name, error = &err as &dyn std::error::Error, "processing deltas failed");
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

impl<K: Resource + Send + Sync + 'static> HasSynced for Controller<K> {
    fn has_synced(&self) -> bool {
        Controller::has_synced(self)
    }
    fn signals_sync(&self) -> bool {
        true
    }
}

/// Lets the worker run its other tasks once: the task wakes itself and returns pending, so the
/// runtime puts it at the back of a run queue that another worker can take from. (tokio's
/// `yield_now` defers the wake-up on this worker until it next parks, and a handler blocking
/// this worker, as a slow synchronous handler may, would then hold the loop for as long.)
async fn yield_to_other_tasks() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return std::task::Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await;
}
