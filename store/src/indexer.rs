//! [`Indexer`]: a [`Store`] with a key function and indexes.

use std::fmt;
use std::sync::Arc;

use kube_core::Resource;
use parking_lot::Mutex;

use crate::error::{StoreError, TransactionError};
use crate::index::{IndexFunc, Indexers, NAMESPACE_INDEX, namespace_index_func};
use crate::key::{KeyFunc, ObjectKey, meta_namespace_key_func};
use crate::store::{KnownObjects, Store, Transaction, TransactionType};
use crate::thread_safe_store::ThreadSafeStore;

/// The indexed object store (client-go's `cache.NewIndexer`): a [`ThreadSafeStore`] keyed by a
/// [`KeyFunc`], with resource-version tracking. Objects are stored as they are given: a transform
/// runs where objects are made (kcache-reflector's `ObjectMaking`), never here.
///
/// ```
/// # use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kcache_store::{Indexer, Store, NAMESPACE_INDEX};
///
/// let indexer = Indexer::<Pod>::with_namespace_index();
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web".into());
/// pod.metadata.namespace = Some("prod".into());
/// indexer.add(Arc::new(pod)).unwrap();
/// assert_eq!(indexer.by_index(NAMESPACE_INDEX, "prod").unwrap().len(), 1);
/// ```
pub struct Indexer<K> {
    store: ThreadSafeStore<K>,
    key_func: KeyFunc<K>,
    resource_version: Mutex<String>,
}

impl<K> fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Indexer")
            .field("store", &self.store)
            .field("resource_version", &*self.resource_version.lock())
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> Indexer<K> {
    /// An indexer keyed by [`meta_namespace_key`](crate::meta_namespace_key) with the given indexes.
    pub fn new(indexers: Indexers<K>) -> Self {
        Self::with_key_func(meta_namespace_key_func(), indexers)
    }

    /// An indexer keyed by `namespace/name` with the built-in [`NAMESPACE_INDEX`].
    pub fn with_namespace_index() -> Self {
        let mut indexers = Indexers::default();
        indexers.insert(NAMESPACE_INDEX.to_owned(), namespace_index_func());
        Self::new(indexers)
    }
}

impl<K: Resource + Send + Sync + 'static> Default for Indexer<K> {
    /// A store without indexes, keyed by `namespace/name` (client-go's `NewStore`).
    fn default() -> Self {
        Self::new(Indexers::default())
    }
}

#[cfg(feature = "compact")]
impl<K> Indexer<K>
where
    K: serde::Serialize + serde::de::DeserializeOwned,
{
    /// A compact indexer (feature `compact`): every object held as zstd-compressed JSON (the
    /// dictionary trained on the first replace of at least 16 objects) and decoded on each
    /// read, so reads return a fresh `Arc` per call rather than the one written. Index functions
    /// run on the object as it is written. Everything else is as [`with_key_func`](Self::with_key_func).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kcache_store::{Indexer, Indexers, Store, meta_namespace_key_func};
    ///
    /// let indexer = Indexer::<Pod>::compact(meta_namespace_key_func(), Indexers::default());
    /// let mut pod = Pod::default();
    /// pod.metadata.name = Some("web".into());
    /// pod.metadata.namespace = Some("prod".into());
    /// indexer.add(Arc::new(pod.clone())).unwrap();
    /// assert_eq!(indexer.get_by_key("prod/web").as_deref(), Some(&pod));
    /// ```
    pub fn compact(key_func: KeyFunc<K>, indexers: Indexers<K>) -> Self {
        Self::with_store(key_func, ThreadSafeStore::compact(indexers))
    }
}

impl<K> Indexer<K> {
    /// An indexer with a custom key function.
    pub fn with_key_func(key_func: KeyFunc<K>, indexers: Indexers<K>) -> Self {
        Self::with_store(key_func, ThreadSafeStore::new(indexers))
    }
}

impl<K> Indexer<K> {
    fn with_store(key_func: KeyFunc<K>, store: ThreadSafeStore<K>) -> Self {
        Self {
            store,
            key_func,
            resource_version: Mutex::new(String::new()),
        }
    }

    /// The store holding the objects (to ask whether it [is compact](ThreadSafeStore::is_compact),
    /// or for reads that return a failing decode: [`try_get`](ThreadSafeStore::try_get),
    /// [`try_list`](ThreadSafeStore::try_list)).
    pub fn store(&self) -> &ThreadSafeStore<K> {
        &self.store
    }

    /// The key `obj` is stored under.
    pub fn key_of(&self, obj: &K) -> Result<String, StoreError> {
        Ok((self.key_func)(obj)?)
    }

    /// Removes the object under `key` (for example a tombstone's key) and returns it. Does not
    /// change the tracked resource version.
    pub fn delete_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.store.delete(key)
    }

    /// The number of objects.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether the indexer holds no object.
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// The objects sharing an index value with `obj` in the index `name`.
    pub fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, StoreError> {
        self.store.index(name, obj)
    }

    /// The sorted keys of the objects with `value` in the index `name`.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError> {
        self.store.index_keys(name, value)
    }

    /// The objects with `value` in the index `name` (empty when no object has it).
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        self.store.by_index(name, value)
    }

    /// The distinct values present in the index `name`.
    pub fn list_index_func_values(&self, name: &str) -> Vec<String> {
        self.store.list_index_func_values(name)
    }

    /// The index functions by name.
    pub fn get_indexers(&self) -> Indexers<K> {
        self.store.get_indexers()
    }

    /// Adds indexes, also while the indexer is in use: objects already stored are indexed for the
    /// new indexes only. Names that already exist are rejected.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), StoreError> {
        self.store.add_indexers(indexers)
    }

    /// Adds one index.
    pub fn add_index(&self, name: impl Into<String>, func: IndexFunc<K>) -> Result<(), StoreError> {
        self.add_indexers(Indexers::from_iter([(name.into(), func)]))
    }
}

