//! [`ThreadSafeStore`]: objects by key under one read-write lock, with incrementally maintained
//! indexes, held as shared `Arc`s or (feature `compact`) compactly.

use std::fmt;
use std::sync::Arc;

use crate::error::StoreError;
#[cfg(feature = "compact")]
use crate::holding::Holding;
use crate::holding::Shared;
use crate::index::Indexers;
use crate::key::ObjectKey;
use crate::store_core::Core;

/// How the objects are held: the one branch between the default cache and the compact one.
enum Repr<K> {
    Shared(Core<K, Shared>),
    #[cfg(feature = "compact")]
    Compact(Core<K, crate::compact::Compact<K>>),
}

/// Runs `$body` with `$core` bound to the store's [`Core`], whichever holding it has.
macro_rules! with_core {
    ($self:expr, $core:ident => $body:expr) => {
        match &$self.repr {
            Repr::Shared($core) => $body,
            #[cfg(feature = "compact")]
            Repr::Compact($core) => $body,
        }
    };
}

/// A thread-safe map from key to `Arc<K>` with indexes (client-go's `ThreadSafeStore`).
///
/// Readers share a read lock; every write takes the write lock once. Indexes are updated
/// incrementally: an object whose single index value is unchanged costs no index work, and an
/// index value left with no keys is removed. Index functions run before anything is changed, so a
/// failing one leaves the store and every index as they were.
///
/// The default store holds the `Arc`s it is given. A compact one ([`ThreadSafeStore::compact`],
/// feature `compact`) holds each object as zstd-compressed JSON and decodes it on every read:
/// index functions still run on the object as it is written. Reads that cannot say why
/// ([`get`](Self::get), [`list`](Self::list)) log an object that fails to decode and leave it
/// out; [`try_get`](Self::try_get) and [`try_list`](Self::try_list) return the
/// [`StoreError::Decode`].
pub struct ThreadSafeStore<K> {
    repr: Repr<K>,
}

impl<K> fmt::Debug for ThreadSafeStore<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (holding, items, indexes) = with_core!(self, core => {
            let inner = core.inner.read();
            (
                format!("{:?}", core.holding),
                inner.items.len(),
                inner.indexes.iter().map(|i| i.name.clone()).collect::<Vec<_>>(),
            )
        });
        f.debug_struct("ThreadSafeStore")
            .field("holding", &holding)
            .field("items", &items)
            .field("indexes", &indexes)
            .finish()
    }
}

impl<K> Default for ThreadSafeStore<K> {
    fn default() -> Self {
        Self::new(Indexers::default())
    }
}

/// The value of a read that cannot return an error: a failing decode is logged.
fn logged<T>(result: Result<T, StoreError>) -> Option<T> {
    result
        .inspect_err(|error| {
            tracing::error!(
                error = error as &dyn std::error::Error,
                "compact cache: an object could not be decoded and is left out"
            );
        })
        .ok()
}

#[cfg(feature = "compact")]
impl<K> ThreadSafeStore<K>
where
    K: serde::Serialize + serde::de::DeserializeOwned,
{
    /// An empty compact store: objects held as zstd-compressed JSON, with a dictionary trained
    /// at the first replace of at least 16 objects, and decoded on every read.
    pub fn compact(indexers: Indexers<K>) -> Self {
        Self {
            repr: Repr::Compact(Core::new(crate::compact::Compact::new(), indexers)),
        }
    }
}

impl<K> ThreadSafeStore<K> {
    /// An empty store with the given index functions.
    pub fn new(indexers: Indexers<K>) -> Self {
        Self {
            repr: Repr::Shared(Core::new(Shared, indexers)),
        }
    }

    /// Whether objects are held compactly (and decoded on read).
    pub fn is_compact(&self) -> bool {
        !matches!(self.repr, Repr::Shared(_))
    }

    /// Stores `obj` under `key` (add and update are the same operation).
    pub fn add(&self, key: &str, obj: Arc<K>) -> Result<(), StoreError> {
        self.upsert(key, obj).map(drop)
    }

    /// Stores `obj` under `key` and returns the object it replaced, if any.
    pub fn upsert(&self, key: &str, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        with_core!(self, core => core.upsert(key, || ObjectKey::from(key), obj))
    }

    /// [`upsert`](Self::upsert) under a key already shared as an [`ObjectKey`] (computed by a
    /// queue): a new key is stored as that `Arc`, without a copy.
    pub fn upsert_key(&self, key: &ObjectKey, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        with_core!(self, core => core.upsert(key, || Arc::clone(key), obj))
    }

    /// Stores `obj` under `key`, replacing what was there.
    pub fn update(&self, key: &str, obj: Arc<K>) -> Result<(), StoreError> {
        self.add(key, obj)
    }

    /// Removes the object under `key` and returns it.
    pub fn delete(&self, key: &str) -> Option<Arc<K>> {
        with_core!(self, core => core.remove(key).and_then(logged))
    }

