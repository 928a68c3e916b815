//! [`EtcdStorage`]: the [`Storage`] on etcd v3, as the Kubernetes API server keeps its objects.
//!
//! Storage keys map to etcd keys under a prefix (`/registry` by default: the pod `ns/a` is
//! `/registry/pods/ns/a`, a deployment `/registry/apps/deployments/ns/a`); values are the
//! objects' JSON without `metadata.resourceVersion`, which is the key's `mod_revision` and is
//! stamped when a value is read. Writes are transactions comparing the `mod_revision` read
//! before (optimistic concurrency); watches ask for the previous value of every change, so
//! deletes carry the last state.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{
    Client, CompactionOptions, Compare, CompareOp, ConnectOptions, EventType as EtcdEventType,
    GetOptions, KeyValue, Txn, TxnOp, TxnOpResponse, WatchOptions, WatchResponse,
};
use futures::{FutureExt, StreamExt};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::{
    EventType, ListRequest, ListResult, Preconditions, Storage, StorageError, StorageEvent,
    StorageFuture, StorageWatch, UpdateFn, WatchItem, check_preconditions, is_unchanged,
};
use crate::object::Object;

/// The default etcd key prefix, as in Kubernetes.
pub const DEFAULT_PREFIX: &str = "/registry";

/// How an [`EtcdStorage`] connects and lays out its keys.
#[derive(Debug, Clone)]
pub struct EtcdConfig {
    /// The etcd client URLs, e.g. `http://127.0.0.1:2379`.
    pub endpoints: Vec<String>,
    /// Every key is under this prefix (default [`DEFAULT_PREFIX`]).
    pub prefix: String,
    /// How long to wait for a connection to etcd.
    pub connect_timeout: Duration,
    /// How often a watch that knows it is behind the storage's revision asks etcd for a
    /// progress notification again (etcd may not answer while it is still sending events).
    pub progress_interval: Duration,
    /// The longest pause between attempts to re-establish a broken watch.
    pub max_watch_backoff: Duration,
}

impl EtcdConfig {
    /// The defaults for these endpoints.
    pub fn new(endpoints: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            prefix: DEFAULT_PREFIX.to_owned(),
            connect_timeout: Duration::from_secs(5),
            progress_interval: Duration::from_millis(50),
            max_watch_backoff: Duration::from_secs(1),
        }
    }

    /// Uses another key prefix (several servers can share one etcd under distinct prefixes).
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }
}

/// The [`Storage`] on etcd v3 (the `etcd` feature).
///
/// - keys: `{prefix}/{storage key}`; values: JSON without `metadata.resourceVersion`;
///   resourceVersion = the key's `mod_revision`;
/// - create: a transaction putting the key only if its `create_revision` is 0; updates and
///   deletes: transactions comparing the `mod_revision` read (retried on a race);
/// - list: a range read at a revision with a limit, the count of the rest giving `remaining`;
/// - watch: an etcd watch from the revision after the one asked for, with previous values and
///   progress notifications, re-established from where it was when the connection breaks
///   (etcd restarted); compaction ends it with [`StorageError::Compacted`];
/// - revision (consistent reads): a linearizable read of the prefix, whose header carries
///   etcd's current revision.
///
/// Progress notifications: every response tells the storage etcd's revision; a watch that has
/// delivered less asks etcd for progress (`RequestProgress`). etcd before 3.4.25 / 3.5.8 may
/// answer such a request before the event of the same revision (etcd issue 15220), so, as the
/// Kubernetes watch cache does, a requested notification of revision `R` is trusted as `R - 1`
/// until a second one confirms `R`. Notifications etcd sends on its own (every
/// `--experimental-watch-progress-notify-interval`) are ordered with the events and trusted.
pub struct EtcdStorage {
    client: Client,
    prefix: String,
    config: EtcdConfig,
    /// The highest revision any etcd response showed.
    seen: watch::Sender<u64>,
    /// The highest compaction point known (0: none known).
    compacted: watch::Sender<u64>,
}

