//! [`WorkQueue`]: the controller work queue with delaying and rate-limited adds.

use std::borrow::Borrow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use ahash::RandomState;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

#[path = "stale.rs"]
mod stale;

use crate::{MetricsProvider, RateLimiter, WorkItem, default_controller_rate_limiter};

/// The furthest a delayed add is scheduled (longer delays are clamped to it).
const MAX_DELAY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// How a [`WorkQueue`] is built.
pub struct WorkQueueConfig<T> {
    /// The queue's name, passed to the metrics provider and logs.
    pub name: String,
    /// The limiter behind [`WorkQueue::add_rate_limited`].
    pub rate_limiter: Arc<dyn RateLimiter<T>>,
    /// Where metrics go; `None` (the default) records nothing and skips the bookkeeping.
    pub metrics: Option<Arc<dyn MetricsProvider>>,
}

impl<T: Eq + Hash + Clone + Send + Sync + 'static> Default for WorkQueueConfig<T> {
    /// Unnamed, [`default_controller_rate_limiter`], no metrics.
    fn default() -> Self {
        Self {
            name: String::new(),
            rate_limiter: Arc::new(default_controller_rate_limiter()),
            metrics: None,
        }
    }
}

impl<T> WorkQueueConfig<T> {
    /// Sets the name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets the rate limiter.
    #[must_use]
    pub fn rate_limiter(mut self, limiter: Arc<dyn RateLimiter<T>>) -> Self {
        self.rate_limiter = limiter;
        self
    }

    /// Sets the metrics provider.
    #[must_use]
    pub fn metrics(mut self, metrics: Arc<dyn MetricsProvider>) -> Self {
        self.metrics = Some(metrics);
        self
    }
}

impl<T> fmt::Debug for WorkQueueConfig<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkQueueConfig")
            .field("name", &self.name)
            .field("rate_limiter", &self.rate_limiter)
            .field("metrics", &self.metrics)
            .finish()
    }
}

/// Items waiting for their time (client-go's `waitForPriorityQueue`): a min-heap by ready time
/// with lazy deletion; each item is waiting at most once, at its earliest time.
struct Delayed<T> {
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
    by_seq: HashMap<u64, T, RandomState>,
    waiting: HashMap<T, (Instant, u64), RandomState>,
    next_seq: u64,
}

impl<T> Delayed<T> {
    fn len(&self) -> usize {
        self.waiting.len()
    }
}

impl<T: Eq + Hash + Clone> Delayed<T> {
    fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            by_seq: HashMap::default(),
            waiting: HashMap::default(),
            next_seq: 0,
        }
    }

    /// Schedules `item` at `at`; returns whether this is now the earliest time in the heap.
    fn schedule(&mut self, item: T, at: Instant) -> bool {
        if let Some(&(existing, seq)) = self.waiting.get(&item) {
            if existing <= at {
                return false;
            }
            self.by_seq.remove(&seq);
        }
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.heap.push(Reverse((at, seq)));
        self.by_seq.insert(seq, item.clone());
        self.waiting.insert(item, (at, seq));
        self.next_deadline().is_some_and(|d| d == at)
    }

    /// The earliest ready time, dropping stale heap entries.
    fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(Reverse((at, seq))) = self.heap.peek() {
            if self.by_seq.contains_key(seq) {
                return Some(*at);
            }
            self.heap.pop();
        }
        None
    }

    /// Removes the next item ready at `now`.
    fn pop_ready(&mut self, now: Instant) -> Option<T> {
        let at = self.next_deadline()?;
        if at > now {
            return None;
        }
        let Reverse((_, seq)) = self.heap.pop()?;
        let item = self.by_seq.remove(&seq)?;
        self.waiting.remove(&item);
        Some(item)
    }

    fn clear(&mut self) {
        self.heap.clear();
        self.by_seq.clear();
        self.waiting.clear();
    }
}

struct State<T> {
    queue: VecDeque<T>,
    dirty: HashSet<T, RandomState>,
    processing: HashSet<T, RandomState>,
    delayed: Delayed<T>,
    shutting_down: bool,
    drain: bool,
    // Metrics bookkeeping, only with a metrics provider.
    added_at: HashMap<T, Instant, RandomState>,
    started_at: HashMap<T, Instant, RandomState>,
    /// Items requeued as stale since they were handed out (`requeue_stale`).
    stale: HashSet<T, RandomState>,
}

