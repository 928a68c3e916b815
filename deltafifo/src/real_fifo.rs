//! [`RealFifo`]: the in-order queue, every event its own delta.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use ahash::RandomState;
use kcache_store::{KeyFunc, KnownObjects, MaybeTombstone, ObjectKey, StoreError, TransactionType};
use kube_core::Resource;
use smallvec::SmallVec;

use crate::batch::Batch;
use crate::delta::{Delta, DeltaType, Deltas};
use crate::delta_fifo::tombstone;
use crate::error::{PopError, ProcessError};
use crate::queue_core::{Pending, Policy, QueueCore, queue_impls};

/// The default maximum number of deltas handed to one [`RealFifo::pop_batch`].
pub const DEFAULT_BATCH_SIZE: usize = 1000;

/// How a [`RealFifo`] is built (client-go's `RealFIFOOptions`).
pub struct RealFifoOptions<K> {
    /// Computes an object's key. Default: `namespace/name`.
    key_func: KeyFunc<K>,
    /// The objects downstream of the queue, used by replace (deletion detection) and resync when
    /// not in atomic mode. Without it, replace detects deletions among queued keys only and resync
    /// does nothing.
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
    /// Atomic mode: replace queues one [`Delta::ReplacedAll`], resync one [`Delta::SyncAll`] and
    /// bookmarks a [`Delta::Bookmark`]; the consumer computes deletions against its own state.
    /// Known objects are not used in this mode.
    atomic_events: bool,
    /// The maximum number of deltas handed to one [`RealFifo::pop_batch`] (default
    /// [`DEFAULT_BATCH_SIZE`]; 0 counts as 1).
    batch_size: usize,
    /// Process a popped batch with the queue unlocked (client-go's `UnlockWhileProcessingFIFO`,
    /// beta and on in 1.36; default true): adds, updates and deletes are queued while the
    /// consumer applies a batch, so the reflector never waits for it; replace and resync wait
    /// until the batch is applied, since they read what the consumer holds. Per key, deltas are
    /// still handed out in arrival order and one batch at a time.
    unlock_while_processing: bool,
}

impl<K: Resource + 'static> Default for RealFifoOptions<K> {
    fn default() -> Self {
        Self::with_key_func(kcache_store::meta_namespace_key_func())
    }
}

impl<K> RealFifoOptions<K> {
    /// The defaults with `key_func` (for objects that are not Kubernetes resources).
    pub fn with_key_func(key_func: KeyFunc<K>) -> Self {
        Self {
            key_func,
            known_objects: None,
            atomic_events: false,
            batch_size: DEFAULT_BATCH_SIZE,
            unlock_while_processing: true,
        }
    }

    /// Sets the known objects.
    #[must_use]
    pub fn known_objects(mut self, known: Arc<dyn KnownObjects<K>>) -> Self {
        self.known_objects = Some(known);
        self
    }

    /// Sets atomic mode.
    #[must_use]
    pub fn atomic_events(mut self, atomic: bool) -> Self {
        self.atomic_events = atomic;
        self
    }

    /// Sets whether a batch is processed with the queue unlocked.
    #[must_use]
    pub fn unlock_while_processing(mut self, unlock: bool) -> Self {
        self.unlock_while_processing = unlock;
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
            .field("atomic_events", &self.atomic_events)
            .field("batch_size", &self.batch_size)
            .field("unlock_while_processing", &self.unlock_while_processing)
            .finish_non_exhaustive()
    }
}

/// A queued delta with its key (`None` for the atomic deltas).
pub(crate) struct Entry<K> {
    key: Option<ObjectKey>,
    delta: Delta<K>,
}

/// Deltas taken from the queue for one pop, with their keys (kept for a requeue).
pub(crate) struct Taken<K> {
    keys: SmallVec<[Option<ObjectKey>; 2]>,
    deltas: Deltas<K>,
}

/// The queued deltas in arrival order.
pub(crate) struct Arrivals<K>(VecDeque<Entry<K>>);

impl<K> Default for Arrivals<K> {
    fn default() -> Self {
        Self(VecDeque::new())
    }
}

impl<K> Arrivals<K> {
    pub(crate) fn push(&mut self, key: Option<ObjectKey>, delta: Delta<K>) {
        self.0.push_back(Entry { key, delta });
    }

    /// The keys with a delta queued.
    fn queued_keys(&self) -> HashSet<ObjectKey, RandomState> {
        self.0.iter().filter_map(|e| e.key.clone()).collect()
    }