impl fmt::Debug for EtcdStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdStorage")
            .field("endpoints", &self.config.endpoints)
            .field("prefix", &self.prefix)
            .field("revision", &*self.seen.borrow())
            .finish()
    }
}

fn backend(err: impl fmt::Display) -> StorageError {
    StorageError::Backend(err.to_string())
}

/// The end of the key range of every key starting with `prefix`.
fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

fn to_revision(revision: u64) -> i64 {
    i64::try_from(revision).unwrap_or(i64::MAX)
}

fn from_revision(revision: i64) -> u64 {
    u64::try_from(revision).unwrap_or(0)
}

/// The stored form of an object: its JSON without the resource version.
fn encode(object: &Object) -> Vec<u8> {
    let mut unversioned = object.clone();
    kube_core::Resource::meta_mut(&mut unversioned).resource_version = None;
    unversioned.raw().to_vec()
}

impl EtcdStorage {
    /// Connects to etcd.
    pub async fn connect(config: EtcdConfig) -> Result<Self, StorageError> {
        let options = ConnectOptions::new()
            .with_connect_timeout(config.connect_timeout)
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5));
        let client = Client::connect(&config.endpoints, Some(options))
            .await
            .map_err(|e| {
                StorageError::Backend(format!(
                    "cannot connect to etcd at {}: {e}",
                    config.endpoints.join(",")
                ))
            })?;
        Ok(Self::with_client(client, config))
    }

    /// Uses an etcd client already connected (`config.endpoints` is only informative).
    pub fn with_client(client: Client, config: EtcdConfig) -> Self {
        let prefix = config.prefix.trim_end_matches('/').to_owned();
        Self {
            client,
            prefix,
            config,
            seen: watch::channel(0).0,
            compacted: watch::channel(0).0,
        }
    }

    /// The etcd key of a storage key.
    fn etcd_key(&self, key: &str) -> Vec<u8> {
        format!("{}/{}", self.prefix, key.trim_start_matches('/')).into_bytes()
    }

    fn saw(&self, revision: i64) {
        let revision = from_revision(revision);
        self.seen.send_if_modified(|seen| {
            let newer = revision > *seen;
            if newer {
                *seen = revision;
            }
            newer
        });
    }

    fn saw_header(&self, header: Option<&etcd_client::ResponseHeader>) -> u64 {
        let revision = header.map_or(0, etcd_client::ResponseHeader::revision);
        self.saw(revision);
        from_revision(revision)
    }

    /// Maps an etcd error of a read or watch at `requested`.
    fn read_error(&self, err: etcd_client::Error, requested: u64) -> StorageError {
        let message = err.to_string();
        if message.contains("required revision has been compacted") {
            let compacted = (*self.compacted.borrow()).max(requested + 1);
            StorageError::Compacted {
                requested,
                compacted,
            }
        } else if message.contains("required revision is a future revision") {
            StorageError::FutureRevision {
                requested,
                current: *self.seen.borrow(),
            }
        } else {
            backend(message)
        }
    }

    /// Decodes a stored value into the object at its `mod_revision`.
    fn decode(kv: &KeyValue) -> Result<Object, StorageError> {
        let mut object = Object::from_json(kv.value()).map_err(|e| {
            StorageError::Backend(format!(
                "the value of {:?} is not an object: {e}",
                String::from_utf8_lossy(kv.key())
            ))
        })?;
        object.set_resource_version(from_revision(kv.mod_revision()));
        Ok(object)
    }

    /// The current object of `key` and its `mod_revision` (0: absent).
    async fn current(&self, key: &[u8]) -> Result<(Option<Arc<Object>>, i64), StorageError> {
        let mut kv = self.client.kv_client();
        let response = kv.get(key, None).await.map_err(backend)?;
        self.saw_header(response.header());
        match response.kvs().first() {
            Some(found) => Ok((Some(Arc::new(Self::decode(found)?)), found.mod_revision())),
            None => Ok((None, 0)),
        }
    }

    /// Runs a transaction: `ops` if `key`'s `mod_revision` is still `expected`; otherwise reads
    /// `key`. Returns the revision of the write, or the current state when it changed.
    async fn write_if_unchanged(
        &self,
        key: &[u8],
        expected: i64,
        op: TxnOp,
    ) -> Result<Result<u64, (Option<Arc<Object>>, i64)>, StorageError> {
        let txn = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, expected)])
            .and_then([op])
            .or_else([TxnOp::get(key, None)]);
        let mut kv = self.client.kv_client();
        let response = kv.txn(txn).await.map_err(backend)?;
        let revision = self.saw_header(response.header());
        if response.succeeded() {
            return Ok(Ok(revision));
        }
        let current = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(get) => Some(get),
            _ => None,
        });
        match current.as_ref().and_then(|get| get.kvs().first()) {
            Some(found) => Ok(Err((
                Some(Arc::new(Self::decode(found)?)),
                found.mod_revision(),
            ))),
            None => Ok(Err((None, 0))),
        }
    }

    async fn update(&self, key: String, mut update: UpdateFn) -> Result<Arc<Object>, StorageError> {
        let etcd_key = self.etcd_key(&key);
        let (mut current, mut mod_revision) = self.current(&etcd_key).await?;
        loop {
            let mut next = update(current.as_ref())?;
            if let Some(current) = current.as_ref().filter(|cur| is_unchanged(cur, &next)) {
                return Ok(Arc::clone(current));
            }
            let put = TxnOp::put(etcd_key.clone(), encode(&next), None);
            match self
                .write_if_unchanged(&etcd_key, mod_revision, put)
                .await?
            {
                Ok(revision) => {
                    next.set_resource_version(revision);
                    return Ok(Arc::new(next));
                }
                Err(state) => (current, mod_revision) = state,
            }
        }
    }

    async fn remove(&self, key: String, pre: Preconditions) -> Result<Arc<Object>, StorageError> {
        let etcd_key = self.etcd_key(&key);
        let mut state = self.current(&etcd_key).await?;
        loop {
            let (Some(current), mod_revision) = state else {
                return Err(StorageError::NotFound(key));
            };
            check_preconditions(&key, &pre, &current)?;
            let delete = TxnOp::delete(etcd_key.clone(), None);
            match self
                .write_if_unchanged(&etcd_key, mod_revision, delete)
                .await?
            {
                Ok(revision) => return Ok(Arc::new(current.with_resource_version(revision))),
                Err(changed) => state = changed,
            }
        }
    }

    async fn insert(&self, key: String, mut object: Object) -> Result<Arc<Object>, StorageError> {
        let etcd_key = self.etcd_key(&key);
        let put = TxnOp::put(etcd_key.clone(), encode(&object), None);
        match self.write_if_unchanged(&etcd_key, 0, put).await? {
            Ok(revision) => {
                object.set_resource_version(revision);
                Ok(Arc::new(object))
            }
            Err(_) => Err(StorageError::AlreadyExists(key)),
        }
    }

    async fn range(&self, request: ListRequest) -> Result<ListResult, StorageError> {
        let prefix = self.etcd_key(&request.prefix);
        let start = match request.start_key.as_deref() {
            Some(start) if start > request.prefix.as_str() => self.etcd_key(start),
            _ => prefix.clone(),
        };
        let requested = request.revision.filter(|r| *r > 0);
        let mut options = GetOptions::new().with_range(range_end(&prefix));
        if let Some(revision) = requested {
            options = options.with_revision(to_revision(revision));
        }
        if let Some(limit) = request.limit.filter(|l| *l > 0) {
            options = options.with_limit(i64::try_from(limit).unwrap_or(i64::MAX));
        }
        let mut kv = self.client.kv_client();
        let mut response = kv
            .get(start, Some(options))
            .await
            .map_err(|e| self.read_error(e, requested.unwrap_or(0)))?;
        let header_revision = self.saw_header(response.header());
        let count = from_revision(response.count());
        let more = response.more();
        let kvs = response.take_kvs();
        let last_key = if more {
            kvs.last()
                .map(|kv| self.storage_key(&request.prefix, &prefix, kv.key()))
        } else {
            None
        };
        let remaining = if more {
            count.saturating_sub(kvs.len() as u64)
        } else {
            0
        };
        let mut items = Vec::with_capacity(kvs.len());
        for kv in &kvs {
            match Self::decode(kv) {
                Ok(object) => items.push(Arc::new(object)),
                Err(e) => {
                    tracing::error!(error = %e, "skipping a stored value that does not decode")
                }
            }
        }
        Ok(ListResult {
            items,
            revision: requested.unwrap_or(header_revision),
            last_key,
            remaining,
        })
    }

    /// The storage key of an etcd key under `etcd_prefix` (the etcd key of `storage_prefix`).
    fn storage_key(&self, storage_prefix: &str, etcd_prefix: &[u8], key: &[u8]) -> String {
        let rest = key.strip_prefix(etcd_prefix).unwrap_or(key);
        format!("{storage_prefix}{}", String::from_utf8_lossy(rest))
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        let prefix = self.etcd_key("");
        let options = GetOptions::new()
            .with_range(range_end(&prefix))
            .with_count_only();
        let mut kv = self.client.kv_client();
        let response = kv.get(prefix, Some(options)).await.map_err(backend)?;
        Ok(self.saw_header(response.header()))
    }

    async fn compact_at(&self, revision: u64) -> Result<(), StorageError> {
        let revision = revision.min(*self.seen.borrow()).max(1);
        let mut client = self.client.clone();
        match client
            .compact(
                to_revision(revision),
                Some(CompactionOptions::new().with_physical()),
            )
            .await
        {
            Ok(_) => {}
            Err(e)
                if e.to_string()
                    .contains("required revision has been compacted") => {}
            Err(e) => return Err(backend(e)),
        }
        self.compacted.send_if_modified(|c| {
            let newer = revision > *c;
            if newer {
                *c = revision;
            }
            newer
        });
        Ok(())
    }

    fn open_watch(&self, prefix: String, from: u64, progress: bool) -> StorageWatch {
        let (tx, rx) = mpsc::channel(256);
        let etcd_prefix = self.etcd_key(&prefix);
        let task = WatchTask {
            client: self.client.clone(),
            storage_prefix: prefix,
            etcd_prefix,
            delivered: from,
            progress,
            pending_progress: None,
            synced_from: None,
            seen: self.seen.subscribe(),
            compacted: self.compacted.clone(),
            config: self.config.clone(),
            tx,
        };
        tokio::spawn(task.run());
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|i| (i, rx)) })
            .boxed()
    }
}

