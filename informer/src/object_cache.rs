//! [`ObjectCache`]: single objects watched on demand, each by its own reflector (kubelet's
//! watch-based `objectCache`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kcache_reflector::{
    ListFuture, ListOptions, ListerWatcher, Reflector, ReflectorConfig, ReflectorStore, WatchFuture,
};
use kcache_store::{Indexer, Store, StoreError, namespace_key};
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::ObjectCacheError;

/// How long [`ObjectCache::get`] waits for an object's store to sync by default (kubelet: 1 s).
pub const DEFAULT_SYNC_TIMEOUT: Duration = Duration::from_secs(1);
/// How often [`ObjectCache::get`] checks whether the store has synced (kubelet: 10 ms).
const SYNC_POLL: Duration = Duration::from_millis(10);

/// Makes the lister-watcher of a namespace; the cache narrows it to one object by name.
pub type ListerWatcherFactory<K> = Arc<dyn Fn(&str) -> Arc<dyn ListerWatcher<K>> + Send + Sync>;
/// Whether an object can no longer change (for example `immutable: true` on a ConfigMap).
pub type ImmutableCheck<K> = Arc<dyn Fn(&K) -> bool + Send + Sync>;

/// A lister-watcher restricted to one object with the field selector `metadata.name=<name>`.
struct ByName<K> {
    inner: Arc<dyn ListerWatcher<K>>,
    selector: String,
}

impl<K: 'static> ListerWatcher<K> for ByName<K> {
    fn list(&self, options: &ListOptions) -> ListFuture<'_, K> {
        let options = ListOptions {
            field_selector: Some(self.selector.clone()),
            ..options.clone()
        };
        let inner = &self.inner;
        Box::pin(async move { inner.list(&options).await })
    }

    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, K> {
        let options = ListOptions {
            field_selector: Some(self.selector.clone()),
            ..options.clone()
        };
        let inner = &self.inner;
        Box::pin(async move { inner.watch(&options).await })
    }
}

/// The store of one object: an indexer that remembers whether it was replaced (listed) once.
struct SyncedStore<K> {
    store: Indexer<K>,
    synced: AtomicBool,
}

impl<K: Resource + Send + Sync + 'static> ReflectorStore<K> for SyncedStore<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        Store::add(&self.store, obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        Store::update(&self.store, obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        Store::delete(&self.store, obj)
    }
    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        Store::replace(&self.store, items, resource_version)?;
        self.synced.store(true, Ordering::Release);
        Ok(())
    }
}

/// One watched object: its store, its reflector task and who references it.
struct Item<K> {
    refs: HashMap<String, usize>,
    store: Arc<SyncedStore<K>>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
    immutable: bool,
}

impl<K> Item<K> {
    /// Stops the reflector; true if it was running.
    fn stop(&mut self) -> bool {
        let running = !self.stop.is_cancelled();
        self.stop.cancel();
        running
    }
}

struct Config<K> {
    resource: String,
    lister_watcher_for: ListerWatcherFactory<K>,
    is_immutable: ImmutableCheck<K>,
    sync_timeout: Duration,
}