    /// How many of the next deltas to hand out: up to `limit` of distinct keys, never crossing
    /// the end of the initial population, an atomic delta alone. At least one.
    fn batch_len(&self, limit: usize, remaining_initial: usize) -> usize {
        if limit <= 1 {
            return 1;
        }
        let mut seen: HashSet<&ObjectKey, RandomState> = HashSet::default();
        let mut n = 0;
        for entry in self.0.iter().take(limit) {
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
}

impl<K> Pending for Arrivals<K> {
    type Item = Deltas<K>;
    type Taken = Taken<K>;

    fn take(
        &mut self,
        limit: usize,
        remaining_initial: usize,
        taken: &mut Option<Taken<K>>,
    ) -> Option<usize> {
        if self.0.is_empty() {
            return None;
        }
        let n = self.batch_len(limit, remaining_initial).min(self.0.len());
        let taken = taken.insert(Taken {
            keys: SmallVec::new(),
            deltas: Deltas::empty(),
        });
        for entry in self.0.drain(..n) {
            taken.keys.push(entry.key);
            taken.deltas.push(entry.delta);
        }
        Some(n)
    }

    fn item(taken: &Taken<K>) -> &Deltas<K> {
        &taken.deltas
    }

    /// Puts popped deltas back at the front, except those whose key has a newer delta queued.
    fn requeue(&mut self, taken: Taken<K>) {
        let queued = self.queued_keys();
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
            self.0.push_front(entry);
        }
    }

    fn insert_if_absent(&mut self, key: ObjectKey, deltas: Deltas<K>) {
        if self.0.iter().any(|e| e.key.as_ref() == Some(&key)) {
            return;
        }
        for delta in deltas {
            self.push(Some(Arc::clone(&key)), delta);
        }
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn get_by_key(&self, key: &str) -> Option<Deltas<K>> {
        let deltas: Deltas<K> = self
            .0
            .iter()
            .filter(|e| e.key.as_deref() == Some(key))
            .map(|e| e.delta.clone())
            .collect();
        (!deltas.is_empty()).then_some(deltas)
    }
}

/// The in-order queue (client-go's `RealFIFO`, the default of "in-order informers"): every
/// event is its own delta, popped in arrival order, nothing is coalesced, and a delete is always
/// queued.
///
/// Replace queues a tombstone deletion for each queued or known key missing from the list, then a
/// [`DeltaType::Replaced`] for each listed object. In [atomic mode](RealFifoOptions::atomic_events)
/// replace and resync are one delta each and a bookmark queues a [`Delta::Bookmark`].
/// [`pop`](crate::Queue::pop) hands out the oldest delta alone (as one-element [`Deltas`]);
/// [`pop_batch`](RealFifo::pop_batch) hands out several deltas of distinct keys at once.
/// [`list`](kcache_store::Store::list) groups the queued deltas by key, keys in order of first
/// appearance (atomic deltas are not listed).
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
    core: QueueCore<RealPolicy<K>>,
}

/// What [`RealFifo`] does with writes: queue every event as its own delta.
pub(crate) struct RealPolicy<K> {
    key_func: KeyFunc<K>,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
    atomic_events: bool,
    batch_size: usize,
    unlock_while_processing: bool,
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

impl<K> RealPolicy<K> {
    /// Queues a relist: a tombstone for each queued or known key missing from the list, then a
    /// `Replaced` for each listed object.
    fn replace_keyed(
        &self,
        pending: &mut Arrivals<K>,
        keyed: Vec<(ObjectKey, Arc<K>)>,
    ) -> Result<(), StoreError> {
        let listed: HashSet<&ObjectKey, RandomState> = keyed.iter().map(|(k, _)| k).collect();
        // The newest queued delta of each queued key, in order of first appearance.
        let mut last: ahash::HashMap<ObjectKey, usize> = ahash::HashMap::default();
        let mut order = Vec::new();
        for (i, entry) in pending.0.iter().enumerate() {
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
            let Some(entry) = last.get(key).and_then(|&i| pending.0.get(i)) else {
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
        pending.0.reserve(tombstones.len() + keyed.len());
        for (key, obj) in tombstones {
            let delta = tombstone(&key, obj);
            pending.push(Some(key), delta);
        }
        for (key, obj) in keyed {
            pending.push(Some(key), Delta::new(DeltaType::Replaced, obj));
        }
        Ok(())
    }
}

impl<K> Policy for RealPolicy<K> {
    type Object = K;
    type Pending = Arrivals<K>;

    const NAME: &'static str = "RealFifo";

    fn key_func(&self) -> &KeyFunc<K> {
        &self.key_func
    }

    fn apply(
        &self,
        pending: &mut Arrivals<K>,
        key: ObjectKey,
        kind: TransactionType,
        obj: Arc<K>,
    ) -> Result<(), StoreError> {
        pending.push(Some(key), Delta::new(kind.into(), obj));
        Ok(())
    }

    fn replace(
        &self,
        pending: &mut Arrivals<K>,
        items: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<usize, StoreError> {
        if self.atomic_events {
            let objects: Arc<[Arc<K>]> = items.into();
            let resource_version = resource_version.to_owned();
            pending.push(
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
            self.replace_keyed(pending, keyed)?;
        }
        Ok(pending.0.len())
    }

    fn resync(&self, pending: &mut Arrivals<K>) -> Result<(), StoreError> {
        if self.atomic_events {
            pending.push(None, Delta::SyncAll);
            return Ok(());
        }
        let Some(known) = &self.known_objects else {
            return Ok(());
        };
        let queued = pending.queued_keys();
        for key in known.list_keys() {
            if queued.contains(&key) {
                continue;
            }
            let Some(obj) = known.get_by_key(&key) else {
                continue;
            };
            pending.push(Some(key), Delta::new(DeltaType::Sync, obj));
        }
        Ok(())
    }

    fn bookmark(&self, pending: &mut Arrivals<K>, resource_version: &str) {
        if self.atomic_events {
            let resource_version = resource_version.to_owned();
            pending.push(None, Delta::Bookmark { resource_version });
        }
    }

    /// The queued deltas grouped by key, keys in order of first appearance (atomic deltas are
    /// not listed).
    fn list(pending: &Arrivals<K>) -> Vec<Deltas<K>> {
        let mut index: ahash::HashMap<&ObjectKey, usize> = ahash::HashMap::default();
        let mut out: Vec<Deltas<K>> = Vec::new();
        for entry in &pending.0 {
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

    fn list_keys(pending: &Arrivals<K>) -> Vec<ObjectKey> {
        let mut seen: HashSet<&ObjectKey, RandomState> = HashSet::default();
        pending
            .0
            .iter()
            .filter_map(|e| e.key.as_ref())
            .filter(|k| seen.insert(k))
            .cloned()
            .collect()
    }

    fn debug_fields(&self, d: &mut fmt::DebugStruct<'_, '_>) {
        d.field("atomic_events", &self.atomic_events)
            .field("batch_size", &self.batch_size)
            .field("unlock_while_processing", &self.unlock_while_processing);
    }

    /// Adds, updates and deletes queue every event without reading the known objects.
    fn unlock_while_processing(&self) -> bool {
        self.unlock_while_processing
    }
}

impl<K: Send + Sync> RealFifo<K> {
    /// An in-order FIFO with `options`.
    pub fn new(options: RealFifoOptions<K>) -> Self {
        Self {
            core: QueueCore::new(RealPolicy {
                key_func: options.key_func,
                known_objects: if options.atomic_events {
                    None
                } else {
                    options.known_objects
                },
                atomic_events: options.atomic_events,
                batch_size: options.batch_size.max(1),
                unlock_while_processing: options.unlock_while_processing,
            }),
        }
    }

    pub(crate) fn core(&self) -> &QueueCore<RealPolicy<K>> {
        &self.core
    }

    pub(crate) fn key_func(&self) -> &KeyFunc<K> {
        &self.core.policy().key_func
    }

    /// Whether the queue runs in atomic mode.
    pub fn is_atomic(&self) -> bool {
        self.core.policy().atomic_events
    }

    /// The maximum number of deltas in one batch.
    pub fn batch_size(&self) -> usize {
        self.core.policy().batch_size
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
        self.pop_keyed_batch(|batch, in_initial_list| process(batch, in_initial_list))
            .await
    }

    /// [`pop_batch`](Self::pop_batch) handing out each delta with the key the queue computed
    /// for it when it was queued, so that the consumer does not compute it again.
    pub async fn pop_keyed_batch<T, E, F>(&self, process: F) -> Result<T, PopError<E>>
    where
        F: FnOnce(&Batch<'_, K>, bool) -> Result<T, ProcessError<E>> + Send,
        T: Send,
        E: Send,
    {
        self.core
            .pop_up_to(self.batch_size(), |taken: &Taken<K>, in_initial_list| {
                process(&Batch::keyed(&taken.deltas, &taken.keys), in_initial_list)
            })
            .await
    }
}

queue_impls!(RealFifo, Deltas<K>, "deltas queued", deltas);
