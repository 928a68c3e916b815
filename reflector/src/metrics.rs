//! Metrics hooks of the reflector (client-go's `MetricsProvider`), with a no-op default.

use std::fmt;
use std::time::Duration;

/// Receives the reflector's measurements. Every method has a no-op default; implement the ones
/// you export. `name` is the reflector's name. Calls are made from the reflector's task and
/// must be cheap.
pub trait ReflectorMetrics: Send + Sync + fmt::Debug {
    /// A list (all pages) completed with `items` objects in `duration`.
    fn list_completed(&self, name: &str, duration: Duration, items: usize) {
        let _ = (name, duration, items);
    }
    /// A page of a list arrived (the progress of a list): `items_so_far` objects of this list
    /// so far, and the server's estimate of how many remain (`remainingItemCount`, when it
    /// sends one). An unpaginated list is one page.
    fn list_page(&self, name: &str, items_so_far: usize, remaining_item_count: Option<i64>) {
        let _ = (name, items_so_far, remaining_item_count);
    }
    /// A list failed.
    fn list_failed(&self, name: &str) {
        let _ = name;
    }
    /// A watch (or watch-list) request was opened.
    fn watch_started(&self, name: &str) {
        let _ = name;
    }
    /// A watch ended after `duration` having delivered `events` events.
    fn watch_ended(&self, name: &str, duration: Duration, events: u64) {
        let _ = (name, duration, events);
    }
    /// One watch event (including bookmarks) was received and applied.
    fn event_received(&self, name: &str) {
        let _ = name;
    }
    /// A watch event was dropped: wrong type or kind, no metadata, or not decodable.
    fn event_skipped(&self, name: &str, reason: &str) {
        let _ = (name, reason);
    }
    /// The reflector's last synced resource version changed.
    fn last_resource_version(&self, name: &str, resource_version: &str) {
        let _ = (name, resource_version);
    }
    /// The reflector will list again because of `reason`: `expired` (410 from a watch),
    /// `very_short_watch`, `watch_error`, `list_error`, `sync_error` or `resync_error`.
    fn relist(&self, name: &str, reason: &str) {
        let _ = (name, reason);
    }
    /// A watch ended and the next one resumes from the last synced resource version, because
    /// of `reason`: `closed` (the server's timeout or a broken connection), `connection` (a
    /// watch could not be opened) or `too_many_requests` (429).
    fn watch_restart(&self, name: &str, reason: &str) {
        let _ = (name, reason);
    }
}

/// The default [`ReflectorMetrics`]: records nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopMetrics;

impl ReflectorMetrics for NoopMetrics {}
