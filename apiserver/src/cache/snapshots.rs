//! The cache's state as a persistent ordered map, and its snapshots per resource version
//! (Kubernetes' `storeSnapshotter`, KEP-4988 `ListFromCacheSnapshot`).
//!
//! The state is an `imbl::OrdMap` keyed by the store's `namespace/name` key: cloning it is O(1)
//! and a later write copies only the O(log n) nodes on its path, so the cache takes a snapshot
//! after every event, as Kubernetes clones its B-tree. Snapshots are kept for the resource
//! versions of the events in the ring window and dropped with them; lists read a snapshot (or
//! the current state) in key order without sorting.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::object::Object;

/// The objects of a cache (or of one of its snapshots), ordered by key.
pub(crate) type Objects = imbl::OrdMap<Arc<str>, Arc<Object>>;

/// The state after each event still in the window, by resource version.
#[derive(Default)]
pub(super) struct Snapshots {
    by_rv: BTreeMap<u64, Objects>,
}

impl Snapshots {
    /// Records `objects` as the state at `rv` (a clone: O(1)).
    pub(super) fn add(&mut self, rv: u64, objects: &Objects) {
        self.by_rv.insert(rv, objects.clone());
    }

    /// Forgets every snapshot and records `objects` as the state at `rv` (after a relist).
    pub(super) fn reset(&mut self, rv: u64, objects: &Objects) {
        self.by_rv.clear();
        self.add(rv, objects);
    }

    /// The state at `rv`: the newest snapshot at or before it (Kubernetes' `GetLessOrEqual`),
    /// if the window still has one.
    pub(super) fn at(&self, rv: u64) -> Option<&Objects> {
        self.by_rv
            .range(..=rv)
            .next_back()
            .map(|(_, objects)| objects)
    }

    /// Drops the snapshots at `rv` and before (their events left the window).
    pub(super) fn remove_through(&mut self, rv: u64) {
        self.by_rv = match rv.checked_add(1) {
            Some(after) => self.by_rv.split_off(&after),
            None => BTreeMap::new(),
        };
    }

    /// Keeps only the newest snapshot (the window was emptied; it is the current state).
    pub(super) fn keep_newest(&mut self) {
        if let Some(newest) = self.by_rv.pop_last() {
            self.by_rv.clear();
            self.by_rv.insert(newest.0, newest.1);
        }
    }

    /// How many snapshots are kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_rv.len()
    }
}
