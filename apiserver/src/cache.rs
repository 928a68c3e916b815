//! The watch cache: the current state of one resource (a kcache-store [`Indexer`]) plus a ring
//! buffer of recent events, fed through the [`Store`] trait, and the watchers served from it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use kcache_store::{
    Indexer, NAMESPACE_INDEX, ObjectKey, Store, StoreError, Transaction, TransactionType,
};
use kube_core::Resource;
use parking_lot::{Mutex, RwLock};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::ApiError;
use crate::filter::Filter;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::storage::EventType;

/// Tunables of a watch cache and its dispatcher.
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// The number of events kept for watches that start from a resource version; with
    /// `max_capacity`, the initial and smallest number.
    pub capacity: usize,
    /// When set, the capacity is dynamic as in Kubernetes (which uses 100 … 102,400): when the
    /// ring is full and its oldest event is younger than `event_fresh_duration`, the capacity
    /// doubles (up to this); when it is full and the event a quarter of the capacity from the
    /// newest is older than that, it halves (down to `capacity`). `None` (the default): fixed.
    pub max_capacity: Option<usize>,
    /// How recent events must be for the capacity to grow (Kubernetes: 75 s).
    pub event_fresh_duration: Duration,
    /// The bounded buffer of each watcher (events waiting to be written to the client).
    pub watcher_buffer: usize,
    /// How often watchers that asked for bookmarks get one (Kubernetes: every minute).
    pub bookmark_interval: Duration,
    /// How often the dispatcher checks which watchers are due a bookmark (Kubernetes: 1 s).
    pub bookmark_tick: Duration,
    /// The most time the dispatcher may spend blocked on slow watchers (Kubernetes: 100 ms).
    pub dispatch_budget: Duration,
    /// How much of the budget comes back per second (Kubernetes: 50 ms).
    pub dispatch_refill_per_second: Duration,
    /// How long a request waits for the cache to reach a resource version (Kubernetes: 3 s).
    pub freshness_timeout: Duration,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            capacity: 10_000,
            max_capacity: None,
            event_fresh_duration: Duration::from_secs(75),
            watcher_buffer: 100,
            bookmark_interval: Duration::from_secs(60),
            bookmark_tick: Duration::from_secs(1),
            dispatch_budget: Duration::from_millis(100),
            dispatch_refill_per_second: Duration::from_millis(50),
            freshness_timeout: Duration::from_secs(3),
        }
    }
}

/// The type of an event as one watcher sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchKind {
    Added,
    Modified,
    Deleted,
}

impl WatchKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One event of the ring buffer, with its encodings computed once and shared by every watcher.
pub(crate) struct CacheEvent {
    pub(crate) rv: u64,
    pub(crate) event_type: EventType,
    pub(crate) object: Arc<Object>,
    pub(crate) previous: Option<Arc<Object>>,
    frames: [OnceLock<Bytes>; 3],
    stamped_previous: OnceLock<Arc<Object>>,
    /// When the cache received it (for the dynamic capacity).
    recorded: Instant,
}

impl fmt::Debug for CacheEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheEvent")
            .field("rv", &self.rv)
            .field("type", &self.event_type)
            .finish()
    }
}

