//! Watching: plain watches, the streaming watch-list, and applying events to a store.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kcache_store::{Indexer, Store, StoreError};
use kube_core::Resource;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Reflector;
use crate::error::{
    ReflectorError, is_expired, is_too_large_resource_version, is_too_many_requests,
    is_watch_error_retriable, retry_after,
};
use crate::lister_watcher::{
    ListOptions, ListWatchError, ListerWatcher, ResourceVersionMatch, WatchEvent, WatchStream,
};
use crate::reflector_store::ReflectorStore;

/// A watch that ends sooner than this without any event is a "very short watch" error.
const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

/// How one watch stream ended.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum WatchEnd {
    /// The stream ended normally (server timeout, connection closed).
    Closed,
    /// Shutdown was requested.
    Stopped,
    /// The stream ended within a second without any event.
    VeryShort,
    /// An ERROR event, or an error the stream cannot recover from.
    Failed(ListWatchError),
    /// The initial-events-end bookmark arrived (watch-list, when asked to stop there).
    InitialEventsEnd,
}

impl<K, L, S> Reflector<K, L, S>
where
    K: Resource + Send + Sync + 'static,
    L: ListerWatcher<K>,
    S: ReflectorStore<K> + ?Sized,
{
    /// For a failed watch-list attempt: backs off on 429 / connection errors, switches to RV ""
    /// on Expired / too large. True when the watch-list should be retried.
    async fn watch_list_retriable(
        &self,
        err: &ListWatchError,
        shutdown: &CancellationToken,
    ) -> bool {
        if is_watch_error_retriable(err) {
            tracing::debug!(name = %self.name, error = err as &dyn std::error::Error, "watch-list backing off");
            self.backoff_sleep(shutdown, retry_after(err)).await;
            return true;
        }
        if is_expired(err) || is_too_large_resource_version(err) {
            self.set_resource_version_unavailable(true);
            return true;
        }
        false
    }

    /// The streaming watch-list: `Ok(Some(stream))` after the store was replaced with the
    /// initial events, the stream continuing as a plain watch; `Ok(None)` when shut down.
    pub(super) async fn watch_list(
        &self,
        shutdown: &CancellationToken,
    ) -> Result<Option<WatchStream<K>>, ListWatchError> {
        loop {
            if shutdown.is_cancelled() {
                return Ok(None);
            }
            let temporary = Indexer::<K>::default();
            let rv = self.rewatch_resource_version();
            let options = ListOptions {
                resource_version: (!rv.is_empty()).then_some(rv),
                resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
                send_initial_events: Some(true),
                allow_watch_bookmarks: true,
                timeout_seconds: Some(self.watch_timeout_seconds()),
                ..ListOptions::default()
            };
            let span = tracing::debug_span!("watch_list", name = %self.name, resource_version = ?options.resource_version);
            let start = Instant::now();
            self.config.metrics.watch_started(&self.name);
            self.throttle().await;
            let opened = tokio::select! {
                () = shutdown.cancelled() => return Ok(None),
                r = self.lister_watcher.watch(&options).instrument(span.clone()) => r,
            };
            let mut stream = match opened {
                Ok(s) => s,
                Err(err) => {
                    if self.watch_list_retriable(&err, shutdown).await {
                        continue;
                    }
                    return Err(err);
                }
            };
            let mut resource_version = String::new();
            let end = self
                .handle_watch(
                    start,
                    &mut stream,
                    &temporary,
                    &mut |rv| rv.clone_into(&mut resource_version),
                    true,
                    shutdown,
                )
                .instrument(span)
                .await;
            match end {
                WatchEnd::InitialEventsEnd => {
                    self.set_resource_version_unavailable(false);
                    let items = temporary.list();
                    drop(temporary);
                    let count = items.len();
                    if let Err(err) = self.store.replace(items, &resource_version) {
                        tracing::warn!(name = %self.name, error = &err as &dyn std::error::Error, "unable to sync watch-list result");
                        return Err(ListWatchError::Other(Box::new(err)));
                    }
                    self.set_last_sync_resource_version(&resource_version);
                    self.config
                        .metrics
                        .list_completed(&self.name, start.elapsed(), count);
                    tracing::debug!(name = %self.name, items = count, resource_version = %resource_version, "watch-list synced");
                    return Ok(Some(stream));
                }
                WatchEnd::Stopped => return Ok(None),
                WatchEnd::Closed => {
                    tracing::debug!(name = %self.name, "watch-list closed before the initial events ended, restarting");
                }
                WatchEnd::VeryShort => {
                    return Err(ListWatchError::Other(format!(
                        "very short watch: {}: unexpected watch close - watch lasted less than a second and no items received",
                        self.name
                    ).into()));
                }
                WatchEnd::Failed(err) => {
                    if self.watch_list_retriable(&err, shutdown).await {
                        continue;
                    }
                    return Err(err);
                }
            }
        }
    }

    /// Watches from the last synced resource version (or continues `stream`) until the watch
    /// ends in a way that calls for a relist.
    pub(super) async fn watch(
        &self,
        mut stream: Option<WatchStream<K>>,
        shutdown: &CancellationToken,
    ) -> Result<(), ReflectorError> {
        loop {
            if shutdown.is_cancelled() {
                return Ok(());
            }
            let start = Instant::now();
            let rv = self.last_sync_resource_version();
            let span = tracing::debug_span!("watch", name = %self.name, resource_version = %rv);
            let mut current = match stream.take() {
                Some(s) => s,
                None => {
                    let options = ListOptions {
                        resource_version: (!rv.is_empty()).then_some(rv),
                        timeout_seconds: Some(self.watch_timeout_seconds()),
                        allow_watch_bookmarks: true,
                        ..ListOptions::default()
                    };
                    self.throttle().await;
                    self.config.metrics.watch_started(&self.name);
                    let opened = tokio::select! {
                        () = shutdown.cancelled() => return Ok(()),
                        r = self.lister_watcher.watch(&options).instrument(span.clone()) => r,
                    };
                    match opened {
                        Ok(s) => s,
                        Err(err) if is_watch_error_retriable(&err) => {
                            tracing::debug!(name = %self.name, error = &err as &dyn std::error::Error, "watch failed, backing off");
                            let reason = if is_too_many_requests(&err) {
                                "too_many_requests"
                            } else {
                                "connection"
                            };
                            self.config.metrics.watch_restart(&self.name, reason);
                            if !self.backoff_sleep(shutdown, retry_after(&err)).await {
                                return Ok(());
                            }
                            continue;
                        }
                        Err(source) => {
                            return Err(ReflectorError::Watch {
                                name: self.name.clone(),
                                source,
                            });
                        }
                    }
                }
            };
            let end = self
                .handle_watch(
                    start,
                    &mut current,
                    &*self.store,
                    &mut |rv| self.set_last_sync_resource_version(rv),
                    false,
                    shutdown,
                )
                .instrument(span)
                .await;
            drop(current);
            let metrics = &*self.config.metrics;
            match end {
                WatchEnd::Closed | WatchEnd::InitialEventsEnd => {
                    metrics.watch_restart(&self.name, "closed");
                }
                WatchEnd::Stopped => return Ok(()),
                WatchEnd::VeryShort => {
                    tracing::warn!(name = %self.name, "very short watch: unexpected watch close - watch lasted less than a second and no items received");
                    metrics.relist(&self.name, "very_short_watch");
                    return Ok(());
                }
                WatchEnd::Failed(err) if is_expired(&err) => {
                    tracing::debug!(name = %self.name, error = &err as &dyn std::error::Error, "watch closed");
                    metrics.relist(&self.name, "expired");
                    return Ok(());
                }
                WatchEnd::Failed(err) if is_too_many_requests(&err) => {
                    tracing::debug!(name = %self.name, "watch returned 429, backing off");
                    metrics.watch_restart(&self.name, "too_many_requests");
                    if !self.backoff_sleep(shutdown, retry_after(&err)).await {
                        return Ok(());
                    }
                }
                WatchEnd::Failed(err) => {
                    tracing::warn!(name = %self.name, error = &err as &dyn std::error::Error, "watch ended with error");
                    metrics.relist(&self.name, "watch_error");
                    return Ok(());
                }
            }
        }
    }

    /// Applies the events of one watch stream to `store`; `set_rv` follows every event.
    #[allow(clippy::too_many_arguments)]
    async fn handle_watch<T: ReflectorStore<K> + ?Sized>(
        &self,
        start: Instant,
        stream: &mut WatchStream<K>,
        store: &T,
        set_rv: &mut (dyn FnMut(&str) + Send),
        exit_on_initial_events_end: bool,
        shutdown: &CancellationToken,
    ) -> WatchEnd {
        let name = self.name.as_str();
        let metrics = &*self.config.metrics;
        let mut events: u64 = 0;
        let end = loop {
            if let Some(room) = store.room() {
                tokio::select! {
                    () = shutdown.cancelled() => break WatchEnd::Stopped,
                    () = room => {}
                }
            }
            let next = tokio::select! {
                () = shutdown.cancelled() => break WatchEnd::Stopped,
                next = stream.next() => next,
            };
            let event = match next {
                None => break WatchEnd::Closed,
                Some(Ok(event)) => event,
                Some(Err(ListWatchError::Connection(cause))) => {
                    tracing::debug!(
                        name,
                        error = &*cause as &dyn std::error::Error,
                        "watch connection broke"
                    );
                    break WatchEnd::Closed;
                }
                Some(Err(err)) => {
                    if matches!(err, ListWatchError::Decode { .. }) {
                        metrics.event_skipped(name, "undecodable");
                    }
                    break WatchEnd::Failed(err);
                }
            };
            let mut initial_events_end = false;
            let resource_version = match event {
                WatchEvent::Error(status) => break WatchEnd::Failed(ListWatchError::from(status)),
                WatchEvent::Bookmark(bookmark) => {
                    initial_events_end = bookmark.is_initial_events_end();
                    if !bookmark.resource_version.is_empty() {
                        store.bookmark(&bookmark.resource_version);
                    }
                    bookmark.resource_version
                }
                WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj)
                    if !self.acceptable(&obj) =>
                {
                    continue;
                }
                WatchEvent::Added(obj) => written(name, "add", obj, |o| store.add(o)),
                WatchEvent::Modified(obj) => written(name, "update", obj, |o| store.update(o)),
                WatchEvent::Deleted(obj) => written(name, "delete", obj, |o| store.delete(o)),
            };
            if !resource_version.is_empty() {
                set_rv(&resource_version);
                store.update_resource_version(&resource_version);
            }
            events += 1;
            metrics.event_received(name);
            if exit_on_initial_events_end && initial_events_end {
                break WatchEnd::InitialEventsEnd;
            }
        };
        let elapsed = start.elapsed();
        metrics.watch_ended(name, elapsed, events);
        if matches!(end, WatchEnd::Closed) && elapsed < VERY_SHORT_WATCH && events == 0 {
            return WatchEnd::VeryShort;
        }
        tracing::trace!(name, events, "watch ended");
        end
    }

    /// Whether a watched object may be applied: it has a name.
    fn acceptable(&self, obj: &K) -> bool {
        let name = self.name.as_str();
        if obj.meta().name.as_deref().is_none_or(str::is_empty) {
            tracing::error!(
                name,
                "watch event object without metadata (no name), skipped"
            );
            self.config.metrics.event_skipped(name, "no metadata");
            return false;
        }
        true
    }
}

/// Writes a watched object to the store with `write` and returns its resource version. A write
/// the store refuses is logged and the watch goes on, as in client-go.
fn written<K: Resource>(
    name: &str,
    op: &'static str,
    obj: Arc<K>,
    write: impl FnOnce(Arc<K>) -> Result<(), StoreError>,
) -> String {
    let resource_version = obj.meta().resource_version.clone().unwrap_or_default();
    if let Err(err) = write(obj) {
        tracing::error!(
            name,
            op,
            error = &err as &dyn std::error::Error,
            "unable to write a watch event's object to the store"
        );
    }
    resource_version
}
