//! The dispatcher: delivers events to watchers through their bounded buffers within the
//! dispatch budget, and sends bookmarks.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::WatchCache;
use super::event::{CacheEvent, Msg};
use super::watchers::next_bookmark_time;
use crate::object::Object;

pub(super) enum Dispatch {
    Event(Arc<CacheEvent>),
    Progress(u64),
    /// Ends the dispatcher after the events queued before it (see [`WatchCache::close`]).
    Close,
}

impl WatchCache {
    /// Runs the dispatcher until `cancel`: delivers events to watchers through their bounded
    /// buffers within the dispatch budget, and sends bookmarks.
    pub async fn run_dispatcher(self: Arc<Self>, cancel: CancellationToken) {
        let Some(mut rx) = self.dispatch_rx.lock().take() else {
            tracing::warn!(resource = %self.def.api.plural, "dispatcher already running");
            return;
        };
        let mut tick = tokio::time::interval(self.config.bookmark_tick);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut budget = self.config.dispatch_budget;
        let mut last_refill = Instant::now();
        let mut last_rv = 0u64;
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                msg = rx.recv() => match msg {
                    Some(Dispatch::Event(event)) => {
                        last_rv = last_rv.max(event.rv);
                        budget = self.dispatch_event(&event, budget).await;
                    }
                    Some(Dispatch::Progress(rv)) => last_rv = last_rv.max(rv),
                    Some(Dispatch::Close) | None => break,
                },
                _ = tick.tick() => {
                    let now = Instant::now();
                    let refill = self.config.dispatch_refill_per_second.mul_f64((now - last_refill).as_secs_f64());
                    last_refill = now;
                    budget = (budget + refill).min(self.config.dispatch_budget);
                    self.send_bookmarks(now, last_rv);
                }
            }
        }
        self.terminate_all_watchers();
    }

    /// Ends the dispatcher once it has delivered every event the cache holds so far; then
    /// every watcher's stream ends (a resource no longer served).
    pub(crate) fn close(&self) {
        let _ = self.dispatch.send(Dispatch::Close);
    }

    async fn dispatch_event(&self, event: &Arc<CacheEvent>, mut budget: Duration) -> Duration {
        let mut blocked = Vec::new();
        {
            let mut watchers = self.watchers.lock();
            let mut ids: Vec<u64> = watchers.unindexed.iter().copied().collect();
            if let Some(field) = self.def.trigger_field.as_deref() {
                let mut add = |obj: &Object| {
                    if let Some(v) = obj.field(field)
                        && let Some(set) = watchers.by_trigger.get(v.as_ref())
                    {
                        ids.extend(set.iter().copied());
                    }
                };
                add(&event.object);
                if let Some(prev) = &event.previous {
                    add(prev);
                }
                ids.sort_unstable();
                ids.dedup();
            }
            let mut gone = Vec::new();
            for id in ids {
                let Some(w) = watchers.all.get(&id) else {
                    continue;
                };
                if event.rv <= w.start_rv {
                    continue;
                }
                let Some(kind) = event.kind_for(&w.filter) else {
                    continue;
                };
                match w.tx.try_send(Msg::Event(kind, Arc::clone(event))) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(msg)) => {
                        blocked.push((id, w.tx.clone(), msg))
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => gone.push(id),
                }
            }
            for id in gone {
                watchers.remove(id);
            }
        }
        if !blocked.is_empty() {
            // Let the readers run before anyone's time is counted.
            tokio::task::yield_now().await;
        }
        for (id, tx, msg) in blocked {
            // Room may have been made meanwhile, or while the dispatcher waited for others.
            let msg = match tx.try_send(msg) {
                Ok(()) => continue,
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    self.watchers.lock().remove(id);
                    continue;
                }
                Err(mpsc::error::TrySendError::Full(msg)) => msg,
            };
            let started = Instant::now();
            let sent = !budget.is_zero()
                && matches!(tokio::time::timeout(budget, tx.send(msg)).await, Ok(Ok(())));
            budget = budget.saturating_sub(started.elapsed());
            if !sent {
                tracing::debug!(resource = %self.def.api.plural, id, "terminating a watcher that is too slow");
                self.watchers.lock().remove(id);
            }
        }
        budget
    }

    fn send_bookmarks(&self, now: Instant, last_rv: u64) {
        let mut watchers = self.watchers.lock();
        let mut gone = Vec::new();
        for (id, w) in &mut watchers.all {
            if w.tx.is_closed() {
                gone.push(*id);
                continue;
            }
            // A watch from a resource version the cache has not reached gets no bookmark yet.
            if !w.bookmarks || w.next_bookmark > now || w.start_rv > last_rv {
                continue;
            }
            if w.tx.try_send(Msg::Bookmark(last_rv)).is_ok() {
                w.next_bookmark =
                    next_bookmark_time(now, w.deadline, self.config.bookmark_interval);
            }
        }
        for id in gone {
            watchers.remove(id);
        }
    }
}
