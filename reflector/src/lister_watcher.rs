//! The [`ListerWatcher`] contract: one list page, or one watch stream, of a resource; and
//! [`ObjectMaking`], how a lister-watcher makes its objects (the transform every object passes,
//! the objects already held that a relist may reuse), given when the lister-watcher is built,
//! with the transforming wrapper any source gets by default.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use kcache_store::{BoxError, KnownObjects, TransformFunc};
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
    /// This lister-watcher, built to make its objects as `making` says: every listed and
    /// watched object passes the transform, and objects already held may be reused. It is how
    /// an informer gives its transform and its indexer to the lister-watcher it runs, once,
    /// before the first list.
    ///
    /// The default wraps this lister-watcher: the transform runs on each list page's items and
    /// each watch event as they come out, and known objects are not reused. A lister-watcher that
    /// decodes objects itself does better: [`KubeListerWatcher`](crate::KubeListerWatcher)
    /// transforms on its decoding threads and does not decode a listed object it already holds.
    fn making_objects(self: Box<Self>, making: ObjectMaking<K>) -> Box<dyn ListerWatcher<K>>
    where
        K: Send + Sync + 'static,
    {
        Box::new(Transforming {
            inner: self,
            transform: making.transform_func().cloned(),
        })
    }
}

impl<K, L: ListerWatcher<K> + ?Sized> ListerWatcher<K> for Arc<L> {
    fn list(&self, options: &ListOptions) -> ListFuture<'_, K> {
        (**self).list(options)
    }
    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, K> {
        (**self).watch(options)
    }
}

impl fmt::Display for ResourceVersionMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a lister-watcher makes its objects, handed to
/// [`ListerWatcher::making_objects`] when the lister-watcher is built: the one place a
/// transform lives, and the view of the objects already held.
///
/// The informer builder, `SharedIndexInformer::set_transform`, the `new_transforming_*`
/// functions and the informer factory all set the transform here.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kcache_reflector::ObjectMaking;
///
/// let making = ObjectMaking::<Pod>::default().transform(Arc::new(|mut pod: Arc<Pod>| {
///     Arc::make_mut(&mut pod).metadata.managed_fields = None;
///     Ok(pod)
/// }));
/// assert!(making.transform_func().is_some());
/// ```
pub struct ObjectMaking<K> {
    transform: Option<TransformFunc<K>>,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
}

impl<K> Default for ObjectMaking<K> {
    fn default() -> Self {
        Self {
            transform: None,
            known_objects: None,
        }
    }
}

impl<K> Clone for ObjectMaking<K> {
    fn clone(&self) -> Self {
        Self {
            transform: self.transform.clone(),
            known_objects: self.known_objects.clone(),
        }
    }
}

impl<K> fmt::Debug for ObjectMaking<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectMaking")
            .field("transform", &self.transform.is_some())
            .field("known_objects", &self.known_objects.is_some())
            .finish()
    }
}

impl<K> ObjectMaking<K> {
    /// A transform run on every listed and watched object as soon as it is made (for example to
    /// drop `managedFields`). It must be idempotent: a relist may reuse objects that already went
    /// through it. A list item it rejects fails the list
    /// ([`ListWatchError::Transform`]); a watch event it rejects is logged and skipped.
    #[must_use]
    pub fn transform(mut self, transform: TransformFunc<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// The objects already held for this resource (a shared informer gives its indexer). A
    /// lister-watcher may return the known `Arc` for a listed object whose key and resource
    /// version match, without making it again, so that a relist never holds two copies of the
    /// unchanged objects.
    #[must_use]
    pub fn known_objects(mut self, known: Arc<dyn KnownObjects<K>>) -> Self {
        self.known_objects = Some(known);
        self
    }

    /// The transform, if one is set.
    pub fn transform_func(&self) -> Option<&TransformFunc<K>> {
        self.transform.as_ref()
    }

    /// The objects already held, if given.
    pub fn known(&self) -> Option<&Arc<dyn KnownObjects<K>>> {
        self.known_objects.as_ref()
    }
}

/// `obj` as `transform` makes it (unchanged without one).
pub(crate) fn transformed<K>(
    obj: Arc<K>,
    transform: Option<&TransformFunc<K>>,
) -> Result<Arc<K>, kcache_store::BoxError> {
    match transform {
        Some(transform) => transform(obj),
        None => Ok(obj),
    }
}

/// The event with its object transformed (bookmarks and errors unchanged); `None`, after an
/// error log, when the transform rejects the object.
pub(crate) fn transform_event<K>(
    event: WatchEvent<K>,
    transform: Option<&TransformFunc<K>>,
) -> Option<WatchEvent<K>> {
    let Some(transform) = transform else {
        return Some(event);
    };
    let made = match event {
        WatchEvent::Added(obj) => transform(obj).map(WatchEvent::Added),
        WatchEvent::Modified(obj) => transform(obj).map(WatchEvent::Modified),
        WatchEvent::Deleted(obj) => transform(obj).map(WatchEvent::Deleted),
        other => Ok(other),
    };
    match made {
        Ok(event) => Some(event),
        Err(err) => {
            tracing::error!(
                error = &*err as &dyn std::error::Error,
                "transform failed, watch event skipped"
            );
            None
        }
    }
}

/// Any lister-watcher with a transform run on each listed item and watched object as it comes
/// out (the default of [`ListerWatcher::making_objects`]).
pub(crate) struct Transforming<K, L: ?Sized> {
    pub(crate) inner: Box<L>,
    pub(crate) transform: Option<TransformFunc<K>>,
}

impl<K, L> ListerWatcher<K> for Transforming<K, L>
where
    K: Send + Sync + 'static,
    L: ListerWatcher<K> + ?Sized,
{
    fn list(&self, options: &ListOptions) -> ListFuture<'_, K> {
        let transform = self.transform.clone();
        self.inner
            .list(options)
            .map(move |page| {
                let mut page = page?;
                if let Some(transform) = &transform {
                    page.items = std::mem::take(&mut page.items)
                        .into_iter()
                        .map(|obj| transform(obj).map_err(ListWatchError::Transform))
                        .collect::<Result<_, _>>()?;
                }
                Ok(page)
            })
            .boxed()
    }

    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, K> {
        let transform = self.transform.clone();
        self.inner
            .watch(options)
            .map(move |opened| {
                let stream = opened?;
                let Some(transform) = transform else {
                    return Ok(stream);
                };
                Ok(stream
                    .filter_map(move |event| {
                        let event = match event {
                            Ok(e) => transform_event(e, Some(&transform)).map(Ok),
                            Err(e) => Some(Err(e)),
                        };
                        futures::future::ready(event)
                    })
                    .boxed())
            })
            .boxed()
    }

    /// The same source with the new transform (known objects are not reused).
    fn making_objects(self: Box<Self>, making: ObjectMaking<K>) -> Box<dyn ListerWatcher<K>> {
        let mut this = *self;
        if let Some(transform) = making.transform {
            this.transform = Some(transform);
        }
        Box::new(this)
    }
}
