//! [`SharedInformerFactory`]: one shared informer per resource type.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use kcache_informer::{
    AnyInformer, InformerError, QueueMode, SharedIndexInformer, wait_for_cache_sync,
};
use kcache_reflector::{KubeListerWatcher, ListOptions, ReflectorConfig, TweakListOptions};
use kcache_store::{Lister, TransformFunc};
use kube_client::{Api, Client};
use kube_core::{ApiResource, DynamicObject, NamespaceResourceScope, PartialObjectMeta, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::FactoryError;
use crate::options::FactoryOptions;
use crate::type_key;

/// A resource type known at compile time that the factory can list and watch: typed
/// k8s-openapi objects and kube-derived custom resources. Implemented for every such type.
pub trait TypedResource:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static
{
}

impl<K> TypedResource for K where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static
{
}

/// Informers by type key, with whether each was started.
#[derive(Default)]
struct State {
    informers: BTreeMap<String, Arc<dyn AnyInformer>>,
    started: HashMap<String, JoinHandle<Result<(), InformerError>>>,
    shutting_down: bool,
}

struct Inner {
    client: Client,
    options: FactoryOptions,
    state: Mutex<State>,
    shutdown: CancellationToken,
    /// Serialises `shutdown` callers so that each returns only once every task has ended.
    shutdown_lock: tokio::sync::Mutex<()>,
    /// Every informer of the factory, exported by [`SharedInformerFactory::register_metrics`].
    #[cfg(feature = "prometheus")]
    metrics: kcache_informer::PrometheusMetrics,
}

impl Drop for Inner {
    /// The last handle is gone: nobody can shut the informers down any more, so stop them.
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// One shared informer per resource type over a kube-client [`Client`] (client-go's
/// `SharedInformerFactory`).
///
/// `informer::<K>()` creates the informer of `K` on first use and hands the same one to every
/// later caller; [`start`](Self::start) runs the informers not yet running on the current tokio
/// runtime; [`wait_for_cache_sync`](Self::wait_for_cache_sync) waits for the started ones;
/// [`shutdown`](Self::shutdown) stops them all and waits for their tasks. Cloning the factory is
/// cheap and shares it.
///
/// Dropping the last clone stops every informer it started (their tasks end on their own; call
/// `shutdown` first to wait for them). Informers and listers taken from the factory keep their
/// caches readable, but the caches stop following the server: keep a factory handle for as long
/// as the informers should run.
#[derive(Clone)]
pub struct SharedInformerFactory {
    inner: Arc<Inner>,
}

impl fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("SharedInformerFactory")
            .field("options", &self.inner.options)
            .field("informers", &state.informers.keys().collect::<Vec<_>>())
            .field("started", &state.started.len())
            .finish()
    }
}

/// Builds a [`SharedInformerFactory`] with options.
pub struct SharedInformerFactoryBuilder {
    client: Client,
    options: FactoryOptions,
}

