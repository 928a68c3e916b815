//! [`RealFifo`]: the in-order queue, every event its own delta.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use ahash::RandomState;
use kcache_store::{
    DeletedFinalStateUnknown, KeyFunc, KnownObjects, MaybeTombstone, ObjectKey, Store, StoreError,
    Transaction, TransactionType, TransformFunc,
};
use kube_core::Resource;
use parking_lot::Mutex;
use smallvec::SmallVec;
use tokio::sync::Notify;

use crate::delta::{Delta, DeltaType, Deltas};
use crate::delta_fifo::{key_of_deltas, key_of_payload, transform};
use crate::error::{PopError, ProcessError, settle};
use crate::queue::{Population, Queue, run_logged, run_transaction, wait_for};

/// The default maximum number of deltas handed to one [`RealFifo::pop_batch`].
pub const DEFAULT_BATCH_SIZE: usize = 1000;

/// How a [`RealFifo`] is built (client-go's `RealFIFOOptions`).
pub struct RealFifoOptions<K> {
    /// Computes an object's key. Default: `namespace/name`.
    pub key_func: KeyFunc<K>,
    /// The objects downstream of the queue, used by replace (deletion detection) and resync when
    /// not in atomic mode. Without it, replace detects deletions among queued keys only and resync
    /// does nothing.
    pub known_objects: Option<Arc<dyn KnownObjects<K>>>,
    /// Run on every object once as it is queued (not on tombstones nor on resync).
    pub transformer: Option<TransformFunc<K>>,
    /// Atomic mode: replace queues one [`Delta::ReplacedAll`], resync one [`Delta::SyncAll`] and
    /// bookmarks a [`Delta::Bookmark`]; the consumer computes deletions against its own state.
    /// Known objects are not used in this mode.
    pub atomic_events: bool,
    /// The maximum number of deltas handed to one [`RealFifo::pop_batch`] (default
    /// [`DEFAULT_BATCH_SIZE`]; 0 counts as 1).
    pub batch_size: usize,
}

impl<K: Resource + 'static> Default for RealFifoOptions<K> {
    fn default() -> Self {
        Self {
            key_func: kcache_store::meta_namespace_key_func(),
            known_objects: None,
            transformer: None,
            atomic_events: false,
            batch_size: DEFAULT_BATCH_SIZE,
        }
    }
}

impl<K> RealFifoOptions<K> {
    /// Sets the known objects.
    #[must_use]
    pub fn known_objects(mut self, known: Arc<dyn KnownObjects<K>>) -> Self {
        self.known_objects = Some(known);
        self
    }

    /// Sets the transformer.
    #[must_use]
    pub fn transformer(mut self, transformer: TransformFunc<K>) -> Self {
        self.transformer = Some(transformer);
        self
    }

    /// Sets atomic mode.
    #[must_use]
    pub fn atomic_events(mut self, atomic: bool) -> Self {
        self.atomic_events = atomic;
        self
    }

    /// Sets the maximum batch size.
    #[must_use]
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size;
        self
    }

    /// Sets the key function.
    #[must_use]
    pub fn key_func(mut self, key_func: KeyFunc<K>) -> Self {
        self.key_func = key_func;
        self
    }
}

impl<K> fmt::Debug for RealFifoOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealFifoOptions")
            .field("known_objects", &self.known_objects.is_some())
            .field("transformer", &self.transformer.is_some())
            .field("atomic_events", &self.atomic_events)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

/// A queued delta with its key (`None` for the atomic deltas).
struct Entry<K> {
    key: Option<ObjectKey>,
    delta: Delta<K>,
}

/// Deltas taken from the queue for one pop, with their keys (kept for a requeue).
struct Taken<K> {
    keys: SmallVec<[Option<ObjectKey>; 2]>,
    deltas: Deltas<K>,
}

struct RealState<K> {
    items: VecDeque<Entry<K>>,
    population: Population,
    closed: bool,
    resource_version: String,
}

/// The in-order queue (client-go's `RealFIFO`, the default of "in-order informers"): every
/// event is its own delta, popped in arrival order, nothing is coalesced, and a delete is always
/// queued.
///
/// Replace queues a tombstone deletion for each queued or known key missing from the list, then a
/// [`DeltaType::Replaced`] for each listed object. In [atomic mode](RealFifoOptions::atomic_events)
/// replace and resync are one delta each. [`pop_batch`](RealFifo::pop_batch) hands out several
/// deltas of distinct keys at once.
///
/// ```
/// # use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kcache_deltafifo::{DeltaType, ProcessError, RealFifo, RealFifoOptions};
/// use kcache_store::Store;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let fifo = RealFifo::<ConfigMap>::new(RealFifoOptions::default());
/// for name in ["a", "b", "a"] {
///     let mut cm = ConfigMap::default();
///     cm.metadata.name = Some(name.into());
///     fifo.update(Arc::new(cm)).unwrap();
/// }
/// // "a" appears twice in the batch's input, so the batch stops before its second delta.
/// let n = fifo.pop_batch(|deltas, _| Ok::<_, ProcessError<()>>(deltas.len())).await.unwrap();
/// assert_eq!(n, 2);
/// # }
/// ```
pub struct RealFifo<K> {
    state: Mutex<RealState<K>>,
    notify: Notify,
    key_func: KeyFunc<K>,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
    transformer: Option<TransformFunc<K>>,
    atomic_events: bool,
    batch_size: usize,
}

