//! [`DeltaFifo`]: the queue between a reflector and an informer, keeping every change per key.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use ahash::RandomState;
use kcache_store::{
    DeletedFinalStateUnknown, KeyError, KeyFunc, KnownObjects, MaybeTombstone, ObjectKey, Store,
    StoreError, TransactionType, TransformFunc,
};
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::delta::{Delta, DeltaType, Deltas};
use crate::error::{PopError, ProcessError, settle};
use crate::queue::{Population, Queue, run_logged, run_transaction, wait_for};

/// How a [`DeltaFifo`] is built (client-go's `DeltaFIFOOptions`).
pub struct DeltaFifoOptions<K> {
    /// Computes an object's key. Default: `namespace/name`.
    pub key_func: KeyFunc<K>,
    /// The objects downstream of the queue (usually the informer's indexer, read-only): used to
    /// detect deletions on replace, to decide whether a delete is worth queueing, and by resync.
    pub known_objects: Option<Arc<dyn KnownObjects<K>>>,
    /// Emit [`DeltaType::Replaced`] for relisted objects instead of [`DeltaType::Sync`]
    /// (default false, for compatibility with client-go).
    pub emit_delta_type_replaced: bool,
    /// Run on every object once as it is queued (not on tombstones nor on resync).
    pub transformer: Option<TransformFunc<K>>,
}

impl<K: Resource + 'static> Default for DeltaFifoOptions<K> {
    fn default() -> Self {
        Self {
            key_func: kcache_store::meta_namespace_key_func(),
            known_objects: None,
            emit_delta_type_replaced: false,
            transformer: None,
        }
    }
}

impl<K> DeltaFifoOptions<K> {
    /// Sets the known objects.
    #[must_use]
    pub fn known_objects(mut self, known: Arc<dyn KnownObjects<K>>) -> Self {
        self.known_objects = Some(known);
        self
    }

    /// Sets whether relisted objects are emitted as [`DeltaType::Replaced`].
    #[must_use]
    pub fn emit_delta_type_replaced(mut self, emit: bool) -> Self {
        self.emit_delta_type_replaced = emit;
        self
    }

    /// Sets the transformer.
    #[must_use]
    pub fn transformer(mut self, transformer: TransformFunc<K>) -> Self {
        self.transformer = Some(transformer);
        self
    }

    /// Sets the key function.
    #[must_use]
    pub fn key_func(mut self, key_func: KeyFunc<K>) -> Self {
        self.key_func = key_func;
        self
    }
}

impl<K> fmt::Debug for DeltaFifoOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaFifoOptions")
            .field("known_objects", &self.known_objects.is_some())
            .field("emit_delta_type_replaced", &self.emit_delta_type_replaced)
            .field("transformer", &self.transformer.is_some())
            .finish_non_exhaustive()
    }
}

struct DeltaState<K> {
    items: HashMap<ObjectKey, Deltas<K>, RandomState>,
    queue: VecDeque<ObjectKey>,
    population: Population,
    closed: bool,
    resource_version: String,
}