impl fmt::Debug for SharedInformerFactoryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformerFactoryBuilder")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl SharedInformerFactoryBuilder {
    /// Watches only `namespace` (default: all namespaces). Cluster-scoped types ignore it.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.options.namespace = Some(namespace.into());
        self
    }

    /// Adjusts the options of every list and watch request, for example to set selectors.
    #[must_use]
    pub fn tweak_list_options(
        mut self,
        tweak: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> Self {
        self.options.tweak_list_options = Some(Arc::new(tweak) as TweakListOptions);
        self
    }

    /// The resync period of every informer without a custom one (default: none).
    #[must_use]
    pub fn default_resync(mut self, period: Duration) -> Self {
        self.options.default_resync = period;
        self
    }

    /// A resync period for the informer of `K` only.
    #[must_use]
    pub fn resync_for<K: Resource<DynamicType = ()>>(mut self, period: Duration) -> Self {
        self.options
            .custom_resync
            .insert(type_key::typed::<K>(), period);
        self
    }

    /// A transform run on every object of `K` as it is decoded, before it is cached (for example
    /// to drop `managedFields`): the informer's [`transform`](kcache_informer::SharedIndexInformerBuilder::transform).
    #[must_use]
    pub fn transform_for<K: Resource<DynamicType = ()> + 'static>(
        mut self,
        transform: TransformFunc<K>,
    ) -> Self {
        self.options
            .transforms
            .insert(type_key::typed::<K>(), Arc::new(transform));
        self
    }

    /// Gives the informer of `K` the compact cache (feature `compact`): objects held as
    /// compressed JSON and decoded on read, for a large cache whose memory matters more than
    /// its read latency. See [`compact_cache`](kcache_informer::SharedIndexInformerBuilder::compact_cache).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let server = kcache_apiserver::TestServer::start().await?;
    /// # let client = server.client()?;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kcache_factory::SharedInformerFactory;
    ///
    /// let factory = SharedInformerFactory::builder(client).compact_cache_for::<Pod>().build();
    /// let pods = factory.informer::<Pod>();
    /// assert!(pods.indexer().store().is_compact());
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "compact")]
    #[must_use]
    pub fn compact_cache_for<K>(mut self) -> Self
    where
        K: Resource<DynamicType = ()> + serde::Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        let step: crate::options::CompactCache<K> = |builder| builder.compact_cache();
        self.options
            .compact_caches
            .insert(type_key::typed::<K>(), Arc::new(step));
        self
    }

    /// The queue every informer uses (default: the in-order RealFIFO).
    #[must_use]
    pub fn queue_mode(mut self, mode: QueueMode) -> Self {
        self.options.queue_mode = mode;
        self
    }

    /// How every informer's reflector lists and watches: page size, watch-list, watch timeout,
    /// backoff, metrics (including the progress of each list page; the `name` passed to each call
    /// is the informer's type key) and the watch-error handler (the error names the informer).
    #[must_use]
    pub fn reflector(mut self, config: ReflectorConfig) -> Self {
        self.options.reflector = config;
        self
    }

    /// One client-side rate limit for everything the factory's informers send: at most `qps`
    /// list pages and watch requests a second over all of them, in bursts of up to `burst`
    /// (client-go's `rest.Config` QPS and Burst; 5 and 10 there). Set after
    /// [`reflector`](Self::reflector), which replaces it. kube-client's own retry of 429 and
    /// 503 (`Config::default_retry`, on by default) happens below this limit and is not counted
    /// by it: turn it off in the client's `Config` for the limit to cover every request.
    #[must_use]
    pub fn rate_limit(mut self, qps: f64, burst: u32) -> Self {
        let limit = Arc::new(kcache_reflector::TokenBucket::new(qps, burst));
        self.options.reflector = self.options.reflector.rate_limit(limit);
        self
    }

    /// The factory.
    pub fn build(self) -> SharedInformerFactory {
        SharedInformerFactory {
            inner: Arc::new(Inner {
                client: self.client,
                options: self.options,
                state: Mutex::new(State::default()),
                shutdown: CancellationToken::new(),
                shutdown_lock: tokio::sync::Mutex::new(()),
                #[cfg(feature = "prometheus")]
                metrics: kcache_informer::PrometheusMetrics::default(),
            }),
        }
    }
}

impl SharedInformerFactory {
    /// A factory with default options: all namespaces, no resync, in-order queue.
    pub fn new(client: Client) -> Self {
        Self::builder(client).build()
    }

    /// A builder for a factory with options.
    pub fn builder(client: Client) -> SharedInformerFactoryBuilder {
        SharedInformerFactoryBuilder {
            client,
            options: FactoryOptions::default(),
        }
    }

    /// The informer stored under `key`, or a new one made by `make` and stored (and exported
    /// with the resource of `dynamic_type`).
    fn informer_for<K>(
        &self,
        key: String,
        dynamic_type: &K::DynamicType,
        make: impl FnOnce(&FactoryOptions) -> SharedIndexInformer<K>,
    ) -> SharedIndexInformer<K>
    where
        K: Resource + Send + Sync + 'static,
    {
        let mut state = self.inner.state.lock();
        if let Some(informer) = state.informers.get(&key).and_then(|i| i.downcast::<K>()) {
            return informer;
        }
        let informer = make(&self.inner.options);
        state.informers.insert(key, Arc::new(informer.clone()));
        #[cfg(feature = "prometheus")]
        self.inner.metrics.add(&informer, dynamic_type);
        #[cfg(not(feature = "prometheus"))]
        let _ = dynamic_type;
        informer
    }

    /// An informer over `lister_watcher` with the factory's options for `key`; `namespaced`
    /// says whether the namespace option still has to be applied to its requests.
    fn build_informer<K>(
        &self,
        key: &str,
        lister_watcher: KubeListerWatcher<K>,
        namespaced: bool,
        options: &FactoryOptions,
    ) -> SharedIndexInformer<K>
    where
        K: Resource + DeserializeOwned + Send + Sync + 'static,
    {
        let tweak_options = options.clone();
        let lister_watcher =
            lister_watcher.tweak_list_options(move |o| tweak_options.tweak(o, namespaced));
        let mut builder = SharedIndexInformer::builder(lister_watcher)
            .name(key)
            .resync_period(options.resync_for(key))
            .queue_mode(options.queue_mode)
            .reflector(options.reflector.clone());
        // The informer gives it to the lister-watcher as any informer does: objects are
        // transformed as each batch is decoded, so the full ones are never held.
        if let Some(transform) = options.transform_for::<K>(key) {
            builder = builder.transform(transform);
        }
        #[cfg(feature = "compact")]
        if let Some(compact) = options.compact_cache_for::<K>(key) {
            builder = compact(builder);
        }
        builder.build()
    }

