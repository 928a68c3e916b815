//! [`KubeListerWatcher`]: lists and watches over kube-client, decoding off the socket task.
//! Requests and their errors are in request.rs, list pages in list.rs, watch streams in watch.rs.

mod list;
mod request;
mod watch;

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::FutureExt;
use kcache_store::TransformFunc;
use kube_client::{Api, Client};
use kube_core::{ApiResource, DynamicObject, PartialObjectMeta, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;

use crate::decode::KnownLookup;
use crate::lister_watcher::{ListFuture, ListOptions, ListerWatcher, ObjectMaking, WatchFuture};
use list::PageRead;
#[cfg(feature = "fuzzing")]
pub(crate) use watch::decode_watch_body;

const JSON: &str = "application/json";
const METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
const METADATA: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
/// The default bound on one watch line: the API server stores objects of up to 3 MiB (etcd's
/// request limit) and their JSON, with escaping and the event envelope, can be several times
/// that.
pub const DEFAULT_MAX_WATCH_LINE_BYTES: usize = 32 * 1024 * 1024;

/// Changes the options of every request (selectors, typically): client-go's
/// `TweakListOptionsFunc`.
pub type TweakListOptions = Arc<dyn Fn(&mut ListOptions) + Send + Sync>;

/// A [`ListerWatcher`] over a kube-client [`Client`] for typed objects, [`DynamicObject`]s or
/// [`PartialObjectMeta`] (metadata only).
///
/// It reads raw bytes from the connection and decodes them on blocking threads: a list page is
/// split into chunks decoded in parallel (order kept), the next page is fetched while the
/// current one is decoded, and watch lines are decoded in batches, several batches at once,
/// delivered in order. Each object is decoded once into the `Arc<K>` the store keeps.
///
/// ```no_run
/// use k8s_openapi::api::core::v1::Pod;
/// use kcache_reflector::KubeListerWatcher;
/// use kube_client::{Api, Client};
///
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// let client = Client::try_default().await?;
/// let lw = KubeListerWatcher::new(Api::<Pod>::all(client))
///     .tweak_list_options(|o| o.label_selector = Some("app=web".into()));
/// # let _ = lw; Ok(()) }
/// ```
pub struct KubeListerWatcher<K> {
    client: Client,
    url_path: String,
    metadata_only: bool,
    expected_kind: Option<String>,
    tweak: Option<TweakListOptions>,
    parallelism: usize,
    prefetch: bool,
    max_watch_line: usize,
    next_page: Arc<Mutex<Option<PageRead>>>,
    known: Option<KnownLookup<K>>,
    transform: Option<TransformFunc<K>>,
    _object: PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for KubeListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeListerWatcher")
            .field("url_path", &self.url_path)
            .field("metadata_only", &self.metadata_only)
            .field("expected_kind", &self.expected_kind)
            .field("tweak", &self.tweak.is_some())
            .field("parallelism", &self.parallelism)
            .field("prefetch", &self.prefetch)
            .field("max_watch_line", &self.max_watch_line)
            .field("reuses_known_objects", &self.known.is_some())
            .field("transform", &self.transform.is_some())
            .finish_non_exhaustive()
    }
}

impl<K> Clone for KubeListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            url_path: self.url_path.clone(),
            metadata_only: self.metadata_only,
            expected_kind: self.expected_kind.clone(),
            tweak: self.tweak.clone(),
            parallelism: self.parallelism,
            prefetch: self.prefetch,
            max_watch_line: self.max_watch_line,
            next_page: Arc::new(Mutex::new(None)),
            known: self.known.clone(),
            transform: self.transform.clone(),
            _object: PhantomData,
        }
    }
}

fn default_parallelism() -> usize {
    std::thread::available_parallelism()
        .map_or(2, usize::from)
        .clamp(1, 16)
}

impl<K: Resource> KubeListerWatcher<K>
where
    K::DynamicType: Default,
{
    /// Lists and watches the typed resource of `api` (its namespace, or all).
    pub fn new(api: Api<K>) -> Self {
        let kind = K::kind(&K::DynamicType::default()).into_owned();
        Self::from_parts(api, Some(kind), false)
    }
}

impl KubeListerWatcher<DynamicObject> {
    /// Lists and watches a resource known at run time (a custom resource, for example).
    pub fn dynamic(api: Api<DynamicObject>, resource: &ApiResource) -> Self {
        Self::from_parts(api, Some(resource.kind.clone()), false)
    }
}

