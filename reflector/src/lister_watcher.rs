//! The [`ListerWatcher`] contract: one list page, or one watch stream, of a resource.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use kcache_store::{BoxError, KnownObjects};
use kube_core::Status;

/// `resourceVersionMatch` of a list or watch-list request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceVersionMatch {
    /// Exactly the given resource version (410 if it is gone).
    Exact,
    /// The given resource version or newer.
    NotOlderThan,
}

impl ResourceVersionMatch {
    /// The wire value: `Exact` or `NotOlderThan`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exact => "Exact",
            Self::NotOlderThan => "NotOlderThan",
        }
    }
}

/// The options of one list or watch request (the query parameters of the wire protocol).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `limit`: the page size of a list.
    pub limit: Option<u32>,
    /// `continue`: the token of the next page.
    pub continue_token: Option<String>,
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<u32>,
    /// `allowWatchBookmarks`.
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents` (streaming watch-list).
    pub send_initial_events: Option<bool>,
}

/// One page of a list.
#[derive(Debug)]
pub struct ListPage<K> {
    /// The objects, decoded once and shared.
    pub items: Vec<Arc<K>>,
    /// `metadata.resourceVersion` of the list.
    pub resource_version: String,
    /// `metadata.continue`: the token of the next page, if any.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount`, if the server sent it.
    pub remaining_item_count: Option<i64>,
}

/// A watch bookmark: the resource version the stream has reached, and its annotations
/// (`k8s.io/initial-events-end: "true"` ends the initial events of a watch-list).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bookmark {
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
}

/// The annotation that marks the bookmark ending a watch-list's initial events.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

impl Bookmark {
    /// Whether this bookmark ends the initial events of a streaming watch-list (the annotation's
    /// value must be exactly `"true"`).
    pub fn is_initial_events_end(&self) -> bool {
        self.annotations
            .get(INITIAL_EVENTS_END_ANNOTATION)
            .map(String::as_str)
            == Some("true")
    }
}

/// One event of a watch stream.
// An Error event is rare and a Status is moved, not copied deeply: not worth a Box in the contract.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum WatchEvent<K> {
    /// An object was added.
    Added(Arc<K>),
    /// An object was modified.
    Modified(Arc<K>),
    /// An object was deleted (its last state).
    Deleted(Arc<K>),
    /// The stream reached a resource version.
    Bookmark(Bookmark),
    /// The server reported an error inside the stream (for example 410 Expired).
    Error(Status),
}

/// Why a list or watch failed.
///
/// Like every kcache error, its message says what failed at its own level and its cause is
/// [`source`](std::error::Error::source), never both: print the chain (kcache's own logs
/// record it) to see why a connection broke or a body did not decode.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ListWatchError {
    /// The server answered with a Status error (HTTP status or an ERROR watch event).
    #[error("server error {}: {} ({})", .0.code, .0.message, .0.reason)]
    Api(Box<Status>),
    /// The connection could not be made or broke (connection refused, reset, timeout); the
    /// HTTP client's error is the source.
    #[error("connection error")]
    Connection(#[source] BoxError),
    /// A response or event could not be decoded; the stream cannot be trusted any more.
    #[error("decode error: {what}")]
    Decode {
        /// What could not be decoded, or what was wrong with it.
        what: Cow<'static, str>,
        /// The parser's error, when there is one.
        #[source]
        source: Option<BoxError>,
    },
    /// A watch line was longer than the lister-watcher's bound (client-go's
    /// `ErrObjectTooLarge`); the rest of the stream was not read.
    #[error("watch event longer than {limit} bytes")]
    WatchLineTooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
    /// The lister-watcher's transform rejected an object.
    #[error("transform failed")]
    Transform(#[source] BoxError),
    /// Anything else: its message and source are the inner error's.
    #[error(transparent)]
    Other(BoxError),
}

impl ListWatchError {
    /// A [`Decode`](Self::Decode) error saying what was wrong, with no parser error under it.
    pub fn decode(what: impl Into<Cow<'static, str>>) -> Self {
        Self::Decode {
            what: what.into(),
            source: None,
        }
    }

    /// A [`Decode`](Self::Decode) error: `what` could not be decoded, because of `source`.
    pub fn decode_failed(what: impl Into<Cow<'static, str>>, source: impl Into<BoxError>) -> Self {
        Self::Decode {
            what: what.into(),
            source: Some(source.into()),
        }
    }
}

impl From<Status> for ListWatchError {
    fn from(status: Status) -> Self {
        Self::Api(Box::new(status))
    }
}

/// A future returned by a [`ListerWatcher`].
pub type ListFuture<'a, K> = BoxFuture<'a, Result<ListPage<K>, ListWatchError>>;

/// A watch stream returned by a [`ListerWatcher`]. Items are events, or an error after which the
/// stream is not used any more.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>, ListWatchError>>;

/// A future opening a watch.
pub type WatchFuture<'a, K> = BoxFuture<'a, Result<WatchStream<K>, ListWatchError>>;

/// Lists and watches one resource (client-go's `cache.ListerWatcher`).
pub trait ListerWatcher<K>: Send + Sync + 'static {
    /// Lists one page of objects.
    fn list(&self, options: &ListOptions) -> ListFuture<'_, K>;
    /// Opens a watch stream.
    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, K>;
    /// Offers the objects already held for this resource (a shared informer offers its
    /// indexer). A lister-watcher may then return the known `Arc` for a listed
    /// object whose key and resource version match, without decoding it again, so that a relist
    /// never holds two copies of the unchanged objects. The default ignores them.
    fn reuse_known_objects(&self, known: Arc<dyn KnownObjects<K>>) {
        let _ = known;
    }
}

impl<K, L: ListerWatcher<K> + ?Sized> ListerWatcher<K> for Arc<L> {
    fn list(&self, options: &ListOptions) -> ListFuture<'_, K> {
        (**self).list(options)
    }
    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, K> {
        (**self).watch(options)
    }
    fn reuse_known_objects(&self, known: Arc<dyn KnownObjects<K>>) {
        (**self).reuse_known_objects(known);
    }
}

impl fmt::Display for ResourceVersionMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
