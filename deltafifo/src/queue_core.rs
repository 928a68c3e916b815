//! [`QueueCore`]: the lock, wake-ups, bookkeeping and pop loop the three queues share, and the
//! [`Policy`] and [`Pending`] traits through which each queue says what differs.
//!
//! A queue is a `QueueCore` over its policy: the policy decides how a write lands among the
//! pending items (replace the queued object, append a delta, or queue every event), what a
//! replace and a resync queue, and how the pending items are held and taken; the core does the
//! rest once — the lock, the initial-population count, the closed flag, the resource version,
//! waking poppers, transactions, and running the process function under the lock.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use kcache_store::{
    KeyFunc, ObjectKey, Store, StoreError, Transaction, TransactionError, TransactionType,
};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::error::{PopError, ProcessError, settle};
use crate::population::Population;
use crate::queue::Queue;

/// How a queue holds the items waiting to be popped.
pub(crate) trait Pending: Default {
    /// What a process function is handed.
    type Item;
    /// What one pop removes, kept to put it back on a requeue.
    type Taken;

    /// Removes the next places, at most `limit` and never more than `remaining_initial` (when
    /// positive), puts what they held into `taken` (nothing for a place whose item was deleted)
    /// and returns how many places were removed; `None` when nothing is queued. What is taken is
    /// built in `taken`, where the pop keeps it: a pop moves no `Deltas` around.
    fn take(
        &mut self,
        limit: usize,
        remaining_initial: usize,
        taken: &mut Option<Self::Taken>,
    ) -> Option<usize>;

    /// The item of what a pop took.
    fn item(taken: &Self::Taken) -> &Self::Item;

    /// Puts a popped item back (a process function asked for it).
    fn requeue(&mut self, taken: Self::Taken);

    /// Queues `item` under `key` unless something is queued under it.
    fn insert_if_absent(&mut self, key: ObjectKey, item: Self::Item);

    /// The number of queued keys or deltas (a deleted [`Fifo`](crate::Fifo) key does not count).
    fn len(&self) -> usize;

    /// The item queued under `key`.
    fn get_by_key(&self, key: &str) -> Option<Self::Item>;
}

/// An item whose key can be computed (what `add_if_not_present` queues).
pub(crate) trait ItemKey<K> {
    /// The item's key.
    fn key(&self, key_func: &KeyFunc<K>) -> Result<String, StoreError>;
}

/// What a queue does with writes: everything that differs between the queues but how pending
/// items are held.
pub(crate) trait Policy {
    /// The objects written to the queue.
    type Object;
    /// How pending items are held.
    type Pending: Pending<Item: ItemKey<Self::Object>>;

    /// The queue's name, for Debug and the slow-handler log.
    const NAME: &'static str;

    /// Computes an object's key.
    fn key_func(&self) -> &KeyFunc<Self::Object>;

    /// Queues an add, update or delete of `obj` under `key`.
    fn apply(
        &self,
        pending: &mut Self::Pending,
        key: ObjectKey,
        kind: TransactionType,
        obj: Arc<Self::Object>,
    ) -> Result<(), StoreError>;

    /// Queues a relist of `items` at `resource_version`; returns how many items make up the
    /// initial population if this is the first one.
    fn replace(
        &self,
        pending: &mut Self::Pending,
        items: Vec<Arc<Self::Object>>,
        resource_version: &str,
    ) -> Result<usize, StoreError>;

    /// Queues a resync.
    fn resync(&self, pending: &mut Self::Pending) -> Result<(), StoreError>;

    /// The queued items (the queue's [`Store::list`](kcache_store::Store::list)).
    fn list(pending: &Self::Pending) -> Vec<Item<Self>>;

    /// The queued keys.
    fn list_keys(pending: &Self::Pending) -> Vec<ObjectKey>;

    /// Queues what a bookmark queues (nothing by default).
    fn bookmark(&self, _pending: &mut Self::Pending, _resource_version: &str) {}

    /// Adds the policy's settings to the queue's Debug output.
    fn debug_fields(&self, _d: &mut fmt::DebugStruct<'_, '_>) {}

    /// Whether a pop runs its process function without holding the queue's lock (client-go's
    /// `UnlockWhileProcessingFIFO`). Only for a policy whose per-object writes never read the
    /// known objects: those go on while a batch is processed, and replace and resync, which
    /// read them, wait for the batch to be applied.
    fn unlock_while_processing(&self) -> bool {
        false
    }
}

/// The item type of a policy's queue.
pub(crate) type Item<P> = <<P as Policy>::Pending as Pending>::Item;

/// The state behind a queue's lock.
struct State<S> {
    pending: S,
    population: Population,
    closed: bool,
}

