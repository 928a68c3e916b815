//! [`CacheConfig`]: the tunables of a watch cache and its dispatcher.

use std::time::Duration;

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
    /// The changes the in-server controllers' subscription holds before it is ended as too
    /// slow (the controllers then start over from the cache's state).
    pub lifecycle_buffer: usize,
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
            lifecycle_buffer: 65_536,
        }
    }
}