/// A queue of changes per key (client-go's `DeltaFIFO`).
///
/// Each key holds its [`Deltas`] oldest first and keeps its place in the queue however many
/// changes arrive for it; [`pop`](Queue::pop) hands out all of a key's deltas at once, in the
/// order keys were first queued.
///
/// - add, update, delete queue [`DeltaType::Added`], [`Updated`](DeltaType::Updated),
///   [`Deleted`](DeltaType::Deleted); a delete of a key neither queued nor known is dropped; of
///   two consecutive deletions the older is kept unless it is a tombstone.
/// - replace queues `Sync` (or `Replaced`) for each listed object, then a `Deleted` carrying a
///   [`DeletedFinalStateUnknown`] for each queued key and each known key missing from the list.
/// - resync queues `Sync` for each known object whose key has nothing queued.
///
/// ```
/// # use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kcache_deltafifo::{DeltaFifo, DeltaFifoOptions, DeltaType, ProcessError, Queue};
/// use kcache_store::Store;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let fifo = DeltaFifo::<ConfigMap>::new(DeltaFifoOptions::default());
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("a".into());
/// let cm = Arc::new(cm);
/// fifo.add(cm.clone()).unwrap();
/// fifo.update(cm.clone()).unwrap();
/// let kinds = fifo.pop(|deltas, _| Ok::<_, ProcessError<()>>(deltas.kinds())).await.unwrap();
/// assert_eq!(kinds, [DeltaType::Added, DeltaType::Updated]);
/// # }
/// ```
pub struct DeltaFifo<K> {
    state: Mutex<DeltaState<K>>,
    notify: Notify,
    key_func: KeyFunc<K>,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
    emit_delta_type_replaced: bool,
    transformer: Option<TransformFunc<K>>,
}

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("DeltaFifo");
        match self.state.try_lock() {
            Some(s) => d
                .field("queued", &s.queue.len())
                .field("population", &s.population)
                .field("closed", &s.closed),
            // Printed from inside a process function: the lock is held.
            None => d.field("state", &"<locked>"),
        };
        d.field("known_objects", &self.known_objects.is_some())
            .field("emit_delta_type_replaced", &self.emit_delta_type_replaced)
            .field("transformer", &self.transformer.is_some())
            .finish()
    }
}

/// The key of an object or a tombstone.
pub(crate) fn key_of_payload<K>(
    key_func: &KeyFunc<K>,
    obj: &MaybeTombstone<K>,
) -> Result<String, StoreError> {
    match obj {
        MaybeTombstone::Tombstone(t) => Ok(t.key.clone()),
        MaybeTombstone::Object(o) => Ok(key_func(o)?),
    }
}

/// The key of a set of deltas: the key of the newest delta's object.
pub(crate) fn key_of_deltas<K>(
    key_func: &KeyFunc<K>,
    deltas: &Deltas<K>,
) -> Result<String, StoreError> {
    match deltas.newest().and_then(Delta::object) {
        Some(obj) => key_of_payload(key_func, obj),
        None => Err(KeyError::NoObject.into()),
    }
}

/// Runs the transformer unless there is none.
pub(crate) fn transform<K>(
    transformer: &Option<TransformFunc<K>>,
    obj: Arc<K>,
) -> Result<Arc<K>, StoreError> {
    match transformer {
        Some(t) => t(obj).map_err(StoreError::Transform),
        None => Ok(obj),
    }
}

impl<K: Send + Sync> DeltaFifo<K> {
    /// A delta FIFO with `options`.
    pub fn new(options: DeltaFifoOptions<K>) -> Self {
        Self {
            state: Mutex::new(DeltaState {
                items: HashMap::default(),
                queue: VecDeque::new(),
                population: Population::default(),
                closed: false,
                resource_version: String::new(),
            }),
            notify: Notify::new(),
            key_func: options.key_func,
            known_objects: options.known_objects,
            emit_delta_type_replaced: options.emit_delta_type_replaced,
            transformer: options.transformer,
        }
    }

    /// The key of an object or tombstone (a tombstone's own key).
    pub fn key_of(&self, obj: &MaybeTombstone<K>) -> Result<String, StoreError> {
        key_of_payload(&self.key_func, obj)
    }

    /// The key of popped deltas: the key of the newest delta's object.
    pub fn key_of_deltas(&self, deltas: &Deltas<K>) -> Result<String, StoreError> {
        key_of_deltas(&self.key_func, deltas)
    }