impl<K> fmt::Debug for RealFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RealFifo");
        match self.state.try_lock() {
            Some(s) => d
                .field("queued", &s.items.len())
                .field("population", &s.population)
                .field("closed", &s.closed),
            // Printed from inside a process function: the lock is held.
            None => d.field("state", &"<locked>"),
        };
        d.field("atomic_events", &self.atomic_events)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

fn batchable(kind: DeltaType) -> bool {
    matches!(
        kind,
        DeltaType::Added
            | DeltaType::Updated
            | DeltaType::Deleted
            | DeltaType::Replaced
            | DeltaType::Sync
    )
}

impl<K: Send + Sync> RealFifo<K> {
    /// An in-order FIFO with `options`.
    pub fn new(options: RealFifoOptions<K>) -> Self {
        Self {
            state: Mutex::new(RealState {
                items: VecDeque::new(),
                population: Population::default(),
                closed: false,
                resource_version: String::new(),
            }),
            notify: Notify::new(),
            key_func: options.key_func,
            known_objects: if options.atomic_events {
                None
            } else {
                options.known_objects
            },
            transformer: options.transformer,
            atomic_events: options.atomic_events,
            batch_size: options.batch_size.max(1),
        }
    }

    /// The key of an object or tombstone (a tombstone's own key).
    pub fn key_of(&self, obj: &MaybeTombstone<K>) -> Result<String, StoreError> {
        key_of_payload(&self.key_func, obj)
    }

    /// The key of popped deltas: the key of the newest delta's object. The atomic deltas have
    /// no key.
    pub fn key_of_deltas(&self, deltas: &Deltas<K>) -> Result<String, StoreError> {
        key_of_deltas(&self.key_func, deltas)
    }

    /// The number of queued deltas.
    pub fn len(&self) -> usize {
        self.state.lock().items.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the queue runs in atomic mode.
    pub fn is_atomic(&self) -> bool {
        self.atomic_events
    }

    /// The maximum number of deltas in one batch.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    fn push_locked(&self, s: &mut RealState<K>, key: Option<ObjectKey>, delta: Delta<K>) {
        s.items.push_back(Entry { key, delta });
        self.notify.notify_one();
    }

    fn push_object_locked(
        &self,
        s: &mut RealState<K>,
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
        self.push_locked(s, Some(key), Delta::with_payload(kind, object));
        Ok(())
    }

    fn apply_locked(
        &self,
        s: &mut RealState<K>,
        kind: TransactionType,
        obj: Arc<K>,
    ) -> Result<(), StoreError> {
        let key: ObjectKey = (self.key_func)(&obj)?.into();
        s.population.touch();
        let kind = match kind {
            TransactionType::Added => DeltaType::Added,
            TransactionType::Updated => DeltaType::Updated,
            TransactionType::Deleted => DeltaType::Deleted,
        };
        self.push_object_locked(s, key, kind, MaybeTombstone::Object(obj), true)
    }

    fn apply(&self, kind: TransactionType, obj: Arc<K>) -> Result<(), StoreError> {
        self.apply_locked(&mut self.state.lock(), kind, obj)
    }