struct Inner<T> {
    name: String,
    state: Mutex<State<T>>,
    /// Wakes `get` waiters: an item is ready, the earliest delay changed, or shutdown.
    ready: Notify,
    /// Wakes `shut_down_with_drain`: processing emptied, or the drain was aborted.
    drained: Notify,
    rate_limiter: Arc<dyn RateLimiter<T>>,
    metrics: Option<Arc<dyn MetricsProvider>>,
}

/// The controller work queue (client-go's `workqueue.TypedRateLimitingInterface`): a FIFO of
/// distinct items with a *dirty* set (waiting) and a *processing* set (handed out, not yet
/// [`done`](WorkQueue::done)).
///
/// - [`add`](WorkQueue::add) of an item already waiting does nothing; an item added while it is
///   being processed is queued again when it is `done`, so no item is ever handed to two workers
///   at once.
/// - [`get`](WorkQueue::get) waits asynchronously; after [`shut_down`](WorkQueue::shut_down)
///   adds are ignored but remaining items are still handed out, then `get` returns `None`.
/// - [`add_after`](WorkQueue::add_after) delays an item (the earlier time wins for an item
///   already waiting), driven by tokio's clock; [`add_rate_limited`](WorkQueue::add_rate_limited)
///   delays it by the [`RateLimiter`].
///
/// Cheap to clone: clones share the queue, so several worker tasks can drain it.
///
/// ```
/// use kcache_workqueue::WorkQueue;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let queue = WorkQueue::<String>::new();
/// queue.add("default/web".to_string());
/// queue.add("default/web".to_string()); // already waiting: collapsed
/// assert_eq!(queue.len(), 1);
///
/// let key = queue.get().await.unwrap();
/// // ... reconcile `key`; on failure: queue.add_rate_limited(key.clone())
/// queue.forget(&key);
/// queue.done(&key);
///
/// queue.shut_down();
/// assert_eq!(queue.get().await, None);
/// # }
/// ```
pub struct WorkQueue<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.inner.state.lock();
        f.debug_struct("WorkQueue")
            .field("name", &self.inner.name)
            .field("queued", &s.queue.len())
            .field("processing", &s.processing.len())
            .field("delayed", &s.delayed.len())
            .field("shutting_down", &s.shutting_down)
            .finish_non_exhaustive()
    }
}

impl<T: Eq + Hash + Clone + Send + Sync + 'static> Default for WorkQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Eq + Hash + Clone + Send + Sync + 'static> WorkQueue<T> {
    /// An unnamed queue with the [`default_controller_rate_limiter`] and no metrics.
    pub fn new() -> Self {
        Self::with_config(WorkQueueConfig::default())
    }