    /// The number of keys waiting to be popped.
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a delta to `key`'s deltas, queueing the key if it is new. `run_transformer` says
    /// whether the transformer may run (never for tombstones nor for resync).
    fn queue_locked(
        &self,
        s: &mut DeltaState<K>,
        key: ObjectKey,
        kind: DeltaType,
        object: MaybeTombstone<K>,
        run_transformer: bool,
    ) -> Result<(), StoreError> {
        let object = match object {
            MaybeTombstone::Object(o) if run_transformer => {
                MaybeTombstone::Object(transform(&self.transformer, o)?)
            }
            other => other,
        };
        let delta = Delta::with_payload(kind, object);
        match s.items.entry(key) {
            Entry::Occupied(mut queued) => {
                let deltas = queued.get_mut();
                deltas.push(delta);
                deltas.dedup_last_two();
            }
            Entry::Vacant(slot) => {
                s.queue.push_back(Arc::clone(slot.key()));
                slot.insert(Deltas::one(delta));
                self.notify.notify_one();
            }
        }
        Ok(())
    }

    fn apply_locked(
        &self,
        s: &mut DeltaState<K>,
        kind: TransactionType,
        obj: Arc<K>,
    ) -> Result<(), StoreError> {
        let key: ObjectKey = (self.key_func)(&obj)?.into();
        s.population.touch();
        let kind = match kind {
            TransactionType::Added => DeltaType::Added,
            TransactionType::Updated => DeltaType::Updated,
            TransactionType::Deleted => {
                let queued = s.items.contains_key(&key);
                let known = self
                    .known_objects
                    .as_ref()
                    .is_some_and(|k| k.get_by_key(&key).is_some());
                if !queued && !known {
                    return Ok(());
                }
                DeltaType::Deleted
            }
        };
        self.queue_locked(s, key, kind, MaybeTombstone::Object(obj), true)
    }

    fn apply(&self, kind: TransactionType, obj: Arc<K>) -> Result<(), StoreError> {
        self.apply_locked(&mut self.state.lock(), kind, obj)
    }

    fn tombstone_locked(
        &self,
        s: &mut DeltaState<K>,
        key: ObjectKey,
        obj: Arc<K>,
    ) -> Result<(), StoreError> {
        let tombstone = DeletedFinalStateUnknown {
            key: key.to_string(),
            obj,
        };
        self.queue_locked(
            s,
            key,
            DeltaType::Deleted,
            MaybeTombstone::Tombstone(tombstone),
            false,
        )
    }
}