    /// The cluster-wide `Api` of a typed resource (a namespace option is applied per request).
    fn typed_api<K: Resource<DynamicType = ()>>(&self) -> Api<K> {
        Api::all_with(self.inner.client.clone(), &())
    }

    /// The shared informer of a typed resource (k8s-openapi types, custom resources derived with
    /// kube), created on first use with the built-in namespace index.
    pub fn informer<K: TypedResource>(&self) -> SharedIndexInformer<K> {
        let key = type_key::typed::<K>();
        self.informer_for(key.clone(), &(), |options| {
            let lister_watcher = KubeListerWatcher::new(self.typed_api::<K>());
            self.build_informer(&key, lister_watcher, is_namespaced::<K>(), options)
        })
    }

    /// The shared informer of a resource known only at run time (custom resources), as
    /// [`DynamicObject`]s.
    pub fn dynamic_informer(
        &self,
        resource: &ApiResource,
        namespaced: bool,
    ) -> SharedIndexInformer<DynamicObject> {
        let key = type_key::dynamic(resource);
        self.informer_for(key.clone(), resource, |options| {
            let client = self.inner.client.clone();
            let (api, scoped_by_path) = match (&options.namespace, namespaced) {
                (Some(ns), true) => (Api::namespaced_with(client, ns, resource), true),
                _ => (Api::all_with(client, resource), false),
            };
            let lister_watcher = KubeListerWatcher::dynamic(api, resource);
            self.build_informer(&key, lister_watcher, namespaced && !scoped_by_path, options)
        })
    }

    /// The shared metadata-only informer of `K`: objects carry only their type and metadata,
    /// which keeps large resources (Secrets, ConfigMaps) cheap to cache.
    pub fn metadata_informer<K: TypedResource>(&self) -> SharedIndexInformer<PartialObjectMeta<K>> {
        let key = type_key::metadata::<K>();
        self.informer_for(key.clone(), &(), |options| {
            let lister_watcher = KubeListerWatcher::metadata(self.typed_api::<K>());
            self.build_informer(&key, lister_watcher, is_namespaced::<K>(), options)
        })
    }

    /// A lister over the informer of `K` (creating the informer if needed).
    pub fn lister<K: TypedResource>(&self) -> Lister<K> {
        self.informer::<K>().lister()
    }

