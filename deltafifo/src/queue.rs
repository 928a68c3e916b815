//! The [`Queue`] trait: a [`Store`] whose items can be popped.

use std::future::Future;

use kcache_store::{Store, StoreError};

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