fn resource_version_of<K: Resource>(obj: &K) -> Option<&str> {
    obj.meta().resource_version.as_deref()
}

impl<K: Resource + Send + Sync + 'static> Indexer<K> {
    /// Records the resource version of a written object. The rule: the last **non-empty**
    /// resource version written. client-go's thread-safe store records the version of every
    /// write, an empty one included (an object built locally, without metadata from a server),
    /// which forgets the version the store was synced to; kcache keeps it instead, since an empty
    /// version says nothing about where the store is.
    fn record_resource_version(&self, obj: &K) {
        if let Some(rv) = resource_version_of(obj) {
            self.record(rv);
        }
    }

    /// Records `resource_version` unless it is empty (see `record_resource_version`).
    fn record(&self, resource_version: &str) {
        if !resource_version.is_empty() {
            resource_version.clone_into(&mut self.resource_version.lock());
        }
    }

    /// Tells the cache which objects it is about to hold when they will be stored one at a time
    /// (the pages of a relist; see [`ThreadSafeStore::prepare`]).
    pub fn prepare<'a>(&self, objects: impl Iterator<Item = &'a Arc<K>>)
    where
        K: 'a,
    {
        self.store.prepare(objects);
    }

    /// [`Store::replace`] with every object's key already computed (by a caller that needed the
    /// keys itself).
    pub fn replace_keyed(
        &self,
        items: Vec<(String, Arc<K>)>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        self.store.replace(items)?;
        self.record(resource_version);
        Ok(())
    }

    /// Stores `obj` and returns the object it replaced: an add or an update, with the key
    /// computed once.
    pub fn upsert(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.key_of(&obj)?;
        let old = self.store.upsert(&key, Arc::clone(&obj))?;
        self.record_resource_version(&obj);
        Ok(old)
    }

    /// [`upsert`](Self::upsert) under the key `obj` was queued with (a queue computed it): the
    /// key is not computed again, and a new one is stored as that shared `Arc`.
    pub fn upsert_keyed(&self, key: &ObjectKey, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        let old = self.store.upsert_key(key, Arc::clone(&obj))?;
        self.record_resource_version(&obj);
        Ok(old)
    }

    /// [`Store::delete`] of `obj` under the key it was queued with (a queue computed it).
    pub fn delete_keyed(&self, key: &str, obj: &K) {
        self.store.delete(key);
        self.record_resource_version(obj);
    }
}

impl<K: Resource + Send + Sync + 'static> Store<K> for Indexer<K> {
    type Item = Arc<K>;

    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.upsert(obj).map(drop)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.upsert(obj).map(drop)
    }

    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        let key = self.key_of(&obj)?;
        self.delete_keyed(&key, &obj);
        Ok(())
    }

    fn list(&self) -> Vec<Arc<K>> {
        self.store.list()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.store.list_keys()
    }

    fn get(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        Ok(self.store.get(&self.key_of(obj)?))
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.store.get(key)
    }

    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        let keyed = items
            .into_iter()
            .map(|obj| Ok((self.key_of(&obj)?, obj)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.replace_keyed(keyed, resource_version)
    }

    fn resync(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn last_store_sync_resource_version(&self) -> String {
        self.resource_version.lock().clone()
    }

    fn bookmark(&self, resource_version: &str) {
        self.record(resource_version);
    }

    fn transaction(&self, ops: Vec<Transaction<K>>) -> Result<(), StoreError> {
        let mut errors = Vec::new();
        // Keys are computed outside the lock; failures are recorded by position.
        let mut prepared = Vec::with_capacity(ops.len());
        for (i, op) in ops.into_iter().enumerate() {
            let ready = self.key_of(&op.object).map(|key| {
                let obj = match op.kind {
                    TransactionType::Deleted => None,
                    TransactionType::Added | TransactionType::Updated => {
                        Some(Arc::clone(&op.object))
                    }
                };
                (key, obj)
            });
            match ready {
                Ok((key, obj)) => prepared.push((i, key, obj, op.object)),
                Err(e) => errors.push((i, e)),
            }
        }
        let results = self.store.write_batch(
            prepared
                .iter()
                .map(|(_, key, obj, _)| (key.as_str(), obj.clone())),
        );
        let mut successful = Vec::with_capacity(results.len());
        let mut last_written = None;
        for ((i, _, _, original), result) in prepared.into_iter().zip(results) {
            match result {
                Ok(()) => {
                    successful.push(i);
                    last_written = Some(original);
                }
                Err(e) => errors.push((i, e)),
            }
        }
        if let Some(obj) = last_written {
            self.record_resource_version(&obj);
        }
        if errors.is_empty() {
            Ok(())
        } else {
            errors.sort_by_key(|(i, _)| *i);
            Err(TransactionError { successful, errors }.into())
        }
    }
}

impl<K: Resource + Send + Sync + 'static> KnownObjects<K> for Indexer<K> {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.store.list_keys()
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.store.get(key)
    }
}
