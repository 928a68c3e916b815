//! [`Keyed`]: pending items one per key, keys in the order they were first queued (how
//! [`Fifo`](crate::Fifo) and [`DeltaFifo`](crate::DeltaFifo) hold them).

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};

use ahash::RandomState;
use kcache_store::ObjectKey;

use crate::queue_core::Pending;

/// One value per key, and the order in which keys are popped. A key can stay in the order after
/// its value is removed ([`Fifo`](crate::Fifo)'s delete); its turn is then skipped.
pub(crate) struct Keyed<V> {
    pub(crate) items: HashMap<ObjectKey, V, RandomState>,
    pub(crate) queue: VecDeque<ObjectKey>,
}

impl<V> Default for Keyed<V> {
    fn default() -> Self {
        Self {
            items: HashMap::default(),
            queue: VecDeque::new(),
        }
    }
}

impl<V> Keyed<V> {
    /// Merges `change` into the value queued under `key`, or queues `first(change)` at the end.
    pub(crate) fn put<C>(
        &mut self,
        key: ObjectKey,
        change: C,
        first: impl FnOnce(C) -> V,
        merge: impl FnOnce(&mut V, C),
    ) {
        match self.items.entry(key) {
            Entry::Occupied(mut queued) => merge(queued.get_mut(), change),
            Entry::Vacant(slot) => {
                self.queue.push_back(slot.key().clone());
                slot.insert(first(change));
            }
        }
    }
}

impl<V: Clone> Pending for Keyed<V> {
    type Item = V;
    type Taken = (ObjectKey, V);

    #[inline]
    fn take(
        &mut self,
        _limit: usize,
        _remaining_initial: usize,
        taken: &mut Option<(ObjectKey, V)>,
    ) -> Option<usize> {
        let key = self.queue.pop_front()?;
        *taken = self.items.remove(&key).map(|v| (key, v));
        Some(1)
    }

    fn item(taken: &(ObjectKey, V)) -> &V {
        &taken.1
    }

    fn requeue(&mut self, (key, value): (ObjectKey, V)) {
        self.insert_if_absent(key, value);
    }

    fn insert_if_absent(&mut self, key: ObjectKey, value: V) {
        if let Entry::Vacant(slot) = self.items.entry(key) {
            self.queue.push_back(slot.key().clone());
            slot.insert(value);
        }
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    fn get_by_key(&self, key: &str) -> Option<V> {
        self.items.get(key).cloned()
    }
}
