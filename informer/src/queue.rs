//! [`InformerQueue`]: the queue between an informer's reflector and its process loop.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use kcache_deltafifo::{
    Batch, DeltaFifo, DeltaFifoOptions, Deltas, PopError, ProcessError, Queue, RealFifo,
    RealFifoOptions, ReplacePages,
};
use kcache_reflector::{PagedReplace, ReflectorStore};
use kcache_store::{KnownObjects, Store, StoreError};
use kube_core::Resource;

use crate::sync::sync_changed;

/// Which queue an informer puts between its reflector and its indexer (client-go chooses with
/// the `InOrderInformers` and `AtomicFIFO` feature gates; kcache with this setting).
///
/// What an informer guarantees about order, in every mode: the notifications of one object reach
/// each handler in the order the server produced them, none is lost, and the cache has applied a
/// change before any handler is told of it. With the [`RealFifo`] modes a popped batch is applied
/// with the queue unlocked (client-go's `UnlockWhileProcessingFIFO`): the reflector keeps queueing
/// watch events while the batch is applied, so it never waits for the cache or a handler; a relist
/// or resync waits for the batch being applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum QueueMode {
    /// The in-order [`RealFifo`] in atomic mode (client-go's default in 1.36, `AtomicFIFO`): every
    /// event is delivered in arrival order, deltas are popped in batches, a relist is one
    /// `ReplacedAll` delta and a resync one `SyncAll` delta, each applied to the indexer in one
    /// step before its notifications go out.
    #[default]
    AtomicRealFifo,
    /// The in-order [`RealFifo`] without atomic mode (client-go 1.33 to 1.35, "in-order
    /// informers"): a relist is queued as one delta per object and per vanished object.
    RealFifo,
    /// The classic [`DeltaFifo`]: changes coalesced per key, each key in its first place; batches
    /// are processed under the queue's lock.
    DeltaFifo,
}

/// The queue of a [`Controller`](crate::Controller): a [`RealFifo`] or a [`DeltaFifo`], shared.
/// It is the [`ReflectorStore`] the reflector writes into (delegating to the queue inside). Its
/// reflector stops reading the watch while more than 256 events are queued, until half are
/// applied ([`ReflectorStore::room`]), so a burst is never held whole.
pub enum InformerQueue<K> {
    /// An in-order queue (optionally atomic).
    Real(Arc<RealFifo<K>>),
    /// An in-order queue (optionally atomic) that takes a relist page by page
    /// ([`RealFifo::replace_in_pages`], what a compact informer uses): the reflector queues
    /// each page once the consumer has taken every queued delta, so a list is never held whole.
    Paged(Arc<RealFifo<K>>),
    /// A delta queue.
    Delta(Arc<DeltaFifo<K>>),
}

impl<K> Clone for InformerQueue<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Real(q) => Self::Real(Arc::clone(q)),
            Self::Paged(q) => Self::Paged(Arc::clone(q)),
            Self::Delta(q) => Self::Delta(Arc::clone(q)),
        }
    }
}

impl<K> fmt::Debug for InformerQueue<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Real(q) => f.debug_tuple("Real").field(q).finish(),
            Self::Paged(q) => f.debug_tuple("Paged").field(q).finish(),
            Self::Delta(q) => f.debug_tuple("Delta").field(q).finish(),
        }
    }
}

impl<K: Resource + Send + Sync + 'static> InformerQueue<K> {
    /// A queue of `mode` whose known objects are `known` (the indexer). Objects are queued as
    /// the lister-watcher made them (transformed there).
    pub fn new(mode: QueueMode, known: Arc<dyn KnownObjects<K>>) -> Self {
        match mode {
            QueueMode::RealFifo | QueueMode::AtomicRealFifo => Self::Real(Arc::new(RealFifo::new(
                RealFifoOptions::default()
                    .known_objects(known)
                    .atomic_events(mode == QueueMode::AtomicRealFifo),
            ))),
            QueueMode::DeltaFifo => Self::Delta(Arc::new(DeltaFifo::new(
                DeltaFifoOptions::default()
                    .known_objects(known)
                    .emit_delta_type_replaced(true),
            ))),
        }
    }
}

