//! [`MemoryStorage`]: the in-memory [`Storage`], a multi-version map with a bounded, compacting
//! history.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::{
    EventType, ListRequest, ListResult, Preconditions, Storage, StorageError, StorageEvent,
    StorageFuture, StorageWatch, UpdateFn, WatchItem, check_preconditions, is_unchanged,
};
use crate::error::ApiError;
use crate::object::Object;

type Versions = Vec<(u64, Option<Arc<Object>>)>;

struct StorageWatcher {
    prefix: String,
    progress: bool,
    tx: mpsc::UnboundedSender<Result<WatchItem, StorageError>>,
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
        if let Some(current) = current.as_ref().filter(|cur| is_unchanged(cur, &obj)) {
            return Ok(Arc::clone(current));
        }
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
        check_preconditions(key, pre, &current)?;
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
                let _ = tx.send(Ok(WatchItem::Event(event.clone())));
            }
        }
        if progress && from < inner.revision {
            let _ = tx.send(Ok(WatchItem::Progress(inner.revision)));
        }
        inner.watchers.push(StorageWatcher {
            prefix,
            progress,
            tx,
        });
        Ok(tokio_stream_from(rx))
    }
}

fn tokio_stream_from(
    mut rx: mpsc::UnboundedReceiver<Result<WatchItem, StorageError>>,
) -> StorageWatch {
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
                w.tx.send(Ok(WatchItem::Event(event.clone()))).is_ok()
            } else if w.progress {
                w.tx.send(Ok(WatchItem::Progress(rev))).is_ok()
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
    use kube_core::Resource;

    fn obj(name: &str) -> Object {
        Object::from_json(
            format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}}}}"#)
                .as_bytes(),
        )
        .unwrap()
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