impl<K: Resource> KubeListerWatcher<PartialObjectMeta<K>> {
    /// Lists and watches only the metadata of the objects of `api` (`PartialObjectMetadata`).
    pub fn metadata(api: Api<K>) -> Self {
        let url_path = api.resource_url().to_owned();
        Self::with_url(api.into(), url_path, None, true)
    }
}

impl<K> KubeListerWatcher<K> {
    fn from_parts<R: Resource>(
        api: Api<R>,
        expected_kind: Option<String>,
        metadata_only: bool,
    ) -> Self {
        let url_path = api.resource_url().to_owned();
        Self::with_url(api.into(), url_path, expected_kind, metadata_only)
    }

    fn with_url(
        client: Client,
        url_path: String,
        expected_kind: Option<String>,
        metadata_only: bool,
    ) -> Self {
        Self {
            client,
            url_path,
            metadata_only,
            expected_kind,
            tweak: None,
            parallelism: default_parallelism(),
            prefetch: true,
            max_watch_line: DEFAULT_MAX_WATCH_LINE_BYTES,
            next_page: Arc::new(Mutex::new(None)),
            known: None,
            transform: None,
            _object: PhantomData,
        }
    }

    /// Changes the options of every list and watch (client-go's tweak-list-options hook),
    /// typically to set label or field selectors.
    #[must_use]
    pub fn tweak_list_options(
        mut self,
        f: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> Self {
        self.tweak = Some(Arc::new(f));
        self
    }

    /// How many blocking threads decode at once (default: the number of cores).
    #[must_use]
    pub fn decode_parallelism(mut self, n: usize) -> Self {
        self.parallelism = n.max(1);
        self
    }

    /// Whether the next list page is fetched while the current one is decoded (default on).
    #[must_use]
    pub fn prefetch_pages(mut self, on: bool) -> Self {
        self.prefetch = on;
        self
    }

    /// The longest watch line (one event, without its newline) accepted, in bytes (default
    /// [`DEFAULT_MAX_WATCH_LINE_BYTES`]). A longer one ends the watch with
    /// [`ListWatchError::WatchLineTooLarge`](crate::ListWatchError::WatchLineTooLarge) after the events before it; the reflector then
    /// relists. List bodies have no such bound: they are read item by item.
    #[must_use]
    pub fn max_watch_line_bytes(mut self, limit: usize) -> Self {
        self.max_watch_line = limit;
        self
    }

    /// A transform run on every decoded object (list items and watch events) as soon as its
    /// batch is decoded, on the decoding thread: only the transformed object is ever held, from
    /// the moment a list page or event exists (for example without `managedFields`). It must be
    /// idempotent, since a relist may reuse objects that already went through it. A list item
    /// it rejects fails the list ([`ListWatchError::Transform`](crate::ListWatchError::Transform)); a watch event it rejects is
    /// logged and skipped. The same as [`ObjectMaking::transform`] given to
    /// [`making_objects`](ListerWatcher::making_objects), which is how an informer sets it.
    #[must_use]
    pub fn transform(mut self, transform: TransformFunc<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// The path of the resource's collection.
    pub fn url_path(&self) -> &str {
        &self.url_path
    }

    fn tweaked(&self, options: &ListOptions) -> ListOptions {
        let mut options = options.clone();
        if let Some(t) = &self.tweak {
            t(&mut options);
        }
        options
    }
}

impl<K> ListerWatcher<K> for KubeListerWatcher<K>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
{
    fn list(&self, options: &ListOptions) -> ListFuture<'_, K> {
        self.list_page(options.clone()).boxed()
    }

    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, K> {
        self.open_watch(options.clone()).boxed()
    }

    /// Transforms on the decoding threads; listed objects whose key and resource version match
    /// a known one are not decoded: the known `Arc` is returned (only their metadata is read).
    fn making_objects(self: Box<Self>, making: ObjectMaking<K>) -> Box<dyn ListerWatcher<K>> {
        let mut lw = *self;
        if let Some(transform) = making.transform_func() {
            lw.transform = Some(Arc::clone(transform));
        }
        lw.known = making.known().map(|known| {
            let known = Arc::clone(known);
            let lookup: KnownLookup<K> = Arc::new(move |key, rv| {
                known
                    .get_by_key(key)
                    .filter(|obj| obj.meta().resource_version.as_deref() == Some(rv))
            });
            lookup
        });
        Box::new(lw)
    }
}
