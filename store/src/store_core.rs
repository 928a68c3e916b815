//! [`Core`]: the keyed map and its indexes under one read-write lock, generic over how objects are
//! held ([`Holding`]); the [`ThreadSafeStore`](crate::ThreadSafeStore) is one of these.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use ahash::{AHashMap, AHashSet};
use parking_lot::RwLock;
use smallvec::SmallVec;

use crate::error::{BoxError, StoreError, panic_message};
use crate::holding::Holding;
use crate::index::{IndexFunc, IndexValues, Indexers};
use crate::key::ObjectKey;

/// One index: index value → keys of the objects that have it.
type Index = AHashMap<String, AHashSet<ObjectKey>>;

/// The values an object has in each index, in the order of [`Inner::indexes`].
type AllValues = SmallVec<[IndexValues; 4]>;

/// An index function with its name and its current content.
pub(crate) struct NamedIndex<K> {
    pub(crate) name: String,
    func: IndexFunc<K>,
    index: Index,
}

pub(crate) struct Inner<K, T> {
    pub(crate) items: AHashMap<ObjectKey, T>,
    pub(crate) indexes: Vec<NamedIndex<K>>,
}

/// The objects (as `H` holds them) and their indexes under one lock.
pub(crate) struct Core<K, H: Holding<K>> {
    pub(crate) holding: H,
    pub(crate) inner: RwLock<Inner<K, H::Held>>,
}

fn index_error(key: &str, index: &str, source: BoxError) -> StoreError {
    StoreError::IndexFunc {
        key: key.to_owned(),
        index: index.to_owned(),
        source,
    }
}

fn encode_error(key: &str, source: BoxError) -> StoreError {
    StoreError::Encode {
        key: key.to_owned(),
        source,
    }
}

/// The error of an object that could not be decoded from what the store holds under `key`.
pub(crate) fn decode_error(key: &str, source: BoxError) -> StoreError {
    StoreError::Decode {
        key: key.to_owned(),
        source,
    }
}

impl<K, T> Inner<K, T> {
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

    pub(crate) fn find(&self, name: &str) -> Result<&NamedIndex<K>, StoreError> {
        self.indexes
            .iter()
            .find(|i| i.name == name)
            .ok_or_else(|| StoreError::UnknownIndex(name.to_owned()))
    }

