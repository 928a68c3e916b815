//! [`Storage`]: the source of truth with a global revision, and [`MemoryStorage`], its in-memory
//! implementation with a bounded, compacting history.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::object::Object;

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

/// A storage watch stream. It ends when the watch is cancelled.
pub type StorageWatch = BoxStream<'static, WatchItem>;

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
    /// in between (optimistic concurrency; retried otherwise).
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

type Versions = Vec<(u64, Option<Arc<Object>>)>;

struct StorageWatcher {
    prefix: String,
    progress: bool,
    tx: mpsc::UnboundedSender<WatchItem>,
}

struct Inner {
    revision: u64,
    compacted: u64,
    keys: BTreeMap<Arc<str>, Versions>,
    events: VecDeque<StorageEvent>,
    watchers: Vec<StorageWatcher>,
    history: usize,
}

/// The in-memory [`Storage`]: a multi-version map with a bounded history. When more than
/// `history` writes are kept, the oldest are compacted away.
pub struct MemoryStorage {
    inner: Mutex<Inner>,
}

impl fmt::Debug for MemoryStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.lock();
        f.debug_struct("MemoryStorage")
            .field("revision", &inner.revision)
            .field("compacted", &inner.compacted)
            .field("keys", &inner.keys.len())
            .field("history", &inner.history)
            .finish()
    }
}

/// The default number of writes a [`MemoryStorage`] keeps for watches and old reads.
pub const DEFAULT_HISTORY: usize = 100_000;

impl Default for MemoryStorage {
    fn default() -> Self {
        Self::new(DEFAULT_HISTORY)
    }
}

fn version_at(versions: &Versions, revision: u64) -> Option<&Arc<Object>> {
    let idx = versions.partition_point(|(rev, _)| *rev <= revision);
    idx.checked_sub(1).and_then(|i| versions[i].1.as_ref())
}

