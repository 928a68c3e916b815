//! [`Delta`], [`DeltaType`] and [`Deltas`]: what the delta queues hand to their consumer.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use kcache_store::{MaybeTombstone, ObjectKey};
use smallvec::SmallVec;

/// The kind of change a [`Delta`] records (client-go's `DeltaType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// A watch reported the object as added.
    Added,
    /// A watch reported a new state of the object.
    Updated,
    /// The object was deleted; the payload may be a
    /// [`DeletedFinalStateUnknown`](kcache_store::DeletedFinalStateUnknown) tombstone.
    Deleted,
    /// The object came from a relist (only with the emit-Replaced option of [`DeltaFifo`](crate::DeltaFifo),
    /// and always in [`RealFifo`](crate::RealFifo)).
    Replaced,
    /// A periodic resync, or a relisted object when emit-Replaced is off.
    Sync,
    /// A whole relist as one delta ([`RealFifo`](crate::RealFifo) atomic mode).
    ReplacedAll,
    /// The end of a relist queued in pages ([`RealFifo::replace_in_pages`](crate::RealFifo::replace_in_pages)).
    ReplaceEnd,
    /// A whole resync as one delta ([`RealFifo`](crate::RealFifo) atomic mode).
    SyncAll,
    /// A watch bookmark ([`RealFifo`](crate::RealFifo) atomic mode).
    Bookmark,
}

impl From<kcache_store::TransactionType> for DeltaType {
    /// The delta a store write queues: `Added`, `Updated` or `Deleted`.
    fn from(kind: kcache_store::TransactionType) -> Self {
        match kind {
            kcache_store::TransactionType::Added => Self::Added,
            kcache_store::TransactionType::Updated => Self::Updated,
            kcache_store::TransactionType::Deleted => Self::Deleted,
        }
    }
}

/// One change queued for a consumer (client-go's `Delta`).
///
/// Per-object changes carry the object as a [`MaybeTombstone`]: a plain `Arc<K>`, or for a
/// deletion whose final state was missed, a tombstone. The other variants are produced only by
/// [`RealFifo`](crate::RealFifo): in atomic mode, and `ReplaceEnd` by a relist queued in pages.
pub enum Delta<K> {
    /// A change of one object.
    Object {
        /// Added, Updated, Deleted, Replaced or Sync.
        kind: DeltaType,
        /// The object (a tombstone only for [`DeltaType::Deleted`]).
        object: MaybeTombstone<K>,
    },
    /// A relist as one delta: the consumer replaces its whole state with `objects`.
    ReplacedAll {
        /// The resource version of the list.
        resource_version: String,
        /// Every listed object.
        objects: Arc<[Arc<K>]>,
    },
    /// The end of a relist queued in pages
    /// ([`RealFifo::replace_in_pages`](crate::RealFifo::replace_in_pages)), after a
    /// [`DeltaType::Replaced`] delta for each listed object: the consumer deletes what it holds
    /// under a key that was not listed and is current at `resource_version`.
    ReplaceEnd {
        /// The resource version of the list.
        resource_version: String,
        /// The key of every listed object.
        listed: Arc<HashSet<ObjectKey>>,
    },
    /// A resync as one delta: the consumer re-emits everything it holds.
    SyncAll,
    /// A watch bookmark: the consumer's state is current at `resource_version`.
    Bookmark {
        /// The resource version of the bookmark.
        resource_version: String,
    },
}

impl<K> Delta<K> {
    /// A per-object delta holding `object`.
    pub fn new(kind: DeltaType, object: Arc<K>) -> Self {
        Self::Object {
            kind,
            object: MaybeTombstone::Object(object),
        }
    }

    /// A per-object delta holding an object or a tombstone.
    pub fn with_payload(kind: DeltaType, object: MaybeTombstone<K>) -> Self {
        Self::Object { kind, object }
    }

    /// The kind of change.
    pub fn kind(&self) -> DeltaType {
        match self {
            Self::Object { kind, .. } => *kind,
            Self::ReplacedAll { .. } => DeltaType::ReplacedAll,
            Self::ReplaceEnd { .. } => DeltaType::ReplaceEnd,
            Self::SyncAll => DeltaType::SyncAll,
            Self::Bookmark { .. } => DeltaType::Bookmark,
        }
    }

    /// The object or tombstone of a per-object delta; `None` for the atomic variants.
    pub fn object(&self) -> Option<&MaybeTombstone<K>> {
        match self {
            Self::Object { object, .. } => Some(object),
            _ => None,
        }
    }

