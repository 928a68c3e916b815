//! The controllers' work queue of dirty objects (by graph key, each at most once, as client-go's
//! workqueue) and its timers: the end of a pod's grace period, and the retry of an object
//! whose write failed.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet, VecDeque};
use std::sync::Arc;

use tokio::time::Instant;

/// Why an object is to be looked at again later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Later {
    /// Its grace period ends (it does not keep the controllers busy meanwhile).
    Grace,
    /// A write or a read for it failed (the controllers are not idle until it is retried).
    Retry,
}

/// The dirty objects and the timers.
#[derive(Debug, Default)]
pub(super) struct Queue {
    order: VecDeque<Arc<str>>,
    queued: HashSet<Arc<str>>,
    grace: BinaryHeap<Reverse<(Instant, Arc<str>)>>,
    retry: BinaryHeap<Reverse<(Instant, Arc<str>)>>,
}

impl Queue {
    /// Marks `key` dirty (once until it is taken).
    pub(super) fn add(&mut self, key: &Arc<str>) {
        if self.queued.insert(Arc::clone(key)) {
            self.order.push_back(Arc::clone(key));
        }
    }

    /// The next dirty object.
    pub(super) fn pop(&mut self) -> Option<Arc<str>> {
        let key = self.order.pop_front()?;
        self.queued.remove(&key);
        Some(key)
    }

    /// Marks `key` dirty at `at`.
    pub(super) fn add_at(&mut self, at: Instant, key: &Arc<str>, why: Later) {
        let heap = match why {
            Later::Grace => &mut self.grace,
            Later::Retry => &mut self.retry,
        };
        heap.push(Reverse((at, Arc::clone(key))));
    }

    /// Marks the objects whose time has come dirty.
    pub(super) fn add_due(&mut self, now: Instant) {
        for heap in [&mut self.grace, &mut self.retry] {
            while let Some(Reverse((at, _))) = heap.peek()
                && *at <= now
            {
                if let Some(Reverse((_, key))) = heap.pop()
                    && self.queued.insert(Arc::clone(&key))
                {
                    self.order.push_back(key);
                }
            }
        }
    }

    /// When the next timer is due.
    pub(super) fn next_due(&self) -> Option<Instant> {
        [&self.grace, &self.retry]
            .into_iter()
            .filter_map(|heap| heap.peek().map(|Reverse((at, _))| *at))
            .min()
    }

    /// Whether there is work: dirty objects, or retries waiting.
    pub(super) fn busy(&self) -> bool {
        !self.order.is_empty() || !self.retry.is_empty()
    }
}