    /// Runs every informer not yet running on the current tokio runtime. A no-op after
    /// [`shutdown`](Self::shutdown).
    pub fn start(&self) -> Result<(), FactoryError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| FactoryError::NoRuntime)?;
        let mut state = self.inner.state.lock();
        if state.shutting_down {
            return Ok(());
        }
        let to_start: Vec<(String, Arc<dyn AnyInformer>)> = state
            .informers
            .iter()
            .filter(|(key, _)| !state.started.contains_key(*key))
            .map(|(key, informer)| (key.clone(), Arc::clone(informer)))
            .collect();
        for (key, informer) in to_start {
            tracing::debug!(informer = %key, "starting informer");
            let task = runtime.spawn(informer.run_boxed(self.inner.shutdown.child_token()));
            state.started.insert(key, task);
        }
        Ok(())
    }

    /// Waits until every started informer has synced, or the factory shuts down. Returns, per
    /// type key, whether that informer synced. Wakes when an informer syncs (no polling).
    pub async fn wait_for_cache_sync(&self) -> BTreeMap<String, bool> {
        self.wait_for_cache_sync_until(&CancellationToken::new())
            .await
    }

    /// [`wait_for_cache_sync`](Self::wait_for_cache_sync) that gives up after `timeout`: the
    /// informers not synced by then are `false`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let server = kcache_apiserver::TestServer::start().await?;
    /// # let factory = kcache_factory::SharedInformerFactory::new(server.client()?);
    /// # factory.informer::<k8s_openapi::api::core::v1::Pod>();
    /// factory.start()?;
    /// let synced = factory.wait_for_cache_sync_timeout(std::time::Duration::from_secs(30)).await;
    /// if let Some((key, _)) = synced.iter().find(|(_, synced)| !**synced) {
    ///     eprintln!("{key} did not sync within 30 s");
    /// }
    /// assert_eq!(synced.get("v1/Pod"), Some(&true));
    /// # factory.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_cache_sync_timeout(&self, timeout: Duration) -> BTreeMap<String, bool> {
        let give_up = CancellationToken::new();
        let waiting = self.wait_for_cache_sync_until(&give_up);
        tokio::pin!(waiting);
        tokio::select! {
            synced = &mut waiting => synced,
            () = tokio::time::sleep(timeout) => {
                give_up.cancel();
                waiting.await
            }
        }
    }

    /// [`wait_for_cache_sync`](Self::wait_for_cache_sync) that gives up when `cancel` fires: the
    /// informers not synced by then are `false`.
    pub async fn wait_for_cache_sync_until(
        &self,
        cancel: &CancellationToken,
    ) -> BTreeMap<String, bool> {
        let started: Vec<(String, Arc<dyn AnyInformer>)> = {
            let state = self.inner.state.lock();
            state
                .informers
                .iter()
                .filter(|(key, _)| state.started.contains_key(*key))
                .map(|(key, informer)| (key.clone(), Arc::clone(informer)))
                .collect()
        };
        // Fires on the factory's shutdown or the caller's cancellation.
        let stop = self.inner.shutdown.child_token();
        let stop_ref = &stop;
        let waiting = join_all(started.iter().map(|(_, informer)| async move {
            wait_for_cache_sync(
                stop_ref,
                &[informer.as_ref() as &dyn kcache_informer::HasSynced],
            )
            .await
        }));
        tokio::pin!(waiting);
        let results = tokio::select! {
            results = &mut waiting => results,
            () = cancel.cancelled() => {
                stop.cancel();
                waiting.await
            }
        };
        started
            .iter()
            .map(|(key, _)| key.clone())
            .zip(results)
            .collect()
    }

    /// Registers the metrics of the factory's informers, those created so far and later ones
    /// (`informer_*`, see [`kcache_informer::PrometheusMetrics`]), and client-go's work-queue
    /// families (`workqueue_*`) in `registry`; returns the work-queue metrics to hand to the
    /// controller's queues (`WorkQueueConfig::metrics`). Call it once per registry.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # use kcache_factory::SharedInformerFactory;
    /// # use kcache_workqueue::{WorkQueue, WorkQueueConfig};
    /// # use prometheus_client::registry::Registry;
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let server = kcache_apiserver::TestServer::start().await?;
    /// # let client = server.client()?;
    /// let factory = SharedInformerFactory::new(client);
    /// let mut registry = Registry::default();
    /// let queue_metrics = factory.register_metrics(&mut registry);
    /// let queue: WorkQueue<String> =
    ///     WorkQueue::with_config(WorkQueueConfig::default().name("pods").metrics(Arc::new(queue_metrics)));
    /// let _pods = factory.informer::<Pod>(); // created after the registration: exported too
    /// queue.add("default/web-0".to_owned());
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry)?;
    /// assert!(text.contains(r#"informer_stored_items{name="v1/Pod",group="",version="v1",resource="pods"} 0"#));
    /// assert!(text.contains(r#"workqueue_adds_total{name="pods"} 1"#));
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "prometheus")]
    pub fn register_metrics(
        &self,
        registry: &mut prometheus_client::registry::Registry,
    ) -> kcache_workqueue::PrometheusMetrics {
        self.inner.metrics.register(registry);
        let queues = kcache_workqueue::PrometheusMetrics::default();
        queues.register(registry);
        queues
    }

    /// The type keys of the informers created so far (`v1/Pod`, `apps/v1/Deployment`,
    /// `metadata:v1/Secret`, …).
    pub fn informer_keys(&self) -> Vec<String> {
        self.inner.state.lock().informers.keys().cloned().collect()
    }

    /// Stops every informer and waits until each informer task has ended. Idempotent; after it,
    /// [`start`](Self::start) does nothing.
    pub async fn shutdown(&self) {
        let _serial = self.inner.shutdown_lock.lock().await;
        let tasks: Vec<(String, JoinHandle<Result<(), InformerError>>)> = {
            let mut state = self.inner.state.lock();
            state.shutting_down = true;
            state.started.drain().collect()
        };
        self.inner.shutdown.cancel();
        let results = join_all(
            tasks
                .into_iter()
                .map(|(key, task)| async move { (key, task.await) }),
        )
        .await;
        for (key, result) in results {
            match result {
                Ok(Ok(())) => tracing::debug!(informer = %key, "informer stopped"),
                Ok(Err(e)) => {
                    tracing::warn!(informer = %key, error = &e as &dyn std::error::Error, "informer ended with an error")
                }
                Err(e) => {
                    tracing::error!(informer = %key, error = &e as &dyn std::error::Error, "informer task failed")
                }
            }
        }
    }
}

/// Whether `K` is namespaced (decided by its scope type).
fn is_namespaced<K: Resource<Scope: 'static>>() -> bool {
    std::any::TypeId::of::<K::Scope>() == std::any::TypeId::of::<NamespaceResourceScope>()
}
