//! [`ThreadSafeStore`]: objects by key under one read-write lock, with incrementally maintained indexes.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use ahash::{AHashMap, AHashSet};
use parking_lot::RwLock;
use smallvec::SmallVec;

use crate::error::{StoreError, panic_message};
use crate::index::{IndexFunc, IndexValues, Indexers};
use crate::key::ObjectKey;

/// One index: index value → keys of the objects that have it.
type Index = AHashMap<String, AHashSet<ObjectKey>>;

/// The values an object has in each index, in the order of [`Inner::indexes`].
type AllValues = SmallVec<[IndexValues; 4]>;

/// An index function with its name and its current content.
struct NamedIndex<K> {
    name: String,
    func: IndexFunc<K>,
    index: Index,
}

struct Inner<K> {
    items: AHashMap<ObjectKey, Arc<K>>,
    indexes: Vec<NamedIndex<K>>,
}

/// A thread-safe map from key to `Arc<K>` with indexes (client-go's `ThreadSafeStore`).
///
/// Readers share a read lock; every write takes the write lock once. Indexes are updated
/// incrementally: an object whose single index value is unchanged costs no index work, and an
/// index value left with no keys is removed. Index functions run before anything is changed, so a
/// failing one leaves the store and every index as they were.
pub struct ThreadSafeStore<K> {
    inner: RwLock<Inner<K>>,
}

