//! [`Population`]: the initial-population bookkeeping of a queue (client-go's `populated` and
//! `initialPopulationCount`), including a relist queued in pages.

/// How much of the first relist (the initial population) is still to be popped.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Population {
    populated: bool,
    /// Items of the initial population not yet popped.
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

    /// A page of a relist queued `count` items: before the first population is complete they
    /// join it, and it stays incomplete (not synced) until [`finished`](Self::finished).
    pub(crate) fn page_queued(&mut self, count: usize) {
        if !self.populated {
            self.initial_count += count;
        }
    }

    /// The relist queued in pages ended with `count` more items: the first one completes the
    /// initial population.
    pub(crate) fn finished(&mut self, count: usize) {
        self.page_queued(count);
        self.populated = true;
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
