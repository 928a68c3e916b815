//! How a [`ThreadSafeStore`](crate::ThreadSafeStore) holds its objects: the [`Shared`] `Arc`s
//! (the default) or, with the `compact` feature, compact bytes decoded on read.

use std::sync::Arc;

use crate::error::BoxError;

/// What a store keeps per object and how it gets the object back.
pub(crate) trait Holding<K> {
    /// What the store's map holds for one object (cheap to clone: an `Arc`).
    type Held: Clone;

    /// What to hold for `obj`; called before the store's lock is taken.
    fn hold(&self, obj: &Arc<K>) -> Result<Self::Held, BoxError>;

    /// The object back from what is held; called with the lock released where it can be.
    fn object(&self, held: Self::Held) -> Result<Arc<K>, BoxError>;

    /// Called with objects the store is about to hold, before any of them is held: by a
    /// replace, and by a consumer about to store a relist's page one object at a time (the
    /// compact holding trains its dictionary there, once). A holding that needs nothing does
    /// not iterate.
    fn prepare<'a>(&self, _objects: impl Iterator<Item = &'a K>)
    where
        K: 'a,
    {
    }
}

/// The default holding: the object's `Arc` itself, shared with the queue and the handlers.
#[derive(Debug, Default)]
pub(crate) struct Shared;

impl<K> Holding<K> for Shared {
    type Held = Arc<K>;

    fn hold(&self, obj: &Arc<K>) -> Result<Arc<K>, BoxError> {
        Ok(Arc::clone(obj))
    }

    fn object(&self, held: Arc<K>) -> Result<Arc<K>, BoxError> {
        Ok(held)
    }
}