/// `{"type":TYPE,"object":OBJECT}\n`.
pub(crate) fn event_frame(kind: &str, object: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(object.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

impl CacheEvent {
    /// The object a watcher receives for `kind`: for a DELETED caused by an object leaving the
    /// selector, the previous object stamped with this event's resource version.
    pub(crate) fn object_for(&self, kind: WatchKind) -> &Arc<Object> {
        match (kind, self.event_type, &self.previous) {
            (WatchKind::Deleted, EventType::Added | EventType::Modified, Some(prev)) => self
                .stamped_previous
                .get_or_init(|| Arc::new(prev.with_resource_version(self.rv))),
            _ => &self.object,
        }
    }

    /// The JSON line for `kind`, encoded once.
    pub(crate) fn frame(&self, kind: WatchKind) -> Bytes {
        self.frames[kind as usize]
            .get_or_init(|| event_frame(kind.as_str(), self.object_for(kind).raw()))
            .clone()
    }

    /// How a watcher with `filter` sees this event, if at all.
    fn kind_for(&self, filter: &Filter) -> Option<WatchKind> {
        let cur = self.event_type != EventType::Deleted && filter.matches(&self.object);
        let old = self.previous.as_ref().is_some_and(|p| filter.matches(p));
        match (cur, old) {
            (true, false) => Some(WatchKind::Added),
            (true, true) => Some(WatchKind::Modified),
            (false, true) => Some(WatchKind::Deleted),
            (false, false) => None,
        }
    }
}

/// What a watcher's stream receives.
#[derive(Debug, Clone)]
pub(crate) enum Msg {
    /// An event of the ring buffer.
    Event(WatchKind, Arc<CacheEvent>),
    /// An object of the initial state (ADDED).
    Initial(Arc<Object>),
    /// A bookmark at a resource version.
    Bookmark(u64),
    /// The bookmark that ends a watch-list's initial events.
    InitialEventsEnd(u64),
    /// Raw bytes (fault injection).
    Raw(Bytes),
}

struct WatcherEntry {
    filter: Filter,
    tx: mpsc::Sender<Msg>,
    start_rv: u64,
    bookmarks: bool,
    next_bookmark: Instant,
    deadline: Instant,
    trigger: Option<String>,
}

#[derive(Default)]
struct Watchers {
    next_id: u64,
    all: HashMap<u64, WatcherEntry>,
    by_trigger: HashMap<String, HashSet<u64>>,
    unindexed: HashSet<u64>,
}

impl Watchers {
    fn remove(&mut self, id: u64) {
        if let Some(w) = self.all.remove(&id) {
            match w.trigger {
                Some(t) => {
                    if let Some(set) = self.by_trigger.get_mut(&t) {
                        set.remove(&id);
                        if set.is_empty() {
                            self.by_trigger.remove(&t);
                        }
                    }
                }
                None => {
                    self.unindexed.remove(&id);
                }
            }
        }
    }

    fn clear(&mut self) {
        self.all.clear();
        self.by_trigger.clear();
        self.unindexed.clear();
    }
}

enum Dispatch {
    Event(Arc<CacheEvent>),
    Progress(u64),
}

struct CacheState {
    store: Indexer<Object>,
    ring: VecDeque<Arc<CacheEvent>>,
    /// The ring's current capacity.
    capacity: usize,
    rv: u64,
    window_start: u64,
    ready: bool,
}

/// The watch cache of one resource (the Kubernetes `watchCache` + `Cacher` dispatch): current
/// state, a ring buffer of events, and the watchers with their filters. A reflector writes into
/// it through [`Store`]; requests read it.
pub struct WatchCache {
    def: Arc<ResourceDef>,
    config: CacheConfig,
    state: RwLock<CacheState>,
    watchers: Mutex<Watchers>,
    rv: watch::Sender<u64>,
    dispatch: mpsc::UnboundedSender<Dispatch>,
    dispatch_rx: Mutex<Option<mpsc::UnboundedReceiver<Dispatch>>>,
}

impl fmt::Debug for WatchCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchCache")
            .field("resource", &self.def.api.plural)
            .field("rv", &*self.rv.borrow())
            .field("watchers", &self.watchers.lock().all.len())
            .finish()
    }
}

/// Where a new watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchStart {
    /// Events with a resource version greater than this.
    After(u64),
    /// The current state as ADDED events, then changes.
    State,
    /// The streaming watch-list: the state, the initial-events-end bookmark, then changes.
    WatchList,
}

/// A registered watcher: the events to send first and the channel of the rest.
#[derive(Debug)]
pub(crate) struct WatchHandle {
    pub(crate) initial: Vec<Msg>,
    pub(crate) rx: mpsc::Receiver<Msg>,
}

/// The parameters of a new watcher.
#[derive(Debug)]
pub(crate) struct WatchRequest {
    pub(crate) start: WatchStart,
    pub(crate) filter: Filter,
    pub(crate) bookmarks: bool,
    pub(crate) deadline: Instant,
}