    /// Applies writes (`Some(obj)` stores, `None` deletes) under one write lock, in order.
    /// Returns one result per write; a failed write leaves the store as it was before it.
    pub fn write_batch<'a>(
        &self,
        writes: impl IntoIterator<Item = (&'a str, Option<Arc<K>>)>,
    ) -> Vec<Result<(), StoreError>> {
        with_core!(self, core => core.write_batch(core.prepare_writes(writes)))
    }

    /// The object under `key` (a compact store's object that fails to decode is logged and
    /// `None`).
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        match &self.repr {
            Repr::Shared(core) => core.held(key),
            #[cfg(feature = "compact")]
            Repr::Compact(_) => self.try_get(key).and_then(logged),
        }
    }

    /// The object under `key`, or why it could not be decoded.
    pub fn try_get(&self, key: &str) -> Option<Result<Arc<K>, StoreError>> {
        with_core!(self, core => core.held(key).map(|held| core.object(key, held)))
    }

    /// Every object, in no particular order (a compact store's objects that fail to decode are
    /// logged and left out).
    pub fn list(&self) -> Vec<Arc<K>> {
        match &self.repr {
            Repr::Shared(core) => core.inner.read().items.values().cloned().collect(),
            #[cfg(feature = "compact")]
            Repr::Compact(core) => held_pairs(core)
                .into_iter()
                .filter_map(|(key, held)| logged(core.object(&key, held)))
                .collect(),
        }
    }

    /// Every object, or the first that could not be decoded.
    pub fn try_list(&self) -> Result<Vec<Arc<K>>, StoreError> {
        match &self.repr {
            Repr::Shared(_) => Ok(self.list()),
            #[cfg(feature = "compact")]
            Repr::Compact(core) => decode_all(core, held_pairs(core)),
        }
    }

    /// Every key, in no particular order.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        with_core!(self, core => core.list_keys())
    }

    /// Whether an object is stored under `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        with_core!(self, core => core.inner.read().items.contains_key(key))
    }

    /// The number of objects.
    pub fn len(&self) -> usize {
        with_core!(self, core => core.inner.read().items.len())
    }

    /// Whether the store holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Replaces every object with `items` (later duplicates of a key win) and rebuilds every index.
    /// Nothing changes if an index function fails.
    pub fn replace(
        &self,
        items: impl IntoIterator<Item = (String, Arc<K>)>,
    ) -> Result<(), StoreError> {
        let items: Vec<(String, Arc<K>)> = items.into_iter().collect();
        with_core!(self, core => core.replace(items))
    }

    /// Tells the store which objects it is about to hold when they will be stored one at a time
    /// (the pages of a relist): a compact store that has no dictionary yet trains it from them
    /// (if there are at least 16); the default store does nothing.
    pub fn prepare<'a>(&self, objects: impl Iterator<Item = &'a Arc<K>>)
    where
        K: 'a,
    {
        with_core!(self, core => core.prepare(objects.map(|obj| &**obj)));
    }

    /// The objects sharing at least one value with `obj` in the index `name`.
    pub fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, StoreError> {
        match &self.repr {
            Repr::Shared(core) => core.index(name, obj, |_, held| Arc::clone(held)),
            #[cfg(feature = "compact")]
            Repr::Compact(core) => decode_all(core, core.index(name, obj, pair)?),
        }
    }

    /// The keys of the objects with `value` in the index `name`, sorted.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError> {
        with_core!(self, core => core.index_keys(name, value))
    }

    /// The objects with `value` in the index `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        match &self.repr {
            Repr::Shared(core) => core.by_index(name, value, |_, held| Arc::clone(held)),
            #[cfg(feature = "compact")]
            Repr::Compact(core) => decode_all(core, core.by_index(name, value, pair)?),
        }
    }

    /// The distinct values present in the index `name` (empty for an unknown index).
    pub fn list_index_func_values(&self, name: &str) -> Vec<String> {
        with_core!(self, core => core.list_index_func_values(name))
    }

    /// The index functions by name.
    pub fn get_indexers(&self) -> Indexers<K> {
        with_core!(self, core => core.get_indexers())
    }

    /// Adds index functions, indexing the objects already stored for the new indexes only.
    /// A name that already exists rejects the whole call; so does a failing index function.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), StoreError> {
        with_core!(self, core => core.add_indexers(indexers))
    }
}

/// A key with what is held under it.
#[cfg(feature = "compact")]
fn pair<T: Clone>(key: &ObjectKey, held: &T) -> (ObjectKey, T) {
    (Arc::clone(key), held.clone())
}

/// Every key with what is held under it, taken under the read lock.
#[cfg(feature = "compact")]
fn held_pairs<K, H: Holding<K>>(core: &Core<K, H>) -> Vec<(ObjectKey, H::Held)> {
    let inner = core.inner.read();
    inner.items.iter().map(|(k, h)| pair(k, h)).collect()
}

/// The objects back from what is held, with the lock released: all of them, or the first that
/// could not be decoded.
#[cfg(feature = "compact")]
fn decode_all<K, H: Holding<K>>(
    core: &Core<K, H>,
    held: Vec<(ObjectKey, H::Held)>,
) -> Result<Vec<Arc<K>>, StoreError> {
    held.into_iter()
        .map(|(key, held)| core.object(&key, held))
        .collect()
}
