//! What an informer reports about itself: [`InformerStats`], read at any time with
//! [`SharedIndexInformer::stats`](crate::SharedIndexInformer::stats) (the `prometheus` feature
//! exports it). The gauges are read where the facts are (the indexer, the queue, each
//! listener's counters) when asked; only relists and watch restarts are counted as they happen,
//! by the [`ReflectorMetrics`] wrapper the informer gives its reflector.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use kcache_reflector::ReflectorMetrics;
use parking_lot::Mutex;
use tokio::time::Instant;

/// A snapshot of one informer (client-go's KEP-4346 informer metrics, and the relists and watch
/// restarts of its reflector).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InformerStats {
    /// The informer's name.
    pub name: String,
    /// Objects in the cache (the indexer).
    pub stored_items: usize,
    /// Keys or deltas waiting in the queue between the reflector and the cache.
    pub queued_items: usize,
    /// The resource version the informer last synced to ("" before the first list).
    pub last_sync_resource_version: String,
    /// One entry per handler or event stream, in the order they were added.
    pub handlers: Vec<HandlerStats>,
    /// Lists after the first, by reason (see [`ReflectorMetrics::relist`]).
    pub relists: BTreeMap<String, u64>,
    /// Watches resumed from the last synced resource version, by reason (see
    /// [`ReflectorMetrics::watch_restart`]).
    pub watch_restarts: BTreeMap<String, u64>,
}

/// A snapshot of one handler's buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandlerStats {
    /// The handler's name ([`HandlerOptions::name`](crate::HandlerOptions::name), else
    /// `handler-<id>`).
    pub name: String,
    /// Notifications handed to the handler and not yet handled (or, for an event stream, not
    /// yet taken).
    pub pending_notifications: usize,
    /// How long the oldest of them has waited (zero when none is pending).
    pub oldest_pending_age: Duration,
}

/// The counters of one listener: how many notifications are pending and when the oldest was sent.
#[derive(Debug)]
pub(crate) struct ListenerStats {
    pending: AtomicUsize,
    /// When the oldest pending notification was sent, in nanoseconds after `epoch`.
    oldest_sent: AtomicU64,
    epoch: Instant,
}

impl ListenerStats {
    pub(crate) fn new() -> Self {
        Self {
            pending: AtomicUsize::new(0),
            oldest_sent: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }

    fn since_epoch(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    /// A notification sent at `sent` joined the buffer.
    pub(crate) fn sent(&self, sent: Instant) {
        if self.pending.fetch_add(1, Ordering::AcqRel) == 0 {
            self.oldest_sent
                .store(self.since_epoch(sent), Ordering::Release);
        }
    }

    /// The notification sent at `sent` is now the oldest pending one (being handled).
    pub(crate) fn taking(&self, sent: Instant) {
        self.oldest_sent
            .store(self.since_epoch(sent), Ordering::Release);
    }

    /// A notification left the buffer (handled, taken, or dropped).
    pub(crate) fn done(&self) {
        self.pending.fetch_sub(1, Ordering::AcqRel);
    }

    pub(crate) fn snapshot(&self, name: String) -> HandlerStats {
        let pending = self.pending.load(Ordering::Acquire);
        let oldest_pending_age = if pending == 0 {
            Duration::ZERO
        } else {
            let sent = Duration::from_nanos(self.oldest_sent.load(Ordering::Acquire));
            Instant::now().saturating_duration_since(self.epoch + sent)
        };
        HandlerStats {
            name,
            pending_notifications: pending,
            oldest_pending_age,
        }
    }
}

/// Relists and watch restarts by reason, counted by [`CountingMetrics`].
#[derive(Debug, Default)]
pub(crate) struct WatchCounters {
    relists: Mutex<BTreeMap<String, u64>>,
    watch_restarts: Mutex<BTreeMap<String, u64>>,
}

impl WatchCounters {
    pub(crate) fn relists(&self) -> BTreeMap<String, u64> {
        self.relists.lock().clone()
    }

    pub(crate) fn watch_restarts(&self) -> BTreeMap<String, u64> {
        self.watch_restarts.lock().clone()
    }
}

fn count(counters: &Mutex<BTreeMap<String, u64>>, reason: &str) {
    let mut counters = counters.lock();
    match counters.get_mut(reason) {
        Some(n) => *n += 1,
        None => {
            counters.insert(reason.to_owned(), 1);
        }
    }
}

/// The reflector metrics an informer hands its reflector: the configured ones, plus its own
/// count of relists and watch restarts (both rare: never on the path of a watch event).
pub(crate) struct CountingMetrics {
    pub(crate) inner: Arc<dyn ReflectorMetrics>,
    pub(crate) counters: Arc<WatchCounters>,
}

impl fmt::Debug for CountingMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingMetrics")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl ReflectorMetrics for CountingMetrics {
    fn list_completed(&self, name: &str, duration: Duration, items: usize) {
        self.inner.list_completed(name, duration, items);
    }
    fn list_page(&self, name: &str, items_so_far: usize, remaining_item_count: Option<i64>) {
        self.inner
            .list_page(name, items_so_far, remaining_item_count);
    }
    fn list_failed(&self, name: &str) {
        self.inner.list_failed(name);
    }
    fn watch_started(&self, name: &str) {
        self.inner.watch_started(name);
    }
    fn watch_ended(&self, name: &str, duration: Duration, events: u64) {
        self.inner.watch_ended(name, duration, events);
    }
    fn event_received(&self, name: &str) {
        self.inner.event_received(name);
    }
    fn event_skipped(&self, name: &str, reason: &str) {
        self.inner.event_skipped(name, reason);
    }
    fn last_resource_version(&self, name: &str, resource_version: &str) {
        self.inner.last_resource_version(name, resource_version);
    }
    fn relist(&self, name: &str, reason: &str) {
        count(&self.counters.relists, reason);
        self.inner.relist(name, reason);
    }
    fn watch_restart(&self, name: &str, reason: &str) {
        count(&self.counters.watch_restarts, reason);
        self.inner.watch_restart(name, reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_oldest_pending_notification_ages_until_it_is_handled() {
        let stats = ListenerStats::new();
        let first = Instant::now();
        stats.sent(first);
        tokio::time::advance(Duration::from_secs(2)).await;
        let second = Instant::now();
        stats.sent(second);
        tokio::time::advance(Duration::from_secs(3)).await;
        let seen = stats.snapshot("h".into());
        assert_eq!(seen.pending_notifications, 2);
        assert_eq!(seen.oldest_pending_age, Duration::from_secs(5));

        // The first is handled: the second is now the oldest.
        stats.taking(first);
        stats.done();
        stats.taking(second);
        let seen = stats.snapshot("h".into());
        assert_eq!(seen.pending_notifications, 1);
        assert_eq!(seen.oldest_pending_age, Duration::from_secs(3));

        stats.done();
        assert_eq!(
            stats.snapshot("h".into()).oldest_pending_age,
            Duration::ZERO
        );
        // A notification sent to an idle listener is the oldest at once.
        tokio::time::advance(Duration::from_secs(7)).await;
        stats.sent(Instant::now());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(
            stats.snapshot("h".into()).oldest_pending_age,
            Duration::from_secs(1)
        );
    }
}