impl MemoryStorage {
    /// A storage keeping the last `history` writes (at least 1).
    pub fn new(history: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                revision: 1,
                compacted: 1,
                keys: BTreeMap::new(),
                events: VecDeque::new(),
                watchers: Vec::new(),
                history: history.max(1),
            }),
        }
    }

    /// The current revision.
    pub fn current_revision(&self) -> u64 {
        self.inner.lock().revision
    }

    /// The compaction point: reads and watches need a revision at least this.
    pub fn compacted_revision(&self) -> u64 {
        self.inner.lock().compacted
    }

    /// Discards all history now (reads and watches before the current revision fail).
    pub fn compact_now(&self) -> u64 {
        let mut inner = self.inner.lock();
        let rev = inner.revision;
        inner.compact(rev);
        rev
    }

    fn write(
        &self,
        key: &str,
        f: &mut UpdateFn,
        create_only: bool,
    ) -> Result<Arc<Object>, StorageError> {
        let mut inner = self.inner.lock();
        let current = inner
            .keys
            .get(key)
            .and_then(|v| v.last())
            .and_then(|(_, o)| o.clone());
        if create_only && current.is_some() {
            return Err(StorageError::AlreadyExists(key.to_owned()));
        }
        let mut obj = f(current.as_ref())?;
        let rev = inner.revision + 1;
        obj.set_resource_version(rev);
        let obj = Arc::new(obj);
        let event_type = if current.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        inner.commit(
            key,
            rev,
            Some(Arc::clone(&obj)),
            event_type,
            Arc::clone(&obj),
            current,
        );
        Ok(obj)
    }

    fn delete_now(&self, key: &str, pre: &Preconditions) -> Result<Arc<Object>, StorageError> {
        let mut inner = self.inner.lock();
        let Some(current) = inner
            .keys
            .get(key)
            .and_then(|v| v.last())
            .and_then(|(_, o)| o.clone())
        else {
            return Err(StorageError::NotFound(key.to_owned()));
        };
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
        let rev = inner.revision + 1;
        let tomb = Arc::new(current.with_resource_version(rev));
        inner.commit(
            key,
            rev,
            None,
            EventType::Deleted,
            Arc::clone(&tomb),
            Some(current),
        );
        Ok(tomb)
    }

    fn list_now(&self, req: &ListRequest) -> Result<ListResult, StorageError> {
        let inner = self.inner.lock();
        let revision = req.revision.filter(|r| *r > 0).unwrap_or(inner.revision);
        if revision < inner.compacted {
            return Err(StorageError::Compacted {
                requested: revision,
                compacted: inner.compacted,
            });
        }
        if revision > inner.revision {
            return Err(StorageError::FutureRevision {
                requested: revision,
                current: inner.revision,
            });
        }
        let start = req.start_key.as_deref().unwrap_or(&req.prefix);
        let start = if start < req.prefix.as_str() {
            req.prefix.as_str()
        } else {
            start
        };
        let limit = req.limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
        let mut items = Vec::new();
        let mut last_key = None;
        let mut remaining = 0u64;
        let range = inner
            .keys
            .range::<str, _>((Bound::Included(start), Bound::Unbounded));
        for (key, versions) in range {
            if !key.starts_with(req.prefix.as_str()) {
                break;
            }
            let Some(obj) = version_at(versions, revision) else {
                continue;
            };
            if items.len() < limit {
                items.push(Arc::clone(obj));
                last_key = Some(key);
            } else {
                remaining += 1;
            }
        }
        let last_key = if remaining > 0 {
            last_key.map(|k| k.to_string())
        } else {
            None
        };
        Ok(ListResult {
            items,
            revision,
            last_key,
            remaining,
        })
    }

    fn watch_now(
        &self,
        prefix: String,
        from: u64,
        progress: bool,
    ) -> Result<StorageWatch, StorageError> {
        let mut inner = self.inner.lock();
        if from < inner.compacted {
            return Err(StorageError::Compacted {
                requested: from,
                compacted: inner.compacted,
            });
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let start = inner.events.partition_point(|e| e.revision <= from);
        for event in inner.events.range(start..) {
            if event.key.starts_with(prefix.as_str()) {
                let _ = tx.send(WatchItem::Event(event.clone()));
            }
        }
        if progress && from < inner.revision {
            let _ = tx.send(WatchItem::Progress(inner.revision));
        }
        inner.watchers.push(StorageWatcher {
            prefix,
            progress,
            tx,
        });
        Ok(tokio_stream_from(rx))
    }
}

