//! The [`Queue`] trait and the wait loop shared by the queues.

use std::future::Future;

use std::sync::Arc;

use kcache_store::{Store, StoreError, Transaction, TransactionError, TransactionType};
use tokio::sync::Notify;

use crate::error::{PopError, ProcessError};

/// A [`Store`] whose items can be popped (client-go's `cache.Queue`).
///
/// The reflector writes into it through the [`Store`] methods; a consumer (the informer's
/// process loop) calls [`pop`](Queue::pop) repeatedly until it returns [`PopError::Closed`].
pub trait Queue<K>: Store<K> {
    /// Waits until an item is ready or the queue is closed, then removes the oldest item and runs
    /// `process(&item, is_in_initial_list)` **while holding the queue's lock**, so that whatever
    /// `process` updates (the indexer) is current before the next replace or resync computes
    /// deletions. `is_in_initial_list` is true while the items of the first replace are being
    /// popped.
    ///
    /// `process` must be short and must not call back into this queue (it would deadlock).
    /// Returning [`ProcessError::Requeue`] puts the item back unless a newer item took its key.
    /// Waiting never blocks a thread; dropping the future before it completes loses nothing.
    fn pop<T, E, F>(&self, process: F) -> impl Future<Output = Result<T, PopError<E>>> + Send
    where
        F: FnOnce(&Self::Item, bool) -> Result<T, ProcessError<E>> + Send,
        T: Send,
        E: Send;

    /// Queues `item` unless something is already queued under its key.
    fn add_if_not_present(&self, item: Self::Item) -> Result<(), StoreError>;

    /// Whether the initial population is done: an add, update or delete came first, or every item
    /// of the first replace has been popped.
    fn has_synced(&self) -> bool;

    /// Closes the queue: every waiting and later `pop` returns [`PopError::Closed`] once the
    /// queue is empty. Writes are still accepted.
    fn close(&self);

    /// Whether [`close`](Queue::close) was called.
    fn is_closed(&self) -> bool;
}

/// Runs `attempt` until it yields a value, waiting on `notify` in between. The waiter is
/// registered before each attempt, so a notification sent between the attempt and the wait is
/// never lost.
pub(crate) async fn wait_for<R>(notify: &Notify, mut attempt: impl FnMut() -> Option<R>) -> R {
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(r) = attempt() {
            return r;
        }
        notified.await;
    }
}

/// The initial-population bookkeeping shared by the queues (client-go's `populated` and
/// `initialPopulationCount`).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Population {
    populated: bool,
    initial_count: usize,
}

impl Population {
    /// An add, update or delete happened.
    pub(crate) fn touch(&mut self) {
        self.populated = true;
    }

    /// A replace queued `count` items; only the first population counts.
    pub(crate) fn replaced(&mut self, count: usize) {
        if !self.populated {
            self.populated = true;
            self.initial_count = count;
        }
    }

    /// `n` items of the initial population were popped.
    pub(crate) fn popped(&mut self, n: usize) {
        self.initial_count = self.initial_count.saturating_sub(n);
    }

    /// Items of the initial population not yet popped.
    pub(crate) fn remaining(&self) -> usize {
        self.initial_count
    }

    pub(crate) fn has_synced(&self) -> bool {
        self.populated && self.initial_count == 0
    }
}

/// Applies `ops` in order with `apply`, collecting which succeeded (the body of the queues'
/// [`Store::transaction`], run under their lock).
pub(crate) fn run_transaction<K>(
    ops: Vec<Transaction<K>>,
    mut apply: impl FnMut(TransactionType, Arc<K>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let mut result = TransactionError {
        successful: Vec::new(),
        errors: Vec::new(),
    };
    for (i, op) in ops.into_iter().enumerate() {
        match apply(op.kind, op.object) {
            Ok(()) => result.successful.push(i),
            Err(e) => result.errors.push((i, e)),
        }
    }
    if result.errors.is_empty() {
        Ok(())
    } else {
        Err(result.into())
    }
}

/// Runs a process function; when the queue is deep (more than 10 items behind) and processing
/// takes over 100 ms, logs that slow event handlers are blocking the queue (client-go's trace).
pub(crate) fn run_logged<R>(queue: &'static str, depth: usize, process: impl FnOnce() -> R) -> R {
    if depth <= 10 {
        return process();
    }
    let start = std::time::Instant::now();
    let result = process();
    let elapsed = start.elapsed();
    if elapsed > std::time::Duration::from_millis(100) {
        tracing::info!(
            queue,
            depth,
            elapsed_ms = elapsed.as_millis() as u64,
            "slow event handlers blocking the queue"
        );
    }
    result
}
