//! [`EtcdStorage`]'s watches: one task per storage watch, an etcd watch with previous values
//! re-established from the last delivered revision whenever it breaks, progress notifications
//! requested and trusted as etcd issue 15220 requires.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{EventType as EtcdEventType, KeyValue, WatchOptions, WatchResponse};
use futures::StreamExt;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::{
    Endpoints, EtcdConfig, EtcdStorage, MAX_MESSAGE, from_revision, range_end, to_revision,
};
use crate::storage::{EventType, StorageError, StorageEvent, StorageWatch, WatchItem};

impl EtcdStorage {
    /// Opens a storage watch of `prefix` from revision `from` (exclusive), with progress
    /// notifications if asked for.
    pub(super) fn open_watch(&self, prefix: String, from: u64, progress: bool) -> StorageWatch {
        let (tx, rx) = mpsc::channel(256);
        let etcd_prefix = self.etcd_key(&prefix);
        let task = WatchTask {
            endpoints: Arc::clone(&self.endpoints),
            storage_prefix: prefix,
            etcd_prefix,
            delivered: from,
            progress,
            pending_progress: None,
            synced_from: None,
            seen: self.seen.subscribe(),
            compacted: self.compacted.clone(),
            config: self.config.clone(),
            tx,
        };
        tokio::spawn(task.run());
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|i| (i, rx)) })
            .boxed()
    }
}

/// One storage watch: an etcd watch re-established from where it was whenever it breaks.
struct WatchTask {
    /// The etcd members; each etcd watch goes to a healthy one, and is re-established on
    /// another when its member turns unhealthy.
    endpoints: Arc<Endpoints>,
    storage_prefix: String,
    etcd_prefix: Vec<u8>,
    /// The last revision handed out (an event's or a progress notification's).
    delivered: u64,
    progress: bool,
    /// A requested progress notification's revision, trusted only once seen twice.
    pending_progress: Option<u64>,
    /// The revision etcd had when the current etcd watch was created; the watch is synced
    /// (has no history left to send) once it delivered that far.
    synced_from: Option<u64>,
    seen: watch::Receiver<u64>,
    compacted: watch::Sender<u64>,
    config: EtcdConfig,
    tx: mpsc::Sender<Result<WatchItem, StorageError>>,
}

/// Why one etcd watch ended.
enum WatchEnd {
    /// The consumer went away.
    Dropped,
    /// The connection broke; re-establish the watch.
    Broken,
    /// History needed is compacted away.
    Compacted(u64),
}