/// A queue: pending items held as its [`Policy`] says, behind one lock, with the pop loop.
///
/// Lock order: `processing`, then `state`. A pop holds `processing` while its batch is
/// processed; with the queue unlocked meanwhile, only replace and resync (whose outcome depends
/// on what the consumer has applied) wait for it.
pub(crate) struct QueueCore<P: Policy> {
    processing: Mutex<()>,
    state: Mutex<State<P::Pending>>,
    notify: Notify,
    /// Wakes writers waiting for the queue to shrink ([`wait_len_at_most`](Self::wait_len_at_most)).
    popped: Notify,
    policy: P,
}

impl<P: Policy> fmt::Debug for QueueCore<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct(P::NAME);
        match self.state.try_lock() {
            Some(s) => d
                .field("queued", &s.pending.len())
                .field("population", &s.population)
                .field("closed", &s.closed),
            // Printed from inside a process function: the lock is held.
            None => d.field("state", &"<locked>"),
        };
        self.policy.debug_fields(&mut d);
        d.finish_non_exhaustive()
    }
}

impl<P: Policy> QueueCore<P> {
    /// An empty, open queue.
    pub(crate) fn new(policy: P) -> Self {
        Self {
            processing: Mutex::new(()),
            state: Mutex::new(State {
                pending: P::Pending::default(),
                population: Population::default(),
                closed: false,
            }),
            notify: Notify::new(),
            popped: Notify::new(),
            policy,
        }
    }

    /// The queue's policy.
    pub(crate) fn policy(&self) -> &P {
        &self.policy
    }

    /// The number of queued keys or deltas.
    pub(crate) fn len(&self) -> usize {
        self.state.lock().pending.len()
    }

    /// Runs `write` under the lock, then wakes a popper if anything is queued.
    fn write<R>(&self, write: impl FnOnce(&mut State<P::Pending>) -> R) -> R {
        let mut s = self.state.lock();
        let result = write(&mut s);
        if s.pending.len() > 0 {
            self.notify.notify_one();
        }
        result
    }

    fn apply_locked(
        &self,
        s: &mut State<P::Pending>,
        kind: TransactionType,
        obj: Arc<P::Object>,
    ) -> Result<(), StoreError> {
        let key: ObjectKey = (self.policy.key_func())(&obj)?.into();
        s.population.touch();
        self.policy.apply(&mut s.pending, key, kind, obj)
    }

    /// Waits for an item, takes up to `limit` places (see [`Pending::take`]) and runs `process`
    /// on what was taken (the item with its keys), under the lock or, if the policy says so, with
    /// the lock released; a requeue puts them back. The taken places leave the initial population only once processed, so
    /// `has_synced` never runs ahead of the consumer.
    pub(crate) async fn pop_up_to<T, E, F>(
        &self,
        limit: usize,
        process: F,
    ) -> Result<T, PopError<E>>
    where
        F: FnOnce(&<P::Pending as Pending>::Taken, bool) -> Result<T, ProcessError<E>> + Send,
    {
        let mut process = Some(process);
        let unlocked = self.policy.unlock_while_processing();
        wait_for(&self.notify, move || {
            let _processing = self.processing.lock();
            let mut s = self.state.lock();
            let mut taken = None;
            let mut in_initial_list = false;
            let mut places = 0;
            // A place whose item was deleted is skipped (and leaves the population at once).
            while taken.is_none() {
                s.population.popped(places);
                in_initial_list = !s.population.has_synced();
                let remaining = s.population.remaining();
                let Some(n) = s.pending.take(limit, remaining, &mut taken) else {
                    return s.closed.then_some(Err(PopError::Closed));
                };
                places = n;
            }
            let (Some(item), Some(process)) = (&taken, process.take()) else {
                return None;
            };
            let depth = s.pending.len();
            let outcome = if unlocked {
                drop(s);
                let outcome = run_logged(P::NAME, depth, || process(item, in_initial_list));
                s = self.state.lock();
                outcome
            } else {
                run_logged(P::NAME, depth, || process(item, in_initial_list))
            };
            s.population.popped(places);
            let (result, requeue) = settle(outcome);
            if let Some(taken) = taken.filter(|_| requeue) {
                s.pending.requeue(taken);
            }
            if s.pending.len() > 0 {
                self.notify.notify_one();
            }
            self.popped.notify_waiters();
            Some(result)
        })
        .await
    }

