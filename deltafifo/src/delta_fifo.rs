//! [`DeltaFifo`]: the queue between a reflector and an informer, keeping every change per key.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use ahash::RandomState;
use kcache_store::{
    DeletedFinalStateUnknown, KeyError, KeyFunc, KnownObjects, MaybeTombstone, ObjectKey,
    StoreError, TransactionType,
};
use kube_core::Resource;

use crate::batch::Batch;
use crate::delta::{Delta, DeltaType, Deltas};
use crate::error::{PopError, ProcessError};
use crate::keyed::Keyed;
use crate::queue_core::{ItemKey, Policy, QueueCore, queue_impls};

/// How a [`DeltaFifo`] is built (client-go's `DeltaFIFOOptions`).
pub struct DeltaFifoOptions<K> {
    /// Computes an object's key. Default: `namespace/name`.
    key_func: KeyFunc<K>,
    /// The objects downstream of the queue (usually the informer's indexer, read-only): used to
    /// detect deletions on replace, to decide whether a delete is worth queueing, and by resync.
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
    /// Emit [`DeltaType::Replaced`] for relisted objects instead of [`DeltaType::Sync`]
    /// (default false, for compatibility with client-go).
    emit_delta_type_replaced: bool,
}

impl<K: Resource + 'static> Default for DeltaFifoOptions<K> {
    fn default() -> Self {
        Self::with_key_func(kcache_store::meta_namespace_key_func())
    }
}

impl<K> DeltaFifoOptions<K> {
    /// The defaults with `key_func` (for objects that are not Kubernetes resources).
    pub fn with_key_func(key_func: KeyFunc<K>) -> Self {
        Self {
            key_func,
            known_objects: None,
            emit_delta_type_replaced: false,
        }
    }

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
            .finish_non_exhaustive()
    }
}

/// A queue of changes per key (client-go's `DeltaFIFO`).
///
/// Each key holds its [`Deltas`] oldest first and keeps its place in the queue however many
/// changes arrive for it; [`pop`](crate::Queue::pop) hands out all of a key's deltas at once, in the
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
    core: QueueCore<DeltaPolicy<K>>,
}

/// What [`DeltaFifo`] does with writes: append a delta to the key's deltas.
struct DeltaPolicy<K> {
    key_func: KeyFunc<K>,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
    emit_delta_type_replaced: bool,
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

/// The deletion of `key` whose final state is unknown: `obj` is the last state seen.
pub(crate) fn tombstone<K>(key: &ObjectKey, obj: Arc<K>) -> Delta<K> {
    let tombstone = DeletedFinalStateUnknown {
        key: key.to_string(),
        obj,
    };
    Delta::with_payload(DeltaType::Deleted, MaybeTombstone::Tombstone(tombstone))
}

impl<K> DeltaPolicy<K> {
    /// Appends `delta` to `key`'s deltas, queueing the key if it is new.
    fn queue(&self, pending: &mut Keyed<Deltas<K>>, key: ObjectKey, delta: Delta<K>) {
        pending.put(key, delta, Deltas::one, |deltas, delta| {
            deltas.push(delta);
            deltas.dedup_last_two();
        });
    }
}

impl<K> ItemKey<K> for Deltas<K> {
    fn key(&self, key_func: &KeyFunc<K>) -> Result<String, StoreError> {
        key_of_deltas(key_func, self)
    }
}

impl<K> Policy for DeltaPolicy<K> {
    type Object = K;
    type Pending = Keyed<Deltas<K>>;

    const NAME: &'static str = "DeltaFifo";

    fn key_func(&self) -> &KeyFunc<K> {
        &self.key_func
    }

    fn apply(
        &self,
        pending: &mut Keyed<Deltas<K>>,
        key: ObjectKey,
        kind: TransactionType,
        obj: Arc<K>,
    ) -> Result<(), StoreError> {
        if kind == TransactionType::Deleted {
            let queued = pending.items.contains_key(&key);
            let known = self
                .known_objects
                .as_ref()
                .is_some_and(|k| k.get_by_key(&key).is_some());
            if !queued && !known {
                return Ok(());
            }
        }
        self.queue(pending, key, Delta::new(kind.into(), obj));
        Ok(())
    }