impl<K> fmt::Debug for ThreadSafeStore<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.read();
        f.debug_struct("ThreadSafeStore")
            .field("items", &inner.items.len())
            .field(
                "indexes",
                &inner.indexes.iter().map(|i| &i.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl<K> Default for ThreadSafeStore<K> {
    fn default() -> Self {
        Self::new(Indexers::default())
    }
}

fn index_error(key: &str, index: &str, source: crate::error::BoxError) -> StoreError {
    StoreError::IndexFunc {
        key: key.to_owned(),
        index: index.to_owned(),
        source,
    }
}

impl<K> Inner<K> {
    /// The values of `obj` in every index, or the first index function error. Index functions
    /// are user code and this is the one place they are called: a panicking one fails like an
    /// erring one (client-go panics on either), so the store and its lock stay usable.
    fn values_of(&self, key: &str, obj: &K) -> Result<AllValues, StoreError> {
        self.indexes
            .iter()
            .map(|i| {
                catch_unwind(AssertUnwindSafe(|| (i.func)(obj)))
                    .unwrap_or_else(|payload| Err(panic_message(&*payload).into()))
                    .map_err(|e| index_error(key, &i.name, e))
            })
            .collect()
    }

    fn find(&self, name: &str) -> Result<&NamedIndex<K>, StoreError> {
        self.indexes
            .iter()
            .find(|i| i.name == name)
            .ok_or_else(|| StoreError::UnknownIndex(name.to_owned()))
    }

    /// Stores `obj` under `key` and updates every index; nothing changes on error. Returns the
    /// object it replaced.
    fn put(&mut self, key: &str, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        self.put_with(key, || ObjectKey::from(key), obj)
    }

    /// [`put`](Self::put) where a new key is stored as `new_key` makes it.
    fn put_with(
        &mut self,
        key: &str,
        new_key: impl FnOnce() -> ObjectKey,
        obj: Arc<K>,
    ) -> Result<Option<Arc<K>>, StoreError> {
        let new_values = self.values_of(key, &obj)?;
        let (key, old) = match self.items.get_key_value(key) {
            Some((k, old)) => (Arc::clone(k), Some(Arc::clone(old))),
            None => (new_key(), None),
        };
        // An old object whose index function now fails is removed from its index by a scan.
        let old_values = old.as_ref().map(|o| self.values_of(&key, o));
        self.items.insert(Arc::clone(&key), obj);
        for (i, (named, new)) in self.indexes.iter_mut().zip(new_values).enumerate() {
            match &old_values {
                Some(Ok(old)) => {
                    let old = &old[i];
                    if old.len() == 1 && new.len() == 1 && old[0] == new[0] {
                        continue;
                    }
                    remove_from_index(&mut named.index, &key, old);
                }
                Some(Err(_)) => remove_everywhere(&mut named.index, &key),
                None => {}
            }
            add_to_index(&mut named.index, &key, new);
        }
        Ok(old)
    }

    /// Removes the object under `key` from the map and every index.
    fn remove(&mut self, key: &str) -> Option<Arc<K>> {
        let (key, old) = self.items.remove_entry(key)?;
        match self.values_of(&key, &old) {
            Ok(values) => {
                for (named, old) in self.indexes.iter_mut().zip(values.iter()) {
                    remove_from_index(&mut named.index, &key, old);
                }
            }
            Err(_) => self
                .indexes
                .iter_mut()
                .for_each(|n| remove_everywhere(&mut n.index, &key)),
        }
        Some(old)
    }
}

fn add_to_index(index: &mut Index, key: &ObjectKey, values: IndexValues) {
    for value in values {
        index.entry(value).or_default().insert(Arc::clone(key));
    }
}

fn remove_from_index(index: &mut Index, key: &str, values: &IndexValues) {
    for value in values {
        if let Some(set) = index.get_mut(value.as_str()) {
            set.remove(key);
            if set.is_empty() {
                index.remove(value.as_str());
            }
        }
    }
}

fn remove_everywhere(index: &mut Index, key: &str) {
    index.retain(|_, set| {
        set.remove(key);
        !set.is_empty()
    });
}

/// Builds one index over `items` from scratch.
fn build_index<K>(
    items: &AHashMap<ObjectKey, Arc<K>>,
    name: &str,
    func: &IndexFunc<K>,
) -> Result<Index, StoreError> {
    let mut index = Index::default();
    for (key, obj) in items {
        let values = func(obj).map_err(|e| index_error(key, name, e))?;
        add_to_index(&mut index, key, values);
    }
    Ok(index)
}

impl<K> ThreadSafeStore<K> {
    /// An empty store with the given index functions.
    pub fn new(indexers: Indexers<K>) -> Self {
        let indexes = indexers
            .into_iter()
            .map(|(name, func)| NamedIndex {
                name,
                func,
                index: Index::default(),
            })
            .collect();
        Self {
            inner: RwLock::new(Inner {
                items: AHashMap::default(),
                indexes,
            }),
        }
    }

    /// Stores `obj` under `key` (add and update are the same operation).
    pub fn add(&self, key: &str, obj: Arc<K>) -> Result<(), StoreError> {
        self.upsert(key, obj).map(drop)
    }

    /// Stores `obj` under `key` and returns the object it replaced, if any.
    pub fn upsert(&self, key: &str, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        self.inner.write().put(key, obj)
    }

    /// [`upsert`](Self::upsert) under a key already shared as an [`ObjectKey`] (computed by a
    /// queue): a new key is stored as that `Arc`, without a copy.
    pub fn upsert_key(&self, key: &ObjectKey, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        self.inner.write().put_with(key, || Arc::clone(key), obj)
    }

    /// Stores `obj` under `key`, replacing what was there.
    pub fn update(&self, key: &str, obj: Arc<K>) -> Result<(), StoreError> {
        self.add(key, obj)
    }

    /// Removes the object under `key` and returns it.
    pub fn delete(&self, key: &str) -> Option<Arc<K>> {
        self.inner.write().remove(key)
    }

    /// Applies writes (`Some(obj)` stores, `None` deletes) under one write lock, in order.
    /// Returns one result per write; a failed write leaves the store as it was before it.
    pub fn write_batch<'a>(
        &self,
        writes: impl IntoIterator<Item = (&'a str, Option<Arc<K>>)>,
    ) -> Vec<Result<(), StoreError>> {
        let mut inner = self.inner.write();
        writes
            .into_iter()
            .map(|(key, obj)| match obj {
                Some(obj) => inner.put(key, obj).map(drop),
                None => {
                    inner.remove(key);
                    Ok(())
                }
            })
            .collect()
    }

    /// The object under `key`.
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.inner.read().items.get(key).cloned()
    }

    /// Every object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.inner.read().items.values().cloned().collect()
    }

    /// Every key, in no particular order.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.inner.read().items.keys().cloned().collect()
    }

    /// Whether an object is stored under `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.inner.read().items.contains_key(key)
    }

    /// The number of objects.
    pub fn len(&self) -> usize {
        self.inner.read().items.len()
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
        let items: AHashMap<ObjectKey, Arc<K>> = items
            .into_iter()
            .map(|(k, v)| (ObjectKey::from(k), v))
            .collect();
        // Build the new indexes outside the write lock: readers go on meanwhile.
        let funcs: Vec<(String, IndexFunc<K>)> = {
            let inner = self.inner.read();
            inner
                .indexes
                .iter()
                .map(|i| (i.name.clone(), Arc::clone(&i.func)))
                .collect()
        };
        let mut indexes = Vec::with_capacity(funcs.len());
        for (name, func) in funcs {
            let index = build_index(&items, &name, &func)?;
            indexes.push(NamedIndex { name, func, index });
        }
        let mut inner = self.inner.write();
        // add_indexers may have run meanwhile: index the new items for those too.
        for named in &inner.indexes {
            if !indexes.iter().any(|i| i.name == named.name) {
                let index = build_index(&items, &named.name, &named.func)?;
                indexes.push(NamedIndex {
                    name: named.name.clone(),
                    func: Arc::clone(&named.func),
                    index,
                });
            }
        }
        *inner = Inner { items, indexes };
        Ok(())
    }

    /// The objects sharing at least one value with `obj` in the index `name`.
    pub fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, StoreError> {
        let inner = self.inner.read();
        let named = inner.find(name)?;
        let values = (named.func)(obj).map_err(|e| index_error("", name, e))?;
        let keys: Vec<&ObjectKey> = match values.as_slice() {
            [single] => named
                .index
                .get(single.as_str())
                .into_iter()
                .flatten()
                .collect(),
            many => {
                let mut seen = AHashSet::new();
                many.iter()
                    .filter_map(|v| named.index.get(v.as_str()))
                    .flatten()
                    .filter(|k| seen.insert(Arc::clone(k)))
                    .collect()
            }
        };
        Ok(keys
            .into_iter()
            .filter_map(|k| inner.items.get(k).cloned())
            .collect())
    }

    /// The keys of the objects with `value` in the index `name`, sorted.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError> {
        let inner = self.inner.read();
        let mut keys: Vec<ObjectKey> = inner
            .find(name)?
            .index
            .get(value)
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        keys.sort_unstable();
        Ok(keys)
    }

    /// The objects with `value` in the index `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        let inner = self.inner.read();
        let set = inner.find(name)?.index.get(value);
        Ok(set
            .into_iter()
            .flatten()
            .filter_map(|k| inner.items.get(k).cloned())
            .collect())
    }

    /// The distinct values present in the index `name` (empty for an unknown index).
    pub fn list_index_func_values(&self, name: &str) -> Vec<String> {
        let inner = self.inner.read();
        inner
            .find(name)
            .map(|n| n.index.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The index functions by name.
    pub fn get_indexers(&self) -> Indexers<K> {
        let inner = self.inner.read();
        inner
            .indexes
            .iter()
            .map(|i| (i.name.clone(), Arc::clone(&i.func)))
            .collect()
    }

    /// Adds index functions, indexing the objects already stored for the new indexes only.
    /// A name that already exists rejects the whole call; so does a failing index function.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), StoreError> {
        let mut inner = self.inner.write();
        let mut conflicts: Vec<String> = indexers
            .keys()
            .filter(|name| inner.indexes.iter().any(|i| &i.name == *name))
            .cloned()
            .collect();
        if !conflicts.is_empty() {
            conflicts.sort();
            return Err(StoreError::IndexerConflict(conflicts));
        }
        let mut added = Vec::with_capacity(indexers.len());
        for (name, func) in indexers {
            let index = build_index(&inner.items, &name, &func)?;
            added.push(NamedIndex { name, func, index });
        }
        inner.indexes.extend(added);
        Ok(())
    }
}
