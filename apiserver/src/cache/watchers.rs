//! The registered watchers (indexed by their trigger field value) and how a new one starts.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::WatchCache;
use super::event::Msg;
use crate::error::ApiError;
use crate::filter::Filter;

/// One registered watcher.
pub(super) struct WatcherEntry {
    pub(super) filter: Filter,
    pub(super) tx: mpsc::Sender<Msg>,
    /// Events up to this resource version are not sent.
    pub(super) start_rv: u64,
    pub(super) bookmarks: bool,
    pub(super) next_bookmark: Instant,
    pub(super) deadline: Instant,
    /// The value of the resource's trigger field the watcher selects, if it selects one.
    trigger: Option<String>,
}

/// The registered watchers, indexed by the trigger field value they select.
#[derive(Default)]
pub(super) struct Watchers {
    next_id: u64,
    pub(super) all: HashMap<u64, WatcherEntry>,
    pub(super) by_trigger: HashMap<String, HashSet<u64>>,
    /// The watchers selecting no single trigger value: they see every event.
    pub(super) unindexed: HashSet<u64>,
}

impl Watchers {
    /// Unregisters watcher `id` (its stream ends after what is buffered).
    pub(super) fn remove(&mut self, id: u64) {
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

    pub(super) fn clear(&mut self) {
        self.all.clear();
        self.by_trigger.clear();
        self.unindexed.clear();
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

impl WatchCache {
    /// The number of registered watchers.
    pub fn watcher_count(&self) -> usize {
        self.watchers.lock().all.len()
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
                let items = self.snapshot(&state, &req.filter);
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

    /// Ends every watcher's stream (after what is already buffered), and the in-server
    /// controllers' lifecycle subscriptions (they subscribe again from the state).
    pub fn terminate_all_watchers(&self) {
        self.watchers.lock().clear();
        self.end_lifecycle_subscriptions();
    }

    /// Sends raw bytes to every watcher (fault injection).
    #[cfg(feature = "testing")]
    pub(crate) fn broadcast_raw(&self, bytes: &bytes::Bytes) {
        let watchers = self.watchers.lock();
        for w in watchers.all.values() {
            let _ = w.tx.try_send(Msg::Raw(bytes.clone()));
        }
    }
}

/// A minute from now, or 2 s before the deadline if that comes first (and is still ahead).
pub(super) fn next_bookmark_time(now: Instant, deadline: Instant, interval: Duration) -> Instant {
    let periodic = now + interval;
    match deadline.checked_sub(Duration::from_secs(2)) {
        Some(before_deadline) if before_deadline > now && before_deadline < periodic => {
            before_deadline
        }
        _ => periodic,
    }
}
