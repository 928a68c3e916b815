//! The events of the ring buffer, encoded once per watcher-visible type, and what a watcher's
//! stream receives.

use std::fmt;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use tokio::time::Instant;

use crate::filter::Filter;
use crate::object::Object;
use crate::storage::EventType;

/// The type of an event as one watcher sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchKind {
    Added,
    Modified,
    Deleted,
}

impl WatchKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One event of the ring buffer, with its encodings computed once and shared by every watcher.
pub(crate) struct CacheEvent {
    pub(crate) rv: u64,
    pub(crate) event_type: EventType,
    pub(crate) object: Arc<Object>,
    pub(crate) previous: Option<Arc<Object>>,
    pub(super) frames: [OnceLock<Bytes>; 3],
    pub(super) stamped_previous: OnceLock<Arc<Object>>,
    /// When the cache received it (for the dynamic capacity).
    pub(super) recorded: Instant,
}

impl fmt::Debug for CacheEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheEvent")
            .field("rv", &self.rv)
            .field("type", &self.event_type)
            .finish()
    }
}

/// `{"type":TYPE,"object":OBJECT}\n`.
pub(crate) fn event_frame(kind: &str, object: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(object.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

impl CacheEvent {
    /// The object a watcher receives for `kind`: for a DELETED caused by an object leaving the
    /// selector, the previous object stamped with this event's resource version.
    pub(crate) fn object_for(&self, kind: WatchKind) -> &Arc<Object> {
        match (kind, self.event_type, &self.previous) {
            (WatchKind::Deleted, EventType::Added | EventType::Modified, Some(prev)) => self
                .stamped_previous
                .get_or_init(|| Arc::new(prev.with_resource_version(self.rv))),
            _ => &self.object,
        }
    }

    /// The JSON line for `kind`, encoded once.
    pub(crate) fn frame(&self, kind: WatchKind) -> Bytes {
        self.frames[kind as usize]
            .get_or_init(|| event_frame(kind.as_str(), self.object_for(kind).raw()))
            .clone()
    }

    /// How a watcher with `filter` sees this event, if at all.
    pub(super) fn kind_for(&self, filter: &Filter) -> Option<WatchKind> {
        let cur = self.event_type != EventType::Deleted && filter.matches(&self.object);
        let old = self.previous.as_ref().is_some_and(|p| filter.matches(p));
        match (cur, old) {
            (true, false) => Some(WatchKind::Added),
            (true, true) => Some(WatchKind::Modified),
            (false, true) => Some(WatchKind::Deleted),
            (false, false) => None,
        }
    }
}

/// What a watcher's stream receives.
#[derive(Debug, Clone)]
pub(crate) enum Msg {
    /// An event of the ring buffer.
    Event(WatchKind, Arc<CacheEvent>),
    /// An object of the initial state (ADDED).
    Initial(Arc<Object>),
    /// A bookmark at a resource version.
    Bookmark(u64),
    /// The bookmark that ends a watch-list's initial events.
    InitialEventsEnd(u64),
    /// Raw bytes (fault injection, with the `testing` feature).
    #[cfg(feature = "testing")]
    Raw(Bytes),
}