impl<K: Send + Sync> Store<K> for DeltaFifo<K> {
    type Item = Deltas<K>;

    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.apply(TransactionType::Added, obj)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.apply(TransactionType::Updated, obj)
    }

    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.apply(TransactionType::Deleted, obj)
    }

    fn list(&self) -> Vec<Deltas<K>> {
        let s = self.state.lock();
        s.queue
            .iter()
            .filter_map(|k| s.items.get(k).cloned())
            .collect()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.state.lock().queue.iter().cloned().collect()
    }

    fn get(&self, obj: &K) -> Result<Option<Deltas<K>>, StoreError> {
        Ok(self.get_by_key(&(self.key_func)(obj)?))
    }

    fn get_by_key(&self, key: &str) -> Option<Deltas<K>> {
        self.state.lock().items.get(key).cloned()
    }

    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        let keyed = items
            .into_iter()
            .map(|obj| Ok(((self.key_func)(&obj)?.into(), obj)))
            .collect::<Result<Vec<(ObjectKey, Arc<K>)>, StoreError>>()?;
        let action = if self.emit_delta_type_replaced {
            DeltaType::Replaced
        } else {
            DeltaType::Sync
        };
        let mut s = self.state.lock();
        let s = &mut *s;
        s.items.reserve(keyed.len());
        s.queue.reserve(keyed.len());
        let mut listed: HashSet<ObjectKey, RandomState> =
            HashSet::with_capacity_and_hasher(keyed.len(), RandomState::new());
        for (key, obj) in keyed {
            listed.insert(Arc::clone(&key));
            // Relisted objects are transformed, even when emitted as Sync.
            self.queue_locked(s, key, action, MaybeTombstone::Object(obj), true)?;
        }

        // Queued keys missing from the list: a tombstone with the newest queued object.
        let mut deletions = 0;
        let missing_queued: Vec<(ObjectKey, Arc<K>)> = s
            .queue
            .iter()
            .filter(|k| !listed.contains(*k))
            .filter_map(|k| Some((Arc::clone(k), Arc::clone(s.items.get(k)?.newest_object()?))))
            .collect();
        for (key, obj) in missing_queued {
            deletions += 1;
            self.tombstone_locked(s, key, obj)?;
        }

        // Known keys missing from the list with nothing queued: a tombstone with the known object.
        if let Some(known) = &self.known_objects {
            for key in known.list_keys() {
                if listed.contains(&key) || s.items.get(&key).is_some_and(|d| !d.is_empty()) {
                    continue;
                }
                let Some(obj) = known.get_by_key(&key) else {
                    tracing::warn!(key = %key, "known key vanished during replace; no tombstone queued");
                    continue;
                };
                deletions += 1;
                self.tombstone_locked(s, key, obj)?;
            }
        }

        s.population.replaced(listed.len() + deletions);
        resource_version.clone_into(&mut s.resource_version);
        Ok(())
    }

    fn resync(&self) -> Result<(), StoreError> {
        let Some(known) = &self.known_objects else {
            return Ok(());
        };
        let mut s = self.state.lock();
        for key in known.list_keys() {
            let Some(obj) = known.get_by_key(&key) else {
                continue;
            };
            let key: ObjectKey = (self.key_func)(&obj)?.into();
            if s.items.get(&key).is_some_and(|d| !d.is_empty()) {
                continue;
            }
            self.queue_locked(
                &mut s,
                key,
                DeltaType::Sync,
                MaybeTombstone::Object(obj),
                false,
            )?;
        }
        Ok(())
    }

    fn last_store_sync_resource_version(&self) -> String {
        self.state.lock().resource_version.clone()
    }

    fn bookmark(&self, resource_version: &str) {
        resource_version.clone_into(&mut self.state.lock().resource_version);
    }

    fn update_resource_version(&self, resource_version: &str) {
        self.bookmark(resource_version);
    }

    fn transaction(&self, ops: Vec<kcache_store::Transaction<K>>) -> Result<(), StoreError> {
        let mut s = self.state.lock();
        run_transaction(ops, |kind, obj| self.apply_locked(&mut s, kind, obj))
    }
}

impl<K: Send + Sync> Queue<K> for DeltaFifo<K> {
    fn pop<T, E, F>(&self, process: F) -> impl Future<Output = Result<T, PopError<E>>> + Send
    where
        F: FnOnce(&Deltas<K>, bool) -> Result<T, ProcessError<E>> + Send,
        T: Send,
        E: Send,
    {
        let mut process = Some(process);
        wait_for(&self.notify, move || {
            let mut s = self.state.lock();
            loop {
                let Some(key) = s.queue.pop_front() else {
                    return s.closed.then_some(Err(PopError::Closed));
                };
                let in_initial_list = !s.population.has_synced();
                s.population.popped(1);
                let Some(deltas) = s.items.remove(&key) else {
                    continue;
                };
                let process = process.take()?;
                let depth = s.queue.len();
                let outcome = run_logged("DeltaFifo", depth, || process(&deltas, in_initial_list));
                let (result, requeue) = settle(outcome);
                if requeue && !s.items.contains_key(&key) {
                    s.items.insert(Arc::clone(&key), deltas);
                    s.queue.push_back(key);
                }
                if !s.queue.is_empty() {
                    self.notify.notify_one();
                }
                return Some(result);
            }
        })
    }

    fn add_if_not_present(&self, deltas: Deltas<K>) -> Result<(), StoreError> {
        let key: ObjectKey = self.key_of_deltas(&deltas)?.into();
        let mut s = self.state.lock();
        s.population.touch();
        if !s.items.contains_key(&key) {
            s.items.insert(Arc::clone(&key), deltas);
            s.queue.push_back(key);
            self.notify.notify_one();
        }
        Ok(())
    }

    fn has_synced(&self) -> bool {
        self.state.lock().population.has_synced()
    }

    fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_waiters();
    }

    fn is_closed(&self) -> bool {
        self.state.lock().closed
    }
}