    /// Whether this is a deletion carrying a tombstone.
    pub fn is_tombstone(&self) -> bool {
        self.object().is_some_and(MaybeTombstone::is_tombstone)
    }
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Object { kind, object } => Self::Object {
                kind: *kind,
                object: object.clone(),
            },
            Self::ReplacedAll {
                resource_version,
                objects,
            } => Self::ReplacedAll {
                resource_version: resource_version.clone(),
                objects: Arc::clone(objects),
            },
            Self::ReplaceEnd {
                resource_version,
                listed,
            } => Self::ReplaceEnd {
                resource_version: resource_version.clone(),
                listed: Arc::clone(listed),
            },
            Self::SyncAll => Self::SyncAll,
            Self::Bookmark { resource_version } => Self::Bookmark {
                resource_version: resource_version.clone(),
            },
        }
    }
}

impl<K> fmt::Debug for Delta<K> {
    /// Shows the kind and, for objects, whether it is a tombstone (objects themselves are large).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Object {
                kind,
                object: MaybeTombstone::Object(_),
            } => f
                .debug_struct("Delta")
                .field("kind", kind)
                .finish_non_exhaustive(),
            Self::Object {
                kind,
                object: MaybeTombstone::Tombstone(t),
            } => f
                .debug_struct("Delta")
                .field("kind", kind)
                .field("tombstone", &t.key)
                .finish(),
            Self::ReplacedAll {
                resource_version,
                objects,
            } => f
                .debug_struct("Delta")
                .field("kind", &DeltaType::ReplacedAll)
                .field("resource_version", resource_version)
                .field("objects", &objects.len())
                .finish(),
            Self::ReplaceEnd {
                resource_version,
                listed,
            } => f
                .debug_struct("Delta")
                .field("kind", &DeltaType::ReplaceEnd)
                .field("resource_version", resource_version)
                .field("listed", &listed.len())
                .finish(),
            Self::SyncAll => f
                .debug_struct("Delta")
                .field("kind", &DeltaType::SyncAll)
                .finish(),
            Self::Bookmark { resource_version } => f
                .debug_struct("Delta")
                .field("kind", &DeltaType::Bookmark)
                .field("resource_version", resource_version)
                .finish(),
        }
    }
}

/// The deltas queued for one key, oldest first (client-go's `Deltas`). Most keys hold one or
/// two, which are stored inline.
pub struct Deltas<K>(SmallVec<[Delta<K>; 2]>);

impl<K> Deltas<K> {
    /// Deltas holding only `delta`.
    pub fn one(delta: Delta<K>) -> Self {
        let mut v = SmallVec::new();
        v.push(delta);
        Self(v)
    }

    /// The oldest delta.
    pub fn oldest(&self) -> Option<&Delta<K>> {
        self.0.first()
    }

    /// The newest delta.
    pub fn newest(&self) -> Option<&Delta<K>> {
        self.0.last()
    }

    /// The newest object (unwrapping a tombstone), the state a consumer ends up with.
    pub fn newest_object(&self) -> Option<&Arc<K>> {
        self.newest()
            .and_then(Delta::object)
            .map(MaybeTombstone::object)
    }

    /// The kinds of the deltas, oldest first.
    pub fn kinds(&self) -> Vec<DeltaType> {
        self.0.iter().map(Delta::kind).collect()
    }

    pub(crate) fn empty() -> Self {
        Self(SmallVec::new())
    }

    pub(crate) fn push(&mut self, delta: Delta<K>) {
        self.0.push(delta);
    }

    /// Drops the second-newest or newest of two consecutive deletions (client-go's
    /// `dedupDeltas`): the older is kept unless it is a tombstone.
    pub(crate) fn dedup_last_two(&mut self) {
        let n = self.0.len();
        if n < 2 {
            return;
        }
        if self.0[n - 1].kind() == DeltaType::Deleted && self.0[n - 2].kind() == DeltaType::Deleted
        {
            if self.0[n - 2].is_tombstone() {
                self.0.remove(n - 2);
            } else {
                self.0.pop();
            }
        }
    }
}

impl<K> std::ops::Deref for Deltas<K> {
    type Target = [Delta<K>];
    fn deref(&self) -> &[Delta<K>] {
        &self.0
    }
}

impl<K> Clone for Deltas<K> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<K> fmt::Debug for Deltas<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

impl<K> From<Delta<K>> for Deltas<K> {
    fn from(delta: Delta<K>) -> Self {
        Self::one(delta)
    }
}

impl<K> FromIterator<Delta<K>> for Deltas<K> {
    fn from_iter<I: IntoIterator<Item = Delta<K>>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl<K> IntoIterator for Deltas<K> {
    type Item = Delta<K>;
    type IntoIter = smallvec::IntoIter<[Delta<K>; 2]>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a, K> IntoIterator for &'a Deltas<K> {
    type Item = &'a Delta<K>;
    type IntoIter = std::slice::Iter<'a, Delta<K>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