impl<K: Send + Sync + 'static> InformerQueue<K> {
    /// This queue taking relists page by page ([`InformerQueue::Paged`]) if it is an in-order
    /// one; a [`DeltaFifo`] stays as it is.
    #[must_use]
    pub fn paged(self) -> Self {
        match self {
            Self::Real(q) | Self::Paged(q) => Self::Paged(q),
            delta @ Self::Delta(_) => delta,
        }
    }

    /// Waits for deltas and runs `process(batch, is_in_initial_list)`: a batch of deltas of
    /// distinct keys from a [`RealFifo`] (with the queue unlocked), all the deltas of one key
    /// from a [`DeltaFifo`] (under its lock); each delta comes with the key the queue computed
    /// when it was queued.
    pub async fn pop<E: Send>(
        &self,
        process: impl FnOnce(&Batch<'_, K>, bool) -> Result<(), ProcessError<E>> + Send,
    ) -> Result<(), PopError<E>> {
        match self {
            Self::Real(q) | Self::Paged(q) => q.pop_keyed_batch(process).await,
            Self::Delta(q) => q.pop_keyed(process).await,
        }
    }

    /// Whether the queue has handed out its initial population.
    pub fn has_synced(&self) -> bool {
        match self {
            Self::Real(q) | Self::Paged(q) => q.has_synced(),
            Self::Delta(q) => q.has_synced(),
        }
    }

    /// Closes the queue.
    pub fn close(&self) {
        match self {
            Self::Real(q) | Self::Paged(q) => q.close(),
            Self::Delta(q) => q.close(),
        }
    }

    /// The number of queued keys ([`DeltaFifo`]) or deltas ([`RealFifo`]).
    pub fn len(&self) -> usize {
        match self {
            Self::Real(q) | Self::Paged(q) => q.len(),
            Self::Delta(q) => q.len(),
        }
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the queue is closed.
    pub fn is_closed(&self) -> bool {
        match self {
            Self::Real(q) | Self::Paged(q) => q.is_closed(),
            Self::Delta(q) => q.is_closed(),
        }
    }

    /// Queues `deltas` again unless their key has something queued (retry on error).
    pub fn add_if_not_present(&self, deltas: Deltas<K>) -> Result<(), StoreError> {
        match self {
            Self::Real(q) | Self::Paged(q) => q.add_if_not_present(deltas),
            Self::Delta(q) => q.add_if_not_present(deltas),
        }
    }
}

macro_rules! delegate {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            Self::Real($q) | Self::Paged($q) => $e,
            Self::Delta($q) => $e,
        }
    };
}

/// The watch events (keys, in a [`DeltaFifo`]) a queue holds before its reflector stops reading
/// the watch (until half are applied): each queued event holds its decoded object beside the
/// one the cache still holds, and the watch is decoded faster than the process loop applies it
/// (bench-e2e, 50,000 pods, a burst of 100,000 events read from an idle server: RSS +617 MiB
/// with one malloc arena, the objects of a backlog, in a run beside a build); a compact cache
/// applies slower still. 256 rather than 1,000 holds ≈55 MB less of them; on a quiet machine
/// RSS before the relist had a median of 4,143 MiB in four runs against 4,291 in two, at the
/// same drain rate and latency (the allocator's run-to-run spread is larger than that).
const WATCH_BOUND: usize = 256;

impl<K: Send + Sync + 'static> ReflectorStore<K> for InformerQueue<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        delegate!(self, q => q.add(obj))
    }
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        delegate!(self, q => q.update(obj))
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        delegate!(self, q => q.delete(obj))
    }
    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        delegate!(self, q => q.replace(items, resource_version))?;
        // An empty list syncs the queue without anything to pop.
        sync_changed();
        Ok(())
    }
    fn replace_in_pages(&self) -> Option<Box<dyn PagedReplace<K> + '_>> {
        match self {
            Self::Paged(q) => Some(Box::new(QueuePages(q, q.replace_in_pages()))),
            Self::Real(_) | Self::Delta(_) => None,
        }
    }
    fn room(&self) -> Option<BoxFuture<'_, ()>> {
        (self.len() > WATCH_BOUND).then(|| -> BoxFuture<'_, ()> {
            delegate!(self, q => Box::pin(q.wait_len_at_most(WATCH_BOUND / 2)))
        })
    }
    fn resync(&self) -> Result<(), StoreError> {
        delegate!(self, q => q.resync())
    }
    fn bookmark(&self, resource_version: &str) {
        delegate!(self, q => q.bookmark(resource_version))
    }
}

/// A relist queued page by page into an [`InformerQueue::Paged`].
struct QueuePages<'a, K>(&'a RealFifo<K>, ReplacePages<'a, K>);

impl<K: Send + Sync> PagedReplace<K> for QueuePages<'_, K> {
    /// A page waits until the consumer has taken every queued delta: at most the page being
    /// listed, the queued one and the batch being applied are held decoded.
    fn ready(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.0.wait_len_at_most(0))
    }

    fn page(&mut self, items: Vec<Arc<K>>) -> Result<(), StoreError> {
        self.1.page(items)
    }

    fn finish(self: Box<Self>, resource_version: &str) -> Result<(), StoreError> {
        self.1.finish(resource_version)?;
        sync_changed();
        Ok(())
    }
}
