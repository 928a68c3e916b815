//! [`Fifo`]: a queue holding the latest state of each key.

use std::collections::HashSet;
use std::sync::Arc;

use ahash::RandomState;
use kcache_store::{KeyFunc, ObjectKey, StoreError, TransactionType};
use kube_core::Resource;

use crate::keyed::Keyed;
use crate::queue_core::{ItemKey, Policy, QueueCore, queue_impls};

/// A FIFO queue of objects, one accumulator per key (client-go's `cache.FIFO`, as the seeds
/// kept it, with [`add_if_not_present`](crate::Queue::add_if_not_present) and requeue).
///
/// - add/update store the newest object and keep the key's place in the queue;
/// - delete removes the object, and pop then skips its key;
/// - replace resets the queue to the given objects (no deletions are produced);
/// - resync queues keys whose object is stored but not queued.
///
/// ```
/// # use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kcache_deltafifo::{Fifo, Queue};
/// use kcache_store::Store;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let fifo = Fifo::<ConfigMap>::new();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("a".into());
/// fifo.add(Arc::new(cm)).unwrap();
/// let name = fifo
///     .pop(|obj, _| Ok::<_, kcache_deltafifo::ProcessError<()>>(obj.metadata.name.clone()))
///     .await
///     .unwrap();
/// assert_eq!(name.as_deref(), Some("a"));
/// # }
/// ```
pub struct Fifo<K> {
    core: QueueCore<FifoPolicy<K>>,
}

/// What [`Fifo`] does with writes: the newest object replaces the queued one.
struct FifoPolicy<K> {
    key_func: KeyFunc<K>,
}

impl<K> ItemKey<K> for Arc<K> {
    fn key(&self, key_func: &KeyFunc<K>) -> Result<String, StoreError> {
        Ok(key_func(self)?)
    }
}

impl<K> Policy for FifoPolicy<K> {
    type Object = K;
    type Pending = Keyed<Arc<K>>;

    const NAME: &'static str = "Fifo";

    fn key_func(&self) -> &KeyFunc<K> {
        &self.key_func
    }

    fn apply(
        &self,
        pending: &mut Keyed<Arc<K>>,
        key: ObjectKey,
        kind: TransactionType,
        obj: Arc<K>,
    ) -> Result<(), StoreError> {
        match kind {
            TransactionType::Added | TransactionType::Updated => {
                pending.put(key, obj, |obj| obj, |queued, obj| *queued = obj);
            }
            // The key stays queued; its turn is skipped.
            TransactionType::Deleted => {
                pending.items.remove(&key);
            }
        }
        Ok(())
    }

    fn replace(
        &self,
        pending: &mut Keyed<Arc<K>>,
        items: Vec<Arc<K>>,
        _resource_version: &str,
    ) -> Result<usize, StoreError> {
        let mut fresh = Keyed::default();
        fresh.items.reserve(items.len());
        fresh.queue.reserve(items.len());
        for obj in items {
            let key: ObjectKey = (self.key_func)(&obj)?.into();
            fresh.put(key, obj, |obj| obj, |queued, obj| *queued = obj);
        }
        *pending = fresh;
        Ok(pending.items.len())
    }

    fn resync(&self, pending: &mut Keyed<Arc<K>>) -> Result<(), StoreError> {
        let queued: HashSet<&ObjectKey, RandomState> = pending.queue.iter().collect();
        let missing: Vec<ObjectKey> = pending
            .items
            .keys()
            .filter(|k| !queued.contains(k))
            .cloned()
            .collect();
        pending.queue.extend(missing);
        Ok(())
    }

    fn list(pending: &Keyed<Arc<K>>) -> Vec<Arc<K>> {
        pending.items.values().cloned().collect()
    }

    fn list_keys(pending: &Keyed<Arc<K>>) -> Vec<ObjectKey> {
        pending.items.keys().cloned().collect()
    }
}

impl<K: Resource + Send + Sync + 'static> Fifo<K> {
    /// A FIFO keyed by `namespace/name`.
    pub fn new() -> Self {
        Self::with_key_func(kcache_store::meta_namespace_key_func())
    }
}

impl<K: Resource + Send + Sync + 'static> Default for Fifo<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Send + Sync> Fifo<K> {
    /// A FIFO keyed by `key_func`.
    pub fn with_key_func(key_func: KeyFunc<K>) -> Self {
        Self {
            core: QueueCore::new(FifoPolicy { key_func }),
        }
    }

    /// The key of `obj`.
    pub fn key_of(&self, obj: &K) -> Result<String, StoreError> {
        Ok((self.core.policy().key_func)(obj)?)
    }
}

queue_impls!(Fifo, Arc<K>, "keys waiting to be popped");
