//! [`EtcdStorage`]: the [`Storage`] on etcd v3, as the Kubernetes API server keeps its objects.
//!
//! Storage keys map to etcd keys under a prefix (`/registry` by default: the pod `ns/a` is
//! `/registry/pods/ns/a`, a deployment `/registry/apps/deployments/ns/a`); values are the
//! objects' JSON without `metadata.resourceVersion`, which is the key's `mod_revision` and is
//! stamped when a value is read. Writes are transactions comparing the `mod_revision` read
//! before (optimistic concurrency); watches ask for the previous value of every change, so
//! deletes carry the last state. The watches are in watch_task.rs.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, CompactionOptions, ConnectOptions, GetOptions, KeyValue, KvClient};
use futures::FutureExt;
use tokio::sync::watch;

use super::{
    ListRequest, ListResult, Preconditions, Storage, StorageError, StorageFuture, StorageWatch,
    UpdateFn, check_preconditions, is_unchanged,
};
use crate::object::Object;

mod endpoints;
mod watch_task;
mod write;

use endpoints::{Call, Endpoints};

/// The largest gRPC message read from etcd (etcd-client's default is 4 MiB; a watch response
/// may batch many large objects).
const MAX_MESSAGE: usize = 1 << 30;

/// How many keys one range request reads: longer lists are read in pages at one revision, as
/// the Kubernetes etcd3 store does, so that no response grows without bound.
const PAGE: usize = 1000;

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
    /// How often each endpoint's health (its maintenance `status`, and that it knows a leader)
    /// is checked; requests go only to endpoints whose last check passed.
    pub health_interval: Duration,
    /// How long a health check waits for an endpoint's answer.
    pub health_timeout: Duration,
    /// How long a request that provably never reached etcd (a connect error, `no leader`), or a
    /// read that failed in transit, is sent again to another endpoint before its error is
    /// returned. A write that may have been applied is never sent again, except a transaction
    /// etcd refuses once it applied (an update comparing the `mod_revision` read).
    pub retry_window: Duration,
    /// How long one attempt of a request may take before it is abandoned (and, where safe,
    /// sent to another member): shorter than etcd's election, so that a request stuck on a
    /// member whose leader died (etcd answers it only after its 7 s request timeout) does not
    /// hold a client that long.
    pub attempt_timeout: Duration,
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
            health_interval: Duration::from_millis(250),
            health_timeout: Duration::from_secs(1),
            retry_window: Duration::from_secs(5),
            attempt_timeout: Duration::from_secs(1),
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
/// - list: range reads at one revision, 1,000 keys per request, up to the limit; etcd's count
///   of the keys after the start gives `remaining`;
/// - watch: an etcd watch from the revision after the one asked for, with previous values and
///   progress notifications, re-established from where it was when the connection breaks
///   (etcd restarted); compaction ends it with [`StorageError::Compacted`];
/// - revision (consistent reads): a linearizable read of the prefix, whose header carries
///   etcd's current revision.
///
/// Progress notifications (what lets an idle resource's watch cache reach the storage's
/// revision, so that consistent reads need not wait): etcd's own, sent every
/// `--experimental-watch-progress-notify-interval` (10 min by default: run etcd with a short
/// one, such as 100 ms, as [`TestEtcd`](crate::TestEtcd) does) to a watch that is synced, are
/// ordered with its events and trusted. On top of these, a watch that is behind a revision the
/// storage has seen in any response asks etcd for progress (`RequestProgress`), but only once
/// it has delivered the history up to its creation: etcd before 3.4.25 / 3.5.8 answers such a
/// request at once, before the events still due to a watch catching up, and may answer before
/// the event of the same revision (etcd issue 15220), so an answer of revision `R` is trusted as
/// `R - 1` until a second one confirms `R`, as the Kubernetes watch cache does.
pub struct EtcdStorage {
    endpoints: Arc<Endpoints>,
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

/// A KV client of `client` that reads messages up to [`MAX_MESSAGE`].
fn kv(client: &Client) -> KvClient {
    client.kv_client().max_decoding_message_size(MAX_MESSAGE)
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
    /// Connects to etcd: one client per endpoint (connected lazily), each health-checked every
    /// `config.health_interval`, requests routed to the healthy ones.
    ///
    /// Must be called within a Tokio runtime (the health checks run as a task, which ends when
    /// the storage is dropped).
    pub async fn connect(config: EtcdConfig) -> Result<Self, StorageError> {
        if config.endpoints.is_empty() {
            return Err(StorageError::Backend("no etcd endpoints given".to_owned()));
        }
        // `hasleader` metadata: a member without a leader refuses requests before handling them
        // (so they can be sent to another member) and ends watches (re-established elsewhere).
        let options = ConnectOptions::new()
            .with_connect_timeout(config.connect_timeout)
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
            .with_require_leader(true);
        let mut members = Vec::with_capacity(config.endpoints.len());
        for url in &config.endpoints {
            let client = Client::connect([url], Some(options.clone()))
                .await
                .map_err(|e| {
                    StorageError::Backend(format!("cannot connect to etcd at {url}: {e}"))
                })?;
            members.push((url.clone(), client));
        }
        let storage = Self::with_members(members, config);
        Endpoints::spawn_health_checks(
            &storage.endpoints,
            storage.config.health_interval,
            storage.config.health_timeout,
        );
        Ok(storage)
    }

    /// Uses an etcd client already connected (`config.endpoints` is only informative): all
    /// requests go through it, with no health checks of its endpoints.
    pub fn with_client(client: Client, config: EtcdConfig) -> Self {
        let url = config.endpoints.join(",");
        Self::with_members(vec![(url, client)], config)
    }

    fn with_members(members: Vec<(String, Client)>, config: EtcdConfig) -> Self {
        let prefix = config.prefix.trim_end_matches('/').to_owned();
        Self {
            endpoints: Endpoints::new(members, &config),
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
        let response = self
            .endpoints
            .call(Call::Read, |c| async move { kv(&c).get(key, None).await })
            .await
            .map_err(backend)?;
        self.saw_header(response.header());
        match response.kvs().first() {
            Some(found) => Ok((Some(Arc::new(Self::decode(found)?)), found.mod_revision())),
            None => Ok((None, 0)),
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
            match self
                .write_if_unchanged(&etcd_key, mod_revision, Some(encode(&next)))
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
            match self
                .write_if_unchanged(&etcd_key, mod_revision, None)
                .await?
            {
                Ok(revision) => return Ok(Arc::new(current.with_resource_version(revision))),
                Err(changed) => state = changed,
            }
        }
    }

    async fn insert(&self, key: String, mut object: Object) -> Result<Arc<Object>, StorageError> {
        let etcd_key = self.etcd_key(&key);
        match self
            .write_if_unchanged(&etcd_key, 0, Some(encode(&object)))
            .await?
        {
            Ok(revision) => {
                object.set_resource_version(revision);
                Ok(Arc::new(object))
            }
            Err(_) => Err(StorageError::AlreadyExists(key)),
        }
    }

    async fn range(&self, request: ListRequest) -> Result<ListResult, StorageError> {
        let prefix = self.etcd_key(&request.prefix);
        let end = range_end(&prefix);
        let mut start = match request.start_key.as_deref() {
            Some(start) if start > request.prefix.as_str() => self.etcd_key(start),
            _ => prefix.clone(),
        };
        let requested = request.revision.filter(|r| *r > 0);
        let mut revision = requested;
        let want = request.limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
        let mut items = Vec::new();
        loop {
            let page = (want - items.len()).min(PAGE);
            let mut options = GetOptions::new()
                .with_range(end.clone())
                .with_limit(i64::try_from(page).unwrap_or(i64::MAX));
            if let Some(revision) = revision {
                options = options.with_revision(to_revision(revision));
            }
            let mut response = self
                .endpoints
                .call(Call::Read, |c| {
                    let (start, options) = (start.clone(), options.clone());
                    async move { kv(&c).get(start, Some(options)).await }
                })
                .await
                .map_err(|e| self.read_error(e, requested.unwrap_or(0)))?;
            let at = *revision.get_or_insert(self.saw_header(response.header()));
            let count = from_revision(response.count());
            let more = response.more();
            let kvs = response.take_kvs();
            for kv in &kvs {
                match Self::decode(kv) {
                    Ok(object) => items.push(Arc::new(object)),
                    Err(e) => {
                        tracing::error!(error = %e, "skipping a stored value that does not decode");
                    }
                }
            }
            let Some(last) = kvs.last().filter(|_| more) else {
                return Ok(ListResult {
                    items,
                    revision: at,
                    last_key: None,
                    remaining: 0,
                });
            };
            if items.len() >= want {
                return Ok(ListResult {
                    items,
                    revision: at,
                    last_key: Some(self.storage_key(&request.prefix, &prefix, last.key())),
                    remaining: count.saturating_sub(kvs.len() as u64),
                });
            }
            start = [last.key(), b"\0"].concat();
        }
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
        let response = self
            .endpoints
            .call(Call::Read, |c| {
                let (prefix, options) = (prefix.clone(), options.clone());
                async move { kv(&c).get(prefix, Some(options)).await }
            })
            .await
            .map_err(backend)?;
        Ok(self.saw_header(response.header()))
    }

    async fn compact_at(&self, revision: u64) -> Result<(), StorageError> {
        let revision = revision.min(*self.seen.borrow()).max(1);
        // Compacting twice to one revision is harmless: a compaction is sent again as a read.
        let compacted = self
            .endpoints
            .call(Call::Read, |mut c| async move {
                c.compact(
                    to_revision(revision),
                    Some(CompactionOptions::new().with_physical()),
                )
                .await
            })
            .await;
        match compacted {
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
