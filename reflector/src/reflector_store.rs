//! [`ReflectorStore`]: the narrow contract a reflector writes through.

use std::sync::Arc;

use futures::future::BoxFuture;
use kcache_store::{Indexer, Store, StoreError};
use kube_core::Resource;

/// What a [`Reflector`](crate::Reflector) writes into (client-go's `ReflectorStore`): the list
/// as one `replace`, each watch event as `add`/`update`/`delete`, and, optionally, periodic
/// resyncs, bookmarks and the resource version of every applied event. Nothing is read back.
///
/// Every method is short and non-blocking, so it may be called from async code. An
/// [`Indexer`] implements it; so do the informers' queues and the API server's watch cache.
pub trait ReflectorStore<K>: Send + Sync {
    /// Adds an object (an Added event).
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError>;
    /// Updates an object (a Modified event).
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError>;
    /// Deletes an object (a Deleted event: its last state).
    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError>;
    /// Replaces the whole content with `items`, observed at `resource_version` (a list).
    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError>;
    /// A replace given page by page while the list arrives, if this store takes one: the
    /// reflector then hands it each page as it is listed (waiting for
    /// [`PagedReplace::ready`] first) and never holds the whole list. Default: `None`, the
    /// list is gathered and given to [`replace`](Self::replace).
    fn replace_in_pages(&self) -> Option<Box<dyn PagedReplace<K> + '_>> {
        None
    }
    /// `None` when the store can take another watch event now (the default: no bound, as
    /// client-go's queues); otherwise a future that resolves when it can. The reflector awaits
    /// it before it reads the next event, so a consumer slower than the watch holds back the
    /// watch (and, through the connection, the server's sending) instead of a queue of decoded
    /// objects growing without bound.
    fn room(&self) -> Option<BoxFuture<'_, ()>> {
        None
    }
    /// Called every resync period while watching (queues re-emit their content). Default:
    /// nothing.
    fn resync(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// The watch reached `resource_version` (a bookmark). Default: nothing.
    fn bookmark(&self, resource_version: &str) {
        let _ = resource_version;
    }
    /// Told the resource version of every watch event after it was applied (client-go's
    /// `ResourceVersionUpdater`), for a store whose writes do not say where it is, such as the
    /// API server's watch cache. Default: nothing — an [`Indexer`] records the version of each
    /// object it stores and an informer's queue records none.
    fn update_resource_version(&self, resource_version: &str) {
        let _ = resource_version;
    }
}

/// A list given to a store page by page ([`ReflectorStore::replace_in_pages`]): the pages in
/// order, then [`finish`](Self::finish) with the list's resource version. Dropped unfinished,
/// the list failed: the store keeps what it was given, and the next list replaces it.
pub trait PagedReplace<K>: Send {
    /// Resolves when the store can take another page without holding more than its bound (its
    /// consumer has caught up): the back-pressure that keeps a list from running ahead.
    fn ready(&self) -> BoxFuture<'_, ()>;
    /// Takes the next page of the list.
    fn page(&mut self, items: Vec<Arc<K>>) -> Result<(), StoreError>;
    /// The list ended at `resource_version`: what was not listed is gone.
    fn finish(self: Box<Self>, resource_version: &str) -> Result<(), StoreError>;
}

impl<K: Resource + Send + Sync + 'static> ReflectorStore<K> for Indexer<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        Store::add(self, obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        Store::update(self, obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        Store::delete(self, obj)
    }
    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        Store::replace(self, items, resource_version)
    }
    fn bookmark(&self, resource_version: &str) {
        Store::bookmark(self, resource_version);
    }
}