    fn replace(
        &self,
        pending: &mut Keyed<Deltas<K>>,
        items: Vec<Arc<K>>,
        _resource_version: &str,
    ) -> Result<usize, StoreError> {
        let keyed = items
            .into_iter()
            .map(|obj| Ok(((self.key_func)(&obj)?.into(), obj)))
            .collect::<Result<Vec<(ObjectKey, Arc<K>)>, StoreError>>()?;
        let action = if self.emit_delta_type_replaced {
            DeltaType::Replaced
        } else {
            DeltaType::Sync
        };
        pending.items.reserve(keyed.len());
        pending.queue.reserve(keyed.len());
        let mut listed: HashSet<ObjectKey, RandomState> =
            HashSet::with_capacity_and_hasher(keyed.len(), RandomState::new());
        for (key, obj) in keyed {
            listed.insert(Arc::clone(&key));
            self.queue(pending, key, Delta::new(action, obj));
        }

        // Queued keys missing from the list: a tombstone with the newest queued object.
        let mut deletions = 0;
        let missing_queued: Vec<(ObjectKey, Arc<K>)> = pending
            .queue
            .iter()
            .filter(|k| !listed.contains(*k))
            .filter_map(|k| {
                let newest = pending.items.get(k)?.newest_object()?;
                Some((Arc::clone(k), Arc::clone(newest)))
            })
            .collect();
        for (key, obj) in missing_queued {
            deletions += 1;
            let delta = tombstone(&key, obj);
            self.queue(pending, key, delta);
        }

        // Known keys missing from the list with nothing queued: a tombstone with the known object.
        if let Some(known) = &self.known_objects {
            for key in known.list_keys() {
                if listed.contains(&key) || pending.items.get(&key).is_some_and(|d| !d.is_empty()) {
                    continue;
                }
                let Some(obj) = known.get_by_key(&key) else {
                    tracing::warn!(key = %key, "known key vanished during replace; no tombstone queued");
                    continue;
                };
                deletions += 1;
                let delta = tombstone(&key, obj);
                self.queue(pending, key, delta);
            }
        }
        Ok(listed.len() + deletions)
    }

    fn resync(&self, pending: &mut Keyed<Deltas<K>>) -> Result<(), StoreError> {
        let Some(known) = &self.known_objects else {
            return Ok(());
        };
        for key in known.list_keys() {
            let Some(obj) = known.get_by_key(&key) else {
                continue;
            };
            let key: ObjectKey = (self.key_func)(&obj)?.into();
            if pending.items.get(&key).is_some_and(|d| !d.is_empty()) {
                continue;
            }
            self.queue(pending, key, Delta::new(DeltaType::Sync, obj));
        }
        Ok(())
    }

    fn list(pending: &Keyed<Deltas<K>>) -> Vec<Deltas<K>> {
        pending
            .queue
            .iter()
            .filter_map(|k| pending.items.get(k).cloned())
            .collect()
    }

    fn list_keys(pending: &Keyed<Deltas<K>>) -> Vec<ObjectKey> {
        pending.queue.iter().cloned().collect()
    }

    fn debug_fields(&self, d: &mut fmt::DebugStruct<'_, '_>) {
        d.field("known_objects", &self.known_objects.is_some())
            .field("emit_delta_type_replaced", &self.emit_delta_type_replaced);
    }
}

impl<K: Send + Sync> DeltaFifo<K> {
    /// A delta FIFO with `options`.
    pub fn new(options: DeltaFifoOptions<K>) -> Self {
        Self {
            core: QueueCore::new(DeltaPolicy {
                key_func: options.key_func,
                known_objects: options.known_objects,
                emit_delta_type_replaced: options.emit_delta_type_replaced,
            }),
        }
    }
}

impl<K: Send + Sync> DeltaFifo<K> {
    /// [`pop`](crate::Queue::pop) handing out the key's deltas with their key, so that the
    /// consumer does not compute it again.
    pub async fn pop_keyed<T, E, F>(&self, process: F) -> Result<T, PopError<E>>
    where
        F: FnOnce(&Batch<'_, K>, bool) -> Result<T, ProcessError<E>> + Send,
        T: Send,
        E: Send,
    {
        self.core
            .pop_up_to(
                1,
                |(key, deltas): &(ObjectKey, Deltas<K>), in_initial_list| {
                    process(&Batch::of_key(deltas, key), in_initial_list)
                },
            )
            .await
    }
}

queue_impls!(DeltaFifo, Deltas<K>, "keys waiting to be popped", deltas);
