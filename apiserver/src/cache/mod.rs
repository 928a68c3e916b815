//! The watch cache: the current state of one resource (a persistent ordered map) with a
//! snapshot per event still in the ring buffer of recent events, fed through the kcache-reflector
//! `ReflectorStore` trait, and the watchers served from it.
//!
//! - config.rs: [`CacheConfig`];
//! - event.rs: the ring buffer's events and what a watcher's stream receives;
//! - ring.rs: the event window and its dynamic capacity;
//! - snapshots.rs: the ordered state and its snapshots per resource version;
//! - list.rs: freshness waits and reads of the state or of a snapshot;
//! - page.rs: one page of a list read from the state or a snapshot, in key order;
//! - watchers.rs: registering watchers and where they start;
//! - dispatch.rs: delivering events and bookmarks to watchers;
//! - lifecycle.rs: the in-server controllers' subscription to the changes that may concern an
//!   object's lifecycle;
//! - store.rs: the kcache-reflector `ReflectorStore` impl a reflector writes through (each
//!   event's snapshot taken there).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use kube_core::Resource;
use parking_lot::{Mutex, RwLock};
use tokio::sync::{mpsc, watch};

use crate::object::Object;
use crate::resource::ResourceDef;

mod config;
mod dispatch;
mod event;
mod lifecycle;
mod list;
mod page;
mod ring;
mod snapshots;
mod store;
#[cfg(test)]
mod tests;
mod watchers;

pub use config::CacheConfig;
pub(crate) use event::{CacheEvent, Msg, WatchKind, event_frame};
pub(crate) use lifecycle::LifecycleEvent;
pub(crate) use list::ReadAt;
pub(crate) use page::{Scope, page};
pub(crate) use snapshots::Objects;
pub(crate) use watchers::{WatchHandle, WatchRequest, WatchStart};

use dispatch::Dispatch;
use snapshots::Snapshots;
use watchers::Watchers;

struct CacheState {
    /// The current objects by key.
    objects: Objects,
    /// The objects at the resource version of each event in the ring (and of the last relist
    /// while its events fill the ring).
    snapshots: Snapshots,
    ring: VecDeque<Arc<CacheEvent>>,
    /// The ring's current capacity.
    capacity: usize,
    rv: u64,
    window_start: u64,
    ready: bool,
    /// The in-server controllers' subscriptions (lifecycle.rs).
    lifecycle: Vec<lifecycle::Subscriber>,
}

/// The watch cache of one resource (the Kubernetes `watchCache` + `Cacher` dispatch): current
/// state, a ring buffer of events, and the watchers with their filters. A reflector writes into
/// it through [`Store`](kcache_store::Store); requests read it.
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

/// The key of `obj` in the cache: the store's `namespace/name` rule.
fn key_of(obj: &Object) -> String {
    let meta = obj.meta();
    kcache_store::namespace_key(
        meta.namespace.as_deref(),
        meta.name.as_deref().unwrap_or(""),
    )
}

impl WatchCache {
    /// An empty, not yet ready cache for `def`. Call [`WatchCache::run_dispatcher`] once.
    pub fn new(def: Arc<ResourceDef>, config: CacheConfig) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            def,
            state: RwLock::new(CacheState {
                objects: Objects::new(),
                snapshots: Snapshots::default(),
                ring: VecDeque::new(),
                capacity: config.capacity.max(1),
                rv: 0,
                window_start: 0,
                ready: false,
                lifecycle: Vec::new(),
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
}