    /// A queue built from `config`.
    pub fn with_config(config: WorkQueueConfig<T>) -> Self {
        Self {
            inner: Arc::new(Inner {
                name: config.name,
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    dirty: HashSet::default(),
                    processing: HashSet::default(),
                    delayed: Delayed::new(),
                    shutting_down: false,
                    drain: false,
                    added_at: HashMap::default(),
                    started_at: HashMap::default(),
                    stale: HashSet::default(),
                }),
                ready: Notify::new(),
                drained: Notify::new(),
                rate_limiter: config.rate_limiter,
                metrics: config.metrics,
            }),
        }
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Marks `item` as needing processing. Ignored after shutdown; does nothing if the item is
    /// already waiting; if it is being processed it is queued again when it is
    /// [`done`](WorkQueue::done).
    pub fn add(&self, item: T) {
        let mut s = self.inner.state.lock();
        if s.shutting_down {
            return;
        }
        self.add_locked(&mut s, item);
    }

    fn add_locked(&self, s: &mut State<T>, item: T) {
        if s.dirty.contains(&item) {
            return;
        }
        if let Some(m) = &self.inner.metrics {
            m.add(&self.inner.name);
            s.added_at.entry(item.clone()).or_insert_with(Instant::now);
        }
        s.dirty.insert(item.clone());
        if s.processing.contains(&item) {
            return;
        }
        s.queue.push_back(item);
        self.report_depth(s);
        self.inner.ready.notify_one();
    }

    fn report_depth(&self, s: &State<T>) {
        if let Some(m) = &self.inner.metrics {
            m.depth(&self.inner.name, s.queue.len());
        }
    }

    fn report_unfinished(&self, s: &State<T>, now: Instant) {
        if let Some(m) = &self.inner.metrics {
            let mut total = Duration::ZERO;
            let mut longest = Duration::ZERO;
            for started in s.started_at.values() {
                let d = now.saturating_duration_since(*started);
                total = total.saturating_add(d);
                longest = longest.max(d);
            }
            m.unfinished_work(&self.inner.name, total, longest);
        }
    }

    /// Moves delayed items whose time has come into the queue; returns the next ready time.
    fn promote_ready(&self, s: &mut State<T>) -> Option<Instant> {
        if s.shutting_down {
            return None;
        }
        let now = Instant::now();
        while let Some(item) = s.delayed.pop_ready(now) {
            self.add_locked(s, item);
        }
        s.delayed.next_deadline()
    }

    /// Waits for the next item and marks it as being processed; the caller must call
    /// [`done`](WorkQueue::done) with it. Returns `None` once the queue is shut down and empty.
    pub async fn get(&self) -> Option<T> {
        loop {
            let notified = self.inner.ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let deadline = {
                let mut s = self.inner.state.lock();
                let deadline = self.promote_ready(&mut s);
                if let Some(item) = s.queue.pop_front() {
                    self.handed_out(&mut s, &item);
                    if !s.queue.is_empty() {
                        self.inner.ready.notify_one();
                    }
                    return Some(item);
                }
                if s.shutting_down {
                    return None;
                }
                deadline
            };
            match deadline {
                Some(at) => {
                    tokio::select! {
                        () = &mut notified => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Waits for the next item like [`get`](WorkQueue::get) and returns it in a [`WorkItem`]
    /// guard that marks it done when dropped. Returns `None` once the queue is shut down and empty.
    pub async fn next(&self) -> Option<WorkItem<T>> {
        let item = self.get().await?;
        Some(WorkItem::new(self.clone(), item))
    }

    fn handed_out(&self, s: &mut State<T>, item: &T) {
        s.processing.insert(item.clone());
        s.dirty.remove(item);
        if let Some(m) = &self.inner.metrics {
            let now = Instant::now();
            if let Some(added) = s.added_at.remove(item) {
                m.queue_latency(&self.inner.name, now.saturating_duration_since(added));
            }
            s.started_at.insert(item.clone(), now);
            m.depth(&self.inner.name, s.queue.len());
            self.report_unfinished(s, now);
        }
    }

    /// Marks `item` as processed. If it was added again meanwhile it is queued again.
    ///
    /// Takes any borrowed form of the item (`&str` for a `WorkQueue<String>`).
    pub fn done<Q>(&self, item: &Q)
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut s = self.inner.state.lock();
        if let Some(m) = &self.inner.metrics {
            let now = Instant::now();
            if let Some(started) = s.started_at.remove(item) {
                m.work_duration(&self.inner.name, now.saturating_duration_since(started));
            }
            self.report_unfinished(&s, now);
        }
        let Some(item) = s.processing.take(item) else {
            return;
        };
        if s.dirty.contains::<T>(&item) {
            s.queue.push_back(item);
            self.report_depth(&s);
            self.inner.ready.notify_one();
        } else if s.processing.is_empty() {
            self.inner.drained.notify_waiters();
        }
    }

    /// The number of items waiting to be handed out (delayed items whose time has come
    /// included; items still delayed or being processed excluded).
    pub fn len(&self) -> usize {
        let mut s = self.inner.state.lock();
        self.promote_ready(&mut s);
        s.queue.len()
    }

    /// Whether no item is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of items being processed.
    pub fn processing(&self) -> usize {
        self.inner.state.lock().processing.len()
    }

    /// The number of items waiting for their delay.
    pub fn delayed(&self) -> usize {
        self.inner.state.lock().delayed.len()
    }

    /// Shuts the queue down at once: adds are ignored, waiting `get`s return `None` once the
    /// remaining items are handed out, delayed items are dropped, and a running
    /// [`shut_down_with_drain`](WorkQueue::shut_down_with_drain) stops waiting.
    pub fn shut_down(&self) {
        let mut s = self.inner.state.lock();
        s.drain = false;
        self.begin_shut_down(&mut s);
    }

    fn begin_shut_down(&self, s: &mut State<T>) {
        s.shutting_down = true;
        s.delayed.clear();
        self.inner.ready.notify_waiters();
        self.inner.drained.notify_waiters();
    }

    /// Shuts the queue down like [`shut_down`](WorkQueue::shut_down), then waits until every
    /// item handed out is [`done`](WorkQueue::done) (or `shut_down` is called meanwhile).
    /// Workers must keep calling `get` until it returns `None` for the queue to drain.
    pub async fn shut_down_with_drain(&self) {
        {
            let mut s = self.inner.state.lock();
            s.drain = true;
            self.begin_shut_down(&mut s);
        }
        loop {
            let notified = self.inner.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let s = self.inner.state.lock();
                if !s.drain || s.processing.is_empty() {
                    return;
                }
            }
            notified.await;
        }
    }

    /// Reports the unfinished work and the longest running item to the metrics provider now
    /// (also done on every `get` and `done`).
    pub fn report_unfinished_work(&self) {
        let s = self.inner.state.lock();
        self.report_unfinished(&s, Instant::now());
    }

    /// Reports the unfinished work every `period` until the queue shuts down, so that a stuck
    /// worker shows in the metrics even when nothing else happens (client-go does this every
    /// 500 ms). Spawn it next to the workers when a metrics provider is set.
    pub async fn report_unfinished_work_every(&self, period: Duration) {
        let mut ticks = tokio::time::interval(period.max(Duration::from_millis(1)));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if self.is_shutting_down() {
                return;
            }
            self.report_unfinished_work();
        }
    }

    /// Whether the queue is shutting down.
    pub fn is_shutting_down(&self) -> bool {
        self.inner.state.lock().shutting_down
    }

    /// Adds `item` after `delay` (tokio's clock). A zero delay adds at once; an item already
    /// delayed keeps the earlier of its two times. Ignored after shutdown.
    ///
    /// Delayed items move into the queue when [`get`](WorkQueue::get) or
    /// [`len`](WorkQueue::len) runs after their time; a waiting `get` sleeps until the earliest
    /// one, so the runtime must have its time driver enabled (`#[tokio::main]` does).
    ///
    /// ```
    /// use std::time::Duration;
    /// use kcache_workqueue::WorkQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
    /// let queue = WorkQueue::<&str>::new();
    /// queue.add_after("later", Duration::from_secs(30));
    /// queue.add_after("later", Duration::from_secs(5)); // the earlier time wins
    /// queue.add_after("sooner", Duration::from_secs(1));
    /// assert_eq!(queue.len(), 0);
    /// assert_eq!(queue.get().await, Some("sooner"));
    /// assert_eq!(queue.get().await, Some("later"));
    /// # }
    /// ```
    pub fn add_after(&self, item: T, delay: Duration) {
        let mut s = self.inner.state.lock();
        if s.shutting_down {
            return;
        }
        if let Some(m) = &self.inner.metrics {
            m.retry(&self.inner.name);
        }
        if delay.is_zero() {
            self.add_locked(&mut s, item);
            return;
        }
        let now = Instant::now();
        let at = now.checked_add(delay.min(MAX_DELAY)).unwrap_or(now);
        if s.delayed.schedule(item, at) {
            // A new earliest time: waiting `get`s recompute their timers.
            self.inner.ready.notify_waiters();
        }
    }

    /// Adds `item` after the delay its [`RateLimiter`] gives.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use kcache_workqueue::{ItemExponentialFailureRateLimiter, WorkQueue, WorkQueueConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
    /// let limiter = ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(60));
    /// let queue = WorkQueue::with_config(WorkQueueConfig::default().rate_limiter(Arc::new(limiter)));
    /// queue.add_rate_limited("default/web"); // retried in 5 ms
    /// queue.add_rate_limited("default/web"); // 10 ms, but the earlier time wins
    /// assert_eq!(queue.num_requeues(&"default/web"), 2);
    /// let key = queue.get().await.unwrap();
    /// queue.forget(&key); // reconciled: the next failure starts at 5 ms again
    /// queue.done(&key);
    /// assert_eq!(queue.num_requeues(&"default/web"), 0);
    /// # }
    /// ```
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.inner.rate_limiter.when(&item);
        self.add_after(item, delay);
    }

    /// Tells the rate limiter that `item` succeeded: its backoff starts over.
    ///
    /// Takes the item or any borrowed form of it (`&str` for a `WorkQueue<String>`); a borrowed
    /// form is turned into an item with `to_owned` for the rate limiter.
    pub fn forget<Q>(&self, item: &Q)
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = T> + ?Sized,
    {
        self.inner.rate_limiter.forget(&item.to_owned());
    }

    /// How many times `item` was rate-limited since it was last forgotten.
    ///
    /// Takes the item or any borrowed form of it, like [`forget`](Self::forget).
    pub fn num_requeues<Q>(&self, item: &Q) -> usize
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = T> + ?Sized,
    {
        self.inner.rate_limiter.num_requeues(&item.to_owned())
    }
}