    /// Queues a part of a relist given in pages with `write` (which returns how many items it
    /// queued) and counts them into the initial population; `last` ends the relist.
    pub(crate) fn write_page<R>(
        &self,
        last: bool,
        write: impl FnOnce(&mut P::Pending) -> Result<(usize, R), StoreError>,
    ) -> Result<R, StoreError> {
        self.write(|s| {
            let (count, result) = write(&mut s.pending)?;
            if last {
                s.population.finished(count);
            } else {
                s.population.page_queued(count);
            }
            Ok(result)
        })
    }

    /// Waits until at most `max` items are queued, or the queue is closed.
    pub(crate) async fn wait_len_at_most(&self, max: usize) {
        wait_for(&self.popped, || {
            let s = self.state.lock();
            (s.pending.len() <= max || s.closed).then_some(())
        })
        .await;
    }

    /// Runs `write` like [`write`](Self::write), after any batch being processed was applied.
    fn write_after_processing<R>(&self, write: impl FnOnce(&mut State<P::Pending>) -> R) -> R {
        let _processing = self.processing.lock();
        self.write(write)
    }
}

impl<P> Store<P::Object> for QueueCore<P>
where
    P: Policy + Send + Sync,
    P::Pending: Send,
{
    type Item = Item<P>;

    fn add(&self, obj: Arc<P::Object>) -> Result<(), StoreError> {
        self.write(|s| self.apply_locked(s, TransactionType::Added, obj))
    }

    fn update(&self, obj: Arc<P::Object>) -> Result<(), StoreError> {
        self.write(|s| self.apply_locked(s, TransactionType::Updated, obj))
    }

    fn delete(&self, obj: Arc<P::Object>) -> Result<(), StoreError> {
        self.write(|s| self.apply_locked(s, TransactionType::Deleted, obj))
    }

    fn list(&self) -> Vec<Item<P>> {
        P::list(&self.state.lock().pending)
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        P::list_keys(&self.state.lock().pending)
    }

    fn get(&self, obj: &P::Object) -> Result<Option<Item<P>>, StoreError> {
        Ok(self.get_by_key(&(self.policy.key_func())(obj)?))
    }

    fn get_by_key(&self, key: &str) -> Option<Item<P>> {
        self.state.lock().pending.get_by_key(key)
    }

    fn replace(
        &self,
        items: Vec<Arc<P::Object>>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        self.write_after_processing(|s| {
            let initial = self
                .policy
                .replace(&mut s.pending, items, resource_version)?;
            s.population.replaced(initial);
            Ok(())
        })
    }

    fn resync(&self) -> Result<(), StoreError> {
        self.write_after_processing(|s| self.policy.resync(&mut s.pending))
    }

    /// Always "": a queue holds no synced state. The resource version is recorded where it is
    /// the truth: by the reflector (where it watches from) and by the cache the queue feeds,
    /// from the deltas it applies (an atomic RealFifo queues relists and bookmarks with theirs).
    fn last_store_sync_resource_version(&self) -> String {
        String::new()
    }

    fn bookmark(&self, resource_version: &str) {
        self.write(|s| self.policy.bookmark(&mut s.pending, resource_version));
    }

    fn transaction(&self, ops: Vec<Transaction<P::Object>>) -> Result<(), StoreError> {
        self.write(|s| {
            let mut result = TransactionError {
                successful: Vec::new(),
                errors: Vec::new(),
            };
            for (i, op) in ops.into_iter().enumerate() {
                match self.apply_locked(s, op.kind, op.object) {
                    Ok(()) => result.successful.push(i),
                    Err(e) => result.errors.push((i, e)),
                }
            }
            if result.errors.is_empty() {
                Ok(())
            } else {
                Err(result.into())
            }
        })
    }
}

impl<P> Queue<P::Object> for QueueCore<P>
where
    P: Policy + Send + Sync,
    P::Pending: Send,
{
    fn pop<T, E, F>(&self, process: F) -> impl Future<Output = Result<T, PopError<E>>> + Send
    where
        F: FnOnce(&Item<P>, bool) -> Result<T, ProcessError<E>> + Send,
        T: Send,
        E: Send,
    {
        self.pop_up_to(1, |taken, in_initial_list| {
            process(<P::Pending as Pending>::item(taken), in_initial_list)
        })
    }

    fn add_if_not_present(&self, item: Item<P>) -> Result<(), StoreError> {
        let key: ObjectKey = item.key(self.policy.key_func())?.into();
        self.write(|s| {
            s.population.touch();
            s.pending.insert_if_absent(key, item);
        });
        Ok(())
    }

    fn has_synced(&self) -> bool {
        self.state.lock().population.has_synced()
    }

    fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_waiters();
        self.popped.notify_waiters();
    }

    fn is_closed(&self) -> bool {
        self.state.lock().closed
    }
}

