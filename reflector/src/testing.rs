//! An in-memory [`ListerWatcher`] for tests and benches (feature `testing`): client-go's
//! `FakeControllerSource`, with pagination, a bounded history and fault injection.
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use kcache_reflector::testing::FakeControllerSource;
//!
//! let source = FakeControllerSource::<Pod>::new();
//! let mut pod = Pod::default();
//! pod.metadata.name = Some("web".into());
//! let stored = source.add(pod);
//! assert_eq!(stored.metadata.resource_version.as_deref(), Some("1"));
//! ```

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc;
use futures::{FutureExt, StreamExt, stream};
use kcache_store::meta_namespace_key;
use kube_core::{Resource, Status};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::error::status;
use crate::lister_watcher::{
    Bookmark, INITIAL_EVENTS_END_ANNOTATION, ListFuture, ListOptions, ListPage, ListWatchError,
    ListerWatcher, ResourceVersionMatch, WatchEvent, WatchFuture, WatchStream,
};

/// One call made to a [`FakeControllerSource`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// A list request with its options.
    List(ListOptions),
    /// A watch request with its options.
    Watch(ListOptions),
}

impl Call {
    /// The options of the call.
    pub fn options(&self) -> &ListOptions {
        match self {
            Self::List(o) | Self::Watch(o) => o,
        }
    }

    /// The resource version asked for ("" when absent).
    pub fn resource_version(&self) -> &str {
        self.options().resource_version.as_deref().unwrap_or("")
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Added,
    Modified,
    Deleted,
}

type Sender<K> = mpsc::UnboundedSender<Result<WatchEvent<K>, ListWatchError>>;

struct Watcher<K> {
    tx: Sender<K>,
    bookmarks: bool,
}

struct Snapshot<K> {
    resource_version: u64,
    items: Arc<Vec<Arc<K>>>,
}

struct Inner<K> {
    items: BTreeMap<String, Arc<K>>,
    resource_version: u64,
    history: VecDeque<(u64, Kind, Arc<K>)>,
    history_capacity: usize,
    /// The newest resource version dropped from the history: watches from older ones expire.
    compacted: u64,
    watchers: Vec<Watcher<K>>,
    calls: Vec<Call>,
    list_faults: VecDeque<ListWatchError>,
    watch_faults: VecDeque<ListWatchError>,
    paginate: bool,
    watch_list_supported: bool,
    honour_timeouts: bool,
    snapshots: HashMap<u64, Snapshot<K>>,
    next_snapshot: u64,
}

/// An in-memory API server for one resource: objects with increasing resource versions,
/// list with pagination, watch with history replay and bookmarks, and fault injection.
/// Every call is recorded ([`calls`](Self::calls)).
pub struct FakeControllerSource<K> {
    inner: Mutex<Inner<K>>,
    called: Notify,
}

impl<K> fmt::Debug for FakeControllerSource<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.lock();
        f.debug_struct("FakeControllerSource")
            .field("items", &inner.items.len())
            .field("resource_version", &inner.resource_version)
            .field("history", &inner.history.len())
            .field("watchers", &inner.watchers.len())
            .field("calls", &inner.calls.len())
            .finish_non_exhaustive()
    }
}

/// The default number of events kept for watches to resume from.
pub const DEFAULT_HISTORY: usize = 1000;

impl<K> Default for FakeControllerSource<K> {
    fn default() -> Self {
        Self::with_history(DEFAULT_HISTORY)
    }
}

fn error_event<K: Send + Sync + 'static>(status: Status) -> WatchStream<K> {
    stream::iter([Ok(WatchEvent::Error(status))]).boxed()
}