fn evict_oldest(state: &mut CacheState) {
    if let Some(evicted) = state.ring.pop_front() {
        state.window_start = state.window_start.max(evicted.rv);
    }
}

fn key_of(obj: &Object) -> String {
    let meta = obj.meta();
    let name = meta.name.as_deref().unwrap_or("");
    match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_owned(),
    }
}

impl WatchCache {
    /// An empty, not yet ready cache for `def`. Call [`WatchCache::run_dispatcher`] once.
    pub fn new(def: Arc<ResourceDef>, config: CacheConfig) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            def,
            state: RwLock::new(CacheState {
                store: Indexer::with_namespace_index(),
                ring: VecDeque::new(),
                capacity: config.capacity.max(1),
                rv: 0,
                window_start: 0,
                ready: false,
            }),
            config,
            watchers: Mutex::new(Watchers::default()),
            rv: watch::channel(0).0,
            dispatch: tx,
            dispatch_rx: Mutex::new(Some(rx)),
        }
    }

    /// The resource this cache holds.
    pub fn resource(&self) -> &Arc<ResourceDef> {
        &self.def
    }

    /// The resource version the cache has reached (0 before the first list).
    pub fn resource_version(&self) -> u64 {
        *self.rv.borrow()
    }

    /// The number of registered watchers.
    pub fn watcher_count(&self) -> usize {
        self.watchers.lock().all.len()
    }

    /// Waits until the cache has reached `rv` (and is ready), for at most the freshness
    /// timeout; then 504 Timeout with cause ResourceVersionTooLarge.
    pub(crate) async fn wait_fresh(&self, rv: u64) -> Result<(), ApiError> {
        let mut rx = self.rv.subscribe();
        let target = rv.max(1);
        match tokio::time::timeout(
            self.config.freshness_timeout,
            rx.wait_for(|cur| *cur >= target),
        )
        .await
        {
            Ok(Ok(_)) => Ok(()),
            _ => Err(ApiError::too_large_resource_version(rv, *self.rv.borrow())),
        }
    }

    /// The objects passing `filter`, ordered by key, and the cache's resource version.
    pub(crate) fn list(&self, filter: &Filter) -> (Vec<Arc<Object>>, u64) {
        let state = self.state.read();
        let mut items = self.snapshot(&state, filter);
        items.sort_by_cached_key(|o| key_of(o));
        (items, state.rv)
    }

    fn snapshot(&self, state: &CacheState, filter: &Filter) -> Vec<Arc<Object>> {
        let candidates = match &filter.namespace {
            Some(ns) if self.def.namespaced => state
                .store
                .by_index(NAMESPACE_INDEX, ns)
                .unwrap_or_default(),
            _ => state.store.list(),
        };
        if filter.selects_all() && (filter.namespace.is_none() || self.def.namespaced) {
            candidates
        } else {
            candidates
                .into_iter()
                .filter(|o| filter.matches(o))
                .collect()
        }
    }

    /// Registers a watcher (see [`WatchStart`]); a start older than the window is 410 Expired.
    pub(crate) fn watch(&self, req: WatchRequest) -> Result<WatchHandle, ApiError> {
        let state = self.state.read();
        let mut initial = Vec::new();
        let start_rv = match req.start {
            WatchStart::After(n) => {
                if n < state.window_start {
                    return Err(ApiError::too_old(n, state.window_start));
                }
                let from = state.ring.partition_point(|e| e.rv <= n);
                for event in state.ring.range(from..) {
                    if let Some(kind) = event.kind_for(&req.filter) {
                        initial.push(Msg::Event(kind, Arc::clone(event)));
                    }
                }
                n.max(state.rv)
            }
            WatchStart::State | WatchStart::WatchList => {
                let mut items = self.snapshot(&state, &req.filter);
                items.sort_by_cached_key(|o| key_of(o));
                initial.extend(items.into_iter().map(Msg::Initial));
                if req.start == WatchStart::WatchList {
                    initial.push(Msg::InitialEventsEnd(state.rv));
                }
                state.rv
            }
        };
        let (tx, rx) = mpsc::channel(self.config.watcher_buffer.max(1));
        let trigger = self
            .def
            .trigger_field
            .as_deref()
            .and_then(|field| req.filter.exact_field(field))
            .map(str::to_owned);
        let now = Instant::now();
        let entry = WatcherEntry {
            filter: req.filter,
            tx,
            start_rv,
            bookmarks: req.bookmarks,
            next_bookmark: next_bookmark_time(now, req.deadline, self.config.bookmark_interval),
            deadline: req.deadline,
            trigger: trigger.clone(),
        };
        let mut watchers = self.watchers.lock();
        let id = watchers.next_id;
        watchers.next_id += 1;
        match trigger {
            Some(t) => {
                watchers.by_trigger.entry(t).or_default().insert(id);
            }
            None => {
                watchers.unindexed.insert(id);
            }
        }
        watchers.all.insert(id, entry);
        drop(watchers);
        drop(state);
        Ok(WatchHandle { initial, rx })
    }

    /// Empties the event window: watches must start from the cache's current resource version
    /// or later.
    pub fn compact_window(&self) {
        let mut state = self.state.write();
        state.ring.clear();
        state.window_start = state.rv;
    }

    /// Ends every watcher's stream (after what is already buffered).
    pub fn terminate_all_watchers(&self) {
        self.watchers.lock().clear();
    }

    /// Sends raw bytes to every watcher (fault injection).
    pub(crate) fn broadcast_raw(&self, bytes: &Bytes) {
        let watchers = self.watchers.lock();
        for w in watchers.all.values() {
            let _ = w.tx.try_send(Msg::Raw(bytes.clone()));
        }
    }

    fn apply(&self, obj: Arc<Object>, deleted: bool) -> Result<(), StoreError> {
        let key = key_of(&obj);
        let rv = obj.resource_version_u64();
        let mut state = self.state.write();
        let previous = state.store.get_by_key(&key);
        let event_type = match (deleted, previous.is_some()) {
            (true, _) => {
                state.store.delete_by_key(&key);
                EventType::Deleted
            }
            (false, had) => {
                state.store.add(Arc::clone(&obj))?;
                if had {
                    EventType::Modified
                } else {
                    EventType::Added
                }
            }
        };
        if deleted && previous.is_none() {
            // Nothing to tell watchers about an object the cache never had.
            self.advance(&mut state, rv);
            return Ok(());
        }
        let event = Arc::new(CacheEvent {
            rv,
            event_type,
            object: obj,
            previous,
            frames: Default::default(),
            stamped_previous: OnceLock::new(),
            recorded: Instant::now(),
        });
        self.resize_ring(&mut state, event.recorded);
        if state.ring.len() >= state.capacity {
            evict_oldest(&mut state);
        }
        state.ring.push_back(Arc::clone(&event));
        let _ = self.dispatch.send(Dispatch::Event(event));
        self.advance(&mut state, rv);
        Ok(())
    }

    /// Grows or shrinks a full ring (see [`CacheConfig::max_capacity`]).
    fn resize_ring(&self, state: &mut CacheState, now: Instant) {
        let Some(max) = self.config.max_capacity else {
            return;
        };
        let min = self.config.capacity.max(1);
        if state.ring.len() < state.capacity {
            return;
        }
        let fresh = self.config.event_fresh_duration;
        let age = |e: &CacheEvent| now.saturating_duration_since(e.recorded);
        if state.ring.front().is_some_and(|e| age(e) < fresh) {
            state.capacity = state.capacity.saturating_mul(2).min(max.max(min));
            return;
        }
        let quarter_from_newest = state.ring.len() - state.capacity / 4;
        if state
            .ring
            .get(quarter_from_newest)
            .is_some_and(|e| age(e) > fresh)
        {
            state.capacity = (state.capacity / 2).max(min);
            while state.ring.len() > state.capacity {
                evict_oldest(state);
            }
        }
    }

    fn advance(&self, state: &mut CacheState, rv: u64) {
        if rv > state.rv {
            state.rv = rv;
            self.rv.send_replace(rv);
        }
    }

    /// Runs the dispatcher until `cancel`: delivers events to watchers through their bounded
    /// buffers within the dispatch budget, and sends bookmarks.
    pub async fn run_dispatcher(self: Arc<Self>, cancel: CancellationToken) {
        let Some(mut rx) = self.dispatch_rx.lock().take() else {
            tracing::warn!(resource = %self.def.api.plural, "dispatcher already running");
            return;
        };
        let mut tick = tokio::time::interval(self.config.bookmark_tick);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut budget = self.config.dispatch_budget;
        let mut last_refill = Instant::now();
        let mut last_rv = 0u64;
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                msg = rx.recv() => match msg {
                    Some(Dispatch::Event(event)) => {
                        last_rv = last_rv.max(event.rv);
                        budget = self.dispatch_event(&event, budget).await;
                    }
                    Some(Dispatch::Progress(rv)) => last_rv = last_rv.max(rv),
                    None => break,
                },
                _ = tick.tick() => {
                    let now = Instant::now();
                    let refill = self.config.dispatch_refill_per_second.mul_f64((now - last_refill).as_secs_f64());
                    last_refill = now;
                    budget = (budget + refill).min(self.config.dispatch_budget);
                    self.send_bookmarks(now, last_rv);
                }
            }
        }
        self.terminate_all_watchers();
    }

    async fn dispatch_event(&self, event: &Arc<CacheEvent>, mut budget: Duration) -> Duration {
        let mut blocked = Vec::new();
        {
            let mut watchers = self.watchers.lock();
            let mut ids: Vec<u64> = watchers.unindexed.iter().copied().collect();
            if let Some(field) = self.def.trigger_field.as_deref() {
                let mut add = |obj: &Object| {
                    if let Some(v) = obj.field(field)
                        && let Some(set) = watchers.by_trigger.get(v.as_ref())
                    {
                        ids.extend(set.iter().copied());
                    }
                };
                add(&event.object);
                if let Some(prev) = &event.previous {
                    add(prev);
                }
                ids.sort_unstable();
                ids.dedup();
            }
            let mut gone = Vec::new();
            for id in ids {
                let Some(w) = watchers.all.get(&id) else {
                    continue;
                };
                if event.rv <= w.start_rv {
                    continue;
                }
                let Some(kind) = event.kind_for(&w.filter) else {
                    continue;
                };
                match w.tx.try_send(Msg::Event(kind, Arc::clone(event))) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(msg)) => {
                        blocked.push((id, w.tx.clone(), msg))
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => gone.push(id),
                }
            }
            for id in gone {
                watchers.remove(id);
            }
        }
        if !blocked.is_empty() {
            // Let the readers run before anyone's time is counted.
            tokio::task::yield_now().await;
        }
        for (id, tx, msg) in blocked {
            // Room may have been made meanwhile, or while the dispatcher waited for others.
            let msg = match tx.try_send(msg) {
                Ok(()) => continue,
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    self.watchers.lock().remove(id);
                    continue;
                }
                Err(mpsc::error::TrySendError::Full(msg)) => msg,
            };
            let started = Instant::now();
            let sent = !budget.is_zero()
                && matches!(tokio::time::timeout(budget, tx.send(msg)).await, Ok(Ok(())));
            budget = budget.saturating_sub(started.elapsed());
            if !sent {
                tracing::debug!(resource = %self.def.api.plural, id, "terminating a watcher that is too slow");
                self.watchers.lock().remove(id);
            }
        }
        budget
    }

    fn send_bookmarks(&self, now: Instant, last_rv: u64) {
        let mut watchers = self.watchers.lock();
        let mut gone = Vec::new();
        for (id, w) in &mut watchers.all {
            if w.tx.is_closed() {
                gone.push(*id);
                continue;
            }
            // A watch from a resource version the cache has not reached gets no bookmark yet.
            if !w.bookmarks || w.next_bookmark > now || w.start_rv > last_rv {
                continue;
            }
            if w.tx.try_send(Msg::Bookmark(last_rv)).is_ok() {
                w.next_bookmark =
                    next_bookmark_time(now, w.deadline, self.config.bookmark_interval);
            }
        }
        for id in gone {
            watchers.remove(id);
        }
    }

    fn set_rv_and_progress(&self, rv: u64) {
        let mut state = self.state.write();
        self.advance(&mut state, rv);
        let _ = self.dispatch.send(Dispatch::Progress(rv));
    }
}