    fn replace_locked(
        &self,
        s: &mut RealState<K>,
        keyed: Vec<(ObjectKey, Arc<K>)>,
    ) -> Result<(), StoreError> {
        let listed: HashSet<&ObjectKey, RandomState> = keyed.iter().map(|(k, _)| k).collect();
        // The newest queued delta of each queued key, in order of first appearance.
        let mut last: ahash::HashMap<ObjectKey, usize> = ahash::HashMap::default();
        let mut order = Vec::new();
        for (i, entry) in s.items.iter().enumerate() {
            if let Some(key) = &entry.key
                && last.insert(Arc::clone(key), i).is_none()
            {
                order.push(Arc::clone(key));
            }
        }
        let mut tombstones = Vec::new();
        for key in &order {
            if listed.contains(key) {
                continue;
            }
            let Some(entry) = last.get(key).and_then(|&i| s.items.get(i)) else {
                continue;
            };
            if entry.delta.kind() == DeltaType::Deleted {
                continue;
            }
            if let Some(obj) = entry.delta.object() {
                tombstones.push((Arc::clone(key), Arc::clone(obj.object())));
            }
        }
        if let Some(known) = &self.known_objects {
            for key in known.list_keys() {
                if listed.contains(&key) || last.contains_key(&key) {
                    continue;
                }
                match known.get_by_key(&key) {
                    Some(obj) => tombstones.push((key, obj)),
                    None => {
                        tracing::warn!(key = %key, "known key vanished during replace; no tombstone queued");
                    }
                }
            }
        }
        drop(listed);
        s.items.reserve(tombstones.len() + keyed.len());
        for (key, obj) in tombstones {
            let tombstone = DeletedFinalStateUnknown {
                key: key.to_string(),
                obj,
            };
            self.push_locked(
                s,
                Some(key),
                Delta::with_payload(DeltaType::Deleted, MaybeTombstone::Tombstone(tombstone)),
            );
        }
        for (key, obj) in keyed {
            self.push_object_locked(
                s,
                key,
                DeltaType::Replaced,
                MaybeTombstone::Object(obj),
                true,
            )?;
        }
        Ok(())
    }

    /// How many of the next deltas to hand out: one, or with `batch` up to the batch size of
    /// distinct keys, never crossing the end of the initial population. At least one.
    fn batch_len_locked(&self, s: &RealState<K>, batch: bool) -> usize {
        if !batch {
            return 1;
        }
        let remaining_initial = s.population.remaining();
        let mut seen: HashSet<&ObjectKey, RandomState> = HashSet::default();
        let mut n = 0;
        for entry in s.items.iter().take(self.batch_size) {
            if remaining_initial > 0 && n >= remaining_initial {
                break;
            }
            if !batchable(entry.delta.kind()) {
                break;
            }
            match &entry.key {
                Some(key) if seen.insert(key) => n += 1,
                _ => break,
            }
        }
        n.max(1)
    }

    /// Puts popped deltas back at the front, except those whose key has a newer delta queued.
    fn requeue_locked(&self, s: &mut RealState<K>, taken: Taken<K>) {
        let queued: HashSet<ObjectKey, RandomState> =
            s.items.iter().filter_map(|e| e.key.clone()).collect();
        let entries: Vec<Entry<K>> = taken
            .keys
            .into_iter()
            .zip(taken.deltas)
            .map(|(key, delta)| Entry { key, delta })
            .collect();
        for entry in entries.into_iter().rev() {
            if entry.key.as_ref().is_some_and(|k| queued.contains(k)) {
                continue;
            }
            s.items.push_front(entry);
        }
    }

    async fn pop_deltas<T, E>(
        &self,
        batch: bool,
        process: impl FnOnce(&Deltas<K>, bool) -> Result<T, ProcessError<E>> + Send,
    ) -> Result<T, PopError<E>>
    where
        T: Send,
        E: Send,
    {
        let mut process = Some(process);
        wait_for(&self.notify, move || {
            let mut s = self.state.lock();
            if s.items.is_empty() {
                return s.closed.then_some(Err(PopError::Closed));
            }
            let in_initial_list = !s.population.has_synced();
            let n = self.batch_len_locked(&s, batch).min(s.items.len());
            let mut taken = Taken {
                keys: SmallVec::new(),
                deltas: Deltas::empty(),
            };
            for entry in s.items.drain(..n) {
                taken.keys.push(entry.key);
                taken.deltas.push(entry.delta);
            }
            let depth = s.items.len();
            let process = process.take()?;
            let outcome = run_logged("RealFifo", depth, || {
                process(&taken.deltas, in_initial_list)
            });
            s.population.popped(n);
            let (result, requeue) = settle(outcome);
            if requeue {
                self.requeue_locked(&mut s, taken);
            }
            if !s.items.is_empty() {
                self.notify.notify_one();
            }
            Some(result)
        })
        .await
    }

    /// Waits for deltas, then removes up to the batch size of them, of distinct keys and never
    /// crossing the end of the initial population, and runs `process(&deltas, is_in_initial_list)`
    /// under the queue's lock. An atomic delta ([`Delta::ReplacedAll`], [`Delta::SyncAll`],
    /// [`Delta::Bookmark`]) is always handed out alone. A [`ProcessError::Requeue`] puts back the
    /// deltas whose key has nothing newer queued.
    pub async fn pop_batch<T, E, F>(&self, process: F) -> Result<T, PopError<E>>
    where
        F: FnOnce(&[Delta<K>], bool) -> Result<T, ProcessError<E>> + Send,
        T: Send,
        E: Send,
    {
        self.pop_deltas(true, |deltas, in_initial_list| {
            process(deltas, in_initial_list)
        })
        .await
    }
}

