//! [`Storage`]: the source of truth with a global revision, and its implementations:
//! [`MemoryStorage`] (in memory, with a bounded, compacting history) and, with the `etcd`
//! feature, [`EtcdStorage`] (etcd v3).

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use kube_core::Resource;

use crate::error::ApiError;
use crate::object::Object;

#[cfg(feature = "etcd")]
mod etcd;
mod memory;

#[cfg(feature = "etcd")]
pub use etcd::{DEFAULT_PREFIX, EtcdConfig, EtcdStorage};
pub use memory::{DEFAULT_HISTORY, MemoryStorage};

/// What changed in one storage event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// A key was created.
    Added,
    /// A key was updated.
    Modified,
    /// A key was deleted.
    Deleted,
}

/// One write, as seen by storage watchers.
#[derive(Debug, Clone)]
pub struct StorageEvent {
    /// The revision of the write (also the object's `metadata.resourceVersion`).
    pub revision: u64,
    /// What happened.
    pub event_type: EventType,
    /// The storage key.
    pub key: Arc<str>,
    /// The new object; for a delete, the last state stamped with the delete's revision.
    pub object: Arc<Object>,
    /// The state before the write, if any.
    pub previous: Option<Arc<Object>>,
}

/// An item of a storage watch: an event, or a progress notification (the storage reached a
/// revision through writes outside the watched prefix).
#[derive(Debug, Clone)]
pub enum WatchItem {
    /// A write under the watched prefix.
    Event(StorageEvent),
    /// The storage's revision is now at least this.
    Progress(u64),
}

/// A storage watch stream. It ends when the watch is cancelled, or after an error (for example
/// [`StorageError::Compacted`] when the storage cannot continue from where the watch is).
pub type StorageWatch = BoxStream<'static, Result<WatchItem, StorageError>>;

/// A future returned by [`Storage`].
pub type StorageFuture<'a, T> = BoxFuture<'a, Result<T, StorageError>>;

/// Computes the new state of an object from its current one (`None` if absent) in
/// [`Storage::guaranteed_update`]; may be called again if the object changed in between.
pub type UpdateFn = Box<dyn FnMut(Option<&Arc<Object>>) -> Result<Object, ApiError> + Send>;

/// Why a storage operation failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The key does not exist.
    #[error("key {0:?} not found")]
    NotFound(String),
    /// The key already exists.
    #[error("key {0:?} already exists")]
    AlreadyExists(String),
    /// A precondition (resourceVersion or uid) did not hold.
    #[error("conflict on key {key:?}: {message}")]
    Conflict {
        /// The key.
        key: String,
        /// Which precondition failed.
        message: String,
    },
    /// The requested revision has been compacted.
    #[error("revision {requested} is compacted (oldest available {compacted})")]
    Compacted {
        /// The revision asked for.
        requested: u64,
        /// The compaction point.
        compacted: u64,
    },
    /// The requested revision is in the future.
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision {
        /// The revision asked for.
        requested: u64,
        /// The current revision.
        current: u64,
    },
    /// The update function refused the write.
    #[error(transparent)]
    Rejected(#[from] ApiError),
    /// The storage backend failed or cannot be reached (etcd down, a value that does not
    /// decode).
    #[error("storage backend error: {0}")]
    Backend(String),
}

/// Preconditions of a delete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// The object's resourceVersion must be exactly this.
    pub resource_version: Option<u64>,
    /// The object's uid must be exactly this.
    pub uid: Option<String>,
}

/// A list request against storage.
#[derive(Debug, Clone, Default)]
pub struct ListRequest {
    /// Only keys starting with this.
    pub prefix: String,
    /// Read at this revision (`None`: the current one).
    pub revision: Option<u64>,
    /// Start at this key (inclusive).
    pub start_key: Option<String>,
    /// At most this many items (`None` or 0: all).
    pub limit: Option<usize>,
}

/// The result of a list.
#[derive(Debug, Clone)]
pub struct ListResult {
    /// The objects, ordered by key.
    pub items: Vec<Arc<Object>>,
    /// The revision the list was read at.
    pub revision: u64,
    /// The key of the last item when more items follow.
    pub last_key: Option<String>,
    /// How many items follow (when `last_key` is set).
    pub remaining: u64,
}

/// The source of truth (etcd in Kubernetes): keys to objects with a global, monotonically
/// increasing revision. Every write gets the next revision, which becomes the object's
/// `metadata.resourceVersion`. Watches are unfiltered within a key prefix.
pub trait Storage: Send + Sync + fmt::Debug + 'static {
    /// The current revision.
    fn revision(&self) -> StorageFuture<'_, u64>;
    /// The object under `key`.
    fn get(&self, key: String) -> StorageFuture<'_, Option<Arc<Object>>>;
    /// Lists keys under a prefix, at a revision, from a start key, with a limit.
    fn list(&self, request: ListRequest) -> StorageFuture<'_, ListResult>;
    /// Creates `key` (fails with [`StorageError::AlreadyExists`]).
    fn create(&self, key: String, object: Object) -> StorageFuture<'_, Arc<Object>>;
    /// Reads `key`, computes its new state with `update` and writes it if the key did not change
    /// in between (optimistic concurrency; retried otherwise). A new state equal to the current
    /// one (see [`is_unchanged`]) is not written: the current object is returned as it is, with
    /// its resource version, and watchers see no event (as the etcd3 store's
    /// `GuaranteedUpdate`).
    fn guaranteed_update(&self, key: String, update: UpdateFn) -> StorageFuture<'_, Arc<Object>>;
    /// Deletes `key` if the preconditions hold; returns the last state stamped with the delete's
    /// revision.
    fn delete(&self, key: String, preconditions: Preconditions) -> StorageFuture<'_, Arc<Object>>;
    /// Watches every write under `prefix` after `from_revision`; with `progress_notify`, writes
    /// elsewhere are reported as [`WatchItem::Progress`].
    fn watch(
        &self,
        prefix: String,
        from_revision: u64,
        progress_notify: bool,
    ) -> StorageFuture<'_, StorageWatch>;
    /// Discards history up to `revision` (reads and watches before it fail with
    /// [`StorageError::Compacted`]).
    fn compact(&self, revision: u64) -> StorageFuture<'_, ()>;
}

/// Whether `new` is `current` unchanged: their encodings are equal once `new` carries
/// `current`'s resource version. [`Storage::guaranteed_update`] skips such writes.
pub fn is_unchanged(current: &Object, new: &Object) -> bool {
    new.with_resource_version(current.resource_version_u64())
        .raw()
        == current.raw()
}

/// Checks a delete's preconditions against the current object of `key`.
pub(crate) fn check_preconditions(
    key: &str,
    pre: &Preconditions,
    current: &Object,
) -> Result<(), StorageError> {
    if let Some(rv) = pre.resource_version
        && rv != current.resource_version_u64()
    {
        return Err(StorageError::Conflict {
            key: key.to_owned(),
            message: format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                current.resource_version_u64()
            ),
        });
    }
    if let Some(uid) = &pre.uid
        && Some(uid.as_str()) != current.meta().uid.as_deref()
    {
        return Err(StorageError::Conflict {
            key: key.to_owned(),
            message: format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                current.meta().uid.as_deref().unwrap_or("")
            ),
        });
    }
    Ok(())
}
