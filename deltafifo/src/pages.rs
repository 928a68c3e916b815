//! [`ReplacePages`]: a relist queued into a [`RealFifo`] page by page, so that the list is never
//! held whole.

use std::collections::HashSet;
use std::sync::Arc;

use kcache_store::{ObjectKey, StoreError};

use crate::delta::{Delta, DeltaType};
use crate::real_fifo::RealFifo;

/// A relist queued page by page ([`RealFifo::replace_in_pages`]): each page's objects are
/// queued as [`DeltaType::Replaced`] deltas as soon as the page is given, and
/// [`finish`](Self::finish) queues one [`Delta::ReplaceEnd`] with the key of every listed
/// object, from which the consumer deletes what was not listed (the queue holds no known
/// objects for it: a relist's deletions are the consumer's, as in atomic mode).
///
/// Until the first relist finishes, every page joins the initial population and the queue has
/// not synced; popped objects carry `is_in_initial_list`. A relist dropped unfinished (its list
/// failed) leaves its queued objects queued: they were the server's state, and the next relist
/// deletes what they should not have added.
pub struct ReplacePages<'a, K> {
    fifo: &'a RealFifo<K>,
    listed: HashSet<ObjectKey>,
}

impl<K> std::fmt::Debug for ReplacePages<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplacePages")
            .field("listed", &self.listed.len())
            .finish_non_exhaustive()
    }
}

impl<K: Send + Sync> RealFifo<K> {
    /// A relist given page by page ([`ReplacePages`]): each page is queued as it comes, so a
    /// consumer popping meanwhile never has the whole list queued, and the consumer deletes
    /// what was not listed when it pops the end. In either mode.
    pub fn replace_in_pages(&self) -> ReplacePages<'_, K> {
        ReplacePages {
            fifo: self,
            listed: HashSet::new(),
        }
    }
}

impl<K: Send + Sync> ReplacePages<'_, K> {
    /// Queues a `Replaced` delta for each of `items`, in order. Nothing is queued if a key
    /// cannot be computed.
    pub fn page(&mut self, items: Vec<Arc<K>>) -> Result<(), StoreError> {
        let key_func = self.fifo.key_func();
        let keyed = items
            .into_iter()
            .map(|obj| Ok((ObjectKey::from(key_func(&obj)?), obj)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.listed
            .extend(keyed.iter().map(|(key, _)| Arc::clone(key)));
        self.fifo.core().write_page(false, |pending| {
            let count = keyed.len();
            for (key, obj) in keyed {
                pending.push(Some(key), Delta::new(DeltaType::Replaced, obj));
            }
            Ok((count, ()))
        })
    }

    /// Ends the relist at `resource_version`: queues the [`Delta::ReplaceEnd`].
    pub fn finish(self, resource_version: &str) -> Result<(), StoreError> {
        let end = Delta::ReplaceEnd {
            resource_version: resource_version.to_owned(),
            listed: Arc::new(self.listed),
        };
        self.fifo.core().write_page(true, |pending| {
            pending.push(None, end);
            Ok((1, ()))
        })
    }
}