impl<K: Send + Sync> Store<K> for RealFifo<K> {
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

    /// The queued deltas grouped by key, keys in order of first appearance (atomic deltas are
    /// not listed).
    fn list(&self) -> Vec<Deltas<K>> {
        let s = self.state.lock();
        let mut index: ahash::HashMap<&ObjectKey, usize> = ahash::HashMap::default();
        let mut out: Vec<Deltas<K>> = Vec::new();
        for entry in &s.items {
            let Some(key) = &entry.key else { continue };
            match index.get(key) {
                Some(&i) => out[i].push(entry.delta.clone()),
                None => {
                    index.insert(key, out.len());
                    out.push(Deltas::one(entry.delta.clone()));
                }
            }
        }
        out
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        let s = self.state.lock();
        let mut seen: HashSet<&ObjectKey, RandomState> = HashSet::default();
        s.items
            .iter()
            .filter_map(|e| e.key.as_ref())
            .filter(|k| seen.insert(k))
            .cloned()
            .collect()
    }

    fn get(&self, obj: &K) -> Result<Option<Deltas<K>>, StoreError> {
        Ok(self.get_by_key(&(self.key_func)(obj)?))
    }

    fn get_by_key(&self, key: &str) -> Option<Deltas<K>> {
        let s = self.state.lock();
        let deltas: Deltas<K> = s
            .items
            .iter()
            .filter(|e| e.key.as_deref() == Some(key))
            .map(|e| e.delta.clone())
            .collect();
        (!deltas.is_empty()).then_some(deltas)
    }

    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        let mut s = self.state.lock();
        if self.atomic_events {
            let objects = items
                .into_iter()
                .map(|obj| transform(&self.transformer, obj))
                .collect::<Result<Arc<[Arc<K>]>, StoreError>>()?;
            let resource_version = resource_version.to_owned();
            self.push_locked(
                &mut s,
                None,
                Delta::ReplacedAll {
                    resource_version,
                    objects,
                },
            );
        } else {
            let keyed = items
                .into_iter()
                .map(|obj| Ok(((self.key_func)(&obj)?.into(), obj)))
                .collect::<Result<Vec<(ObjectKey, Arc<K>)>, StoreError>>()?;
            self.replace_locked(&mut s, keyed)?;
        }
        let queued = s.items.len();
        s.population.replaced(queued);
        resource_version.clone_into(&mut s.resource_version);
        Ok(())
    }

    fn resync(&self) -> Result<(), StoreError> {
        let mut s = self.state.lock();
        if self.atomic_events {
            self.push_locked(&mut s, None, Delta::SyncAll);
            return Ok(());
        }
        let Some(known) = &self.known_objects else {
            return Ok(());
        };
        let queued: HashSet<ObjectKey, RandomState> =
            s.items.iter().filter_map(|e| e.key.clone()).collect();
        for key in known.list_keys() {
            if queued.contains(&key) {
                continue;
            }
            let Some(obj) = known.get_by_key(&key) else {
                continue;
            };
            self.push_object_locked(
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

    /// Records the resource version; in atomic mode also queues a [`Delta::Bookmark`].
    fn bookmark(&self, resource_version: &str) {
        let mut s = self.state.lock();
        resource_version.clone_into(&mut s.resource_version);
        if self.atomic_events {
            let resource_version = resource_version.to_owned();
            self.push_locked(&mut s, None, Delta::Bookmark { resource_version });
        }
    }

    fn update_resource_version(&self, resource_version: &str) {
        resource_version.clone_into(&mut self.state.lock().resource_version);
    }

    fn transaction(&self, ops: Vec<Transaction<K>>) -> Result<(), StoreError> {
        let mut s = self.state.lock();
        run_transaction(ops, |kind, obj| self.apply_locked(&mut s, kind, obj))
    }
}

impl<K: Send + Sync> Queue<K> for RealFifo<K> {
    /// Pops the oldest delta alone (as one-element [`Deltas`]).
    fn pop<T, E, F>(&self, process: F) -> impl Future<Output = Result<T, PopError<E>>> + Send
    where
        F: FnOnce(&Deltas<K>, bool) -> Result<T, ProcessError<E>> + Send,
        T: Send,
        E: Send,
    {
        self.pop_deltas(false, process)
    }

    fn add_if_not_present(&self, deltas: Deltas<K>) -> Result<(), StoreError> {
        let key: ObjectKey = self.key_of_deltas(&deltas)?.into();
        let mut s = self.state.lock();
        s.population.touch();
        if s.items.iter().any(|e| e.key.as_ref() == Some(&key)) {
            return Ok(());
        }
        for delta in deltas {
            self.push_locked(&mut s, Some(Arc::clone(&key)), delta);
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