/// One storage watch: an etcd watch re-established from where it was whenever it breaks.
struct WatchTask {
    client: Client,
    storage_prefix: String,
    etcd_prefix: Vec<u8>,
    /// The last revision handed out (an event's or a progress notification's).
    delivered: u64,
    progress: bool,
    /// A requested progress notification's revision, trusted only once seen twice.
    pending_progress: Option<u64>,
    /// The revision etcd had when the current etcd watch was created; the watch is synced
    /// (has no history left to send) once it delivered that far.
    synced_from: Option<u64>,
    seen: watch::Receiver<u64>,
    compacted: watch::Sender<u64>,
    config: EtcdConfig,
    tx: mpsc::Sender<Result<WatchItem, StorageError>>,
}

/// Why one etcd watch ended.
enum WatchEnd {
    /// The consumer went away.
    Dropped,
    /// The connection broke; re-establish the watch.
    Broken,
    /// History needed is compacted away.
    Compacted(u64),
}

impl WatchTask {
    async fn run(mut self) {
        let mut backoff = Duration::from_millis(20);
        loop {
            match self.watch_once().await {
                WatchEnd::Dropped => return,
                WatchEnd::Compacted(compacted) => {
                    self.compacted.send_if_modified(|c| {
                        let newer = compacted > *c;
                        if newer {
                            *c = compacted;
                        }
                        newer
                    });
                    let _ = self
                        .tx
                        .send(Err(StorageError::Compacted {
                            requested: self.delivered,
                            compacted,
                        }))
                        .await;
                    return;
                }
                WatchEnd::Broken => {
                    tokio::select! {
                        () = self.tx.closed() => return,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(self.config.max_watch_backoff);
                }
            }
        }
    }

    /// Runs one etcd watch from `delivered + 1` until it ends.
    async fn watch_once(&mut self) -> WatchEnd {
        let mut options = WatchOptions::new()
            .with_range(range_end(&self.etcd_prefix))
            .with_start_revision(to_revision(self.delivered + 1))
            .with_prev_key();
        if self.progress {
            options = options.with_progress_notify();
        }
        let opened = tokio::select! {
            () = self.tx.closed() => return WatchEnd::Dropped,
            opened = self.client.watch(self.etcd_prefix.clone(), Some(options)) => opened,
        };
        let mut stream = match opened {
            Ok(stream) => stream,
            Err(e) => {
                tracing::debug!(prefix = %self.storage_prefix, error = %e, "etcd watch failed to start");
                return WatchEnd::Broken;
            }
        };
        self.pending_progress = None;
        self.synced_from = None;
        let mut last_request: Option<Instant> = None;
        let mut tick = tokio::time::interval(self.config.progress_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = self.tx.closed() => return WatchEnd::Dropped,
                message = stream.message() => match message {
                    Ok(Some(response)) => {
                        if let Some(end) = self.handle(response).await {
                            return end;
                        }
                    }
                    Ok(None) => return WatchEnd::Broken,
                    Err(e) => {
                        tracing::debug!(prefix = %self.storage_prefix, error = %e, "etcd watch broke");
                        return WatchEnd::Broken;
                    }
                },
                changed = self.seen.changed() => {
                    if changed.is_err() {
                        return WatchEnd::Dropped;
                    }
                }
                _ = tick.tick() => {}
            }
            let due = last_request.is_none_or(|at| at.elapsed() >= self.config.progress_interval);
            if self.wants_progress() && due {
                if stream.request_progress().await.is_err() {
                    return WatchEnd::Broken;
                }
                last_request = Some(Instant::now());
            }
        }
    }