impl<K> FakeControllerSource<K> {
    /// An empty source keeping the last [`DEFAULT_HISTORY`] events.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty source keeping the last `capacity` events; watches from older resource
    /// versions get 410 Expired.
    pub fn with_history(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                items: BTreeMap::new(),
                resource_version: 0,
                history: VecDeque::new(),
                history_capacity: capacity,
                compacted: 0,
                watchers: Vec::new(),
                calls: Vec::new(),
                list_faults: VecDeque::new(),
                watch_faults: VecDeque::new(),
                paginate: true,
                watch_list_supported: true,
                honour_timeouts: true,
                snapshots: HashMap::new(),
                next_snapshot: 0,
            }),
            called: Notify::new(),
        }
    }

    /// The current resource version.
    pub fn resource_version(&self) -> String {
        self.inner.lock().resource_version.to_string()
    }

    /// The number of objects.
    pub fn len(&self) -> usize {
        self.inner.lock().items.len()
    }

    /// Whether there is no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every call made so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.inner.lock().calls.clone()
    }

    /// The options of every list call so far.
    pub fn list_calls(&self) -> Vec<ListOptions> {
        self.calls_where(|c| matches!(c, Call::List(_)))
    }

    /// The options of every watch call so far.
    pub fn watch_calls(&self) -> Vec<ListOptions> {
        self.calls_where(|c| matches!(c, Call::Watch(_)))
    }

    fn calls_where(&self, f: impl Fn(&Call) -> bool) -> Vec<ListOptions> {
        self.inner
            .lock()
            .calls
            .iter()
            .filter(|c| f(c))
            .map(|c| c.options().clone())
            .collect()
    }

    /// The resource version of every list call ("" when absent), in order.
    pub fn list_resource_versions(&self) -> Vec<String> {
        self.list_calls()
            .iter()
            .map(|o| o.resource_version.clone().unwrap_or_default())
            .collect()
    }

    /// Forgets the recorded calls.
    pub fn clear_calls(&self) {
        self.inner.lock().calls.clear();
    }

    /// Waits until at least `n` calls have been recorded.
    pub async fn wait_for_calls(&self, n: usize) {
        self.wait_until(|calls| calls.len() >= n).await;
    }

    /// Waits until `pred` holds for the recorded calls (checked at each new call).
    pub async fn wait_until(&self, pred: impl Fn(&[Call]) -> bool) {
        loop {
            let notified = self.called.notified();
            if pred(&self.inner.lock().calls) {
                return;
            }
            notified.await;
        }
    }

    /// The number of open watches.
    pub fn watchers(&self) -> usize {
        let mut inner = self.inner.lock();
        inner.watchers.retain(|w| !w.tx.is_closed());
        inner.watchers.len()
    }

    /// Whether `limit` is honoured (default true, like etcd; false is like the watch cache).
    pub fn set_paginate(&self, on: bool) {
        self.inner.lock().paginate = on;
    }

    /// Whether streaming watch-list is supported (default true; false answers 422 Invalid).
    pub fn set_watch_list_supported(&self, on: bool) {
        self.inner.lock().watch_list_supported = on;
    }

    /// Whether watches end at their `timeoutSeconds` (default true).
    pub fn set_honour_timeouts(&self, on: bool) {
        self.inner.lock().honour_timeouts = on;
    }

    /// Fails the next list call with `err`.
    pub fn fail_next_list(&self, err: ListWatchError) {
        self.inner.lock().list_faults.push_back(err);
    }

    /// Fails the next watch call with `err`.
    pub fn fail_next_watch(&self, err: ListWatchError) {
        self.inner.lock().watch_faults.push_back(err);
    }

    /// Ends every open watch normally.
    pub fn end_all_watches(&self) {
        self.inner.lock().watchers.clear();
    }

    /// Sends an ERROR event with `status` to every open watch and ends them.
    pub fn send_error(&self, status: Status) {
        let mut inner = self.inner.lock();
        for w in inner.watchers.drain(..) {
            let _ = w.tx.unbounded_send(Ok(WatchEvent::Error(status.clone())));
        }
    }

    /// Sends an event that cannot be decoded to every open watch.
    pub fn send_malformed_event(&self) {
        self.send_raw(|| Err(ListWatchError::decode("malformed watch event: {\"type\":")));
    }

    /// Sends `event` as it is to every open watch (for example an object of the wrong kind).
    pub fn send_event(&self, event: impl Fn() -> WatchEvent<K>) {
        self.send_raw(|| Ok(event()));
    }

    fn send_raw(&self, event: impl Fn() -> Result<WatchEvent<K>, ListWatchError>) {
        let mut inner = self.inner.lock();
        inner
            .watchers
            .retain(|w| w.tx.unbounded_send(event()).is_ok());
    }

    /// Sends a bookmark at the current resource version to the watches that allow bookmarks.
    pub fn send_bookmark(&self) {
        let mut inner = self.inner.lock();
        let rv = inner.resource_version.to_string();
        inner.watchers.retain(|w| {
            !w.bookmarks
                || w.tx
                    .unbounded_send(Ok(WatchEvent::Bookmark(Bookmark {
                        resource_version: rv.clone(),
                        annotations: BTreeMap::new(),
                    })))
                    .is_ok()
        });
    }

    /// Drops the whole history: watches from any resource version before now get Expired, and
    /// continue tokens of earlier lists expire.
    pub fn compact(&self) {
        let mut inner = self.inner.lock();
        inner.history.clear();
        inner.compacted = inner.resource_version;
        inner.snapshots.clear();
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> FakeControllerSource<K> {
    fn record(&self, inner: &mut Inner<K>, call: Call) {
        inner.calls.push(call);
        self.called.notify_waiters();
    }

    fn key(obj: &K) -> String {
        meta_namespace_key(obj).unwrap_or_default()
    }

    fn change(&self, kind: Kind, mut obj: K) -> Arc<K> {
        let mut inner = self.inner.lock();
        inner.resource_version += 1;
        obj.meta_mut().resource_version = Some(inner.resource_version.to_string());
        let obj = Arc::new(obj);
        let key = Self::key(&obj);
        match kind {
            Kind::Deleted => inner.items.remove(&key),
            Kind::Added | Kind::Modified => inner.items.insert(key, Arc::clone(&obj)),
        };
        let rv = inner.resource_version;
        inner.history.push_back((rv, kind, Arc::clone(&obj)));
        while inner.history.len() > inner.history_capacity {
            if let Some((old, _, _)) = inner.history.pop_front() {
                inner.compacted = old;
            }
        }
        let compacted = inner.compacted;
        inner
            .snapshots
            .retain(|_, s| s.resource_version >= compacted);
        let event = || match kind {
            Kind::Added => WatchEvent::Added(Arc::clone(&obj)),
            Kind::Modified => WatchEvent::Modified(Arc::clone(&obj)),
            Kind::Deleted => WatchEvent::Deleted(Arc::clone(&obj)),
        };
        inner
            .watchers
            .retain(|w| w.tx.unbounded_send(Ok(event())).is_ok());
        obj
    }

    /// Adds an object at the next resource version (set on the object) and returns it.
    pub fn add(&self, obj: K) -> Arc<K> {
        self.change(Kind::Added, obj)
    }

    /// Adds many objects, each at its own resource version.
    pub fn add_all(&self, objs: impl IntoIterator<Item = K>) {
        for obj in objs {
            self.add(obj);
        }
    }

    /// Loads shared objects as they are (their resource versions kept, no events, no history):
    /// for big fixtures in benches. The source's resource version becomes the largest one seen.
    pub fn load(&self, objs: impl IntoIterator<Item = Arc<K>>) {
        let mut inner = self.inner.lock();
        for obj in objs {
            let rv = obj
                .meta()
                .resource_version
                .as_deref()
                .and_then(|rv| rv.parse().ok());
            inner.resource_version = inner.resource_version.max(rv.unwrap_or(0));
            inner.items.insert(Self::key(&obj), obj);
        }
        inner.compacted = inner.resource_version;
    }

    /// Stores a new state of an object at the next resource version.
    pub fn modify(&self, obj: K) -> Arc<K> {
        self.change(Kind::Modified, obj)
    }

    /// Deletes an object; the Deleted event carries `obj` at the next resource version.
    pub fn delete(&self, obj: K) -> Arc<K> {
        self.change(Kind::Deleted, obj)
    }

    /// The object stored under `key`.
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.inner.lock().items.get(key).cloned()
    }

    fn parse_rv(rv: Option<&str>) -> Result<Option<u64>, ListWatchError> {
        match rv {
            None | Some("") => Ok(None),
            Some(s) => s.parse().map(Some).map_err(|_| {
                ListWatchError::from(status::failure(
                    400,
                    "BadRequest",
                    "invalid resource version",
                ))
            }),
        }
    }

    fn do_list(&self, options: &ListOptions) -> Result<ListPage<K>, ListWatchError> {
        let mut inner = self.inner.lock();
        self.record(&mut inner, Call::List(options.clone()));
        if let Some(err) = inner.list_faults.pop_front() {
            return Err(err);
        }
        let limit = options
            .limit
            .filter(|l| *l > 0 && inner.paginate)
            .map(|l| l as usize);
        let (id, offset) = match &options.continue_token {
            Some(token) => {
                let parsed = token.split_once(':').and_then(|(id, off)| {
                    Some((id.parse::<u64>().ok()?, off.parse::<usize>().ok()?))
                });
                match parsed {
                    Some((id, off)) if inner.snapshots.contains_key(&id) => (id, off),
                    _ => {
                        return Err(ListWatchError::from(status::expired(
                            "The provided continue parameter is too old to display a consistent list result.",
                        )));
                    }
                }
            }
            None => {
                let requested = Self::parse_rv(options.resource_version.as_deref())?;
                if let Some(rv) = requested {
                    if rv > inner.resource_version {
                        return Err(ListWatchError::from(status::too_large_resource_version()));
                    }
                    if options.resource_version_match == Some(ResourceVersionMatch::Exact)
                        && rv != inner.resource_version
                        && rv < inner.compacted
                    {
                        return Err(ListWatchError::from(status::expired(
                            "too old resource version",
                        )));
                    }
                }
                let items: Vec<Arc<K>> = inner.items.values().cloned().collect();
                let id = inner.next_snapshot;
                inner.next_snapshot += 1;
                let resource_version = inner.resource_version;
                inner.snapshots.insert(
                    id,
                    Snapshot {
                        resource_version,
                        items: Arc::new(items),
                    },
                );
                (id, 0)
            }
        };
        let Some(snapshot) = inner.snapshots.get(&id) else {
            return Err(ListWatchError::Other("snapshot vanished".into()));
        };
        let all = Arc::clone(&snapshot.items);
        let resource_version = snapshot.resource_version.to_string();
        let end = limit.map_or(all.len(), |l| (offset + l).min(all.len()));
        let items = all.get(offset..end).unwrap_or_default().to_vec();
        let (continue_token, remaining_item_count) = if end < all.len() {
            (Some(format!("{id}:{end}")), Some((all.len() - end) as i64))
        } else {
            inner.snapshots.remove(&id);
            (None, None)
        };
        Ok(ListPage {
            items,
            resource_version,
            continue_token,
            remaining_item_count,
        })
    }

    fn do_watch(&self, options: &ListOptions) -> Result<WatchStream<K>, ListWatchError> {
        let mut inner = self.inner.lock();
        self.record(&mut inner, Call::Watch(options.clone()));
        if let Some(err) = inner.watch_faults.pop_front() {
            return Err(err);
        }
        let requested = Self::parse_rv(options.resource_version.as_deref())?;
        let initial_events = options.send_initial_events == Some(true);
        if initial_events {
            if !inner.watch_list_supported {
                return Err(ListWatchError::from(status::failure(
                    422,
                    "Invalid",
                    "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
                )));
            }
            if options.resource_version_match != Some(ResourceVersionMatch::NotOlderThan)
                || !options.allow_watch_bookmarks
            {
                return Err(ListWatchError::from(status::failure(
                    422,
                    "Invalid",
                    "sendInitialEvents requires allowWatchBookmarks and resourceVersionMatch=NotOlderThan",
                )));
            }
        }
        if requested.is_some_and(|rv| rv > inner.resource_version) {
            return Err(ListWatchError::from(status::too_large_resource_version()));
        }
        let (tx, rx) = mpsc::unbounded();
        let send = |e: WatchEvent<K>| {
            let _ = tx.unbounded_send(Ok(e));
        };
        match requested {
            Some(rv) if rv != 0 && !initial_events => {
                if rv < inner.compacted {
                    return Ok(error_event(status::expired(&format!(
                        "too old resource version: {rv} ({})",
                        inner.compacted
                    ))));
                }
                for (at, kind, obj) in &inner.history {
                    if *at > rv {
                        send(match kind {
                            Kind::Added => WatchEvent::Added(Arc::clone(obj)),
                            Kind::Modified => WatchEvent::Modified(Arc::clone(obj)),
                            Kind::Deleted => WatchEvent::Deleted(Arc::clone(obj)),
                        });
                    }
                }
            }
            _ => {
                for obj in inner.items.values() {
                    send(WatchEvent::Added(Arc::clone(obj)));
                }
                if initial_events {
                    send(WatchEvent::Bookmark(Bookmark {
                        resource_version: inner.resource_version.to_string(),
                        annotations: BTreeMap::from([(
                            INITIAL_EVENTS_END_ANNOTATION.to_owned(),
                            "true".to_owned(),
                        )]),
                    }));
                }
            }
        }
        inner.watchers.push(Watcher {
            tx,
            bookmarks: options.allow_watch_bookmarks,
        });
        let timeout = options
            .timeout_seconds
            .filter(|_| inner.honour_timeouts)
            .map(|s| Duration::from_secs(u64::from(s)));
        Ok(match timeout {
            Some(t) => rx.take_until(tokio::time::sleep(t)).boxed(),
            None => rx.boxed(),
        })
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> ListerWatcher<K> for FakeControllerSource<K> {
    fn list(&self, options: &ListOptions) -> ListFuture<'_, K> {
        let result = self.do_list(options);
        async move { result }.boxed()
    }

    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, K> {
        let result = self.do_watch(options);
        async move { result }.boxed()
    }
}