/// A minute from now, or 2 s before the deadline if that comes first (and is still ahead).
fn next_bookmark_time(now: Instant, deadline: Instant, interval: Duration) -> Instant {
    let periodic = now + interval;
    match deadline.checked_sub(Duration::from_secs(2)) {
        Some(before_deadline) if before_deadline > now && before_deadline < periodic => {
            before_deadline
        }
        _ => periodic,
    }
}

fn parse_rv(rv: &str) -> u64 {
    rv.parse().unwrap_or(0)
}

impl Store<Object> for WatchCache {
    type Item = Arc<Object>;

    fn add(&self, obj: Arc<Object>) -> Result<(), StoreError> {
        self.apply(obj, false)
    }

    fn update(&self, obj: Arc<Object>) -> Result<(), StoreError> {
        self.apply(obj, false)
    }

    fn delete(&self, obj: Arc<Object>) -> Result<(), StoreError> {
        self.apply(obj, true)
    }

    fn list(&self) -> Vec<Arc<Object>> {
        self.state.read().store.list()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        Store::list_keys(&self.state.read().store)
    }

    fn get(&self, obj: &Object) -> Result<Option<Arc<Object>>, StoreError> {
        Ok(self.state.read().store.get_by_key(&key_of(obj)))
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<Object>> {
        Store::get_by_key(&self.state.read().store, key)
    }

    fn replace(&self, items: Vec<Arc<Object>>, resource_version: &str) -> Result<(), StoreError> {
        let rv = parse_rv(resource_version);
        let was_ready = {
            let mut state = self.state.write();
            state.store.replace(items, resource_version)?;
            state.ring.clear();
            state.window_start = rv;
            let was_ready = state.ready;
            state.ready = true;
            state.rv = rv;
            self.rv.send_replace(rv);
            let _ = self.dispatch.send(Dispatch::Progress(rv));
            was_ready
        };
        if was_ready {
            // A relist: watchers may have missed events; they must start again.
            self.terminate_all_watchers();
        }
        Ok(())
    }

    fn resync(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn last_store_sync_resource_version(&self) -> String {
        self.state.read().rv.to_string()
    }

    fn bookmark(&self, resource_version: &str) {
        self.set_rv_and_progress(parse_rv(resource_version));
    }

    fn update_resource_version(&self, resource_version: &str) {
        self.set_rv_and_progress(parse_rv(resource_version));
    }

    fn transaction(&self, ops: Vec<Transaction<Object>>) -> Result<(), StoreError> {
        for op in ops {
            match op.kind {
                TransactionType::Added | TransactionType::Updated => {
                    self.apply(op.object, false)?
                }
                TransactionType::Deleted => self.apply(op.object, true)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::builtin_resources;

    fn cm(name: &str, rv: u64) -> Arc<Object> {
        let json = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"default","resourceVersion":"{rv}"}}}}"#
        );
        Arc::new(Object::from_json(json.as_bytes()).unwrap())
    }