    /// Whether to ask etcd for progress: the watch is behind a revision the storage has seen,
    /// and synced (etcd 3.4 answers a request at once with its current revision, even while
    /// it still has history to send to a watch catching up).
    fn wants_progress(&self) -> bool {
        self.progress
            && self
                .synced_from
                .is_some_and(|created| self.delivered >= created)
            && *self.seen.borrow() > self.delivered
    }

    /// Hands out what one watch response holds; `Some` when the watch ended.
    async fn handle(&mut self, response: WatchResponse) -> Option<WatchEnd> {
        if response.canceled() {
            let compacted = from_revision(response.compact_revision());
            if compacted > 0 {
                return Some(WatchEnd::Compacted(compacted));
            }
            tracing::debug!(prefix = %self.storage_prefix, reason = response.cancel_reason(), "etcd cancelled the watch");
            return Some(WatchEnd::Broken);
        }
        let header_revision = response.header().map_or(0, |h| from_revision(h.revision()));
        if response.created() {
            // The watch is synced once it has delivered the history up to its creation.
            self.synced_from = Some(header_revision);
        }
        let events = response.events();
        if events.is_empty() {
            if response.created() {
                return None;
            }
            return self
                .progress_notified(header_revision, response.watch_id())
                .await;
        }
        for event in events {
            let Some(kv) = event.kv() else { continue };
            let revision = from_revision(kv.mod_revision());
            match self.storage_event(event.event_type(), kv, event.prev_kv(), revision) {
                Ok(item) => {
                    if self.tx.send(Ok(WatchItem::Event(item))).await.is_err() {
                        return Some(WatchEnd::Dropped);
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "skipping a watch event whose value does not decode")
                }
            }
            self.delivered = self.delivered.max(revision);
        }
        None
    }