/// Single objects (ConfigMaps, Secrets a pod mounts...) kept up to date on demand, each by its
/// own reflector watching only that object (field selector `metadata.name=<name>`), shared by
/// reference count (kubelet's watch-based `objectCache`).
///
/// [`add_reference`](Self::add_reference) starts watching an object on its first reference,
/// [`delete_reference`](Self::delete_reference) stops when its last reference goes;
/// [`get`](Self::get) waits (bounded) until the object's store has synced and returns the
/// object or [`ObjectCacheError::NotFound`]. Once an object is seen immutable, its reflector
/// stops and the cached object is served from then on.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kcache_informer::ObjectCache;
/// use kcache_reflector::KubeListerWatcher;
/// use kcache_reflector::ListerWatcher;
/// use kube_client::{Api, Client};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let server = kcache_apiserver::TestServer::start().await?;
/// # let client: Client = server.client()?;
/// # let mut cm = ConfigMap::default();
/// # cm.metadata.name = Some("settings".into());
/// # cm.data = Some([("mode".to_owned(), "fast".to_owned())].into());
/// # Api::<ConfigMap>::namespaced(client.clone(), "default").create(&Default::default(), &cm).await?;
/// let cache = ObjectCache::new("configmaps", move |ns: &str| {
///     Arc::new(KubeListerWatcher::new(Api::<ConfigMap>::namespaced(client.clone(), ns)))
///         as Arc<dyn ListerWatcher<ConfigMap>>
/// })
/// .immutable_when(|cm: &ConfigMap| cm.immutable == Some(true));
/// cache.add_reference("default", "settings", "pod-uid-1")?;
/// let settings = cache.get("default", "settings").await?;
/// assert_eq!(settings.data.as_ref().and_then(|d| d.get("mode")).map(String::as_str), Some("fast"));
/// cache.shutdown().await;
/// # Ok(()) }
/// ```
pub struct ObjectCache<K> {
    config: Arc<Config<K>>,
    items: Mutex<HashMap<String, Item<K>>>,
    /// Reflector tasks of items already stopped, joined by [`shutdown`](Self::shutdown).
    stopped: Mutex<Vec<JoinHandle<()>>>,
}