    fn cache(config: CacheConfig) -> Arc<WatchCache> {
        let def = builtin_resources()
            .into_iter()
            .find(|d| d.api.plural == "configmaps")
            .unwrap();
        let cache = Arc::new(WatchCache::new(Arc::new(def), config));
        tokio::spawn(Arc::clone(&cache).run_dispatcher(CancellationToken::new()));
        cache.replace(Vec::new(), "1").unwrap();
        cache
    }

    fn watch_after(cache: &WatchCache, rv: u64) -> Result<WatchHandle, ApiError> {
        cache.watch(WatchRequest {
            start: WatchStart::After(rv),
            filter: Filter::default(),
            bookmarks: false,
            deadline: Instant::now() + Duration::from_secs(3600),
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_stuck_watcher_is_cut_off_and_the_others_keep_flowing() {
        let cache = cache(CacheConfig {
            watcher_buffer: 2,
            ..CacheConfig::default()
        });
        let mut stuck = watch_after(&cache, 1).unwrap();
        let mut fast = watch_after(&cache, 1).unwrap();
        let reader = tokio::spawn(async move {
            let mut seen = 0;
            while seen < 20 {
                match fast.rx.recv().await {
                    Some(Msg::Event(..)) => seen += 1,
                    Some(_) => {}
                    None => break,
                }
            }
            seen
        });
        for i in 0..20 {
            cache.add(cm(&format!("cm-{i}"), i + 2)).unwrap();
            tokio::task::yield_now().await;
        }
        assert_eq!(
            reader.await.unwrap(),
            20,
            "the fast watcher saw every event"
        );
        let mut buffered = 0;
        while stuck.rx.recv().await.is_some() {
            buffered += 1;
        }
        assert!(
            buffered < 20,
            "the stuck watcher's stream ended after its buffer"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_older_than_the_window_is_too_old_and_a_relist_empties_the_window() {
        let cache = cache(CacheConfig {
            capacity: 3,
            ..CacheConfig::default()
        });
        for i in 0..5 {
            cache.add(cm(&format!("cm-{i}"), i + 2)).unwrap();
        }
        // Events 4, 5 and 6 are buffered: watches from 3 on are served, older ones are too old.
        assert_eq!(watch_after(&cache, 3).unwrap().initial.len(), 3);
        let err = watch_after(&cache, 2).unwrap_err();
        assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
        assert_eq!(err.message, "too old resource version: 2 (3)");
        let mut open = watch_after(&cache, 6).unwrap();
        cache.replace(vec![cm("only", 10)], "10").unwrap();
        assert!(
            open.rx.recv().await.is_none(),
            "a relist ends every watcher"
        );
        assert!(watch_after(&cache, 6).is_err());
        assert!(watch_after(&cache, 10).unwrap().initial.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn dynamic_capacity_grows_while_events_are_fresh_and_shrinks_when_they_age() {
        let cache = cache(CacheConfig {
            capacity: 4,
            max_capacity: Some(16),
            ..CacheConfig::default()
        });
        let window = |cache: &WatchCache| cache.state.read().ring.len();
        // RVs 2..=21 within a second: 4 → 8 → 16 events kept, then the oldest go.
        for i in 0..20 {
            cache.add(cm(&format!("cm-{i}"), i + 2)).unwrap();
        }
        assert_eq!(window(&cache), 16);
        assert_eq!(watch_after(&cache, 5).unwrap().initial.len(), 16);
        assert!(watch_after(&cache, 4).is_err());
        // 76 s later the full ring's recent quarter is stale: it halves, and the next halves again.
        tokio::time::advance(Duration::from_secs(76)).await;
        cache.add(cm("late-1", 22)).unwrap();
        assert_eq!(window(&cache), 8);
        cache.add(cm("late-2", 23)).unwrap();
        assert_eq!(
            window(&cache),
            4,
            "halved to the minimum, full, the oldest gone"
        );
        assert_eq!(watch_after(&cache, 19).unwrap().initial.len(), 4);
        let err = watch_after(&cache, 18).unwrap_err();
        assert_eq!(err.code, 410);
    }

    #[tokio::test(start_paused = true)]
    async fn bookmarks_carry_the_latest_dispatched_resource_version() {
        let config = CacheConfig {
            bookmark_interval: Duration::from_secs(60),
            ..CacheConfig::default()
        };
        let cache = cache(config);
        let mut w = cache
            .watch(WatchRequest {
                start: WatchStart::After(1),
                filter: Filter::default(),
                bookmarks: true,
                deadline: Instant::now() + Duration::from_secs(3600),
            })
            .unwrap();
        cache.add(cm("a", 2)).unwrap();
        cache.bookmark("7");
        assert!(matches!(
            w.rx.recv().await,
            Some(Msg::Event(WatchKind::Added, _))
        ));
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(matches!(w.rx.recv().await, Some(Msg::Bookmark(7))));
    }
}