    async fn progress_notified(&mut self, revision: u64, watch_id: i64) -> Option<WatchEnd> {
        // A notification etcd sends on its own to a synced watch is ordered with its events;
        // the answer to a request (watch id -1) may overtake the event of its own revision.
        let trusted = if watch_id >= 0 {
            self.synced_from = Some(self.synced_from.map_or(revision, |c| c.min(revision)));
            revision
        } else if self.pending_progress == Some(revision) {
            revision
        } else {
            self.pending_progress = Some(revision);
            revision.saturating_sub(1)
        };
        if trusted > self.delivered {
            self.delivered = trusted;
            if self
                .tx
                .send(Ok(WatchItem::Progress(trusted)))
                .await
                .is_err()
            {
                return Some(WatchEnd::Dropped);
            }
        }
        if self.pending_progress.is_some_and(|p| p <= self.delivered) {
            self.pending_progress = None;
        }
        None
    }

    fn storage_event(
        &self,
        event_type: EtcdEventType,
        kv: &KeyValue,
        prev_kv: Option<&KeyValue>,
        revision: u64,
    ) -> Result<StorageEvent, StorageError> {
        let key: Arc<str> = Arc::from(
            format!(
                "{}{}",
                self.storage_prefix,
                String::from_utf8_lossy(
                    kv.key()
                        .strip_prefix(&*self.etcd_prefix)
                        .unwrap_or(kv.key())
                )
            )
            .as_str(),
        );
        let previous = prev_kv.map(EtcdStorage::decode).transpose()?.map(Arc::new);
        let (event_type, object) = match event_type {
            EtcdEventType::Put => {
                let event_type = if kv.create_revision() == kv.mod_revision() {
                    EventType::Added
                } else {
                    EventType::Modified
                };
                (event_type, Arc::new(EtcdStorage::decode(kv)?))
            }
            EtcdEventType::Delete => {
                let last = previous.as_ref().ok_or_else(|| {
                    StorageError::Backend(format!("a delete of {key:?} without its previous value"))
                })?;
                (
                    EventType::Deleted,
                    Arc::new(last.with_resource_version(revision)),
                )
            }
        };
        Ok(StorageEvent {
            revision,
            event_type,
            key,
            object,
            previous,
        })
    }
}

