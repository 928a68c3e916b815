//! The [`Store`] trait: what a reflector writes into.

use std::sync::Arc;

use crate::error::{BoxError, StoreError};
use crate::key::ObjectKey;

/// A function run on every object as it is made, before anything holds it (for example to drop
/// `managedFields`): kcache-reflector's `ObjectMaking` gives it to the lister-watcher, the one
/// place it runs. Take ownership with [`Arc::unwrap_or_clone`] (or [`Arc::make_mut`]) to change
/// the object without a copy when it is not shared.
pub type TransformFunc<K> = Arc<dyn Fn(Arc<K>) -> Result<Arc<K>, BoxError> + Send + Sync>;

/// The kind of one operation in a [`Store::transaction`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransactionType {
    /// Store a new object.
    Added,
    /// Store a new state of an object.
    Updated,
    /// Remove an object.
    Deleted,
}

/// One operation of a [`Store::transaction`].
#[derive(Debug)]
pub struct Transaction<K> {
    /// What to do.
    pub kind: TransactionType,
    /// The object to do it with.
    pub object: Arc<K>,
}

impl<K> Transaction<K> {
    /// An operation of `kind` on `object`.
    pub fn new(kind: TransactionType, object: Arc<K>) -> Self {
        Self { kind, object }
    }
}

/// A generic object store (client-go's `cache.Store`): the reflector keeps one equal to the
/// server's state, and queues such as the DeltaFIFO implement it to receive the same calls.
///
/// Writes take `Arc<K>`: objects are decoded once and shared, never deep-copied. Every method is
/// short and non-blocking (a lock held for the duration of the operation), so it may be called
/// from async code.
pub trait Store<K>: Send + Sync {
    /// What reads hand out: `Arc<K>` for an indexer, the queued deltas for a delta queue.
    type Item;

    /// Adds an object.
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError>;
    /// Updates an object.
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError>;
    /// Deletes an object.
    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError>;
    /// Every item.
    fn list(&self) -> Vec<Self::Item>;
    /// Every key.
    fn list_keys(&self) -> Vec<ObjectKey>;
    /// The item stored under `obj`'s key.
    fn get(&self, obj: &K) -> Result<Option<Self::Item>, StoreError>;
    /// The item stored under `key`.
    fn get_by_key(&self, key: &str) -> Option<Self::Item>;
    /// Replaces the whole content with `items`, observed at `resource_version`.
    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError>;
    /// Re-emits the content downstream (meaningful for queues; a no-op for plain stores).
    fn resync(&self) -> Result<(), StoreError>;
    /// The resource version the store's content is synced to ("" if none): for a cache such as
    /// the [`Indexer`](crate::Indexer), the one truth of what it holds, derived from the writes
    /// it applied (objects, replace, bookmark). A queue holds no synced state and answers "".
    /// The reflector keeps its own last synced version, the truth of where it lists and watches
    /// from.
    fn last_store_sync_resource_version(&self) -> String;
    /// Records that the store is in sync with the server at `resource_version` (a watch bookmark).
    fn bookmark(&self, resource_version: &str);
    /// Applies the operations in order under one lock. On error, the
    /// [`TransactionError`](crate::TransactionError) says which were applied.
    fn transaction(&self, ops: Vec<Transaction<K>>) -> Result<(), StoreError>;
}

/// A read-only view of the objects downstream of a queue: the DeltaFIFO's "known objects"
/// (usually the informer's indexer), used to compute deletions on replace and to resync.
pub trait KnownObjects<K>: Send + Sync {
    /// Every known key.
    fn list_keys(&self) -> Vec<ObjectKey>;
    /// The known object under `key`.
    fn get_by_key(&self, key: &str) -> Option<Arc<K>>;
}
