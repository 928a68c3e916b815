//! [`Fifo`]: a queue holding the latest state of each key.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use ahash::RandomState;
use kcache_store::{KeyFunc, ObjectKey, Store, StoreError, Transaction, TransactionType};
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::error::{PopError, ProcessError, settle};
use crate::queue::{Population, Queue, run_logged, run_transaction, wait_for};

struct FifoState<K> {
    items: HashMap<ObjectKey, Arc<K>, RandomState>,
    queue: VecDeque<ObjectKey>,
    population: Population,
    closed: bool,
    resource_version: String,
}

/// A FIFO queue of objects, one accumulator per key (client-go's `cache.FIFO`, as the seeds
/// kept it, with [`add_if_not_present`](Queue::add_if_not_present) and requeue).
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
    state: Mutex<FifoState<K>>,
    notify: Notify,
    key_func: KeyFunc<K>,
}

impl<K> fmt::Debug for Fifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Fifo");
        match self.state.try_lock() {
            Some(s) => d
                .field("items", &s.items.len())
                .field("queued", &s.queue.len())
                .field("population", &s.population)
                .field("closed", &s.closed),
            // Printed from inside a process function: the lock is held.
            None => d.field("state", &"<locked>"),
        };
        d.finish()
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
            state: Mutex::new(FifoState {
                items: HashMap::default(),
                queue: VecDeque::new(),
                population: Population::default(),
                closed: false,
                resource_version: String::new(),
            }),
            notify: Notify::new(),
            key_func,
        }
    }

    /// The key of `obj`.
    pub fn key_of(&self, obj: &K) -> Result<String, StoreError> {
        Ok((self.key_func)(obj)?)
    }

    /// The number of keys waiting to be popped.
    pub fn len(&self) -> usize {
        self.state.lock().items.len()
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn put_locked(&self, s: &mut FifoState<K>, key: ObjectKey, obj: Arc<K>) {
        if s.items.insert(Arc::clone(&key), obj).is_none() {
            s.queue.push_back(key);
        }
        self.notify.notify_one();
    }

    fn apply_locked(
        &self,
        s: &mut FifoState<K>,
        kind: TransactionType,
        obj: Arc<K>,
    ) -> Result<(), StoreError> {
        let key: ObjectKey = self.key_of(&obj)?.into();
        s.population.touch();
        match kind {
            TransactionType::Added | TransactionType::Updated => self.put_locked(s, key, obj),
            TransactionType::Deleted => {
                s.items.remove(&key);
            }
        }
        Ok(())
    }

    fn apply(&self, kind: TransactionType, obj: Arc<K>) -> Result<(), StoreError> {
        self.apply_locked(&mut self.state.lock(), kind, obj)
    }
}

impl<K: Send + Sync> Store<K> for Fifo<K> {
    type Item = Arc<K>;

    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.apply(TransactionType::Added, obj)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.apply(TransactionType::Updated, obj)
    }

    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.apply(TransactionType::Deleted, obj)
    }

    fn list(&self) -> Vec<Arc<K>> {
        self.state.lock().items.values().cloned().collect()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.state.lock().items.keys().cloned().collect()
    }

    fn get(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        Ok(self.get_by_key(&self.key_of(obj)?))
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.state.lock().items.get(key).cloned()
    }

    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        let mut map: HashMap<ObjectKey, Arc<K>, RandomState> =
            HashMap::with_capacity_and_hasher(items.len(), RandomState::new());
        let mut order = VecDeque::with_capacity(items.len());
        for obj in items {
            let key: ObjectKey = self.key_of(&obj)?.into();
            if map.insert(Arc::clone(&key), obj).is_none() {
                order.push_back(key);
            }
        }
        let mut s = self.state.lock();
        s.population.replaced(map.len());
        s.items = map;
        s.queue = order;
        resource_version.clone_into(&mut s.resource_version);
        if !s.queue.is_empty() {
            self.notify.notify_one();
        }
        Ok(())
    }

    fn resync(&self) -> Result<(), StoreError> {
        let mut s = self.state.lock();
        let s = &mut *s;
        let queued: std::collections::HashSet<&ObjectKey, RandomState> = s.queue.iter().collect();
        let missing: Vec<ObjectKey> = s
            .items
            .keys()
            .filter(|k| !queued.contains(k))
            .cloned()
            .collect();
        if !missing.is_empty() {
            s.queue.extend(missing);
            self.notify.notify_one();
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

    fn transaction(&self, ops: Vec<Transaction<K>>) -> Result<(), StoreError> {
        let mut s = self.state.lock();
        run_transaction(ops, |kind, obj| self.apply_locked(&mut s, kind, obj))
    }
}

impl<K: Send + Sync> Queue<K> for Fifo<K> {
    fn pop<T, E, F>(&self, process: F) -> impl Future<Output = Result<T, PopError<E>>> + Send
    where
        F: FnOnce(&Arc<K>, bool) -> Result<T, ProcessError<E>> + Send,
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
                // A deleted key stays queued; its turn is skipped.
                let Some(obj) = s.items.remove(&key) else {
                    continue;
                };
                let process = process.take()?;
                let depth = s.queue.len();
                let outcome = run_logged("Fifo", depth, || process(&obj, in_initial_list));
                let (result, requeue) = settle(outcome);
                if requeue {
                    self.put_locked(&mut s, key, obj);
                } else if !s.queue.is_empty() {
                    self.notify.notify_one();
                }
                return Some(result);
            }
        })
    }

    fn add_if_not_present(&self, item: Arc<K>) -> Result<(), StoreError> {
        let key: ObjectKey = self.key_of(&item)?.into();
        let mut s = self.state.lock();
        s.population.touch();
        if !s.items.contains_key(&key) {
            self.put_locked(&mut s, key, item);
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