    /// The keys sharing a value with `values` in the index `name`, each once.
    fn keys_sharing(
        &self,
        name: &str,
        values: &IndexValues,
    ) -> Result<Vec<&ObjectKey>, StoreError> {
        let named = self.find(name)?;
        Ok(match values.as_slice() {
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
        })
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

/// Builds one index over `objects` from scratch.
fn build_index<'a, K: 'a>(
    objects: impl IntoIterator<Item = (&'a ObjectKey, &'a K)>,
    name: &str,
    func: &IndexFunc<K>,
) -> Result<Index, StoreError> {
    let mut index = Index::default();
    for (key, obj) in objects {
        let values = func(obj).map_err(|e| index_error(key, name, e))?;
        add_to_index(&mut index, key, values);
    }
    Ok(index)
}

/// One write of a batch, prepared outside the lock: the object and what is held for it, or a
/// deletion.
pub(crate) type PreparedWrite<K, T> = Option<Result<(Arc<K>, T), StoreError>>;

impl<K, H: Holding<K>> Core<K, H> {
    /// An empty core with the given index functions.
    pub(crate) fn new(holding: H, indexers: Indexers<K>) -> Self {
        let indexes = indexers
            .into_iter()
            .map(|(name, func)| NamedIndex {
                name,
                func,
                index: Index::default(),
            })
            .collect();
        Self {
            holding,
            inner: RwLock::new(Inner {
                items: AHashMap::default(),
                indexes,
            }),
        }
    }

    /// What to hold for `obj`, stored under `key`.
    fn hold(&self, key: &str, obj: &Arc<K>) -> Result<H::Held, StoreError> {
        self.holding.hold(obj).map_err(|e| encode_error(key, e))
    }

    /// The object held under `key`.
    pub(crate) fn object(&self, key: &str, held: H::Held) -> Result<Arc<K>, StoreError> {
        self.holding.object(held).map_err(|e| decode_error(key, e))
    }

    /// Stores `obj` under `key` (a new key stored as `new_key` makes it) and updates every
    /// index; nothing changes on error. Returns the object it replaced.
    pub(crate) fn upsert(
        &self,
        key: &str,
        new_key: impl FnOnce() -> ObjectKey,
        obj: Arc<K>,
    ) -> Result<Option<Arc<K>>, StoreError> {
        let held = self.hold(key, &obj)?;
        let mut inner = self.inner.write();
        self.put(&mut inner, key, new_key, &obj, held)
    }

    fn put(
        &self,
        inner: &mut Inner<K, H::Held>,
        key: &str,
        new_key: impl FnOnce() -> ObjectKey,
        obj: &K,
        held: H::Held,
    ) -> Result<Option<Arc<K>>, StoreError> {
        let new_values = inner.values_of(key, obj)?;
        let (key, old) = match inner.items.get_key_value(key) {
            Some((k, old)) => (Arc::clone(k), Some(self.object(k, old.clone())?)),
            None => (new_key(), None),
        };
        // An old object whose index function now fails is removed from its index by a scan.
        let old_values = old.as_ref().map(|o| inner.values_of(&key, o));
        inner.items.insert(Arc::clone(&key), held);
        for (i, (named, new)) in inner.indexes.iter_mut().zip(new_values).enumerate() {
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

    /// Removes the object under `key` from the map and every index; the removed object, or why
    /// it could not be decoded (it is removed all the same).
    pub(crate) fn remove(&self, key: &str) -> Option<Result<Arc<K>, StoreError>> {
        let mut inner = self.inner.write();
        Self::remove_locked(&self.holding, &mut inner, key)
    }

    fn remove_locked(
        holding: &H,
        inner: &mut Inner<K, H::Held>,
        key: &str,
    ) -> Option<Result<Arc<K>, StoreError>> {
        let (key, held) = inner.items.remove_entry(key)?;
        let old = holding.object(held).map_err(|e| decode_error(&key, e));
        match old.as_ref().map(|o| inner.values_of(&key, o)) {
            Ok(Ok(values)) => {
                for (named, old) in inner.indexes.iter_mut().zip(values.iter()) {
                    remove_from_index(&mut named.index, &key, old);
                }
            }
            _ => inner
                .indexes
                .iter_mut()
                .for_each(|n| remove_everywhere(&mut n.index, &key)),
        }
        Some(old)
    }

    /// Prepares a batch of writes (`Some(obj)` stores, `None` deletes) outside the lock.
    pub(crate) fn prepare_writes<'a>(
        &self,
        writes: impl IntoIterator<Item = (&'a str, Option<Arc<K>>)>,
    ) -> Vec<(&'a str, PreparedWrite<K, H::Held>)> {
        writes
            .into_iter()
            .map(|(key, obj)| {
                let prepared = obj.map(|obj| self.hold(key, &obj).map(|held| (obj, held)));
                (key, prepared)
            })
            .collect()
    }

    /// Applies prepared writes under one write lock, in order; one result per write.
    pub(crate) fn write_batch(
        &self,
        writes: Vec<(&str, PreparedWrite<K, H::Held>)>,
    ) -> Vec<Result<(), StoreError>> {
        let mut inner = self.inner.write();
        writes
            .into_iter()
            .map(|(key, write)| match write {
                Some(Ok((obj, held))) => self
                    .put(&mut inner, key, || ObjectKey::from(key), &obj, held)
                    .map(drop),
                Some(Err(e)) => Err(e),
                None => {
                    Self::remove_locked(&self.holding, &mut inner, key);
                    Ok(())
                }
            })
            .collect()
    }

    /// What is held under `key`.
    pub(crate) fn held(&self, key: &str) -> Option<H::Held> {
        self.inner.read().items.get(key).cloned()
    }

    /// Tells the holding which objects are about to be stored (see [`Holding::prepare`]).
    pub(crate) fn prepare<'a>(&self, objects: impl Iterator<Item = &'a K>)
    where
        K: 'a,
    {
        self.holding.prepare(objects);
    }

    /// Every key.
    pub(crate) fn list_keys(&self) -> Vec<ObjectKey> {
        self.inner.read().items.keys().cloned().collect()
    }

    /// Replaces every object with `items` (later duplicates of a key win) and rebuilds every
    /// index. Nothing changes if an index function fails.
    pub(crate) fn replace(&self, items: Vec<(String, Arc<K>)>) -> Result<(), StoreError> {
        self.holding.prepare(items.iter().map(|(_, obj)| &**obj));
        let objects: AHashMap<ObjectKey, Arc<K>> = items
            .into_iter()
            .map(|(k, v)| (ObjectKey::from(k), v))
            .collect();
        // What is held and the new indexes (computed from the objects) are built outside the
        // write lock: readers go on meanwhile.
        let funcs: Vec<(String, IndexFunc<K>)> = {
            let inner = self.inner.read();
            inner
                .indexes
                .iter()
                .map(|i| (i.name.clone(), Arc::clone(&i.func)))
                .collect()
        };
        let mut items = AHashMap::with_capacity(objects.len());
        for (key, obj) in &objects {
            items.insert(Arc::clone(key), self.hold(key, obj)?);
        }
        let by_ref = || objects.iter().map(|(k, o)| (k, &**o));
        let mut indexes = Vec::with_capacity(funcs.len());
        for (name, func) in funcs {
            let index = build_index(by_ref(), &name, &func)?;
            indexes.push(NamedIndex { name, func, index });
        }
        let mut inner = self.inner.write();
        // add_indexers may have run meanwhile: index the new items for those too.
        for named in &inner.indexes {
            if !indexes.iter().any(|i| i.name == named.name) {
                let index = build_index(by_ref(), &named.name, &named.func)?;
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

    /// `take` of every object sharing at least one value with `obj` in the index `name`.
    pub(crate) fn index<T>(
        &self,
        name: &str,
        obj: &K,
        take: impl Fn(&ObjectKey, &H::Held) -> T,
    ) -> Result<Vec<T>, StoreError> {
        let inner = self.inner.read();
        let func = Arc::clone(&inner.find(name)?.func);
        let values = func(obj).map_err(|e| index_error("", name, e))?;
        Ok(inner
            .keys_sharing(name, &values)?
            .into_iter()
            .filter_map(|k| inner.items.get(k).map(|h| take(k, h)))
            .collect())
    }

    /// The keys of the objects with `value` in the index `name`, sorted.
    pub(crate) fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError> {
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

    /// `take` of every object with `value` in the index `name`.
    pub(crate) fn by_index<T>(
        &self,
        name: &str,
        value: &str,
        take: impl Fn(&ObjectKey, &H::Held) -> T,
    ) -> Result<Vec<T>, StoreError> {
        let inner = self.inner.read();
        let set = inner.find(name)?.index.get(value);
        Ok(set
            .into_iter()
            .flatten()
            .filter_map(|k| inner.items.get(k).map(|h| take(k, h)))
            .collect())
    }

    /// The distinct values present in the index `name` (empty for an unknown index).
    pub(crate) fn list_index_func_values(&self, name: &str) -> Vec<String> {
        let inner = self.inner.read();
        inner
            .find(name)
            .map(|n| n.index.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The index functions by name.
    pub(crate) fn get_indexers(&self) -> Indexers<K> {
        let inner = self.inner.read();
        inner
            .indexes
            .iter()
            .map(|i| (i.name.clone(), Arc::clone(&i.func)))
            .collect()
    }

    /// Adds index functions, indexing the objects already stored for the new indexes only.
    /// A name that already exists rejects the whole call; so does a failing index function or
    /// an object that cannot be decoded.
    pub(crate) fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), StoreError> {
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
        let objects = inner
            .items
            .iter()
            .map(|(k, h)| Ok((k, self.object(k, h.clone())?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let mut added = Vec::with_capacity(indexers.len());
        for (name, func) in indexers {
            let index = build_index(objects.iter().map(|(k, o)| (*k, &**o)), &name, &func)?;
            added.push(NamedIndex { name, func, index });
        }
        drop(objects);
        inner.indexes.extend(added);
        Ok(())
    }
}