impl Storage for EtcdStorage {
    fn revision(&self) -> StorageFuture<'_, u64> {
        self.current_revision().boxed()
    }

    fn get(&self, key: String) -> StorageFuture<'_, Option<Arc<Object>>> {
        async move {
            let etcd_key = self.etcd_key(&key);
            Ok(self.current(&etcd_key).await?.0)
        }
        .boxed()
    }

    fn list(&self, request: ListRequest) -> StorageFuture<'_, ListResult> {
        self.range(request).boxed()
    }

    fn create(&self, key: String, object: Object) -> StorageFuture<'_, Arc<Object>> {
        self.insert(key, object).boxed()
    }

    fn guaranteed_update(&self, key: String, update: UpdateFn) -> StorageFuture<'_, Arc<Object>> {
        self.update(key, update).boxed()
    }

    fn delete(&self, key: String, preconditions: Preconditions) -> StorageFuture<'_, Arc<Object>> {
        self.remove(key, preconditions).boxed()
    }

    fn watch(
        &self,
        prefix: String,
        from_revision: u64,
        progress_notify: bool,
    ) -> StorageFuture<'_, StorageWatch> {
        async move {
            let compacted = *self.compacted.borrow();
            if compacted > 0 && from_revision + 1 < compacted {
                return Err(StorageError::Compacted {
                    requested: from_revision,
                    compacted,
                });
            }
            Ok(self.open_watch(prefix, from_revision, progress_notify))
        }
        .boxed()
    }

    fn compact(&self, revision: u64) -> StorageFuture<'_, ()> {
        self.compact_at(revision).boxed()
    }
}