impl<K> fmt::Debug for ObjectCache<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectCache")
            .field("resource", &self.config.resource)
            .field("objects", &self.items.lock().len())
            .field("sync_timeout", &self.config.sync_timeout)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Send + Sync + 'static> ObjectCache<K> {
    /// A cache of objects of `resource` (the name used in NotFound errors, for example
    /// `configmaps`), watched through the lister-watcher `lister_watcher_for(namespace)` makes.
    /// No object counts as immutable until [`immutable_when`](Self::immutable_when) says so.
    pub fn new(
        resource: impl Into<String>,
        lister_watcher_for: impl Fn(&str) -> Arc<dyn ListerWatcher<K>> + Send + Sync + 'static,
    ) -> Self {
        Self {
            config: Arc::new(Config {
                resource: resource.into(),
                lister_watcher_for: Arc::new(lister_watcher_for),
                is_immutable: Arc::new(|_| false),
                sync_timeout: DEFAULT_SYNC_TIMEOUT,
            }),
            items: Mutex::new(HashMap::new()),
            stopped: Mutex::new(Vec::new()),
        }
    }

    fn config_mut(&mut self) -> Option<&mut Config<K>> {
        Arc::get_mut(&mut self.config)
    }

    /// Objects for which `check` is true can no longer change: their reflector stops once
    /// `get` has seen them so.
    #[must_use]
    pub fn immutable_when(mut self, check: impl Fn(&K) -> bool + Send + Sync + 'static) -> Self {
        if let Some(config) = self.config_mut() {
            config.is_immutable = Arc::new(check);
        }
        self
    }

    /// How long `get` waits for an object's store to sync (default [`DEFAULT_SYNC_TIMEOUT`]).
    #[must_use]
    pub fn sync_timeout(mut self, timeout: Duration) -> Self {
        if let Some(config) = self.config_mut() {
            config.sync_timeout = timeout;
        }
        self
    }

    /// Records that `referenced_from` (for example a pod's uid) uses the object; the first
    /// reference starts its reflector. Must be called within a tokio runtime.
    pub fn add_reference(
        &self,
        namespace: &str,
        name: &str,
        referenced_from: &str,
    ) -> Result<(), ObjectCacheError> {
        let key = namespace_key(Some(namespace), name);
        let mut items = self.items.lock();
        if !items.contains_key(&key) {
            let item = self.start(namespace, name)?;
            items.insert(key.clone(), item);
        }
        if let Some(item) = items.get_mut(&key) {
            *item.refs.entry(referenced_from.to_owned()).or_default() += 1;
        }
        Ok(())
    }

    /// Drops one reference of `referenced_from`; when no reference is left the reflector stops
    /// and the object is forgotten.
    pub fn delete_reference(&self, namespace: &str, name: &str, referenced_from: &str) {
        let key = namespace_key(Some(namespace), name);
        let mut items = self.items.lock();
        let Some(item) = items.get_mut(&key) else {
            return;
        };
        if let Some(count) = item.refs.get_mut(referenced_from) {
            *count -= 1;
            if *count == 0 {
                item.refs.remove(referenced_from);
            }
        }
        if item.refs.is_empty()
            && let Some(mut item) = items.remove(&key)
        {
            item.stop();
            if let Some(task) = item.task.take() {
                self.stopped.lock().push(task);
            }
        }
    }

    fn start(&self, namespace: &str, name: &str) -> Result<Item<K>, ObjectCacheError> {
        let handle =
            tokio::runtime::Handle::try_current().map_err(|_| ObjectCacheError::NoRuntime {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            })?;
        let lister_watcher = ByName {
            inner: (self.config.lister_watcher_for)(namespace),
            selector: format!("metadata.name={name}"),
        };
        let store = Arc::new(SyncedStore {
            store: Indexer::default(),
            synced: AtomicBool::new(false),
        });
        let reflector = Reflector::new(
            lister_watcher,
            Arc::clone(&store),
            ReflectorConfig::default().name(format!("object-{namespace:?}/{name:?}")),
        );
        let stop = CancellationToken::new();
        let token = stop.clone();
        let task = handle.spawn(async move { reflector.run(token).await });
        Ok(Item {
            refs: HashMap::new(),
            store,
            stop,
            task: Some(task),
            immutable: false,
        })
    }

    /// The object, once its store has synced (waiting up to the sync timeout). Errors when the
    /// object is not referenced, its store did not sync in time, or it does not exist.
    pub async fn get(&self, namespace: &str, name: &str) -> Result<Arc<K>, ObjectCacheError> {
        let key = namespace_key(Some(namespace), name);
        let store = {
            let items = self.items.lock();
            let Some(item) = items.get(&key) else {
                return Err(ObjectCacheError::NotRegistered {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                });
            };
            Arc::clone(&item.store)
        };
        let synced = tokio::time::timeout(self.config.sync_timeout, async {
            let mut poll = tokio::time::interval(SYNC_POLL);
            while !store.synced.load(Ordering::Acquire) {
                poll.tick().await;
            }
        })
        .await;
        if synced.is_err() {
            return Err(ObjectCacheError::SyncTimeout {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                timeout: self.config.sync_timeout,
            });
        }
        let Some(obj) = Store::get_by_key(&store.store, &key) else {
            return Err(ObjectCacheError::NotFound {
                resource: self.config.resource.clone(),
                name: name.to_owned(),
            });
        };
        if (self.config.is_immutable)(&obj) {
            let mut items = self.items.lock();
            if let Some(item) = items.get_mut(&key)
                && !item.immutable
            {
                item.immutable = true;
                if item.stop() {
                    tracing::debug!(namespace, name, "stopped watching: the object is immutable");
                }
            }
        }
        Ok(obj)
    }

    /// Whether a reflector is watching the object (false once it is immutable or unreferenced).
    pub fn is_watching(&self, namespace: &str, name: &str) -> bool {
        self.items
            .lock()
            .get(&namespace_key(Some(namespace), name))
            .is_some_and(|i| !i.stop.is_cancelled())
    }

    /// The number of objects referenced.
    pub fn len(&self) -> usize {
        self.items.lock().len()
    }

    /// Whether no object is referenced.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops every reflector, forgets every object and waits for every reflector task.
    pub async fn shutdown(&self) {
        let mut tasks: Vec<JoinHandle<()>> = std::mem::take(&mut *self.stopped.lock());
        for (_, mut item) in self.items.lock().drain() {
            item.stop();
            tasks.extend(item.task.take());
        }
        for task in tasks {
            if let Err(err) = task.await {
                tracing::error!(
                    error = &err as &dyn std::error::Error,
                    "object cache reflector task failed"
                );
            }
        }
    }
}