/// Runs `attempt` until it yields a value, waiting on `notify` in between. The waiter is
/// registered before each attempt, so a notification sent between the attempt and the wait is
/// never lost.
async fn wait_for<R>(notify: &Notify, mut attempt: impl FnMut() -> Option<R>) -> R {
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

/// Runs a process function; when the queue is deep (more than 10 items behind) and processing
/// takes over 100 ms, logs that slow event handlers are blocking the queue (client-go's trace).
fn run_logged<R>(queue: &'static str, depth: usize, process: impl FnOnce() -> R) -> R {
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

/// Implements `Debug`, [`Store`], [`Queue`], `len` (the number of `$counted`), `is_empty` and
/// `wait_len_at_most` for
/// a queue type `$queue<K>` by forwarding to its `core: QueueCore<_>`, whose items are `$item`.
/// With `deltas`, also the key methods of a delta queue.
macro_rules! queue_impls {
    ($queue:ident, $item:ty, $counted:literal, deltas) => {
        $crate::queue_core::queue_impls!($queue, $item, $counted);

        impl<K: Send + Sync> $queue<K> {
            /// The key of an object or tombstone (a tombstone's own key).
            pub fn key_of(&self, obj: &MaybeTombstone<K>) -> Result<String, StoreError> {
                $crate::delta_fifo::key_of_payload(&self.core.policy().key_func, obj)
            }

            /// The key of popped deltas: the key of the newest delta's object (the atomic
            /// deltas of a [`RealFifo`](crate::RealFifo) have none).
            pub fn key_of_deltas(&self, deltas: &Deltas<K>) -> Result<String, StoreError> {
                $crate::delta_fifo::key_of_deltas(&self.core.policy().key_func, deltas)
            }
        }
    };
    ($queue:ident, $item:ty, $counted:literal) => {
        impl<K: Send + Sync> $queue<K> {
            #[doc = concat!("The number of ", $counted, ".")]
            pub fn len(&self) -> usize {
                self.core.len()
            }

            /// Whether nothing is queued.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            #[doc = concat!("Waits until at most `max` ", $counted, " are queued (the consumer has popped")]
            /// the rest), or the queue is closed: the back-pressure that keeps a producer (a paged
            /// list, a watch) from running ahead of its consumer.
            pub async fn wait_len_at_most(&self, max: usize) {
                self.core.wait_len_at_most(max).await;
            }
        }

        impl<K> ::std::fmt::Debug for $queue<K> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Debug::fmt(&self.core, f)
            }
        }

        impl<K: Send + Sync> ::kcache_store::Store<K> for $queue<K> {
            type Item = $item;

            fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
                self.core.add(obj)
            }

            fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
                self.core.update(obj)
            }

            fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
                self.core.delete(obj)
            }

            fn list(&self) -> Vec<$item> {
                self.core.list()
            }

            fn list_keys(&self) -> Vec<::kcache_store::ObjectKey> {
                self.core.list_keys()
            }

            fn get(&self, obj: &K) -> Result<Option<$item>, StoreError> {
                self.core.get(obj)
            }

            fn get_by_key(&self, key: &str) -> Option<$item> {
                self.core.get_by_key(key)
            }

            fn replace(
                &self,
                items: Vec<Arc<K>>,
                resource_version: &str,
            ) -> Result<(), StoreError> {
                self.core.replace(items, resource_version)
            }

            fn resync(&self) -> Result<(), StoreError> {
                self.core.resync()
            }

            fn last_store_sync_resource_version(&self) -> String {
                self.core.last_store_sync_resource_version()
            }

            fn bookmark(&self, resource_version: &str) {
                self.core.bookmark(resource_version);
            }

            fn transaction(
                &self,
                ops: Vec<::kcache_store::Transaction<K>>,
            ) -> Result<(), StoreError> {
                self.core.transaction(ops)
            }
        }

        impl<K: Send + Sync> $crate::Queue<K> for $queue<K> {
            fn pop<T, E, F>(
                &self,
                process: F,
            ) -> impl ::std::future::Future<Output = Result<T, $crate::PopError<E>>> + Send
            where
                F: FnOnce(&$item, bool) -> Result<T, $crate::ProcessError<E>> + Send,
                T: Send,
                E: Send,
            {
                self.core.pop(process)
            }

            fn add_if_not_present(&self, item: $item) -> Result<(), StoreError> {
                self.core.add_if_not_present(item)
            }

            fn has_synced(&self) -> bool {
                self.core.has_synced()
            }

            fn close(&self) {
                self.core.close();
            }

            fn is_closed(&self) -> bool {
                self.core.is_closed()
            }
        }
    };
}

pub(crate) use queue_impls;
