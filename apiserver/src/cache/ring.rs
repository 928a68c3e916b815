//! The ring buffer of recent events: its window and its dynamic capacity. The snapshots of the
//! state leave with their events.

use tokio::time::Instant;

use super::event::CacheEvent;
use super::{CacheState, WatchCache};

/// Drops the oldest event and, as Kubernetes does when its ring is full, the snapshots up to
/// its resource version: an exact read of an older state goes to storage.
pub(super) fn evict_oldest(state: &mut CacheState) {
    if let Some(evicted) = state.ring.pop_front() {
        state.window_start = state.window_start.max(evicted.rv);
        state.snapshots.remove_through(evicted.rv);
    }
}

impl WatchCache {
    /// Empties the event window: watches must start from the cache's current resource version
    /// or later, and lists at an exact older resource version (or continuing one) go to storage
    /// (only the newest snapshot, the current state, is kept).
    pub fn compact_window(&self) {
        let mut state = self.state.write();
        state.ring.clear();
        state.window_start = state.rv;
        state.snapshots.keep_newest();
    }

    /// Grows or shrinks a full ring (see [`CacheConfig::max_capacity`](super::CacheConfig::max_capacity)).
    pub(super) fn resize_ring(&self, state: &mut CacheState, now: Instant) {
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
}
