//! Reads of the current state: freshness waits and filtered, key-ordered snapshots.

use std::sync::Arc;

use kcache_store::{NAMESPACE_INDEX, Store};

use super::{CacheState, WatchCache, key_of};
use crate::error::ApiError;
use crate::filter::Filter;
use crate::object::Object;

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

    /// The objects passing `filter`, ordered by key, and the cache's resource version.
    pub(crate) fn list(&self, filter: &Filter) -> (Vec<Arc<Object>>, u64) {
        let state = self.state.read();
        let mut items = self.snapshot(&state, filter);
        items.sort_by_cached_key(|o| key_of(o));
        (items, state.rv)
    }

    pub(super) fn snapshot(&self, state: &CacheState, filter: &Filter) -> Vec<Arc<Object>> {
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
}