impl WatchTask {
    async fn run(mut self) {
        let mut backoff = Duration::from_millis(20);
        loop {
            match self.watch_once().await {
                WatchEnd::Dropped => return,
                WatchEnd::Compacted(compacted) => {
                    self.compacted.send_if_modified(|c| {
                        let newer = compacted > *c;
                        if newer {
                            *c = compacted;
                        }
                        newer
                    });
                    let _ = self
                        .tx
                        .send(Err(StorageError::Compacted {
                            requested: self.delivered,
                            compacted,
                        }))
                        .await;
                    return;
                }
                WatchEnd::Broken => {
                    tokio::select! {
                        () = self.tx.closed() => return,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(self.config.max_watch_backoff);
                }
            }
        }
    }

    /// Runs one etcd watch from `delivered + 1` until it ends.
    async fn watch_once(&mut self) -> WatchEnd {
        let mut options = WatchOptions::new()
            .with_range(range_end(&self.etcd_prefix))
            .with_start_revision(to_revision(self.delivered + 1))
            .with_prev_key();
        if self.progress {
            options = options.with_progress_notify();
        }
        let endpoints = Arc::clone(&self.endpoints);
        let Some((_, member)) = endpoints.pick(None) else {
            return WatchEnd::Broken;
        };
        let was_healthy = member.is_healthy();
        let member_down = async {
            if was_healthy {
                member.unhealthy().await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::pin!(member_down);
        let mut client = member
            .client
            .watch_client()
            .max_decoding_message_size(MAX_MESSAGE);
        let opened = tokio::select! {
            () = self.tx.closed() => return WatchEnd::Dropped,
            opened = client.watch(self.etcd_prefix.clone(), Some(options)) => opened,
        };
        let mut stream = match opened {
            Ok(stream) => stream,
            Err(e) => {
                tracing::debug!(prefix = %self.storage_prefix, error = %e, "etcd watch failed to start");
                return WatchEnd::Broken;
            }
        };
        self.pending_progress = None;
        self.synced_from = None;
        let mut last_request: Option<Instant> = None;
        let mut tick = tokio::time::interval(self.config.progress_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = self.tx.closed() => return WatchEnd::Dropped,
                () = &mut member_down => {
                    tracing::debug!(prefix = %self.storage_prefix, endpoint = %member.url, "etcd member turned unhealthy: watching through another");
                    return WatchEnd::Broken;
                }
                message = stream.message() => match message {
                    Ok(Some(response)) => {
                        if let Some(end) = self.handle(response).await {
                            return end;
                        }
                    }
                    Ok(None) => return WatchEnd::Broken,
                    Err(e) => {
                        tracing::debug!(prefix = %self.storage_prefix, error = %e, "etcd watch broke");
                        return WatchEnd::Broken;
                    }
                },
                changed = self.seen.changed() => {
                    if changed.is_err() {
                        return WatchEnd::Dropped;
                    }
                }
                _ = tick.tick() => {}
            }
            let due = last_request.is_none_or(|at| at.elapsed() >= self.config.progress_interval);
            if self.wants_progress() && due {
                if stream.request_progress().await.is_err() {
                    return WatchEnd::Broken;
                }
                last_request = Some(Instant::now());
            }
        }
    }

    /// Whether to ask etcd for progress: the watch is behind a revision the storage has seen,
    /// and synced (etcd 3.4 answers a request at once with its current revision, even while
    /// it still has history to send to a watch catching up).
    fn wants_progress(&self) -> bool {
        self.progress
            && self
                .synced_from
                .is_some_and(|created| self.delivered >= created)
            && *self.seen.borrow() > self.delivered
    }

    /// Hands out what one watch response holds; `Some` when the watch ended.
    async fn handle(&mut self, response: WatchResponse) -> Option<WatchEnd> {
        if response.canceled() {
            let compacted = from_revision(response.compact_revision());
            if compacted > 0 {
                return Some(WatchEnd::Compacted(compacted));
            }
            tracing::debug!(prefix = %self.storage_prefix, reason = response.cancel_reason(), "etcd cancelled the watch");
            return Some(WatchEnd::Broken);
        }
        let header_revision = response.header().map_or(0, |h| from_revision(h.revision()));
        if response.created() {
            // The watch is synced once it has delivered the history up to its creation.
            self.synced_from = Some(header_revision);
        }
        let events = response.events();
        if events.is_empty() {
            if response.created() {
                return None;
            }
            return self
                .progress_notified(header_revision, response.watch_id())
                .await;
        }
        for event in events {
            let Some(kv) = event.kv() else { continue };
            let revision = from_revision(kv.mod_revision());
            match self.storage_event(event.event_type(), kv, event.prev_kv(), revision) {
                Ok(item) => {
                    if self.tx.send(Ok(WatchItem::Event(item))).await.is_err() {
                        return Some(WatchEnd::Dropped);
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "skipping a watch event whose value does not decode")
                }
            }
            self.delivered = self.delivered.max(revision);
        }
        None
    }

    async fn progress_notified(&mut self, revision: u64, watch_id: i64) -> Option<WatchEnd> {
        // A notification etcd sends on its own to a synced watch is ordered with its events;
        // the answer to a request (watch id -1) may overtake the event of its own revision.
        let trusted = if watch_id >= 0 {
            self.synced_from = Some(self.synced_from.map_or(revision, |c| c.min(revision)));
            revision
        } else if self.pending_progress == Some(revision) {
            revision
        } else {
            self.pending_progress = Some(revision);
            revision.saturating_sub(1)
        };
        if trusted > self.delivered {
            self.delivered = trusted;
            if self
                .tx
                .send(Ok(WatchItem::Progress(trusted)))
                .await
                .is_err()
            {
                return Some(WatchEnd::Dropped);
            }
        }
        if self.pending_progress.is_some_and(|p| p <= self.delivered) {
            self.pending_progress = None;
        }
        None
    }

    fn storage_event(
        &self,
        event_type: EtcdEventType,
        kv: &KeyValue,
        prev_kv: Option<&KeyValue>,
        revision: u64,
    ) -> Result<StorageEvent, StorageError> {
        let key: Arc<str> = Arc::from(
            format!(
                "{}{}",
                self.storage_prefix,
                String::from_utf8_lossy(
                    kv.key()
                        .strip_prefix(&*self.etcd_prefix)
                        .unwrap_or(kv.key())
                )
            )
            .as_str(),
        );
        let previous = prev_kv.map(EtcdStorage::decode).transpose()?.map(Arc::new);
        let (event_type, object) = match event_type {
            EtcdEventType::Put => {
                let event_type = if kv.create_revision() == kv.mod_revision() {
                    EventType::Added
                } else {
                    EventType::Modified
                };
                (event_type, Arc::new(EtcdStorage::decode(kv)?))
            }
            EtcdEventType::Delete => {
                let last = previous.as_ref().ok_or_else(|| {
                    StorageError::Backend(format!("a delete of {key:?} without its previous value"))
                })?;
                (
                    EventType::Deleted,
                    Arc::new(last.with_resource_version(revision)),
                )
            }
        };
        Ok(StorageEvent {
            revision,
            event_type,
            key,
            object,
            previous,
        })
    }
}