fn tokio_stream_from(mut rx: mpsc::UnboundedReceiver<WatchItem>) -> StorageWatch {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

impl Inner {
    fn commit(
        &mut self,
        key: &str,
        rev: u64,
        state: Option<Arc<Object>>,
        event_type: EventType,
        object: Arc<Object>,
        previous: Option<Arc<Object>>,
    ) {
        self.revision = rev;
        let key: Arc<str> = match self.keys.get_key_value(key) {
            Some((k, _)) => Arc::clone(k),
            None => Arc::from(key),
        };
        self.keys
            .entry(Arc::clone(&key))
            .or_default()
            .push((rev, state));
        let event = StorageEvent {
            revision: rev,
            event_type,
            key,
            object,
            previous,
        };
        self.watchers.retain(|w| {
            if event.key.starts_with(w.prefix.as_str()) {
                w.tx.send(WatchItem::Event(event.clone())).is_ok()
            } else if w.progress {
                w.tx.send(WatchItem::Progress(rev)).is_ok()
            } else {
                !w.tx.is_closed()
            }
        });
        self.events.push_back(event);
        if self.events.len() > self.history
            && let Some(oldest) = self.events.front().map(|e| e.revision)
        {
            self.compact(oldest);
        }
    }

    /// Discards history up to and including `revision`, keeping the state at `revision`.
    fn compact(&mut self, revision: u64) {
        if revision <= self.compacted {
            return;
        }
        while self.events.front().is_some_and(|e| e.revision <= revision) {
            let Some(event) = self.events.pop_front() else {
                break;
            };
            if let Some(versions) = self.keys.get_mut(&event.key) {
                let keep_from = versions
                    .partition_point(|(r, _)| *r <= revision)
                    .saturating_sub(1);
                versions.drain(..keep_from);
                if versions.len() == 1 && versions[0].1.is_none() {
                    self.keys.remove(&event.key);
                }
            }
        }
        self.compacted = revision;
    }
}

impl Storage for MemoryStorage {
    fn revision(&self) -> StorageFuture<'_, u64> {
        futures::future::ready(Ok(self.current_revision())).boxed()
    }

    fn get(&self, key: String) -> StorageFuture<'_, Option<Arc<Object>>> {
        let obj = self
            .inner
            .lock()
            .keys
            .get(key.as_str())
            .and_then(|v| v.last())
            .and_then(|(_, o)| o.clone());
        futures::future::ready(Ok(obj)).boxed()
    }

    fn list(&self, request: ListRequest) -> StorageFuture<'_, ListResult> {
        futures::future::ready(self.list_now(&request)).boxed()
    }

    fn create(&self, key: String, object: Object) -> StorageFuture<'_, Arc<Object>> {
        let mut object = Some(object);
        let mut f: UpdateFn = Box::new(move |_| {
            object
                .take()
                .ok_or_else(|| ApiError::internal("create retried"))
        });
        futures::future::ready(self.write(&key, &mut f, true)).boxed()
    }

    fn guaranteed_update(
        &self,
        key: String,
        mut update: UpdateFn,
    ) -> StorageFuture<'_, Arc<Object>> {
        futures::future::ready(self.write(&key, &mut update, false)).boxed()
    }

    fn delete(&self, key: String, preconditions: Preconditions) -> StorageFuture<'_, Arc<Object>> {
        futures::future::ready(self.delete_now(&key, &preconditions)).boxed()
    }

    fn watch(
        &self,
        prefix: String,
        from_revision: u64,
        progress_notify: bool,
    ) -> StorageFuture<'_, StorageWatch> {
        futures::future::ready(self.watch_now(prefix, from_revision, progress_notify)).boxed()
    }

    fn compact(&self, revision: u64) -> StorageFuture<'_, ()> {
        let mut inner = self.inner.lock();
        let revision = revision.min(inner.revision);
        inner.compact(revision);
        futures::future::ready(Ok(())).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str) -> Object {
        Object::from_json(
            format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}}}}"#)
                .as_bytes(),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn reads_at_an_old_revision_see_the_old_state_until_compacted() {
        let s = MemoryStorage::new(100);
        let a = s.create("/cm/a".into(), obj("a")).await.unwrap();
        let at = a.resource_version_u64();
        s.create("/cm/b".into(), obj("b")).await.unwrap();
        s.delete("/cm/a".into(), Preconditions::default())
            .await
            .unwrap();
        let old = s
            .list(ListRequest {
                prefix: "/cm/".into(),
                revision: Some(at),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(old.items.len(), 1);
        let now = s
            .list(ListRequest {
                prefix: "/cm/".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(now.items[0].meta().name.as_deref(), Some("b"));
        s.compact_now();
        let err = s
            .list(ListRequest {
                prefix: "/cm/".into(),
                revision: Some(at),
                ..Default::default()
            })
            .await;
        assert!(matches!(err, Err(StorageError::Compacted { .. })));
    }

    #[tokio::test]
    async fn history_is_bounded_by_compaction() {
        let s = MemoryStorage::new(3);
        for i in 0..10 {
            s.create(format!("/cm/{i}"), obj(&i.to_string()))
                .await
                .unwrap();
        }
        assert!(s.compacted_revision() > 1);
        assert!(s.watch("/cm/".into(), 1, false).await.is_err());
    }
}
