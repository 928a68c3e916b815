//! Reads of the state: freshness waits, the current state or the snapshot at a resource version,
//! and filtered, key-ordered lists of it.

use std::sync::Arc;

use super::page::{Scope, page};
use super::snapshots::Objects;
use super::{CacheState, WatchCache};
use crate::error::ApiError;
use crate::filter::Filter;
use crate::object::Object;

/// Which state of the cache a read takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadAt {
    /// The current state, at the cache's resource version.
    Latest,
    /// The state at exactly this resource version, from the snapshot covering it.
    Exact(u64),
}

impl WatchCache {
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

    /// Whether the cache has had its first list.
    pub(crate) fn is_ready(&self) -> bool {
        self.state.read().ready
    }

    /// Whether a read of the state at exactly `rv` can be served here: the cache has not
    /// reached `rv` yet (the read waits for it), or a snapshot covers it (Kubernetes'
    /// `shouldDelegateExactRV`).
    pub(crate) fn can_serve_exact(&self, rv: u64) -> bool {
        let state = self.state.read();
        rv > state.rv || state.snapshots.at(rv).is_some()
    }

    /// The objects at `at` and the resource version they are at: O(1), a clone of the
    /// persistent map. `None` when no snapshot covers an exact resource version (any more).
    pub(crate) fn read(&self, at: ReadAt) -> Option<(Objects, u64)> {
        let state = self.state.read();
        match at {
            ReadAt::Latest => Some((state.objects.clone(), state.rv)),
            ReadAt::Exact(rv) if rv <= state.rv => {
                state.snapshots.at(rv).map(|objects| (objects.clone(), rv))
            }
            ReadAt::Exact(_) => None,
        }
    }

    /// The objects passing `filter`, ordered by key, and the cache's resource version.
    pub(crate) fn list(&self, filter: &Filter) -> (Vec<Arc<Object>>, u64) {
        let state = self.state.read();
        (self.snapshot(&state, filter), state.rv)
    }

    /// The current objects passing `filter`, ordered by key.
    pub(super) fn snapshot(&self, state: &CacheState, filter: &Filter) -> Vec<Arc<Object>> {
        page(&state.objects, &Scope::new(&self.def, filter), None, None).items
    }
}
