//! [`WorkItem`]: an item handed out by [`WorkQueue::next`], marked done when dropped.

use std::fmt;
use std::hash::Hash;
use std::ops::Deref;
use std::time::Duration;

use crate::WorkQueue;

/// An item being processed, handed out by [`WorkQueue::next`]. Dropping it calls
/// [`WorkQueue::done`], so an early return, a `?` or a panic in the worker never leaves the item
/// marked as processing forever (which would stop it from ever being handed out again).
///
/// Dereferences to the item. [`forget`](WorkItem::forget) and
/// [`retry_rate_limited`](WorkItem::retry_rate_limited) tell the queue's rate limiter how the
/// processing went.
///
/// ```
/// use kcache_workqueue::WorkQueue;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let queue = WorkQueue::<&str>::new();
/// queue.add("default/web");
/// if let Some(item) = queue.next().await {
///     assert_eq!(*item, "default/web");
///     item.forget(); // reconciled; dropping `item` marks it done
/// }
/// assert_eq!(queue.processing(), 0);
/// # }
/// ```
#[must_use = "dropping a WorkItem marks it done at once"]
pub struct WorkItem<T: Eq + Hash + Clone + Send + Sync + 'static> {
    queue: WorkQueue<T>,
    item: T,
}

impl<T: Eq + Hash + Clone + Send + Sync + 'static> WorkItem<T> {
    pub(crate) fn new(queue: WorkQueue<T>, item: T) -> Self {
        Self { queue, item }
    }

    /// The item.
    pub fn item(&self) -> &T {
        &self.item
    }

    /// Tells the rate limiter the item succeeded: its next failure starts from the base delay.
    pub fn forget(&self) {
        self.queue.forget(&self.item);
    }

    /// Adds the item again after the delay the rate limiter gives (it is handed out again only
    /// after this guard is dropped).
    pub fn retry_rate_limited(&self) {
        self.queue.add_rate_limited(self.item.clone());
    }

    /// Adds the item again after `delay`.
    pub fn retry_after(&self, delay: Duration) {
        self.queue.add_after(self.item.clone(), delay);
    }
}

impl<T: Eq + Hash + Clone + Send + Sync + 'static> Deref for WorkItem<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.item
    }
}

impl<T: Eq + Hash + Clone + Send + Sync + 'static> Drop for WorkItem<T> {
    fn drop(&mut self) {
        self.queue.done(&self.item);
    }
}

impl<T: Eq + Hash + Clone + Send + Sync + fmt::Debug + 'static> fmt::Debug for WorkItem<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WorkItem").field(&self.item).finish()
    }
}
